"""Time steppers: one loop per scheme family, stable dt from the CFL number."""

from __future__ import annotations

import math

from lobatto.errors import InputError
from lobatto.integrators.tables import SCHEMES, ButcherScheme, LowStorageScheme, MultistepScheme, bdf_ext_coefficients


def get_scheme(name: str):
    try:
        return SCHEMES[name]
    except KeyError:
        raise InputError(f"[time] unknown integrator '{name}' (expected one of {', '.join(SCHEMES)})") from None


def plan_steps(t_end: float, dt_max: float) -> tuple[int, float]:
    """Whole number of equal steps reaching t_end exactly with dt <= dt_max."""
    steps = max(1, math.ceil(t_end / dt_max - 1e-12))
    return steps, t_end / steps


def stable_time_step(cfl: float, min_spacing: float, wave_speed: float) -> float:
    """dt = CFL * (smallest GLL spacing) / (wave speed)."""
    return cfl * min_spacing / wave_speed


def systems_taking(integrator: str) -> list[str]:
    """The registered systems whose [time] integrator may be ``integrator``."""
    from lobatto.systems.registry import SYSTEMS

    return [name for name, cls in SYSTEMS.items() if integrator in getattr(cls.spec, "integrators", ())]


#: BDF3's first step is split into sub-steps growing by doubling from dt / 2^this (see
#: Stepper._step_multistep); sub-step ratios of 2 keep the variable-step BDF2/BDF3 stable
STARTUP_DOUBLINGS = 10


class Stepper:
    """Advances a System's state in place: `step(u, t, dt)`.

    A multistep scheme (BDFk/EXTk) hands each step to ``system.multistep_step(u, t, dt, bdf,
    ext)`` with the coefficients for the step sizes taken so far; the first steps use the
    orders 1, 2, ... up to k (the earlier states do not exist yet). BDF3 takes its first step
    as STARTUP_DOUBLINGS + 1 growing sub-steps, so that the start-up keeps third order."""

    def __init__(self, system, scheme):
        self.system, self.scheme = system, scheme
        backend = system.backend
        self.whole_step = None
        self.steps_taken = 0  # multistep schemes: steps since the start of the run
        self.previous_dts: list[float] = []  # multistep schemes: the latest order - 1 step sizes, newest first
        if isinstance(scheme, MultistepScheme):
            if not callable(getattr(system, "multistep_step", None)):
                takers = systems_taking(scheme.name)
                raise InputError(f"[time] integrator '{scheme.name}' is a multistep scheme, which {system.name} "
                                 "does not implement (it has no multistep_step); "
                                 + (f"systems that take it: {', '.join(takers)}" if takers else
                                    "no registered system takes it") + f"; {system.name} takes "
                                 + ", ".join(getattr(system.spec, "integrators", ())))
        elif isinstance(scheme, LowStorageScheme):
            self.residual = backend.xp.zeros_like(system.allocate_state())
            self.whole_step = system.whole_step(self)
        else:
            self.stage_derivatives = [system.allocate_state() for _ in range(scheme.stages)]
            self.stage_state = system.allocate_state()
            self.start_state = system.allocate_state()

    @property
    def stages(self) -> int:
        return self.scheme.stages

    @property
    def multistep(self) -> bool:
        return isinstance(self.scheme, MultistepScheme)

    def step(self, u, t, dt):
        if self.multistep:
            self._step_multistep(u, t, dt)
        elif isinstance(self.scheme, LowStorageScheme):
            self._step_low_storage(u, t, dt)
        else:
            self._step_butcher(u, t, dt)

    @property
    def path(self) -> str:
        """'whole-step' when the system runs entire steps itself, 'multistep' for BDF/EXT (the
        system's multistep_step), else 'stages'."""
        if self.multistep:
            return "multistep"
        return "whole-step" if self.whole_step is not None else "stages"

    def describe(self) -> dict:
        """How steps run: the path, and the whole-step path's own account of itself."""
        out = {"step_path": self.path, "integrator": self.scheme.name, "stages": self.stages}
        if self.whole_step is not None:
            out.update(self.whole_step.describe())
        return out

    def history(self) -> dict:
        """What the next step depends on besides the state, for checkpoints: {name: array of
        shape (k, E, ...) with the elements on axis 1, or a number}. Runge-Kutta steps start
        from the state alone, so none here; a multistep scheme keeps the steps taken (the
        start-up orders) and its latest order - 1 step sizes (0.0 before they are taken), and
        the system's own history (System.history: the earlier states) comes with it."""
        history = {f"system/{name}": value for name, value in self.system.history().items()}
        if self.multistep:
            history["stepper/steps_taken"] = int(self.steps_taken)
            for i in range(self.scheme.order - 1):
                history[f"stepper/previous_dt_{i + 1}"] = (float(self.previous_dts[i]) if i < len(self.previous_dts)
                                                           else 0.0)
        return history

    def restore_history(self, history: dict) -> None:
        """Take back what ``history()`` gave (this rank's elements, on the host)."""
        self.system.restore_history({name[len("system/"):]: value for name, value in history.items()
                                     if name.startswith("system/")})
        mine = set(self.history()) - {name for name in self.history() if name.startswith("system/")}
        unknown = sorted(name for name in history if not name.startswith("system/") and name not in mine)
        if unknown or not mine <= set(history):
            raise ValueError(f"the {self.scheme.name} integrator keeps {', '.join(sorted(mine)) or 'no history'}, "
                             f"got {', '.join(sorted(n for n in history if not n.startswith('system/'))) or 'none'}")
        if self.multistep:
            self.steps_taken = int(history["stepper/steps_taken"])
            past = [float(history[f"stepper/previous_dt_{i + 1}"]) for i in range(self.scheme.order - 1)]
            self.previous_dts = past[:min(self.steps_taken, len(past))]

    def graph_veto(self) -> str | None:
        """Why a step may not be recorded as a graph now (the whole-step path decides), or None."""
        return None if self.whole_step is None else self.whole_step.graph_veto()

    @property
    def replays_with_clock(self) -> bool:
        """Whether a step of a time-dependent system may be recorded and replayed: the
        whole-step path reads the step's time from a device clock that ``set_clock`` writes
        before each replay (``step_on_clock`` is what is recorded)."""
        return bool(getattr(self.whole_step, "reads_clock", False))

    def set_clock(self, t, dt) -> None:
        self.whole_step.set_clock(t, dt)

    def step_on_clock(self, u, dt) -> None:
        self.whole_step.step_on_clock(u, dt)

    def coefficients(self, dt) -> tuple[tuple, tuple]:
        """(bdf, ext) of the next multistep step of size dt: the order min(k, steps taken + 1)."""
        order = min(self.scheme.order, self.steps_taken + 1)
        return bdf_ext_coefficients(order, [dt] + self.previous_dts[:order - 1])

    def _step_multistep(self, u, t, dt):
        if self.steps_taken == 0 and self.scheme.order >= 3:
            # The first step has no earlier states and runs BDF1, whose local error (dt^2) would
            # persist and make BDF3 a second-order scheme. It is taken as sub-steps h, h, 2h,
            # 4h, ..., dt/2 with h = dt / 2^STARTUP_DOUBLINGS (variable-step coefficients), so
            # the BDF1 error is dt^2 / 4^STARTUP_DOUBLINGS.
            h = dt / 2 ** STARTUP_DOUBLINGS
            sizes = [h] + [h * 2 ** i for i in range(STARTUP_DOUBLINGS)]
        else:
            sizes = [dt]
        for size in sizes:
            bdf, ext = self.coefficients(size)
            self.system.multistep_step(u, t, size, bdf, ext)
            t += size
            self.steps_taken += 1
            self.previous_dts = ([float(size)] + self.previous_dts)[:self.scheme.order - 1]

    def _step_low_storage(self, u, t, dt):
        if self.whole_step is not None:
            return self.whole_step(u, t, dt)
        s = self.scheme
        # The residual need not be cleared: A[0] = 0 discards it.
        for a, b, c in zip(s.A, s.B, s.C):
            self.system.stage(u, self.residual, t + c * dt, a, b, dt)

    def _step_butcher(self, u, t, dt):
        s: ButcherScheme = self.scheme
        k = self.stage_derivatives
        self.start_state[...] = u
        for i, (row, c) in enumerate(zip(s.a, s.c)):
            y = self.stage_state
            y[...] = self.start_state
            for j, aij in enumerate(row):
                if aij:
                    y += (aij * dt) * k[j]
            self.system.rhs(y, t + c * dt, k[i])
        for bi, ki in zip(s.b, k):
            u += (bi * dt) * ki
