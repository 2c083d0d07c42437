"""Runs a case: mesh -> system -> stepper -> outputs -> summary.

`run_case` is what `lobatto run` calls. It writes snapshots and `summary.json` into the
output directory (each written under a temporary name and renamed, so a crash never leaves
a half-written file) and returns the summary dictionary.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Callable

import numpy as np

from lobatto import __version__
from lobatto.backends import get_backend
from lobatto.errors import InputError, SolverError
from lobatto.integrators import Stepper, get_scheme, plan_steps, stable_time_step
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.partition import partition_box
from lobatto.parallel import allreduce, collective_errors, node_local_rank, rank_and_size, world_comm
from lobatto.systems.maxwell.system import FIELD_NAMES, MaxwellSystem

# How often (in steps) the state is checked for NaN/Inf between outputs: often enough to
# stop a blow-up quickly, rarely enough to cost nothing measurable.
FINITE_CHECK_STEPS = 20
WARMUP_STEPS = 2  # compile kernels, record the step graph (and, under overlap = "auto", its trial)


def deformation_from_expressions(deform: dict):
    """A callable (x, y, z) -> (dx, dy, dz) from the [mesh.deform] expressions, or None."""
    if not deform:
        return None

    def displacement(x, y, z):
        return tuple(
            deform[axis].evaluate(np, x=x, y=y, z=z) if axis in deform else np.zeros_like(x)
            for axis in ("x", "y", "z")
        )

    return displacement


def build_mesh(case, comm=None):
    """This rank's part of the case's mesh (the whole mesh without comm), halo elements last."""
    m = case.mesh
    sides = {side: kind for side, kind in m.boundaries.items() if kind != "periodic"}
    rank, size = rank_and_size(comm)
    element_ids = None if size == 1 else partition_box(m.elements, size, rank, case.parallel.partitioner)
    mesh = box_mesh(
        m.elements, m.lower, m.upper, m.periodic, boundary=m.boundary, boundaries=sides,
        deform=deformation_from_expressions(m.deform), element_ids=element_ids,
    )
    return mesh.halo_last()


def check_partition(mesh, case, comm) -> None:
    """Collective: the ranks' parts cover every element once (element count, sum of ids and
    sum of their squares over ranks). Graph partitioners (metis, rsb) run on every rank
    independently; this catches ranks that disagree instead of running on a broken mesh."""
    if comm is None:
        return
    ids = mesh.element_ids.astype(np.int64)
    total = int(np.prod(case.mesh.elements))
    prime = 2**31 - 1  # squares summed modulo a prime: no int64 overflow on any mesh size
    got = allreduce(comm, np.array([ids.size, ids.sum(), ((ids * ids) % prime).sum()], dtype=np.int64))
    expected = [total, total * (total - 1) // 2, (total - 1) * total * (2 * total - 1) // 6 % prime]
    if [int(got[0]), int(got[1]), int(got[2]) % prime] != expected:
        raise SolverError(f"[parallel] the '{case.parallel.partitioner}' partition computed on the "
                          f"{comm.Get_size()} ranks does not cover the {total} elements exactly once "
                          f"({int(got[0])} assigned); the ranks disagree (different numpy builds?)")


def build_system(case, backend, comm=None) -> MaxwellSystem:
    if case.physics.equations != "maxwell":
        raise InputError(f"{case.source}: [physics] equations '{case.physics.equations}' is not available")
    with collective_errors(comm):  # a bad element may sit on one rank only
        mesh = build_mesh(case, comm)
        geometry = compute_geometry(mesh, case.discretization.order)
    check_partition(mesh, case, comm)
    return MaxwellSystem(
        mesh, case.discretization.order, backend, geometry=geometry,
        epsilon=case.physics.epsilon, mu=case.physics.mu, flux=case.discretization.flux,
        comm=comm, exchange_method=case.parallel.method, exchange=case.parallel.exchange,
        overlap=case.parallel.overlap,
    )


class SnapshotWriter:
    """Writes the requested formats for one state and remembers what it wrote.

    With several ranks each writes its own elements: HDF5 parts joined by a virtual
    dataset (io/hdf5_parts.py), and Nek5000's own multi-file snapshots (one file per rank).
    """

    def __init__(self, case, system, output_dir: Path, comm=None):
        self.case, self.system, self.output_dir, self.comm = case, system, output_dir, comm
        self.rank, self.size = rank_and_size(comm)
        self.formats = tuple(case.output.formats)
        self.name = case.output.name
        self.config_toml = case.to_toml()
        self.records: list[dict] = []
        self.nek_count = 0
        self.part_counts = [system.num_elements] if comm is None else comm.allgather(system.num_elements)

    def write(self, u, step: int, t: float) -> None:
        from lobatto.io import hdf5, hdf5_parts, nek5000

        fields = self.system.backend.to_host(u).astype(np.float64, copy=False)
        coords = self.system.geometry.coords
        order = self.system.order
        mesh = self.system.mesh
        attrs = dict(time=t, step=step, order=order, config_toml=self.config_toml,
                     extra_attrs={"backend": self.system.backend.name, "ranks": self.size})
        files = []
        if "hdf5" in self.formats:
            path = self.output_dir / f"{self.name}_{step:06d}.h5"
            if self.size == 1:
                hdf5.write_snapshot(path, coords, fields, FIELD_NAMES, **attrs)
            else:
                hdf5_parts.write_snapshot_part(path, self.rank, coords, fields, FIELD_NAMES, mesh.element_ids, **attrs)
                self.comm.Barrier()
                if self.rank == 0:
                    hdf5_parts.write_virtual_snapshot(
                        path, self.part_counts, order, FIELD_NAMES, np.float64,
                        {"time": t, "step": step, "order": order, "config": self.config_toml,
                         "layout": hdf5.LAYOUT, "field_names": list(FIELD_NAMES), "ranks": self.size,
                         "lobatto_version": __version__})
            files.append(path.name)
        if "nek" in self.formats:
            self.nek_count += 1
            path = self.output_dir / nek5000.field_file_name(self.name, self.nek_count, self.rank)
            nek5000.write_field_file(path, coords, fields, t, step, order, element_ids=mesh.element_ids + 1,
                                     nelgt=mesh.num_global_elements, fid=self.rank, nfiles=self.size)
            if self.rank == 0:
                nek5000.write_index(self.output_dir / f"{self.name}.nek5000", self.name, 1, self.nek_count)
            files.append(nek5000.field_file_name(self.name, self.nek_count, 0))
        if self.comm is not None:
            self.comm.Barrier()
        self.records.append({"step": step, "time": t, "files": files})


def run_case(case, backend: str | None = None, output_dir: Path | str | None = None,
             progress: Callable[[int, int, float], None] | None = None, comm="world") -> dict:
    """Solve the case; write outputs and summary.json; return the summary.

    comm: an mpi4py communicator, None for serial, or "world" for COMM_WORLD when the
    program was started on several ranks. Progress is reported by rank 0 only.
    """
    from lobatto.io.summary import write_summary

    comm = world_comm() if comm == "world" else comm
    rank, size = rank_and_size(comm)
    output_dir = Path(output_dir if output_dir is not None else f"{case.name}_out")
    with collective_errors(comm):
        if rank == 0:
            output_dir.mkdir(parents=True, exist_ok=True)
        backend_obj = get_backend(backend or case.backend.name, precision=case.backend.precision,
                                  device_id=node_local_rank(comm), rank=rank)
    if comm is not None:
        comm.Barrier()
        progress = progress if rank == 0 else None
    system = build_system(case, backend_obj, comm=comm)
    scheme = get_scheme(case.time.integrator)
    stepper = Stepper(system, scheme)

    min_spacing = allreduce(comm, system.geometry.min_spacing, "min")
    dt_max = case.time.dt if case.time.dt is not None else stable_time_step(case.time.cfl, min_spacing, system.wave_speed)
    steps, dt = plan_steps(case.time.t_end, dt_max)

    initial = case.initial.fields or {}
    u = backend_obj.asarray(system.evaluate_fields(initial, 0.0))
    energy_initial = allreduce(comm, system.energy(u))
    writer = SnapshotWriter(case, system, output_dir, comm)
    every = case.output.every

    # When the operator does not depend on t, one step of fixed dt can be recorded once and
    # replayed (a CUDA graph on the GPU; a plain call elsewhere).
    veto = getattr(stepper.whole_step, "graph_veto", None)
    advance = None if system.time_dependent else backend_obj.capture(lambda: stepper.step(u, 0.0, dt), veto)
    # Steps are queued without waiting on the device; the loop is timed as a whole and the
    # time spent writing snapshots is taken out. The rate leaves out the first WARMUP_STEPS
    # (kernel compilation, graph recording) when there are more steps than that.
    t, output_seconds = 0.0, 0.0
    backend_obj.synchronize()
    loop_start = time.perf_counter()
    rate_start, rate_steps = loop_start, steps
    for step in range(1, steps + 1):
        advance() if advance is not None else stepper.step(u, t, dt)
        t = step * dt
        if step == WARMUP_STEPS and steps > WARMUP_STEPS:
            # the finite check's kernels are compiled on first use too (seconds on a machine
            # with an empty kernel cache), and its reduction over ranks lines them up
            check_finite(system, u, step, t, dt, case, comm)
            backend_obj.synchronize()
            rate_start, rate_steps = time.perf_counter() - output_seconds, steps - WARMUP_STEPS
        if step % FINITE_CHECK_STEPS == 0 or step == steps or (every and step % every == 0):
            check_finite(system, u, step, t, dt, case, comm)
        if every and step % every == 0 and step != steps:
            backend_obj.synchronize()
            write_start = time.perf_counter()
            writer.write(u, step, t)
            output_seconds += time.perf_counter() - write_start
        if progress is not None:
            progress(step, steps, t)
    backend_obj.synchronize()
    loop_end = time.perf_counter() - output_seconds
    compute_seconds = loop_end - loop_start
    writer.write(u, steps, t)

    compute_seconds = allreduce(comm, compute_seconds, "max")
    seconds_per_step = allreduce(comm, (loop_end - rate_start) / rate_steps, "max")
    summary = make_summary(case, system, stepper, u, steps, t, dt, compute_seconds, energy_initial, writer, comm,
                           advance, seconds_per_step, rate_steps)
    if rank == 0:
        write_summary(output_dir / "summary.json", summary)
    return summary


def check_finite(system, u, step, t, dt, case, comm=None) -> None:
    xp = system.backend.xp
    if allreduce(comm, int(bool(xp.isfinite(u).all())), "min"):
        return
    hint = (f"the time step dt = {dt:.3g} may be over the stability limit; lower [time] "
            + (f"dt (stable estimate at cfl 0.5: {0.5 * system.geometry.min_spacing / system.wave_speed:.3g})"
               if case.time.dt is not None else f"cfl (now {case.time.cfl})"))
    raise SolverError(f"non-finite field values (NaN/Inf) at step {step}, time {t:.6g}: {hint}")


def overlap_summary(system, stepper, comm) -> dict:
    """The overlap setting, whether it was used, and, under "auto", the trial's timings."""
    whole = stepper.whole_step
    ranks = rank_and_size(comm)[1]
    if whole is not None and getattr(whole, "ghosts", None) is not None:
        enabled = whole.overlap
    else:  # the stage-by-stage path overlaps unless told not to; one rank has nothing to overlap
        enabled = ranks > 1 and system.overlap is not False
    out = {"setting": system.overlap, "enabled": bool(enabled),
           "interior_elements": allreduce(comm, system.split),
           "elements_after_exchange": allreduce(comm, system.num_elements - system.split)}
    trial = getattr(whole, "auto_overlap", None)
    if trial is not None:
        out["auto_trial"] = {"seconds_per_step_with": trial["seconds_with"],
                             "seconds_per_step_without": trial["seconds_without"]}
    return out


def make_summary(case, system, stepper, u, steps, t, dt, compute_seconds, energy_initial, writer, comm,
                 advance, seconds_per_step, rate_steps) -> dict:
    points = allreduce(comm, system.points)
    elements = allreduce(comm, system.num_elements)
    summary = {
        "case": case.name,
        "lobatto_version": __version__,
        "order": system.order,
        "elements": elements,
        "points": points,
        "steps": steps,
        "dt": dt,
        "t_final": t,
        "integrator": stepper.scheme.name,
        "step_path": stepper.path,
        "cuda_graph": bool(getattr(advance, "captured", False)),
        "cuda_graph_note": getattr(advance, "fallback_reason", None),
        "stages": stepper.stages,
        "wall_seconds": compute_seconds,
        "seconds_per_step": seconds_per_step,
        "rate_steps": rate_steps,  # the steps seconds_per_step is measured over
        "point_steps_per_second": points / seconds_per_step,
        "gflops": allreduce(comm, system.flops_per_step(stepper.stages)) / seconds_per_step / 1e9,
        "backend": system.backend.name,
        "precision": system.backend.precision,
        "ranks": rank_and_size(comm)[1],
        # the whole-step path exchanges ghost traces itself (backends/cuda/fused.py)
        "exchange_method": getattr(stepper.whole_step, "method", system.exchange.method),
        "exchange": getattr(stepper.whole_step, "exchange", system.exchange.exchange),
        "exchange_detail": (stepper.whole_step or system.exchange).describe(),
        "overlap": overlap_summary(system, stepper, comm),
        "energy": {"initial": energy_initial, "final": allreduce(comm, system.energy(u))},
        "outputs": writer.records,
        "config": case.to_dict(),
    }
    if case.exact.fields is not None:
        squares, maxima = system.error_sums(u, system.evaluate_fields(case.exact.fields, t))
        squares, maxima = allreduce(comm, squares), allreduce(comm, maxima, "max")
        errors = {name: {"l2": math.sqrt(squares[c]), "max": float(maxima[c])} for c, name in enumerate(FIELD_NAMES)}
        errors["all"] = {"l2": math.sqrt(float(squares.sum())), "max": float(maxima.max())}
        summary["errors"] = errors
    return summary
