"""Port runs and S-parameters (docs/electromagnetics.md, "Ports and S-parameters").

A case with ``[port.<name>]`` tables runs once per driven port into ``<output>/port_<name>/``
(that port's mode launched by the system's term), each run with an ``[output.dft]`` on every
port's plane (monitors/dft.py); after each run the system decomposes the transforms into its
ports' incoming and outgoing waves, and after the last it writes the S-matrix (rank 0). Ports
on named surfaces are first resolved into explicit planes, a [pml] and the mesh's extension
(the system's ``resolve``). What is physics (the cases, the decomposition, the files) is the
system's ``port_runs``.
"""

from __future__ import annotations

from pathlib import Path

from lobatto.config.schema import parse_case
from lobatto.errors import InputError
from lobatto.machine.parallel import collective_errors, rank_and_size, world_comm
from lobatto.monitors.dft import DftMonitor
from lobatto.monitors.registry import monitor_tables
from lobatto.systems.registry import get_system, physics_specs

#: a driven port's run goes to <output>/port_<name>/
PREFIX = "port_"


def wanted(case) -> bool:
    return bool(case.tables.get("port")) or case.tables.get("ports") is not None


def run(case, backend, output_dir, comm, progress, simulation_class, restart=None, before_writing=None,
        keep: list | None = None) -> dict:
    """Collective: one run per driven port, then the S-matrix and ``<output>/summary.json``
    written by rank 0. Returns the last run's summary with ``ports`` (the ports, the runs, the
    files); ``keep``: a list the last run's Simulation is appended to (lobatto.run's Result)."""
    runs_of = getattr(get_system(case.physics.equations), "port_runs", None)
    if runs_of is None:
        raise InputError(f"{case.source}: [port] tables do not apply to {case.physics.equations}")
    comm = world_comm() if comm == "world" else comm  # (run_case's default) one communicator for every run
    # ports on named surfaces: the case with its planes, [pml] and mesh extension made explicit,
    # found on the whole mesh by every rank alike (a rank's error is every rank's)
    with collective_errors(comm):
        resolved = runs_of.resolve(case)
    surfaces = {}
    if resolved is not None:
        data, surfaces = resolved
        case = parse_case(data, source=case.source, name=case.name, systems=physics_specs(), monitors=monitor_tables())
    runs_of.check(case)
    if getattr(case.output, "dft", None) is not None:
        raise InputError(f"{case.source}: [output.dft] cannot go with [port] tables yet (each port's run transforms "
                         "the fields on the port planes itself): remove one of them")
    if case.checkpoint.enabled:
        raise InputError(f"{case.source}: [checkpoint] cannot go with [port] tables (a port's run cannot continue from "
                         "a checkpoint: each transforms the fields from its start): remove [checkpoint]")
    if restart is not None:
        raise InputError(f"{case.source}: a case with [port] tables cannot continue from a checkpoint (each port's "
                         "run transforms the fields from its start): run it from the start")
    base = Path(output_dir if output_dir is not None else f"{case.name}_out")
    names = runs_of.driven(case)
    columns, runs, summary, rank = {}, {}, {}, 0
    for k, name in enumerate(names):
        sub = parse_case(runs_of.case_data(case, name), source=case.source, name=case.name, systems=physics_specs(),
                         monitors=monitor_tables())
        sim = simulation_class(sub, backend=backend, output_dir=base / f"{PREFIX}{name}", comm=comm, progress=progress)
        # after the set-up, whose checks refuse a bad case: its error is then the only line
        if progress is not None and rank_and_size(comm)[0] == 0:
            print(f"lobatto: port run {k + 1} of {len(names)}: [port.{name}] driven, into {base / f'{PREFIX}{name}'}",
                  flush=True)
        if k == 0 and before_writing is not None:
            before_writing()
        summary = sim.run()
        monitor = next(m for m in sim.series.monitors if isinstance(m, DftMonitor))
        results = monitor.results()  # collective; rank 0 holds them
        rank = rank_and_size(sim.comm)[0]
        with collective_errors(sim.comm):  # rank 0 decomposes: an error there reaches every rank
            if results is not None:
                columns[name] = runs_of.measure(case, sim.system, results)
        runs[name] = {"directory": str(base / f"{PREFIX}{name}"), "t_final": summary.get("t_final"),
                      "steps": summary.get("steps"), "stopped": summary.get("stopped", "t_end")}
        if keep is not None and k == len(names) - 1:
            keep.append(sim)
        del sim, monitor, results
    out = dict(summary)
    series = out.get("time_series")  # the last run's files, named from <output> (where this summary is)
    if isinstance(series, dict) and names:
        sub = f"{PREFIX}{names[-1]}/"
        dft = series.get("dft")
        out["time_series"] = {**series, "files": [sub + f for f in series.get("files") or []],
                              **({"dft": {**dft, "file": sub + dft["file"]}} if isinstance(dft, dict) and dft.get("file")
                                 else {})}
    out["ports"] = {**runs_of.describe(case), "runs": runs, "files": runs_of.files(case)}
    if surfaces:  # what each surface port became: reproducible with these planes, [pml] and mesh
        out["ports"]["surfaces"] = surfaces
    with collective_errors(comm):
        if rank == 0:  # the S-parameters, and <output>/summary.json: the last run's with the ports
            from lobatto.io.summary import write_summary

            runs_of.write(base, case, columns)
            write_summary(base / "summary.json", out)
    return out
