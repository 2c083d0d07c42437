"""What the Maxwell sources can have injected by time t, for the run's growth guard
(runner/growth_guard.py), and the guard's hints about the terms present.

For a passive operator (<L u, u>_M <= 0: the fluxes, PEC/PMC walls, conductivity) driven by a
source s(t), d sqrt(2W)/dt <= ||s(t)||_M, so sqrt(W(t)) <= sqrt(W(a)) + integral_a^t ||s||_M.
Each source's ||s(t)||_M is a fixed spatial norm times a function of t that is cheap on the
host: a dipole's |w(t)| (its discrete delta is fixed); a plane wave's |w(tau)| at the
surface points' retarded times tau = t - delay (delay between the smallest and largest
k . (x - origin) / c over the mesh's bounding box); for the currents (expressions in x, t) the
M-norm of J/eps itself, sampled on the source's elements (one reduction over ranks per check).
The guard only compares a source's integral at two times, so the fixed spatial norms (which
are loose bounds: a point source's delta norm grows with refinement) drop out.

``measure(t)`` returns, per source, (low, high): the integral from the start of the
measurement to t of the norm at the latest (low) and earliest (high) retarded time; the guard
divides high at the later check by low at the earlier one, so that the growth it lets pass is
never under the sources' own. Between checks |w| is integrated by the trapezoid rule at
SAMPLES_PER_PERIOD points per period and per width of the waveform (|w| is smooth apart from
the kinks at its zeros); the currents at CURRENT_SAMPLES points per interval between checks (a
current pulse shorter than a third of that interval can fall between them unseen, and the
energy it brings in would count against the run; such a pulse is not resolved in time by the
step either).
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.machine.parallel import allreduce
from lobatto.systems.maxwell.plane_waves import bounding_box_corners
from lobatto.systems.maxwell.waveforms import waveform_array

#: trapezoid points per period (1/frequency) and per width of a waveform: |w| to a few per
#: cent, which is all a ratio of integrals needs
SAMPLES_PER_PERIOD = 16
#: at most this many points per interval between two checks (a frequency far above the
#: mesh's resolution would be under-sampled anyway)
MOST_SAMPLES = 4096
#: samples of the currents' norm per interval between two checks (each one expression
#: evaluation on the source's elements and one reduction: a check comes every 20 steps)
CURRENT_SAMPLES = 3

#: term name (prefix) -> what to try when the run grows (the guard's message)
HINTS = {
    "pml": "[pml]: a gentler layer (a larger reflection, a lower grading_order, more elements) has slower rates; "
           "check whether a dispersive [material] reaches into the layer",
    "dispersion": "dispersive [material] poles: their rates shorten the stable step (docs/electromagnetics.md, "
                  "\"Dispersive media\"); check that no such region reaches into a [pml] layer",
    "plane_wave": "a plane wave (TF/SF): the total-field surface must lie in the background medium, away from "
                  "a [pml] layer",
    "sources": "[source] currents and dipoles bring energy in: the guard allows for what they inject, so a growth "
               "past it is an instability of the discretisation",
}


def _time_scale(waveform: str, p: dict) -> float:
    """The shortest time over which |w| changes: a period or a width (inf: none)."""
    scales = [1.0 / p["frequency"]] if "frequency" in p else []
    scales += [p["width"]] if "width" in p else []
    scales += [p["ramp"]] if p.get("ramp") else []
    return min(scales) if scales else math.inf


def _integral(waveform: str, p: dict, t1: float, t2: float, shift: float) -> float:
    """The trapezoid integral of |w(t - shift)| over [t1, t2]."""
    if not t2 > t1:
        return 0.0
    count = min(MOST_SAMPLES, max(8, math.ceil(SAMPLES_PER_PERIOD * (t2 - t1) / _time_scale(waveform, p))))
    tau = np.linspace(t1, t2, count + 1) - shift
    values = np.abs(waveform_array(np, waveform, p, tau))
    return float((t2 - t1) / count * (values.sum() - 0.5 * (values[0] + values[-1])))


class SourceInjection:
    """Per-source integrals of the rate bound (module docstring). Collective: construction
    and every ``measure`` (the currents' norm is reduced over ranks)."""

    def __init__(self, system, comm=None):
        self.comm = comm
        self.waves = []  # (label, waveform, params, amplitude, smallest delay, largest delay)
        sources = system.sources
        for spec in (sources.specs if sources is not None else ()):
            if spec.type != "current":
                v = spec.values
                self.waves.append((f"source.{spec.name}", v["waveform"], v, abs(v["amplitude"]), 0.0, 0.0))
        planes = [term.wave for term in system.terms if getattr(term, "wave", None) is not None]
        if planes:
            corners = bounding_box_corners(system.geometry.coords, comm)
            for wave in planes:
                delays = wave.delay(corners)
                self.waves.append((f"{wave.table}", wave.waveform, wave.params, abs(wave.amplitude),
                                   float(delays.min()), float(delays.max())))
        self.sources = sources if sources is not None and any(s.type == "current" for s in sources.specs) else None
        self.mass = None
        if self.sources is not None and self.sources.buffer is not None:
            self.mass = system.backend.asarray(system.geometry.mass[sources.elements])
        self.labels = [w[0] for w in self.waves] + (["currents"] if self.sources is not None else [])
        self.start(0.0)

    def __len__(self) -> int:
        return len(self.labels)

    def start(self, t: float) -> None:
        """Integrals from t (a run's start, or a restart's time) on."""
        self.t = float(t)
        self.low = np.zeros(len(self.labels))
        self.high = np.zeros(len(self.labels))
        self.last_current = self._current_norms([self.t])[0] if self.sources is not None else 0.0

    def measure(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Collective: (low, high) per source, the integrals from the start to t (t not before
        the previous call's; an earlier t starts again from there)."""
        t = float(t)
        if t < self.t:
            self.start(t)
        for k, (_, waveform, p, amplitude, first, last) in enumerate(self.waves):
            self.low[k] += amplitude * _integral(waveform, p, self.t, t, last)
            self.high[k] += amplitude * _integral(waveform, p, self.t, t, first)
        if self.sources is not None:
            times = [self.t + (t - self.t) * (j + 1) / CURRENT_SAMPLES for j in range(CURRENT_SAMPLES)]
            norms = np.concatenate([[self.last_current], self._current_norms(times)])
            step = (t - self.t) / CURRENT_SAMPLES
            added = step * float(norms.sum() - 0.5 * (norms[0] + norms[-1])) if t > self.t else 0.0
            self.low[-1] += added
            self.high[-1] += added
            self.last_current = float(norms[-1])
        self.t = t
        return self.low.copy(), self.high.copy()

    def _current_norms(self, times) -> np.ndarray:
        """Collective: the M-norm of the currents' J/eps at each of ``times``."""
        squares = np.zeros(len(times))
        if self.mass is not None:
            xp = self.sources.backend.xp
            for j, t in enumerate(times):
                rate = self.sources.rate(t, dipoles=False)
                squares[j] = float(xp.sum(self.mass * xp.sum(rate * rate, axis=0)))
        return np.sqrt(np.maximum(allreduce(self.comm, squares), 0.0))


def growth_hints(system, comm=None) -> list[str]:
    """Collective: what to try, one line per kind of term present (HINTS), and first the
    dispersive regions that reach into a [pml] layer, with their element counts there."""
    present = [term.name for term in system.terms]
    layers = [term for term in system.terms if term.name == "pml"]
    overlaps = []
    for term in system.terms:
        if term.name.startswith("dispersion.") and layers:
            shared = sum(int(np.intersect1d(term.elements, layer.elements).size) for layer in layers)
            shared = int(allreduce(comm, shared))
            if shared:
                overlaps.append(f"[material.{term.name.split('.', 1)[1]}] (dispersive) reaches into the [pml] layer "
                                f"on {shared} element{'s' if shared > 1 else ''}")
    return overlaps + [hint for prefix, hint in HINTS.items() if any(name.startswith(prefix) for name in present)]
