"""The growth guard: a run of a linear system (``System.growth_guarded``) whose energy grows
exponentially, beyond what its sources can explain, stops with exit 1. It covers what the
plain stop (energy > 2x the initial, only where ``energy_bounded``) leaves out: a PML,
dispersive poles, TF/SF plane waves, currents and dipoles, on any backend and rank count.

It watches the discrete energy W at the driver's state checks (every FINITE_CHECK_STEPS steps,
at outputs and after ``advance``), already reduced over ranks: no extra step, no extra device
synchronisation (where a case has currents, their norm costs 3 evaluations and one small
reduction per check). It trips at check n where, for some earlier check a:

1. W_n >= RISE * P_a * G(a, n). P_a is the largest energy up to check a: the run's own scale
   so far (the initial fields, a pulse's peak, a steady state). G is the growth the sources
   can explain: for a passive operator, sqrt(W(t)) <= sqrt(W(a)) + integral_a^t ||s||_M, and
   each source's ||s||_M is a fixed spatial norm times a function of t that the system
   integrates cheaply (System.injection_measure). G(a, n) = max over sources of (integral to
   t_n / integral to t_a)^2, infinite where a source's integral was still 0 at t_a (a pulse
   not yet switched on explains any growth). Without sources G = 1.
2. The growth is exponential: over the window from a (at least MIN_CHECKS checks back) the
   running peak's logarithmic rate in the window's second half is at least STEADY times the
   first half's. An instability's rate is steady or rising; polynomial growth t^p has a rate
   p/t that falls over the window, by more than STEADY for low p (t^2, t^4: tested) but not
   from about t^6 on (an audit's given series t^6, t^8, t^12 trip without a source allowance):
   there the guard relies on RISE and on G. A growth over JUMP = RISE^2 within MIN_CHECKS
   checks trips without this test (an instability faster than RISE per check).

Why ratios of the sources' integrals and not the absolute bound: the bound's spatial norms are
loose by mesh-dependent factors (a dipole's discrete delta has a norm growing like h^-3/2,
a TF/SF surface term like h^-1/2), so a trip at "RISE times the bound" would come orders of
magnitude late on fine meshes; a ratio uses the bound only where it is tight in time (the
growth of a source's integral) and leaves the scale to the run's own energy. Why the rate
test too: a source can drive W up by more than its integral's square over a window in which
it injects inefficiently (a continuous wave switched on with a ramp grows W like t^8 before
the ramp ends, while its integral's square grows like t^6: W / G rises like t^2 only, far from
RISE over a ramp; measured: the ramped CW on resonance came to 1.0 of the trip's 1e4). A PML and dispersive poles exchange energy
with auxiliary fields that W holds only in part: RISE = 1e4 leaves them room (in the stable
runs of benchmarks/growth_guard_cases.py W never exceeded P_a G by more than 3 %). The outcome: an unstable run
stops at the first check where W is over RISE times the run's scale, i.e. at 1e4 to 1e6 times
it where the growth is slower than RISE per check, and not later than the first check over
JUMP times it (one check late only where a source starts from nothing: the first check then
sets the scale).

The decision is collective: every rank decides on the reduced energies, and the verdict is
reduced once more (max) so that rounding differences between ranks cannot split it. A restart
starts a new history (Simulation.restart). ``[time] growth_check = false`` switches it off. The
history holds at most 2 * KEEP checks: the older half is thinned to every other entry when it
is full, so windows as long as the run stay visible at logarithmically fewer points.
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.machine.parallel import allreduce

__all__ = ["GrowthGuard", "JUMP", "KEEP", "MIN_CHECKS", "RISE", "STEADY"]

#: energy growth over the run's scale (times the sources' allowance) that stops the run: far
#: above a PML's or a pole's transient exchange with its auxiliary fields (1.03 at most in
#: benchmarks/growth_guard_cases.py), far below an overflow (float64 1e308, float32 3e38)
RISE = 1e4
#: the window of the rate test spans at least this many checks (a sudden jump over one check
#: is not yet a steady rate: a source switching on, an output)
MIN_CHECKS = 4
#: the second half of the window's growth rate, as a fraction of the first half's, above which
#: the growth counts as exponential (t^2 over a window that grows 1e4-fold: 0.17)
STEADY = 0.5
#: a growth this many times over the scale (and the sources' allowance) within MIN_CHECKS
#: checks stops the run at once, without the rate test: an instability faster than RISE per
#: check (a step far too long) would otherwise run two more checks, to 1e100 and beyond
JUMP = RISE * RISE
#: checks kept at full resolution (older ones thinned, above)
KEEP = 128


class GrowthGuard:
    """Collective: ``observe(step, t, energy)`` at each state check returns None, or the
    message of the growth that stops the run (module docstring)."""

    def __init__(self, system, comm=None):
        self.comm = comm
        make = getattr(system, "injection_measure", None)
        self.injection = make(comm) if callable(make) else None  # collective
        hints = getattr(system, "growth_hints", None)
        #: lines for the message (the terms present, what to try), asked now: collective
        self.hints = list(hints(comm)) if callable(hints) else []
        self.history: list[tuple] = []  # (step, t, energy, peak, low, high)
        #: the largest W_n / (P_a G(a, n)) seen (how close the run came to RISE): summary.json
        self.closest = 0.0
        self._arrays()

    def record(self) -> dict:
        """summary.json's growth_check: the checks watched, the largest energy, ``closest``
        (the largest W_n / (P_a G(a, n)), RISE stopping the run) and the sources followed."""
        return {"checks": len(self.history), "largest_energy": max((h[3] for h in self.history), default=0.0),
                "closest": self.closest, "rise": RISE,
                "sources": list(getattr(self.injection, "labels", ()))}

    def start(self, step: int, t: float, energy: float) -> None:
        """Collective: a new history from this check (the run's start or a restart)."""
        self.history = []
        self._arrays()
        if self.injection is not None:
            self.injection.start(t)
        self.observe(step, t, energy)

    def _arrays(self) -> None:
        """The history's peaks and the sources' low integrals as arrays (kept alongside the
        list: rebuilding them at every check would cost more than the rest of the test)."""
        self.peaks = np.array([h[3] for h in self.history], dtype=float)
        width = len(self.history[0][4]) if self.history and self.history[0][4] is not None else 0
        self.lows = (np.array([h[4] for h in self.history], dtype=float) if width else np.zeros((0, 0))).reshape(
            len(self.history), width)

    def _measure(self, t: float):
        if self.injection is None or not len(self.injection):
            return None, None
        return self.injection.measure(t)

    def observe(self, step: int, t: float, energy: float) -> str | None:
        """Collective: record this check; the message where the run must stop, else None."""
        low, high = self._measure(t)
        if self.history and t <= self.history[-1][1]:
            return None  # the same check again (an output at a check step)
        peak = max(energy, self.history[-1][3]) if self.history else energy
        self.history.append((step, t, energy, peak, low, high))
        if len(self.history) > 2 * KEEP:  # thin the older half: windows as long as the run stay visible
            older, recent = self.history[:-KEEP], self.history[-KEEP:]
            self.history = older[::2] + recent
            self._arrays()
        else:
            self.peaks = np.append(self.peaks, peak)
            if low is not None:
                self.lows = np.concatenate((self.lows.reshape(-1, len(low)), low[None, :]))
        found = self._growth()
        if self.comm is not None:  # every rank alike, even where their rounding differs
            if allreduce(self.comm, int(found is not None), "max") and found is None and len(self.history) > 1:
                found = self._latest()  # another rank tripped on rounding: report from here alike
        return None if found is None else self._message(*found)

    def _allowances(self, lows: np.ndarray, high) -> np.ndarray:
        """G(a, n) for every earlier check a: the growth of W the sources can explain since."""
        if high is None or not len(high):
            return np.ones(len(lows))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(lows > 0, high / np.where(lows > 0, lows, 1.0), np.where(high > 0, np.inf, 1.0))
        return np.max(ratios, axis=1) ** 2

    def _latest(self):
        """(a, s, n) of the window ending now, for the message where another rank tripped."""
        n = len(self.history) - 1
        peaks = np.array([h[3] for h in self.history])
        a = min(int(np.argmax(peaks > 0)), n - 1)
        return a, a, n

    def _growth(self):
        """(a, s, n) indices where the growth test holds (a: the window's base, s its start), else None."""
        history = self.history
        n = len(history) - 1
        now = history[n]
        if n < 1 or not (math.isfinite(now[2]) and now[2] > 0):
            return None
        peaks = self.peaks[:n]
        lows = self.lows[:n] if now[4] is not None else np.zeros((n, 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            rises = np.where(peaks > 0, now[2] / (peaks * self._allowances(lows, now[5])), 0.0)
        self.closest = max(self.closest, float(np.max(rises)))
        over = np.nonzero(rises >= RISE)[0]
        if not over.size:
            return None
        first, a = int(over[0]), int(over[-1])
        s = max(0, min(a, n - MIN_CHECKS))
        while history[s][3] <= 0:
            s += 1
        if rises[max(0, n - MIN_CHECKS):].max() >= JUMP or (n - s >= 2 and self._steady(s, n)):
            return first, s, n
        return None

    def _steady(self, s: int, n: int) -> bool:
        """The running peak's log-rate over the second half of checks s..n is at least STEADY
        times the first half's, and positive."""
        history = self.history
        middle_time = 0.5 * (history[s][1] + history[n][1])
        m = min(range(s + 1, n), key=lambda i: abs(history[i][1] - middle_time))

        def rate(i, j):
            return math.log(history[j][3] / history[i][3]) / (history[j][1] - history[i][1])

        first, second = rate(s, m), rate(m, n)
        return second > 0 and second >= STEADY * first

    def _message(self, a: int, s: int, n: int) -> str:
        history = self.history
        base, now = history[a], history[n]
        rate = math.log(now[2] / max(history[s][3], 1e-300)) / max(now[1] - history[s][1], 1e-300)
        shown = history[max(0, min(s, n - 7)):n + 1]
        series = ", ".join(f"{t:.4g}: {w:.3g}" for _, t, w, *_ in shown)
        allowance = float(self._allowances(np.array([base[4]]) if base[4] is not None else np.zeros((1, 0)),
                                           now[5])[0])
        sources = "" if base[4] is None else (
            f" (the sources explain a factor {allowance:.3g} at most)" if math.isfinite(allowance) else "")
        return (f"the discrete energy grew exponentially to {now[2]:.4g} at step {now[0]} (t = {now[1]:.6g}), "
                f"{now[2] / max(base[3], 1e-300):.3g} times the largest it had been up to step {base[0]} (t = {base[1]:.6g}): "
                f"{base[3]:.4g}, at {rate:.3g} per unit time{sources}. Energy by time: {series}")


def largest_fields(system, backend, u, comm) -> str:
    """Collective: ", the fields largest in element ..." (the element holding the first
    non-finite value, else the largest magnitude of any field, over all ranks), or "" where the
    state is not an (fields, elements, ...) array. Where an instability starts (a badly shaped
    element, a layer, a medium) is what a user needs to see next to the step it stopped at."""
    values = np.asarray(backend.to_host(u)) if u is not None else None
    mesh = getattr(system, "mesh", None)
    if values is None or values.ndim < 3 or mesh is None:
        return ""
    count = min(values.shape[1], mesh.num_elements)
    score, text = -1.0, ""
    if count:
        with np.errstate(all="ignore"):
            per = np.abs(values[:, :count].reshape(values.shape[0], count, -1))
            bad = ~np.isfinite(per).all(axis=(0, 2))
            size = np.where(np.isfinite(per), per, 0.0).max(axis=(0, 2))
        e = int(np.argmax(bad)) if bad.any() else int(np.argmax(size))
        score = math.inf if bad.any() else float(size[e])
        text = ("non-finite values" if bad.any() else f"|u| = {size[e]:.3g}") + f" in {mesh.describe_element(e)}"
    every = [(score, text)] if comm is None else comm.allgather((score, text))
    score, text = max(every, key=lambda pair: pair[0])
    return f"; the fields are largest ({text})" if text else ""
