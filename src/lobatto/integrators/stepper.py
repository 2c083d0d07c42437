"""Time steppers: one loop per scheme family, stable dt from the CFL number."""

from __future__ import annotations

import math

from lobatto.errors import InputError
from lobatto.integrators.tables import SCHEMES, ButcherScheme, LowStorageScheme


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


class Stepper:
    """Advances a System's state in place: `step(u, t, dt)`."""

    def __init__(self, system, scheme):
        self.system, self.scheme = system, scheme
        backend = system.backend
        self.whole_step = None
        if isinstance(scheme, LowStorageScheme):
            self.residual = backend.xp.zeros_like(system.allocate_state())
            self.whole_step = system.whole_step(self)
        else:
            self.stage_derivatives = [system.allocate_state() for _ in range(scheme.stages)]
            self.stage_state = system.allocate_state()
            self.start_state = system.allocate_state()

    @property
    def stages(self) -> int:
        return self.scheme.stages

    def step(self, u, t, dt):
        if isinstance(self.scheme, LowStorageScheme):
            self._step_low_storage(u, t, dt)
        else:
            self._step_butcher(u, t, dt)

    @property
    def path(self) -> str:
        """'whole-step' when the system runs entire steps itself, else 'stages'."""
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
        from the state alone, so none here; a multistep scheme (BDF) returns its earlier
        states and step sizes, and the system's own history (System.history) comes with it."""
        return {f"system/{name}": value for name, value in self.system.history().items()}

    def restore_history(self, history: dict) -> None:
        """Take back what ``history()`` gave (this rank's elements, on the host)."""
        self.system.restore_history({name[len("system/"):]: value for name, value in history.items()
                                     if name.startswith("system/")})
        unknown = sorted(name for name in history if not name.startswith("system/"))
        if unknown:
            raise ValueError(f"the {self.scheme.name} integrator keeps no history, got {', '.join(unknown)}")

    def graph_veto(self) -> str | None:
        """Why a step may not be recorded as a graph now (the whole-step path decides), or None."""
        return None if self.whole_step is None else self.whole_step.graph_veto()

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
