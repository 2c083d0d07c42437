"""Stopping a run once its fields have decayed: ``[time] until_decayed`` (docs/case-file.md,
``[time]``; docs/electromagnetics.md, "Stopping when the fields have decayed").

Meep's ``stop_when_fields_decayed(dt, c, pt, decay_by)``: a watched quantity q(t) is sampled
after every step; every ``decay_interval`` (a time, Meep's dt) the run takes the largest q of
the interval just ended, cur, and the largest over all intervals so far, top (cur included),
and stops when cur <= until_decayed * top. The watched quantity is (``decay_watch``):

* ``probes``: the largest over the ``[output.probes]`` points of the sum of squares of the
  probes' fields at the point (Meep: |c|^2 at pt; fields = ["Ez"] and one point is Meep's
  call). Sampled after every step on the backend (each owner's probes interpolated and squared
  there, a running maximum kept on the device), reduced (max over ranks) at the checks only;
* ``energy``: the system's discrete energy (quadratic in the fields, as |c|^2), sampled at the
  checks only (it does not oscillate with the fields, so the check's value stands for the
  interval), the sum over ranks.

Unlike Meep, a check never stops the run while top is 0 (a field that has not reached the
watched points yet has nothing to decay from). A check happens at the first step with
t >= t_check + decay_interval (t_check: the previous check, the run's start at first); t is
the same number on every rank and the maxima are reduced before the comparison, so every rank
stops at the same step (a maximum over ranks is exact whatever the partition; the energy's sum
may differ in its last bits between rank counts). The step that decides is the run's last:
snapshot, checkpoint, monitors (DFT transforms up to that t) and summary.json as at t_end, and
the summary has ``stopped: "decayed"`` and ``decay: {...}``.
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.machine.parallel import allreduce
from lobatto.monitors.probes import Probes

__all__ = ["DecayStop"]


class ProbeSquares:
    """The sum of squares of the probes' fields at each of this rank's probe points, computed on
    the backend, and its running maximum since the last check (a device array)."""

    def __init__(self, section, system, comm=None):
        self.probes = probes = Probes(section, system, comm)  # collective: the points located
        xp = system.backend.xp
        self.xp, self.fields = xp, xp.asarray(np.asarray(probes.field_index, dtype=np.int64))
        hr, hs, ht = probes.weights
        self.weights = (xp.asarray(hr), xp.asarray(hs), xp.asarray(ht))
        self.elements = probes.device_elements  # None: this rank owns no probe
        self.running = None

    def sample(self, u) -> None:
        if self.elements is None:
            return
        xp, (hr, hs, ht) = self.xp, self.weights
        held = u[self.fields[:, None], self.elements].astype(np.float64)  # (fields, m, n, n, n): the probes' only
        values = xp.einsum("fmkji,mk,mj,mi->fm", held, ht, hs, hr)
        squares = xp.sum(values * values, axis=0)
        self.running = squares if self.running is None else xp.maximum(self.running, squares)

    def take(self) -> float:
        """This rank's largest sample since the last take (0.0 when none), and a fresh start."""
        if self.running is None:
            return 0.0
        largest = float(self.xp.max(self.running))
        self.running = None
        return largest


class DecayStop:
    """The decay test of one Simulation's run loop: ``after_step(step)`` is True when the run
    should end after that step."""

    def __init__(self, sim):
        self.sim = sim
        time_ = sim.case.time
        self.fraction, self.interval, self.watch = time_.until_decayed, time_.decay_interval, time_.decay_watch
        self.squares = ProbeSquares(sim.case.output.probes, sim.system, sim.comm) if self.watch == "probes" else None
        self.reset()

    def reset(self) -> None:
        """Forget every check (before a restart restores what its checkpoint holds)."""
        self.t_check = None  # the time of the latest check (the run's start at first)
        self.current = 0.0  # the largest sample since the latest check, reduced (a restored one)
        self.top = 0.0  # the largest of all intervals so far
        self.ratio = None  # current / top at the latest check
        self.checked = None  # (step, t) of the latest check
        self.checks = 0
        self.reached = False

    def start(self) -> None:
        """At the run loop's start: the state now is the first sample (a continued run keeps
        its checkpoint's interval)."""
        sim = self.sim
        if self.t_check is None:
            self.t_check = sim.t
        if self.squares is not None:
            self.squares.sample(sim.u)

    def interval_maximum(self) -> float:
        """Collective: the largest sample since the latest check, over ranks."""
        sim = self.sim
        if self.squares is not None:
            local = self.squares.take()
            largest = allreduce(sim.comm, local if math.isfinite(local) else math.inf, "max")
            return max(largest, self.current)
        return allreduce(sim.comm, sim.system.energy(sim.u))

    # A checkpoint's part (runner/restart.py STATEFUL_OUTPUTS) ------------------------------
    def checkpoint_state(self) -> dict:
        """Collective (a checkpoint is): the interval's maximum so far is reduced into current."""
        if self.t_check is None:
            return {}
        if self.squares is not None:
            self.current = self.interval_maximum()
        return {"t_check": self.t_check, "current": self.current, "top": self.top, "ratio": self.ratio,
                "checks": self.checks, "checked": None if self.checked is None else list(self.checked)}

    def restore_checkpoint_state(self, saved: dict, interpolated: bool = False) -> list:
        """The checks so far and the interval's maximum (kept onto another order or mesh too:
        they are numbers of the fields, not of the points)."""
        if "t_check" not in saved:
            return []
        self.t_check, self.current, self.top = float(saved["t_check"]), float(saved["current"]), float(saved["top"])
        self.ratio, self.checks = saved["ratio"], int(saved["checks"])
        self.checked = None if saved["checked"] is None else (int(saved["checked"][0]), float(saved["checked"][1]))
        return []

    def after_step(self, step: int) -> bool:
        """Collective at a check (t is the same on every rank): sample, and at the end of an
        interval compare its maximum with the largest so far."""
        sim = self.sim
        if self.squares is not None:
            self.squares.sample(sim.u)
        if sim.t < self.t_check + self.interval:
            return False
        current = self.interval_maximum()
        self.current, self.t_check = 0.0, sim.t
        self.top = max(self.top, current)
        self.ratio = current / self.top if self.top > 0.0 else None
        self.checks, self.checked = self.checks + 1, (step, sim.t)
        self.reached = self.top > 0.0 and current <= self.fraction * self.top
        if self.reached and sim.rank == 0:
            print(f"lobatto: fields decayed at step {step}, t = {sim.t:.6g}: the watched {self.what()} is "
                  f"{self.ratio:.3g} of its maximum, below [time] until_decayed = {self.fraction:g}; stopping before "
                  f"t_end = {sim.case.time.t_end:g}", flush=True)
        return self.reached

    def what(self) -> str:
        return "energy" if self.watch == "energy" else "sum of squares of the probes' fields"

    def describe(self) -> dict:
        """summary.json's ``decay`` entry."""
        return {"until_decayed": self.fraction, "interval": self.interval, "watch": self.watch,
                "quantity": self.what(), "reached": self.reached, "ratio": self.ratio, "maximum": self.top,
                "checks": self.checks, "step": None if self.checked is None else self.checked[0],
                "t": None if self.checked is None else self.checked[1]}
