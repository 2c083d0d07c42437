"""Runs a case: mesh -> system -> stepper -> outputs -> summary.

:class:`Simulation` holds one set-up run (the Python API's object): its set-up, the step loop
and the state checks; ``run_case`` is what ``lobatto run`` calls. What it is built from is
build.py, its dt, steps and checkpoint times schedule.py, its snapshots snapshots.py, its
checkpoints restart.py and its summary.json summary.py. A run writes snapshots and
``summary.json`` into the output directory (each written under a temporary name and renamed,
so a crash never leaves a half-written file). Nothing here knows a system's names: the
system's class comes from the registry by ``[physics] equations`` and describes its own
fields, diagnostics and summary entries.
"""

from __future__ import annotations

import math
import time
import weakref
from pathlib import Path
from typing import Callable

import numpy as np

from lobatto.backends import get_backend
from lobatto.errors import InputError, SolverError
from lobatto.integrators import Stepper, get_scheme, plan_steps
from lobatto.integrators.step_log import StepLog
from lobatto.integrators.step_size import landing_dt, next_dt, steps_left
from lobatto.io.run_lock import claim_output_dir, release_claim
from lobatto.machine.parallel import allreduce, collective_errors, node_local_rank, rank_and_size, world_comm
from lobatto.machine.power import EnergyMeter
from lobatto.monitors import MonitorSet
from lobatto.runner import normalization, ports, schedule, step_check, summary
from lobatto.runner.build import build_system, case_named
from lobatto.runner.decay_stop import DecayStop
from lobatto.runner.growth_guard import GrowthGuard, largest_fields
from lobatto.runner.restart import resume, save
from lobatto.runner.snapshots import SnapshotWriter
from lobatto.runner.steady import run_steady
from lobatto.runner.steady_stop import SteadyStop
from lobatto.systems.registry import get_system

__all__ = ["Simulation", "run_case"]

# How often (in steps) the state is checked for NaN/Inf between outputs: often enough to
# stop a blow-up quickly, rarely enough to cost nothing measurable.
FINITE_CHECK_STEPS = 20
#: a system that cannot gain energy stops when its energy exceeds this factor times the initial
ENERGY_GROWTH_LIMIT = 2.0
WARMUP_STEPS = 2  # compile kernels, record the step graph (and, under overlap = "auto", its trial)


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
        self.step_check = None  # the check of a fixed dt against the operator (step_check.py)
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
        self.time_origin = (0, 0.0)  # (step, t) that fixed steps count from (a restart onto another mesh)
        if self.advective:
            self.plan_from_courant()
        self.energy_initial = allreduce(comm, system.energy(self.u))
        # a linear system that may gain energy: the growth guard instead of the 2x stop (growth_guard.py)
        self.guard = None
        if system.growth_guarded and not allreduce(comm, int(system.energy_bounded), "min"):
            if case.time.growth_check:
                self.guard = GrowthGuard(system, comm)
                self.guard.start(0, 0.0, self.energy_initial)
            elif self.rank == 0:  # switched off, the run would exit 0 after any growth short of overflow
                print("lobatto: warning: [time] growth_check = false: a growing energy does not stop this run; only "
                      "non-finite fields (NaN/inf, or too large to square) stop it, with exit 1", flush=True)
        self.writer = SnapshotWriter(case, system, self.output_dir, comm)
        with collective_errors(comm), case_named(case):  # the case's monitors (monitors/run_set.py)
            self.series = MonitorSet.from_case(case, system, self.output_dir, comm)
        self.steady = SteadyStop(self) if case.time.steady_tolerance is not None else None  # checkpointed
        with collective_errors(comm), case_named(case):  # [time] until_decayed (decay_stop.py): checkpointed
            self.decay = DecayStop(self) if case.time.until_decayed is not None else None
        self.restarts: list[dict] = []  # the checkpoints this run continued from (restart.py)
        self.advance_one = self.record_step()
        self.setup_seconds = time.perf_counter() - created  # mesh, geometry, kernels built so far

    # Stepping -----------------------------------------------------------------------------
    def record_step(self):
        """The recorded step of fixed dt, or None. When the operator does not depend on t, one
        step can be recorded once and replayed (a CUDA graph on the GPU; a plain call
        elsewhere); when it does, only where the whole-step path reads t from a device clock
        set before each replay (Stepper.replays_with_clock). Never a multistep step: its
        coefficients change over the start-up steps (and with dt)."""
        if self.advective:
            return None
        if not self.system.time_dependent:
            return self.backend.capture(lambda: self.stepper.step(self.u, 0.0, self.dt), self.stepper.graph_veto)
        if self.stepper.replays_with_clock:
            return self.backend.capture(lambda: self.stepper.step_on_clock(self.u, self.dt), self.stepper.graph_veto)
        return None

    def _step(self) -> None:
        start = time.perf_counter()
        dt, last = self.dt, False
        if self.variable_dt:  # the time left in equal whole steps, the last on t_end (step_size.landing_dt)
            dt, last = landing_dt(self.t, self.case.time.t_end, self.dt)
        if self.advance_one is not None:
            if self.system.time_dependent:  # the recorded step reads its time from the device
                self.stepper.set_clock(self.t, self.dt)
            self.advance_one()
        else:
            self.stepper.step(self.u, self.t, dt)
        self.step_count += 1
        if self.variable_dt:  # t is the sum of the steps taken (exactly t_end at the last)
            self.t = self.case.time.t_end if last else self.t + dt
            low, high = self.dt_range or (dt, dt)
            self.dt_range = (min(low, dt), max(high, dt))
        else:
            self.t = self.time_origin[1] + (self.step_count - self.time_origin[0]) * self.dt
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
        """Collective: self.steps and self.dt from the flow's CFL number (schedule.plan_from_courant)."""
        self.steps, self.dt = schedule.plan_from_courant(self.case, self.system, self.u, self.variable_dt, self.comm)

    def check_step_budget(self, steps: float, dt: float) -> None:
        schedule.check_step_budget(self.case, steps, dt)

    # Checkpoints (restart.py, docs/restart.md) -------------------------------------------
    def checkpoint(self, path: Path | str | None = None) -> Path:
        """Collective: write a checkpoint of the current step (default directory
        ``<output_dir>/checkpoints/<name>_<step>``); returns its path."""
        return save(self, path)

    def restart(self, path: Path | str, interpolate: bool = False) -> "Simulation":
        """Collective: continue from the checkpoint at ``path`` (written on any number of
        ranks, either backend); the case must have the same mesh, order, system and
        integrator. ``run()`` then goes on to [time] t_end with the checkpoint's dt.
        interpolate: the case may have another order or mesh (runner/restart_onto.py)."""
        resume(self, path, interpolate)
        if self.guard is not None:  # a new history from the checkpoint's step
            self.guard.start(self.step_count, self.t, allreduce(self.comm, self.system.energy(self.u)))
        return self

    # Checks -------------------------------------------------------------------------------
    def stable_dt(self, min_spacing: float) -> float:
        """Collective: the largest step from [time] (schedule.stable_dt), checked against the
        operator's spectral radius (step_check.py); InputError when it is not usable."""
        dt = schedule.stable_dt(self.case, self.system, self.stepper.scheme, min_spacing)
        dt, self.step_check = step_check.check_step(self.case, self.system, self.stepper.scheme, self.comm, dt,
                                                    min_spacing, self.rank)
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
            self.fail(f"{what} {where}{self.largest_fields()}: {self.unstable_hint()}")
        if system.energy_bounded and energy > ENERGY_GROWTH_LIMIT * self.energy_initial:
            self.fail(f"the discrete energy grew from {self.energy_initial:.4g} to {energy:.4g} {where}, though "
                      f"{system.name} without sources cannot gain energy{self.largest_fields()}: {self.unstable_hint()}")
        growth = self.guard.observe(self.step_count, self.t, energy) if self.guard is not None else None
        if growth is not None:
            hints = "; ".join(self.guard.hints + [self.unstable_hint()])
            self.fail(f"stopped {where}: {growth}{self.largest_fields()}. {hints}; [time] growth_check = false runs "
                      "on regardless")

    def largest_fields(self) -> str:
        """Collective: where the fields are largest (growth_guard.largest_fields)."""
        return largest_fields(self.system, self.backend, self.u, self.comm)

    def unstable_hint(self) -> str:
        hint = f"the time step dt = {self.dt:.3g} may be over the stability limit; lower [time] "
        if self.advective:
            hint += "target_cfl" if self.variable_dt else "dt" if self.case.time.dt is not None else "cfl"
            return hint + (", or raise [time] substeps" if getattr(self.system.spec, "substeps", False) else "")
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
        """{field name: this rank's values as a float64 host array (E, n, n, n)}: a copy on every
        backend (on the CPU the state's own array would change with the next step)."""
        values = np.array(self.backend.to_host(self.u), dtype=np.float64, copy=True)
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
        normalization.check_attached(self)  # [output.dft] normalize needs its incident run first
        steps, first = self.steps, self.step_count + 1  # steps: the last step (an estimate while dt varies)
        every = case.output.every
        # Steps are queued without waiting on the device; the loop is timed as a whole and the
        # time spent writing snapshots is taken out. The rate leaves out the first WARMUP_STEPS
        # (kernel compilation, graph recording) when there are more steps than that.
        series = self.series  # the monitors (monitors/run_set.py): the first sample is the start
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
        checkpoints = schedule.CheckpointSchedule(self) if case.checkpoint.enabled else None
        for stop in (self.steady, self.decay):
            if stop is not None:
                stop.start()
        while not self.finished:
            self._step()
            if self.steady is not None and self.steady.after_step(self.step_count):
                self.steps = self.step_count  # steady: this step is the last, with the final outputs
            if self.decay is not None and self.decay.after_step(self.step_count):
                self.steps = self.step_count  # decayed: as steady
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
        """Collective: summary.json's entries after the run loop (summary.make_summary)."""
        return summary.make_summary(self, compute_seconds, seconds_per_step, rate_steps)

    def time_accounting(self, compute_seconds, seconds_per_step, rate_steps) -> dict:
        """Collective: where the run's time went (summary.time_accounting)."""
        return summary.time_accounting(self, compute_seconds, seconds_per_step, rate_steps)

    def threads(self) -> dict:
        """Threads per rank of the compiled kernels, and who chose that number."""
        return summary.threads(self.backend)


def run_case(case, backend: str | None = None, output_dir: Path | str | None = None,
             progress: Callable[[int, int, float], None] | None = None, comm="world", restart=None,
             before_writing: Callable[[], None] | None = None, interpolate: bool = False) -> dict:
    """Solve the case (continuing from the checkpoint ``restart`` if given); write outputs and
    summary.json; return the summary. ``before_writing`` (collective) is called once the run is
    set up, before its first output (lobatto run: removing what --overwrite replaces).
    ``interpolate``: the restart may be onto another order or mesh (--interpolate)."""
    if get_system(case.physics.equations).spec.steady:  # one solve, no time steps: steady.py
        return run_steady(case, backend, output_dir, progress, comm, restart, before_writing)
    if ports.wanted(case):  # [port.<name>]: one run per driven port, then the S-parameters (ports.py)
        return ports.run(case, backend, output_dir, comm, progress, Simulation, restart, before_writing)
    # with [output.dft] normalize, the run without [material] tables comes first (normalization.py)
    simulation = normalization.simulation(case, backend, output_dir, comm, progress, Simulation, restart)
    if restart is not None:
        simulation.restart(restart, interpolate)
    if before_writing is not None:
        before_writing()
    return simulation.run()
