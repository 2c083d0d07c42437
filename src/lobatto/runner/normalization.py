"""``[output.dft] normalize``: the incident-only run that normalises a scattering run's fluxes
(docs/electromagnetics.md, "Normalised spectra"), as Meep users make by hand.

Before the run itself, the case runs once without its ``[material.<name>]`` tables (the
background medium of ``[physics]`` everywhere: the same sources, PML, mesh, partition and
monitors) into ``<output>/normalization/``. Its DFT monitor's transforms then go to the run's
monitor (monitors/dft.py ``set_incident``), which writes beside each surface's flux the
incident flux, the flux of the scattered field (the run's minus the incident one) and both
divided by the incident flux through the ``normalize`` surface. A run with [output.dft] cannot
continue from a checkpoint (its transforms are not saved there): refused before the incident run.
"""

from __future__ import annotations

from pathlib import Path

from lobatto.config.schema import parse_case
from lobatto.errors import InputError
from lobatto.monitors.dft import DftMonitor
from lobatto.monitors.registry import monitor_tables
from lobatto.systems.registry import physics_specs

#: the incident run's directory inside the run's output directory
DIRECTORY = "normalization"


def wanted(case) -> bool:
    dft = getattr(case.output, "dft", None)
    return dft is not None and dft.normalize is not None


def incident_case(case):
    """The case without its [material] tables, its own outputs reduced to what the transforms
    need (no snapshots, checkpoints, far field or normalisation of its own)."""
    data = case.to_dict()
    if not data.pop("material", None):
        raise InputError(f"{case.source}: [output.dft] normalize divides by a run without the [material.<name>] "
                         "tables, but the case has none: the fluxes are their own normalisation")
    output = data.setdefault("output", {})
    output["formats"] = []
    output.pop("far_field", None)
    output["dft"] = {k: v for k, v in output["dft"].items() if k != "normalize"}
    data.pop("checkpoint", None)
    time = data.get("time", {})
    if time.get("until_decayed") is not None:
        # its probes may see no field at all (a reflection-side probe without the scatterer) and
        # stop the run on a numerical tail: watch the energy, to the square of the threshold
        time.update(decay_watch="energy", until_decayed=float(time["until_decayed"]) ** 2)
    return parse_case(data, source=case.source, name=case.name, systems=physics_specs(), monitors=monitor_tables())


def dft_monitor(simulation) -> DftMonitor:
    return next(m for m in simulation.series.monitors if isinstance(m, DftMonitor))


def simulation(case, backend, output_dir, comm, progress, simulation_class, restart=None):
    """Collective: the run's Simulation (``simulation_class``, passed in: simulation.py imports
    this module); with ``normalize``, after the incident run, that run's transforms attached.
    ``restart``: a checkpoint the run is to continue from, refused before the incident run (the
    DFT monitor refuses one anyway: its transforms are not in checkpoints)."""
    if not wanted(case):
        return simulation_class(case, backend=backend, output_dir=output_dir, comm=comm, progress=progress)
    if restart is not None:
        raise InputError(f"{case.source}: [output.dft] cannot continue from a checkpoint: the transforms are not "
                         "saved in it (run from the start)")
    where = Path(output_dir if output_dir is not None else f"{case.name}_out") / DIRECTORY
    incident = simulation_class(incident_case(case), backend=backend, output_dir=where, comm=comm, progress=progress)
    incident.run()
    monitor = dft_monitor(incident)
    kept = (monitor.parts, monitor.sums)  # only the transforms outlive the incident run
    del incident, monitor
    run = simulation_class(case, backend=backend, output_dir=output_dir, comm=comm, progress=progress)
    dft_monitor(run).set_incident(*kept)
    return run


def check_attached(simulation) -> None:
    """A Simulation built directly (not through run_case, lobatto.run or `lobatto run`) has no
    incident run: refuse rather than write the fluxes without their normalisation."""
    if wanted(simulation.case) and dft_monitor(simulation).incident is None:
        raise InputError(f"{simulation.case.source}: [output.dft] normalize needs the run without the [material] "
                         "tables first: run the case with lobatto.run(case) or `lobatto run` (a Simulation built "
                         "directly does not make it)")
