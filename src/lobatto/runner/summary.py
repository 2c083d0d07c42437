"""The summary of a time-dependent run (summary.json, docs/output.md): what was run, how fast,
where the time went, and the system's own entries. Functions of a finished Simulation; every
rank calls them (the counts and times are reduced over ranks), rank 0 writes the file."""

from __future__ import annotations

import os

from lobatto import __version__
from lobatto.machine.parallel import allreduce
from lobatto.machine.power import energy_per_step
from lobatto.runner.build import describe_mesh

__all__ = ["make_summary", "threads", "time_accounting"]


def make_summary(sim, compute_seconds, seconds_per_step, rate_steps) -> dict:
    """Collective: the summary of ``sim`` after its run loop (Simulation.run)."""
    system, stepper, comm = sim.system, sim.stepper, sim.comm
    points = allreduce(comm, system.points)
    path = stepper.describe()
    summary = {
        "case": sim.case.name,
        "lobatto_version": __version__,
        "equations": system.name,
        "order": system.order,
        "elements": allreduce(comm, system.num_elements),
        "mesh": describe_mesh(sim.case, system.mesh),
        "points": points,
        "steps": sim.step_count,
        "dt": sim.dt,
        "t_final": sim.t,
        "integrator": path["integrator"],
        "step_path": path["step_path"],
        "step_kernel": path.get("kernel"),
        "cuda_graph": bool(sim.advance_one is not None and sim.advance_one.captured),
        "cuda_graph_note": None if sim.advance_one is None else sim.advance_one.fallback_reason,
        "stages": path["stages"],
        "wall_seconds": compute_seconds,
        "seconds_per_step": seconds_per_step,
        "rate_steps": rate_steps,  # the steps seconds_per_step is measured over
        "time_accounting": sim.time_accounting(compute_seconds, seconds_per_step, rate_steps),
        "point_steps_per_second": points / seconds_per_step if seconds_per_step > 0 else None,
        "backend": system.backend.name,
        "precision": system.backend.precision,
        "ranks": sim.size,
        "threads": sim.threads(),
    }
    flops = system.flops_per_step(stepper.stages)
    if flops is not None and seconds_per_step > 0:
        summary["gflops"] = allreduce(comm, flops) / seconds_per_step / 1e9
    if getattr(sim, "step_check", None) is not None:  # dt against the operator's spectral radius
        summary["step_check"] = sim.step_check
    if getattr(sim, "guard", None) is not None:  # how close the run came to the growth guard's stop
        summary["growth_check"] = sim.guard.record()
    if sim.variable_dt and sim.dt_range is not None:
        summary["dt_range"] = list(sim.dt_range)  # the smallest and largest step taken
    if sim.last_cfl is not None:
        summary["cfl"] = {"last": sim.last_cfl, "max": sim.largest_cfl,
                          "target": sim.case.time.target_cfl, "limit": sim.case.time.max_cfl}
    summary.update(system.summary(stepper, comm))
    if "time_per_part" in summary:  # a system's own split of the step; outputs are the run loop's
        summary["time_per_part"]["output"] = getattr(sim, "output_seconds", 0.0)
    summary["energy"] = {"initial": sim.energy_initial, "final": allreduce(comm, system.energy(sim.u))}
    if getattr(sim, "energy_report", None) is not None:  # joules used in the rate window
        summary["energy_use"] = energy_per_step(sim.energy_report, rate_steps, points)
    summary["outputs"] = sim.writer.records
    if sim.series is not None:
        summary["time_series"] = sim.series.describe()
    if sim.restarts:
        summary["restarts"] = sim.restarts
    if getattr(sim, "steady", None) is not None:  # [time] steady_tolerance (steady_stop.py)
        summary["stopped"] = "steady" if sim.steady.reached else "t_end"
        summary["steady"] = sim.steady.describe()
    if getattr(sim, "decay", None) is not None:  # [time] until_decayed (decay_stop.py)
        if not summary.get("stopped") == "steady":
            summary["stopped"] = "decayed" if sim.decay.reached else "t_end"
        summary["decay"] = sim.decay.describe()
    summary["config"] = sim.case.to_dict()
    errors = sim.errors()
    if errors is not None:
        summary["errors"] = errors
    return summary


def time_accounting(sim, compute_seconds, seconds_per_step, rate_steps) -> dict:
    """Where the run's time went, largest over ranks: set-up (mesh, geometry, kernels built
    before the loop), the warm-up steps before the rate window (compilation, graph
    recording), the rate window (rate_steps x seconds_per_step), the snapshots, checkpoints
    and time series written during the loop, and the final writes. wall_seconds is the loop
    without outputs: warm-up + rate window (docs/output.md)."""
    comm = sim.comm
    warmup_steps, warmup_seconds = sim.warmup
    return {"setup_seconds": allreduce(comm, sim.setup_seconds, "max"),
            "warmup_steps": int(warmup_steps), "warmup_seconds": allreduce(comm, warmup_seconds, "max"),
            "rate_seconds": seconds_per_step * rate_steps, "loop_seconds": compute_seconds,
            "output_seconds": sim.output_seconds,
            "final_output_seconds": allreduce(comm, sim.final_output_seconds, "max")}


def threads(backend) -> dict:
    """Threads per rank of the compiled kernels, and who chose that number."""
    described = backend.describe()
    if os.environ.get("LOBATTO_THREADS_SET_BY"):
        chosen = os.environ["LOBATTO_THREADS_SET_BY"]
    elif os.environ.get("OMP_NUM_THREADS"):
        chosen = "OMP_NUM_THREADS"
    else:
        chosen = "default (all cores)"
    return {"per_rank": described.get("threads", os.environ.get("OMP_NUM_THREADS")), "set_by": chosen}
