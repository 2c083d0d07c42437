"""Stopping a run at a steady state: ``[time] steady_tolerance`` (docs/navier-stokes.md,
"Steady state").

Every ``[time] steady_every`` = K steps the run measures the relative change of its state per
unit time since the last check,

    change = ||u^n - u^(n-K)|| / ((t^n - t^(n-K)) ||u^n||),

in the L2 norm over the domain by the GLL quadrature (sum over elements of w_i w_j w_k J u^2,
the system's ``quadrature_mass``: the integral of |u|^2), over all the state's fields together
(Navier–Stokes: velocity and pressure). With K = 1 that is ||u^(n+1) - u^n|| / (dt ||u^(n+1)||).
Below the tolerance, the run ends there: its last step is taken as the final one (snapshot,
checkpoint, monitors and summary.json as at t_end), it says so on stdout (rank 0) and the
summary has ``stopped: "steady"`` and ``steady: {...}``. A check costs one copy of the state
(kept until the next check) and one reduction over ranks, the same on every rank.

The state at the last check is part of a checkpoint (runner/restart.py STATEFUL_OUTPUTS: its
time and step, and the state itself when the checkpoint is not at that step), so a continued
run checks against the same reference, and stops at the same step, as the uninterrupted one.
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.machine.parallel import allreduce

__all__ = ["SteadyStop", "memory_estimate"]


def memory_estimate(case, layout) -> list:
    """memory_items.MemoryItem of the steady-state test: the state kept from the last check and
    the difference formed at a check (two states, where the state lives)."""
    time_ = case.time
    if time_ is None or time_.steady_tolerance is None:
        return []
    size = 2 * layout.fields * layout.points * (4 if layout.precision == "float32" else 8)
    return [layout.backend_item(f"[time] steady_tolerance (2 states of {layout.fields} fields)", size,
                                advice="use more ranks or a smaller mesh")]


class SteadyStop:
    """The steady-state test of one Simulation's run loop: ``after_step(step)`` is True when the
    run should end after that step."""

    def __init__(self, sim):
        self.sim = sim
        self.tolerance, self.every = sim.case.time.steady_tolerance, sim.case.time.steady_every
        self.reset()

    def reset(self) -> None:
        """Forget every check: before a restart restores what its checkpoint holds (a
        Simulation that has run keeps this object, and its last reference is not the
        checkpoint's)."""
        # the state at the last check, its t and step: the run's start (start()) unless a
        # checkpoint hands them back (restore_checkpoint_state / _arrays)
        self.previous, self.previous_t, self.previous_step = None, None, None
        self.change = None  # the latest measured relative change per unit time
        self.checked = None  # (step, t) of the latest check
        self.reached = False

    def start(self) -> None:
        """At the run loop's start: the reference is the state now, unless a checkpoint gave
        back an earlier one."""
        if self.previous is None:
            sim = self.sim
            self.previous, self.previous_t, self.previous_step = sim.u.copy(), sim.t, sim.step_count

    # A checkpoint's part (runner/restart.py STATEFUL_OUTPUTS) ------------------------------
    def checkpoint_state(self) -> dict:
        if self.previous is None:  # a checkpoint before the run loop: nothing checked yet
            return {}
        return {"step": self.previous_step, "t": self.previous_t, "change": self.change,
                "checked": None if self.checked is None else list(self.checked)}

    def checkpoint_arrays(self) -> dict:
        """The reference state, unless it is the checkpoint's own (a check at that step)."""
        if self.previous is None or self.previous_step == self.sim.step_count:
            return {}
        return {"previous": self.previous}

    def restore_checkpoint_state(self, saved: dict, interpolated: bool = False) -> list:
        """The last check's time, step and change; after a restart onto another order or mesh
        none (the reference is the interpolated state, as a fresh run's is its initial one)."""
        if interpolated or "t" not in saved:
            return []
        self.previous_t, self.previous_step, self.change = float(saved["t"]), int(saved["step"]), saved["change"]
        self.checked = None if saved["checked"] is None else (int(saved["checked"][0]), float(saved["checked"][1]))
        return []

    def restore_checkpoint_arrays(self, saved: dict) -> None:
        if "previous" in saved:
            backend = self.sim.backend
            self.previous = backend.asarray(saved["previous"].astype(backend.dtype, copy=False))

    def after_step(self, step: int) -> bool:
        """Collective: at every steady_every-th step, the change since the previous check."""
        if step % self.every:
            return False
        sim = self.sim
        xp = sim.backend.xp
        mass = sim.system.quadrature_mass()
        u = sim.u
        integral = getattr(getattr(sim.system, "assembly", None), "integral", None)
        if integral is not None:
            # the assembly's sums are reproducible (the same bits on any partition), so every
            # rank count stops at the same step (docs/navier-stokes.md, "Steady state")
            difference, norm = integral(mass * (u - self.previous) ** 2, mass * u * u)
        else:
            local = np.array([float(xp.sum(mass * (u - self.previous) ** 2, dtype=xp.float64)),
                              float(xp.sum(mass * u * u, dtype=xp.float64))])
            difference, norm = allreduce(sim.comm, local)
        elapsed = sim.t - self.previous_t
        if difference == 0.0:
            change = 0.0  # nothing moved (a state at rest stays at rest)
        elif norm > 0.0 and elapsed > 0.0:
            change = math.sqrt(difference) / (elapsed * math.sqrt(norm))
        else:
            change = math.inf
        self.previous[...] = u
        self.previous_t, self.previous_step = sim.t, step
        self.change, self.checked = change, (step, sim.t)
        self.reached = change < self.tolerance
        if self.reached and sim.rank == 0:
            print(f"lobatto: steady at step {step}, t = {sim.t:.6g}: the relative change per unit time "
                  f"{change:.3g} is below [time] steady_tolerance = {self.tolerance:g}; stopping before "
                  f"t_end = {sim.case.time.t_end:g}", flush=True)
        return self.reached

    def describe(self) -> dict:
        """summary.json's ``steady`` entry."""
        return {"tolerance": self.tolerance, "every": self.every, "reached": self.reached,
                "change": self.change, "step": None if self.checked is None else self.checked[0],
                "t": None if self.checked is None else self.checked[1],
                "norm": "L2 over the domain (GLL quadrature), all fields"}
