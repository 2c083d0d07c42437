"""The run's schedule: its step (dt) and number of steps, planned from [time] before the first
step, and when the run loop writes a checkpoint (docs/restart.md).

A fixed dt comes from [time] dt or cfl and the wave speed (:func:`stable_dt`, then
``integrators.plan_steps``), or, when the CFL number is the flow's, from the initial state
(:func:`plan_from_courant`); while dt varies, ``integrators.step_size`` sets each next step
and lands the last one on t_end. :class:`CheckpointSchedule` decides, the same way on every
rank, after which steps a checkpoint is written.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from lobatto.errors import InputError
from lobatto.integrators import plan_steps
from lobatto.integrators.step_size import first_dt, steps_left
from lobatto.io.checkpoint_dir import prune_checkpoints, remove_stale_checkpoints
from lobatto.machine.parallel import allreduce, collective_errors

__all__ = ["MAX_STEPS", "CheckpointSchedule", "check_step_budget", "plan_from_courant", "stable_dt"]

MAX_STEPS = 10**9  # a run asking for more has a mistake in [time] or in the mesh
#: how many times per [checkpoint] wall_minutes period the ranks compare clocks (each check is
#: one broadcast from rank 0); the first check comes after one step, to measure the step time
WALL_CHECKS_PER_PERIOD = 100
MAX_STEPS_BETWEEN_WALL_CHECKS = 1000


def stable_dt(case, system, scheme, min_spacing: float) -> float:
    """The largest step: [time] dt, or from cfl; refused (InputError) when it is not a
    positive number or is over the integrator's stability bound (unless cfl_check = false)."""
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
    if bound is not None:
        bound = round(bound * system.cfl_bound_factor(), 4)  # e.g. the Galerkin form's step factor
    if case.time.cfl_check and bound is not None and cfl > bound * (1 + 1e-12):
        given = f"dt = {dt:.4g} (cfl {cfl:.4g})" if case.time.dt is not None else f"cfl = {cfl:.4g}"
        factor = system.cfl_bound_factor()
        setting = case.discretization.volume_form
        form = (getattr(system, "volume_form_choice", None) or {}).get("form", setting)
        named = f"{setting!r}" if form == setting else f"{setting!r}, the {form} form on this mesh"
        scaled = ("" if factor == 1 else f" ({round(bound / factor, 4)} x {factor} for [discretization] volume_form = "
                  f"{named}; \"split\" takes the full bound)")
        raise InputError(f"{case.source}: [time] {given} is above the stability bound cfl {bound}{scaled} of the "
                         f"{scheme.name} integrator with the {case.discretization.flux} flux of {system.name}; "
                         f"lower it (stable dt <= {bound * min_spacing / wave:.4g}), or set [time] "
                         "cfl_check = false to run anyway")
    return dt


def plan_from_courant(case, system, u, variable_dt: bool, comm) -> tuple[int, float]:
    """Collective: (steps, dt) of a run whose CFL number is the flow's (system.courant): [time]
    dt (fixed) or initial_dt (the first of variable steps), else target_cfl (variable) or cfl
    (fixed) over the initial state ``u``'s CFL number per unit dt. A fixed dt is planned as
    plan_steps does; a variable one gives an estimate of the steps (updated each step)."""
    time_ = case.time
    with collective_errors(comm):
        given = time_.initial_dt if variable_dt else time_.dt
        dt = given
        if dt is None:
            cfl_key = "target_cfl" if variable_dt else "cfl"
            dt_key = "initial_dt" if variable_dt else "dt"
            if not callable(getattr(system, "courant", None)):
                raise InputError(f"{case.source}: [time] {cfl_key} needs the flow's CFL number, which "
                                 f"{system.name} does not compute: set [time] {dt_key}")
            per_unit_dt = float(system.courant(u, 1.0))
            # a variable dt's first step also bounds how far the body force speeds the flow
            # up in it (step_size.first_dt); a fixed dt (cfl) stays the initial velocity's
            force = system.force_courant(u) if variable_dt and callable(getattr(system, "force_courant", None)) else 0.0
            rates = [value if math.isfinite(value) else 0.0 for value in (per_unit_dt, float(force))]
            per_unit_dt, force = (float(v) for v in allreduce(comm, np.array(rates), "max"))
            target = time_.target_cfl if variable_dt else time_.cfl
            dt = first_dt(target, per_unit_dt, force)
            if dt is None or not math.isfinite(dt):
                raise InputError(f"{case.source}: [time] {cfl_key} = {target} gives no first step: the initial "
                                 f"fields have CFL number {per_unit_dt:.3g} per unit dt (a fluid at rest?)"
                                 f"{' and no body force' if variable_dt else ''}; set [time] {dt_key}")
        check_step_budget(case, time_.t_end / dt, dt)
    if variable_dt:
        return steps_left(0.0, time_.t_end, dt), dt
    return plan_steps(time_.t_end, dt)


def check_step_budget(case, steps: float, dt: float) -> None:
    """InputError when reaching [time] t_end takes more than MAX_STEPS steps of dt."""
    if steps > MAX_STEPS:
        t_end = case.time.t_end
        raise InputError(f"{case.source}: [time] t_end = {t_end:.4g} takes {steps:.3g} steps of dt = "
                         f"{dt:.3g}, more than {MAX_STEPS:.0e}: shorten t_end or coarsen the mesh")


class CheckpointSchedule:
    """When the run loop writes a checkpoint (``sim.checkpoint()``, restart.py): every
    ``[checkpoint] every`` steps, and when ``wall_minutes`` have passed since the last one. The
    wall-time decision is rank 0's clock, broadcast at steps all ranks know in advance, so every
    rank takes the same decision."""

    def __init__(self, sim):
        self.sim, self.settings = sim, sim.case.checkpoint
        self.last_written = self.last_check = time.monotonic()
        self.next_wall_check = sim.step_count + 1
        self.last_check_step = sim.step_count
        self.seconds = 0.0  # spent writing, taken out of the run's timing
        self.written: list[Path] = []

    def after_step(self, step: int, final_step: int) -> float:
        """Write a checkpoint after ``step`` if one is due (at the final step only without
        ``at_end``, which writes it after the final snapshot); returns the seconds spent."""
        settings = self.settings
        if step >= final_step and settings.at_end is not False:
            return 0.0
        due = settings.every > 0 and step % settings.every == 0
        if settings.wall_minutes is not None and step >= self.next_wall_check:
            due = self._wall_due(step) or due
        return self.write() if due else 0.0

    def _wall_due(self, step: int) -> bool:
        sim, period = self.sim, self.settings.wall_minutes * 60.0
        now = time.monotonic()
        seconds_per_step = (now - self.last_check) / max(step - self.last_check_step, 1)
        interval = int(min(max(period / WALL_CHECKS_PER_PERIOD / max(seconds_per_step, 1e-9), 1),
                           MAX_STEPS_BETWEEN_WALL_CHECKS))
        decision = (now - self.last_written >= period, interval)
        if sim.comm is not None:
            decision = sim.comm.bcast(decision)
        self.last_check, self.last_check_step = now, step
        self.next_wall_check = step + decision[1]
        return decision[0]

    def at_end(self) -> float:
        return self.write() if self.settings.at_end is not False else 0.0

    def write(self) -> float:
        sim = self.sim
        start = time.perf_counter()
        sim.backend.synchronize()
        if not self.written:  # what a killed run of this name left
            with collective_errors(sim.comm):
                if sim.rank == 0:
                    remove_stale_checkpoints(sim.output_dir, sim.case.output.name)
        self.written.append(sim.checkpoint())
        with collective_errors(sim.comm):
            if sim.rank == 0:
                prune_checkpoints(sim.output_dir, sim.case.output.name, self.settings.keep)
        self.last_written = time.monotonic()
        seconds = time.perf_counter() - start
        self.seconds += seconds
        return seconds
