"""Runs a case: mesh -> system -> stepper -> outputs -> summary.

:class:`Simulation` holds one set-up run (the Python API's object); ``run_case`` is what
``lobatto run`` calls. A run writes snapshots and ``summary.json`` into the output directory
(each written under a temporary name and renamed, so a crash never leaves a half-written
file). Nothing here knows a system's names: the system's class comes from the registry by
``[physics] equations`` and describes its own fields, diagnostics and summary entries.
"""

from __future__ import annotations

import math
import os
import time
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import numpy as np

from lobatto import __version__
from lobatto.backends import get_backend
from lobatto.errors import InputError, SolverError
from lobatto.integrators import Stepper, get_scheme, plan_steps
from lobatto.integrators.step_log import StepLog
from lobatto.integrators.step_size import first_dt, landing_dt, next_dt, steps_left
from lobatto.io.run_lock import claim_output_dir, release_claim
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.partition import partition_box, partition_mesh
from lobatto.machine.parallel import (allreduce, collective_errors, launched_local_size, node_local_rank, rank_and_size,
                              world_comm)
from lobatto.machine.power import EnergyMeter, energy_per_step
from lobatto.monitors import MonitorSet
from lobatto.machine.memory_items import RunLayout, with_items
from lobatto.machine.resources import available_host_memory, check_fits, estimate_run_memory, stepper_states
from lobatto.systems.registry import get_system

# How often (in steps) the state is checked for NaN/Inf between outputs: often enough to
# stop a blow-up quickly, rarely enough to cost nothing measurable.
FINITE_CHECK_STEPS = 20
#: a system that cannot gain energy stops when its energy exceeds this factor times the initial
ENERGY_GROWTH_LIMIT = 2.0
MAX_STEPS = 10**9  # a run asking for more has a mistake in [time] or in the mesh
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


def read_mesh_file(case):
    """The whole mesh of the case's mesh file (every rank reads all of it: docs/meshes.md)."""
    from lobatto.mesh.readers import mesh_from_file

    m = case.mesh
    return mesh_from_file(m.generator, m.file, case.discretization.order, m.boundaries, m.boundary)


def build_mesh(case, comm=None, whole=None):
    """This rank's part of the case's mesh (the whole mesh without comm), halo elements last.

    whole: a file mesh already read (read_mesh_file), else it is read here."""
    m = case.mesh
    rank, size = rank_and_size(comm)
    if m.from_file:
        whole = whole if whole is not None else read_mesh_file(case)
        mesh = whole if size == 1 else whole.subset(partition_mesh(whole, size, rank, case.parallel.partitioner))
        mesh.deform = deformation_from_expressions(m.deform)
        return mesh.halo_last()
    sides = {side: kind for side, kind in m.boundaries.items() if kind != "periodic"}
    element_ids = None if size == 1 else partition_box(m.elements, size, rank, case.parallel.partitioner)
    mesh = box_mesh(
        m.elements, m.lower, m.upper, m.periodic, boundary=m.boundary, boundaries=sides,
        deform=deformation_from_expressions(m.deform), element_ids=element_ids,
    )
    return mesh.halo_last()


def describe_mesh(case, mesh) -> dict:
    """The summary's account of the mesh: where it came from, its geometry order and names."""
    m = case.mesh
    about = {"generator": m.generator}
    if m.from_file:
        about["file"] = m.file
    about.update(elements=int(mesh.num_global_elements), geometry_order=mesh.geometry_order,
                 regions=list(mesh.region_names), surfaces=list(mesh.group_names))
    return about


def check_partition(mesh, case, comm) -> None:
    """Collective: the ranks' parts cover every element once (element count, sum of ids and
    sum of their squares over ranks). Graph partitioners (metis, rsb) run on every rank
    independently; this catches ranks that disagree instead of running on a broken mesh."""
    if comm is None:
        return
    ids = mesh.element_ids.astype(np.int64)
    total = mesh.num_global_elements
    prime = 2**31 - 1  # squares summed modulo a prime: no int64 overflow on any mesh size
    got = allreduce(comm, np.array([ids.size, ids.sum(), ((ids * ids) % prime).sum()], dtype=np.int64))
    expected = [total, total * (total - 1) // 2, (total - 1) * total * (2 * total - 1) // 6 % prime]
    if [int(got[0]), int(got[1]), int(got[2]) % prime] != expected:
        raise SolverError(f"[parallel] the '{case.parallel.partitioner}' partition computed on the "
                          f"{comm.Get_size()} ranks does not cover the {total} elements exactly once "
                          f"({int(got[0])} assigned); the ranks disagree (different numpy builds?)")


def check_memory(case, system_class, backend, comm=None, whole=None) -> dict:
    """Refuse (InputError, before any allocation) a run whose estimated memory per rank
    exceeds what this node (shared by its ranks) or this GPU has free; the estimate is returned.
    whole: the file mesh, read (its element count and geometry order count), else the box."""
    rank, size = rank_and_size(comm)
    total = whole.num_elements if whole is not None else math.prod(case.mesh.elements)
    estimate = estimate_run_memory(
        math.ceil(total / size), case.discretization.order, len(system_class.spec.fields),
        system_class.trace_components, backend.precision, ranks=size, backend=backend.name,
        # the stepper's states, or a system's own count where larger (its solvers' arrays and
        # history: a steady system, Navier-Stokes)
        integrator_states=max(stepper_states(get_scheme(case.time.integrator)) if case.time is not None else 1,
                              getattr(system_class, "memory_states", 1)),
        reference_kernels=not system_class.tuned_on(backend), partitioner=case.parallel.partitioner,
        exact_fields=case.exact.present, geometry_order=1 if whole is None else whole.geometry_order,
        file_elements=None if whole is None else total)
    # what the monitors, physics terms, solvers and checkpoints allocate, each part's own count
    estimate = with_items(estimate, memory_items(case, system_class, run_layout(case, system_class, backend, size,
                                                                                 total)))
    host = available_host_memory()
    host = None if host is None else host // launched_local_size()
    mesh_is = (f"[mesh] file {case.mesh.file} ({total} elements)" if whole is not None
               else f"[mesh] elements = {list(case.mesh.elements)}")
    what = (f"{case.source}: {mesh_is} at order {case.discretization.order}"
            + (f" on {size} ranks" if size > 1 else ""))
    check_fits(estimate, host, backend.memory_available(), what)
    return estimate


def run_layout(case, system_class, backend, ranks: int, total: int) -> RunLayout:
    """What the parts' memory estimates need (memory_items.RunLayout), from the case alone."""
    fields = len(system_class.spec.for_case(case.physics.values, InputError).fields)
    time_ = case.time
    steps = None
    if time_ is not None and time_.dt is not None and time_.target_cfl is None:
        steps = int(min(math.ceil(time_.t_end / time_.dt), MAX_STEPS))
    return RunLayout(elements=math.ceil(total / ranks), total_elements=total, order=case.discretization.order,
                     fields=fields, ranks=ranks, precision=backend.precision, backend=backend.name,
                     box=None if case.mesh.from_file else tuple(case.mesh.elements), steps=steps)


def memory_items(case, system_class, layout) -> list:
    """Each part's own estimate (memory_items.MemoryItem): the system's (its terms and solvers),
    the monitors' (probes.py, dft.py, nearfar.py) and the checkpoints' (restart.py)."""
    from lobatto.runner.restart import memory_estimate as checkpoint_memory

    return (list(system_class.memory_estimate(case, layout)) + MonitorSet.memory_estimate(case, layout)
            + checkpoint_memory(case, layout, system_class))


def build_system(case, backend, comm=None):
    """The case's system (by ``[physics] equations``) on this rank's part of its mesh."""
    system_class = get_system(case.physics.equations)
    with collective_errors(comm):  # a bad element may sit on one rank only
        with case_named(case):  # a file mesh is read first: its size is known from it only
            whole = read_mesh_file(case) if case.mesh.from_file else None
        check_memory(case, system_class, backend, comm, whole)
        with case_named(case):
            mesh = build_mesh(case, comm, whole)
            del whole  # a rank keeps its part only
            geometry = compute_geometry(mesh, case.discretization.order)
    check_partition(mesh, case, comm)
    # the same on every rank, and any rank that fails alone ends the job (collective_errors)
    with collective_errors(comm), case_named(case):
        return system_class.from_case(case, mesh, geometry, backend, comm)


@contextmanager
def case_named(case):
    """Input errors raised inside name the case file first."""
    try:
        yield
    except InputError as error:
        if str(error).startswith(case.source):
            raise
        raise InputError(f"{case.source}: {error}") from None


class SnapshotWriter:
    """Writes the requested formats for one state and remembers what it wrote.

    With several ranks each writes its own elements: HDF5 parts joined by a virtual
    dataset (io/hdf5_parts.py), and one Nek5000 file written by all ranks (io/nek5000_mpi.py).
    VTK: a .vtu piece per rank joined by rank 0's .pvtu, and a .pvd time series (io/vtk.py).
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
        self.vtk = None  # VTK pieces, .pvtu and the .pvd time series (io/vtk.py)
        if "vtk" in self.formats:
            from lobatto.io.vtk import VtkSeries

            self.vtk = VtkSeries(output_dir, self.name, self.rank, self.size)

    def write(self, u, step: int, t: float) -> None:
        """Collective: every rank writes its part, then rank 0 the files that join them; an
        error on any rank (a full disk, a read-only file) is raised on every rank."""
        from lobatto.io import hdf5, hdf5_parts, nek5000

        fields = self.system.backend.to_host(u).astype(np.float64, copy=False)
        names = self.system.field_names
        coords = self.system.geometry.coords
        order = self.system.order
        mesh = self.system.mesh
        attrs = dict(time=t, step=step, order=order, config_toml=self.config_toml,
                     compression=self.case.output.compression,
                     extra_attrs={"backend": self.system.backend.name, "ranks": self.size,
                                  "equations": self.system.name})
        files = []
        h5_path = self.output_dir / f"{self.name}_{step:06d}.h5"
        if "nek" in self.formats:
            self.nek_count += 1
        with collective_errors(self.comm):
            if "hdf5" in self.formats:
                if self.size == 1:
                    hdf5.write_snapshot(h5_path, coords, fields, names, **attrs)
                else:
                    hdf5_parts.write_snapshot_part(h5_path, self.rank, coords, fields, names, mesh.element_ids,
                                                   **attrs)
            if self.vtk is not None:
                self.vtk.write_piece(step, t, coords, fields, names, order, mesh, self.config_toml)
        if "nek" in self.formats:  # one file for all ranks, written together (MPI-IO: io/nek5000_mpi.py)
            velocity, pressure, scalars, *temperature = self.system.output_layout  # temperature: optional
            with collective_errors(self.comm):  # entered only once the per-rank writes above are agreed
                nek5000.write_field_file(
                    self.output_dir / nek5000.field_file_name(self.name, self.nek_count), coords,
                    dict(zip(names, fields)), t, step, order, velocity=velocity, pressure=pressure,
                    scalars=scalars, element_ids=mesh.element_ids + 1, comm=self.comm,
                    temperature=temperature[0] if temperature else None)
        with collective_errors(self.comm):  # the parts are complete on every rank now
            if self.rank == 0 and "hdf5" in self.formats and self.size > 1:
                hdf5_parts.write_virtual_snapshot(
                    h5_path, self.part_counts, order, names, np.float64,
                    {"time": t, "step": step, "order": order, "config": self.config_toml,
                     "layout": hdf5.LAYOUT, "field_names": list(names), "ranks": self.size,
                     "equations": self.system.name, "lobatto_version": __version__})
            if self.rank == 0 and "nek" in self.formats:
                nek5000.write_index(self.output_dir / f"{self.name}.nek5000", self.name, 1, self.nek_count)
            if self.rank == 0 and self.vtk is not None:
                self.vtk.write_index(step, t, names, mesh)
        if "hdf5" in self.formats:
            files.append(h5_path.name)
        if "nek" in self.formats:
            files.append(nek5000.field_file_name(self.name, self.nek_count, 0))
        if self.vtk is not None:
            files.append(self.vtk.dataset_name(step))
        self.records.append({"step": step, "time": t, "files": files})


class Simulation:
    """One run of a checked case, set up and ready to step.

        sim = Simulation(case, backend="cpu", output_dir="out")
        sim.advance(10)              # ten steps, no output
        sim.fields()["Ex"]           # this rank's values, a host array (E, n, n, n)
        summary = sim.run()          # the remaining steps, timed, with outputs and summary.json

    comm: an mpi4py communicator, None for serial, or "world" for COMM_WORLD when the
    program was started on several ranks. Progress is reported by rank 0 only.
    """

    def __init__(self, case, backend: str | None = None, output_dir: Path | str | None = None, comm="world",
                 progress: Callable[[int, int, float], None] | None = None):
        self.release_output_dir = lambda: None
        try:
            self.set_up(case, backend, output_dir, comm, progress)
        except BaseException:
            self.release_output_dir()  # a case refused at set-up leaves its directory free at once
            raise

    def set_up(self, case, backend, output_dir, comm, progress) -> None:
        if case.time is None:  # a steady system: lobatto/runner/steady.py runs it
            raise InputError(f"{case.source}: {case.physics.equations} is steady (no time steps): run it with "
                             "lobatto.run(case) or lobatto.runner.steady.SteadyRun, not Simulation")
        created = time.perf_counter()
        self.case = case
        self.comm = comm = world_comm() if comm == "world" else comm
        self.rank, self.size = rank_and_size(comm)
        self.output_dir = Path(output_dir if output_dir is not None else f"{case.name}_out")
        with collective_errors(comm):
            if self.rank == 0:  # one run per directory (io.run_lock): `lobatto run`'s lock, or a new one
                claim_output_dir(self.output_dir)
                self.release_output_dir = weakref.finalize(self, release_claim, self.output_dir)
            self.backend = get_backend(backend or case.backend.name, precision=case.backend.precision,
                                       device_id=node_local_rank(comm), rank=self.rank)
        if comm is not None:
            comm.Barrier()
        self.progress = progress if self.rank == 0 else None
        self.system = system = build_system(case, self.backend, comm=comm)
        with collective_errors(comm), case_named(case):  # a multistep scheme needs a system that takes it
            self.stepper = Stepper(system, get_scheme(case.time.integrator))
        self.min_spacing = min_spacing = allreduce(comm, system.geometry.min_spacing, "min")
        # dt from the flow's CFL number (system.courant) rather than a wave speed: variable dt
        # ([time] target_cfl) and the multistep schemes; the CFL number is then measured each step
        self.variable_dt = case.time.target_cfl is not None
        self.advective = self.variable_dt or self.stepper.multistep
        self.measures_cfl = callable(getattr(system, "courant", None)) and (
            self.advective or case.time.max_cfl is not None)
        self.last_cfl = self.largest_cfl = None
        self.dt_range = None  # (smallest, largest) step taken by this Simulation, when dt varies
        if not self.advective:
            with collective_errors(comm):  # the same on every rank: reported once
                dt = self.stable_dt(min_spacing)
                self.check_step_budget(case.time.t_end / dt, dt)
            self.steps, self.dt = plan_steps(case.time.t_end, dt)
        # a system with step_report(): a line per step (rank 0) and <output_dir>/steps.jsonl
        self.reports_steps = callable(getattr(system, "step_report", None))
        self.step_log = StepLog(self.output_dir, case.output.log_every) if self.reports_steps and self.rank == 0 else None
        if self.step_log is not None and self.step_log.prints:
            self.progress = None  # the step lines say the progress
        initial = system.evaluate_fields(case.initial.fields or {}, 0.0)
        self.check_given_fields(initial, "initial", 0.0)
        if case.exact.fields is not None:
            for t in (0.0, case.time.t_end):
                self.check_given_fields(system.evaluate_fields(case.exact.fields, t), "exact", t)
        self.u = self.backend.asarray(initial)
        self.step_count, self.t = 0, 0.0
        if self.advective:
            self.plan_from_courant()
        self.energy_initial = allreduce(comm, system.energy(self.u))
        self.writer = SnapshotWriter(case, system, self.output_dir, comm)
        with collective_errors(comm), case_named(case):  # [output.probes] and [output.integrals]
            self.series = MonitorSet.from_case(case, system, self.output_dir, comm)
        self.restarts: list[dict] = []  # the checkpoints this run continued from (restart.py)
        # When the operator does not depend on t, one step of fixed dt can be recorded once and
        # replayed (a CUDA graph on the GPU; a plain call elsewhere). Never a multistep step: its
        # coefficients change over the start-up steps (and with dt).
        self.advance_one = None if system.time_dependent or self.advective else self.backend.capture(
            lambda: self.stepper.step(self.u, 0.0, self.dt), self.stepper.graph_veto)
        self.setup_seconds = time.perf_counter() - created  # mesh, geometry, kernels built so far

    # Stepping -----------------------------------------------------------------------------
    def _step(self) -> None:
        start = time.perf_counter()
        dt, last = self.dt, False
        if self.variable_dt:  # the time left in equal whole steps, the last on t_end (step_size.landing_dt)
            dt, last = landing_dt(self.t, self.case.time.t_end, self.dt)
        if self.advance_one is not None:
            self.advance_one()
        else:
            self.stepper.step(self.u, self.t, dt)
        self.step_count += 1
        if self.variable_dt:  # t is the sum of the steps taken (exactly t_end at the last)
            self.t = self.case.time.t_end if last else self.t + dt
            low, high = self.dt_range or (dt, dt)
            self.dt_range = (min(low, dt), max(high, dt))
        else:
            self.t = self.step_count * self.dt
        if self.measures_cfl:
            self.measure_cfl(dt)
        if self.variable_dt:
            self.steps = self.step_count + steps_left(self.t, self.case.time.t_end, self.dt)
        if self.reports_steps:
            self.report_step(dt, start)

    @property
    def finished(self) -> bool:
        """The run has reached [time] t_end."""
        return self.step_count >= self.steps

    def advance(self, steps: int = 1) -> None:
        """``steps`` more steps (no output, no timing), with the state check at the end; while
        dt varies, no further than [time] t_end."""
        for _ in range(int(steps)):
            if self.variable_dt and self.finished:
                break
            self._step()
        self.check_state()

    def measure_cfl(self, dt: float) -> None:
        """Collective, after a step of size dt: its CFL number (the largest over ranks) stops the
        run when over [time] max_cfl, and sets the next step when dt varies."""
        cfl = float(self.system.courant(self.u, dt))
        cfl = allreduce(self.comm, cfl if math.isfinite(cfl) else math.inf, "max")
        self.last_cfl, self.largest_cfl = cfl, max(cfl, self.largest_cfl or 0.0)
        time_ = self.case.time
        if time_.max_cfl is not None and not cfl <= time_.max_cfl:
            change = (f"lower [time] target_cfl (now {time_.target_cfl})" if self.variable_dt else
                      f"lower [time] dt (now {dt:.3g})" if time_.dt is not None else
                      f"lower [time] cfl (now {time_.cfl}) or set a smaller [time] dt")
            self.fail(f"the CFL number of step {self.step_count} (t = {self.t:.6g}, dt = {dt:.3g}) is {cfl:.3g}, above "
                      f"[time] max_cfl = {time_.max_cfl}: {change}, or raise max_cfl if the flow is known to be stable")
        if self.variable_dt:
            self.dt = next_dt(dt, cfl, time_.target_cfl)

    def report_step(self, dt: float, start: float) -> None:
        """The system's step_report() for the step just taken (every rank: it may reduce), as a
        line (every [output] log_every steps) and a steps.jsonl record (rank 0)."""
        self.backend.synchronize()
        report = dict(self.system.step_report())
        if self.last_cfl is not None:
            report.setdefault("cfl", self.last_cfl)
        seconds = time.perf_counter() - start
        with collective_errors(self.comm):  # a full disk on rank 0 stops every rank
            if self.step_log is not None:
                self.step_log.record(self.step_count, self.t, dt, seconds, report, last=self.finished)

    def plan_from_courant(self) -> None:
        """Collective: the step of a run whose CFL number is the flow's (system.courant): [time]
        dt (fixed) or initial_dt (the first of variable steps), else target_cfl (variable) or cfl
        (fixed) over the initial state's CFL number per unit dt. A fixed dt is planned as
        plan_steps does; a variable one gives an estimate of the steps (updated each step)."""
        case, time_ = self.case, self.case.time
        with collective_errors(self.comm):
            given = time_.initial_dt if self.variable_dt else time_.dt
            dt = given
            if dt is None:
                cfl_key = "target_cfl" if self.variable_dt else "cfl"
                dt_key = "initial_dt" if self.variable_dt else "dt"
                if not callable(getattr(self.system, "courant", None)):
                    raise InputError(f"{case.source}: [time] {cfl_key} needs the flow's CFL number, which "
                                     f"{self.system.name} does not compute: set [time] {dt_key}")
                per_unit_dt = float(self.system.courant(self.u, 1.0))
                per_unit_dt = allreduce(self.comm, per_unit_dt if math.isfinite(per_unit_dt) else 0.0, "max")
                target = time_.target_cfl if self.variable_dt else time_.cfl
                dt = first_dt(target, per_unit_dt)
                if dt is None or not math.isfinite(dt):
                    raise InputError(f"{case.source}: [time] {cfl_key} = {target} gives no first step: the initial "
                                     f"fields have CFL number {per_unit_dt:.3g} per unit dt (a fluid at rest?); "
                                     f"set [time] {dt_key}")
            self.check_step_budget(time_.t_end / dt, dt)
        if self.variable_dt:
            self.dt, self.steps = dt, steps_left(0.0, time_.t_end, dt)
        else:
            self.steps, self.dt = plan_steps(time_.t_end, dt)

    def check_step_budget(self, steps: float, dt: float) -> None:
        if steps > MAX_STEPS:
            t_end = self.case.time.t_end
            raise InputError(f"{self.case.source}: [time] t_end = {t_end:.4g} takes {steps:.3g} steps of dt = "
                             f"{dt:.3g}, more than {MAX_STEPS:.0e}: shorten t_end or coarsen the mesh")

    # Checkpoints (restart.py, docs/restart.md) -------------------------------------------
    def checkpoint(self, path: Path | str | None = None) -> Path:
        """Collective: write a checkpoint of the current step (default directory
        ``<output_dir>/checkpoints/<name>_<step>``); returns its path."""
        from lobatto.runner.restart import save

        return save(self, path)

    def restart(self, path: Path | str) -> "Simulation":
        """Collective: continue from the checkpoint at ``path`` (written on any number of
        ranks, either backend); the case must have the same mesh, order, system and
        integrator. ``run()`` then goes on to [time] t_end with the checkpoint's dt."""
        from lobatto.runner.restart import resume

        resume(self, path)
        return self

    # Checks -------------------------------------------------------------------------------
    def stable_dt(self, min_spacing: float) -> float:
        """The largest step: [time] dt, or from cfl; refused (InputError) when it is not a
        positive number or is over the integrator's stability bound (unless cfl_check = false)."""
        case, system, scheme = self.case, self.system, self.stepper.scheme
        wave = system.wave_speed
        if not (math.isfinite(wave) and wave > 0):
            raise InputError(f"{case.source}: [physics] values give the wave speed {wave:.3g}; "
                             "it must be a positive finite number (check their magnitudes)")
        dt = case.time.dt if case.time.dt is not None else system.stable_time_step(case.time.cfl, min_spacing)
        cfl = dt * wave / min_spacing
        if not (math.isfinite(dt) and dt > 0 and math.isfinite(cfl)):
            raise InputError(f"{case.source}: the time step from [time] is {dt:.3g}; it must be a positive finite "
                             f"number (smallest GLL spacing {min_spacing:.3g}, wave speed {wave:.3g})")
        bound = system.spec.cfl_bounds.get((case.discretization.flux, scheme.name))
        if case.time.cfl_check and bound is not None and cfl > bound * (1 + 1e-12):
            given = f"dt = {dt:.4g} (cfl {cfl:.4g})" if case.time.dt is not None else f"cfl = {cfl:.4g}"
            raise InputError(f"{case.source}: [time] {given} is above the stability bound cfl {bound} of the "
                             f"{scheme.name} integrator with the {case.discretization.flux} flux of {system.name}; "
                             f"lower it (stable dt <= {bound * min_spacing / wave:.4g}), or set [time] "
                             "cfl_check = false to run anyway")
        return dt

    def check_given_fields(self, values: np.ndarray, section: str, t: float) -> None:
        """Collective: fields from [initial] / [exact] expressions are finite and small enough
        to square (|v| < 1e150), else InputError naming the field and a point."""
        limit = float(np.sqrt(np.finfo(self.backend.dtype).max)) / 16  # so that squares and sums stay finite
        with collective_errors(self.comm), np.errstate(all="ignore"):
            bad = ~(np.abs(values) < limit)  # NaN compares False
            if bad.any():
                c, *point = np.unravel_index(int(np.argmax(bad)), bad.shape)
                x = [float(self.system.geometry.coords[(a, *point)]) for a in range(3)]
                raise InputError(f"{self.case.source}: [{section}] {self.system.field_names[c]} is "
                                 f"{values[(c, *point)]:.3g} at (x, y, z) = ({x[0]:.4g}, {x[1]:.4g}, {x[2]:.4g}), "
                                 f"t = {t:.4g}; the fields must be finite and below {limit:.3g} in magnitude "
                                 f"({self.backend.precision})")

    def check_state(self) -> None:
        """Collective: the state is finite and, in a system that cannot gain energy, its energy
        has not grown by more than ENERGY_GROWTH_LIMIT (an unstable step). SolverError else."""
        system, comm = self.system, self.comm
        energy = allreduce(comm, system.energy(self.u))
        where = f"at step {self.step_count}, time {self.t:.6g}"
        if not math.isfinite(energy):
            finite = allreduce(comm, int(bool(self.backend.xp.isfinite(self.u).all())), "min")
            what = "non-finite field values (NaN/Inf)" if not finite else "field values too large to square"
            self.fail(f"{what} {where}: {self.unstable_hint()}")
        if system.energy_bounded and energy > ENERGY_GROWTH_LIMIT * self.energy_initial:
            self.fail(f"the discrete energy grew from {self.energy_initial:.4g} to {energy:.4g} {where}, though "
                      f"{system.name} without sources cannot gain energy: {self.unstable_hint()}")

    def unstable_hint(self) -> str:
        hint = f"the time step dt = {self.dt:.3g} may be over the stability limit; lower [time] "
        if self.advective:
            return hint + ("target_cfl" if self.variable_dt else "dt" if self.case.time.dt is not None else "cfl")
        if self.case.time.dt is not None:
            hint += f"dt (stable estimate at cfl 0.5: {self.system.stable_time_step(0.5, self.min_spacing):.3g})"
        else:
            hint += f"cfl (now {self.case.time.cfl})"
        if self.case.discretization.flux == "central":
            hint += "; with the central flux, under-resolved fields on curved meshes can also grow: try upwind"
        return hint

    def fail(self, message: str) -> None:
        """Raise a SolverError that every rank raises alike (all checks above reduce first)."""
        error = SolverError(message)
        error.collective = True
        raise error

    # Results ------------------------------------------------------------------------------
    def fields(self) -> dict:
        """{field name: this rank's values as a float64 host array (E, n, n, n)}."""
        values = self.backend.to_host(self.u).astype(np.float64, copy=False)
        return dict(zip(self.system.field_names, values))

    def coordinates(self) -> np.ndarray:
        """(3, E, n, n, n) x, y, z of this rank's GLL points (host array)."""
        return self.system.geometry.coords

    def errors(self) -> dict | None:
        """L2 and max errors against the case's [exact] fields at the current time, or None."""
        if self.case.exact.fields is None:
            return None
        system, comm = self.system, self.comm
        squares, maxima = system.error_sums(self.u, system.evaluate_fields(self.case.exact.fields, self.t))
        squares, maxima = allreduce(comm, squares), allreduce(comm, maxima, "max")
        errors = {name: {"l2": math.sqrt(squares[c]), "max": float(maxima[c])}
                  for c, name in enumerate(system.field_names)}
        errors["all"] = {"l2": math.sqrt(float(squares.sum())), "max": float(maxima.max())}
        return errors

    # The timed run ------------------------------------------------------------------------
    def run(self) -> dict:
        """The remaining steps to t_end, timed; snapshots every [output] every steps and at
        the end; summary.json (rank 0). Returns the summary; the output directory's lock is
        released however it ends."""
        try:
            return self.run_steps()
        finally:
            self.release_output_dir()

    def close(self) -> None:
        """Done with this run's output directory (without running to t_end): another run of
        this process may write there now (io.run_lock: one live run per directory). The fields
        stay readable."""
        self.release_output_dir()

    def run_steps(self) -> dict:
        from lobatto.io.summary import write_summary

        case, backend = self.case, self.backend
        steps, first = self.steps, self.step_count + 1  # steps: the last step (an estimate while dt varies)
        every = case.output.every
        # Steps are queued without waiting on the device; the loop is timed as a whole and the
        # time spent writing snapshots is taken out. The rate leaves out the first WARMUP_STEPS
        # (kernel compilation, graph recording) when there are more steps than that.
        series = self.series  # probes and integrals (probes.py): the first sample is the start
        if series is not None:
            series.start(self.u, self.step_count, self.t, steps)
        output_seconds = 0.0
        # energy over the rate window, outputs included (docs/energy.md); opened before the clock
        meter = EnergyMeter(backend.name, getattr(backend, "device_id", None), self.comm)
        backend.synchronize()
        loop_start = time.perf_counter()
        meter.start()
        rate_start, rate_first = loop_start, first
        warmup_end = first - 1 + WARMUP_STEPS
        from lobatto.runner.restart import Schedule

        checkpoints = Schedule(self) if case.checkpoint.enabled else None
        while not self.finished:
            self._step()
            step, steps = self.step_count, self.steps
            if step == warmup_end and steps > warmup_end:
                # the state check's kernels are compiled on first use too (seconds on a machine
                # with an empty kernel cache), and its reduction over ranks lines them up
                self.check_state()
                backend.synchronize()
                rate_start, rate_first = time.perf_counter() - output_seconds, warmup_end + 1
                meter.start()
            if step % FINITE_CHECK_STEPS == 0 or step == steps or (every and step % every == 0):
                self.check_state()
            if every and step % every == 0 and step != steps:
                backend.synchronize()
                write_start = time.perf_counter()
                self.writer.write(self.u, step, self.t)
                output_seconds += time.perf_counter() - write_start
            if checkpoints is not None:
                output_seconds += checkpoints.after_step(step, steps)
            if series is not None:
                output_seconds += series.after_step(self.u, step, self.t, steps)
            if self.progress is not None:
                self.progress(step, steps, self.t)
        backend.synchronize()
        loop_end = time.perf_counter() - output_seconds
        self.energy_report = meter.stop()  # collective: the same on every rank
        rate_steps = self.step_count - rate_first + 1
        final_start = time.perf_counter()
        self.writer.write(self.u, self.step_count, self.t)
        if checkpoints is not None:
            checkpoints.at_end()
        if series is not None:
            series.close()
        self.final_output_seconds = time.perf_counter() - final_start
        self.warmup = (rate_first - first, rate_start - loop_start)  # steps and seconds before the rate window
        if self.step_log is not None:
            self.step_log.close()

        compute_seconds = allreduce(self.comm, loop_end - loop_start, "max")
        self.output_seconds = allreduce(self.comm, output_seconds, "max")
        seconds_per_step = allreduce(self.comm, (loop_end - rate_start) / max(rate_steps, 1), "max")
        if rate_steps <= 0:  # nothing left to step (a restart at t_end): no rate to report
            seconds_per_step = 0.0
        self.summary = self.make_summary(compute_seconds, seconds_per_step, rate_steps)
        if self.rank == 0:
            write_summary(self.output_dir / "summary.json", self.summary)
        return self.summary

    def make_summary(self, compute_seconds, seconds_per_step, rate_steps) -> dict:
        system, stepper, comm = self.system, self.stepper, self.comm
        points = allreduce(comm, system.points)
        path = stepper.describe()
        summary = {
            "case": self.case.name,
            "lobatto_version": __version__,
            "equations": system.name,
            "order": system.order,
            "elements": allreduce(comm, system.num_elements),
            "mesh": describe_mesh(self.case, system.mesh),
            "points": points,
            "steps": self.step_count,
            "dt": self.dt,
            "t_final": self.t,
            "integrator": path["integrator"],
            "step_path": path["step_path"],
            "step_kernel": path.get("kernel"),
            "cuda_graph": bool(self.advance_one is not None and self.advance_one.captured),
            "cuda_graph_note": None if self.advance_one is None else self.advance_one.fallback_reason,
            "stages": path["stages"],
            "wall_seconds": compute_seconds,
            "seconds_per_step": seconds_per_step,
            "rate_steps": rate_steps,  # the steps seconds_per_step is measured over
            "time_accounting": self.time_accounting(compute_seconds, seconds_per_step, rate_steps),
            "point_steps_per_second": points / seconds_per_step if seconds_per_step > 0 else None,
            "backend": system.backend.name,
            "precision": system.backend.precision,
            "ranks": self.size,
            "threads": self.threads(),
        }
        flops = system.flops_per_step(stepper.stages)
        if flops is not None and seconds_per_step > 0:
            summary["gflops"] = allreduce(comm, flops) / seconds_per_step / 1e9
        if self.variable_dt and self.dt_range is not None:
            summary["dt_range"] = list(self.dt_range)  # the smallest and largest step taken
        if self.last_cfl is not None:
            summary["cfl"] = {"last": self.last_cfl, "max": self.largest_cfl,
                              "target": self.case.time.target_cfl, "limit": self.case.time.max_cfl}
        summary.update(system.summary(stepper, comm))
        if "time_per_part" in summary:  # a system's own split of the step; outputs are the driver's
            summary["time_per_part"]["output"] = getattr(self, "output_seconds", 0.0)
        summary["energy"] = {"initial": self.energy_initial, "final": allreduce(comm, system.energy(self.u))}
        if getattr(self, "energy_report", None) is not None:  # joules used in the rate window
            summary["energy_use"] = energy_per_step(self.energy_report, rate_steps, points)
        summary["outputs"] = self.writer.records
        if self.series is not None:
            summary["time_series"] = self.series.describe()
        if self.restarts:
            summary["restarts"] = self.restarts
        summary["config"] = self.case.to_dict()
        errors = self.errors()
        if errors is not None:
            summary["errors"] = errors
        return summary


    def time_accounting(self, compute_seconds, seconds_per_step, rate_steps) -> dict:
        """Where the run's time went, largest over ranks: set-up (mesh, geometry, kernels built
        before the loop), the warm-up steps before the rate window (compilation, graph
        recording), the rate window (rate_steps x seconds_per_step), the snapshots, checkpoints
        and time series written during the loop, and the final writes. wall_seconds is the loop
        without outputs: warm-up + rate window (docs/output.md)."""
        comm = self.comm
        warmup_steps, warmup_seconds = self.warmup
        return {"setup_seconds": allreduce(comm, self.setup_seconds, "max"),
                "warmup_steps": int(warmup_steps), "warmup_seconds": allreduce(comm, warmup_seconds, "max"),
                "rate_seconds": seconds_per_step * rate_steps, "loop_seconds": compute_seconds,
                "output_seconds": self.output_seconds,
                "final_output_seconds": allreduce(comm, self.final_output_seconds, "max")}

    def threads(self) -> dict:
        """Threads per rank of the compiled kernels, and who chose that number."""
        described = self.backend.describe()
        if os.environ.get("LOBATTO_THREADS_SET_BY"):
            chosen = os.environ["LOBATTO_THREADS_SET_BY"]
        elif os.environ.get("OMP_NUM_THREADS"):
            chosen = "OMP_NUM_THREADS"
        else:
            chosen = "default (all cores)"
        return {"per_rank": described.get("threads", os.environ.get("OMP_NUM_THREADS")), "set_by": chosen}


def run_case(case, backend: str | None = None, output_dir: Path | str | None = None,
             progress: Callable[[int, int, float], None] | None = None, comm="world", restart=None,
             before_writing: Callable[[], None] | None = None) -> dict:
    """Solve the case (continuing from the checkpoint ``restart`` if given); write outputs and
    summary.json; return the summary. ``before_writing`` (collective) is called once the run is
    set up, before its first output (lobatto run: removing what --overwrite replaces)."""
    if get_system(case.physics.equations).spec.steady:  # one solve, no time steps: steady.py
        from lobatto.runner.steady import run_steady

        return run_steady(case, backend, output_dir, progress, comm, restart, before_writing)
    simulation = Simulation(case, backend=backend, output_dir=output_dir, comm=comm, progress=progress)
    if restart is not None:
        simulation.restart(restart)
    if before_writing is not None:
        before_writing()
    return simulation.run()
