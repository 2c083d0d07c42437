"""Waveforms w(t) of the Maxwell sources, shared by the point dipoles (sources.py) and the
plane waves (tfsf.py): their names and keys with valid ranges, the value at one time
(:func:`waveform_value`), on arrays (:func:`waveform_array`), and the check that a source's
waveform stays finite over the run (:func:`check_waveform`). The CUDA kernels evaluate the
same formulas (tfsf_cuda.py).
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from lobatto.config import Key
from lobatto.config.ranges import LARGE, MAGNITUDE, NONNEGATIVE, SMALL, Range
from lobatto.errors import InputError

#: waveform -> the keys it takes
WAVEFORMS = {
    "gaussian": ("t0", "width"),
    "modulated_gaussian": ("frequency", "t0", "width"),
    "ricker": ("frequency", "t0"),
    "continuous": ("frequency", "ramp"),
}
#: the waveforms' keys with their valid ranges: 2 pi f t, (t - t0) / width and their squares
#: must stay finite over the run (checked again with t_end when the run is set up)
WAVEFORM_KEYS = {
    "frequency": Key("frequency", "positive", None, "frequency f (cycles per unit time)",
                     range=Range(SMALL, LARGE, reason="2 pi f t must stay finite; below 1e-30 the wave is constant "
                                 "over any run")),
    "t0": Key("t0", "number", None, "time of the pulse's centre", range=MAGNITUDE),
    "width": Key("width", "positive", None, "the Gaussian's standard deviation in time",
                 range=Range(SMALL, LARGE, reason="(t - t0) / width is squared")),
    "ramp": Key("ramp", "nonnegative", None, "time over which a continuous wave is switched on", range=NONNEGATIVE),
}
#: a source's strength: it multiplies the discrete delta 1 / (mass eps), in single precision too
AMPLITUDE = Key("amplitude", "number", 1.0, "amplitude",
                range=Range(-LARGE, LARGE, reason="it multiplies the source's profile (the discrete delta, 1/epsilon)"))
#: a direction: any finite vector but zero; only its direction counts (scaled to length 1)
DIRECTION = Range(reason="a direction, scaled to length 1")


def waveform_value(waveform: str, p: Mapping[str, float], t: float) -> float:
    """w(t) of a dipole (docs/electromagnetics.md, "Sources")."""
    # (squares as products: a float product that overflows is inf, and exp(-inf) = 0, where
    # ** would raise OverflowError far from the pulse)
    if waveform == "gaussian":
        s = (t - p["t0"]) / p["width"]
        return math.exp(-0.5 * (s * s))
    if waveform == "modulated_gaussian":
        s = t - p["t0"]
        r = s / p["width"]
        envelope = math.exp(-0.5 * (r * r))
        return 0.0 if envelope == 0 else math.sin(2 * math.pi * p["frequency"] * s) * envelope
    if waveform == "ricker":
        a = math.pi * p["frequency"] * (t - p["t0"])
        a *= a
        return 0.0 if a == math.inf else (1.0 - 2.0 * a) * math.exp(-a)
    if waveform == "continuous":
        ramp = p["ramp"]
        on = 1.0 if t >= ramp else 0.0 if ramp == 0 else math.sin(0.5 * math.pi * max(t, 0.0) / ramp) ** 2
        return on * math.sin(2 * math.pi * p["frequency"] * t)
    raise ValueError(f"unknown waveform {waveform!r}")


def check_waveform(spec, times, where: str = "case") -> None:
    """InputError unless the waveform of ``spec`` (a dipole or a plane wave) is finite at
    ``times`` (the run's ends; a plane wave's delays widen them): 2 pi f t may overflow
    where the keys are each in range but t is long."""
    v = spec.values
    for t in times:
        # the arguments (2 pi f s, s / width) must square finitely: the CUDA kernels evaluate
        # the waveform as written, without this module's care far from the pulse
        s = t - v.get("t0", 0.0)
        arguments = [2 * math.pi * v["frequency"] * s] if "frequency" in v else []
        arguments += [s / v["width"]] if "width" in v else []
        try:
            value = waveform_value(v["waveform"], v, float(t))
        except (OverflowError, ValueError):  # sin(inf)
            value = math.nan
        if not math.isfinite(value) or not all(abs(a) < 1e150 for a in arguments):
            keys = ", ".join(f"{k} = {v[k]:g}" for k in WAVEFORMS[v["waveform"]])
            raise InputError(f"{where}: [source.{spec.name}] the {v['waveform']} waveform ({keys}) overflows at "
                             f"t = {t:.6g} (2 pi frequency (t - t0) or (t - t0) / width beyond 1e150); choose values "
                             "on the run's time scale")


def waveform_array(xp, waveform: str, p: Mapping[str, float], tau):
    """w(tau) of sources.waveform_value on arrays (NumPy or CuPy), for tau of any sign."""
    # far from the pulse a square may overflow to inf, and exp(-inf) = 0 is the value (the
    # phases stay finite: build_plane_waves checks the waveform over the run's delays)
    with np.errstate(over="ignore", invalid="ignore"):
        if waveform == "gaussian":
            return xp.exp(-0.5 * ((tau - p["t0"]) / p["width"]) ** 2)
        if waveform == "modulated_gaussian":
            s = tau - p["t0"]
            envelope = xp.exp(-0.5 * (s / p["width"]) ** 2)
            return xp.where(envelope > 0, xp.sin((2 * math.pi * p["frequency"]) * s), 0.0) * envelope
        if waveform == "ricker":
            a = (math.pi * p["frequency"] * (tau - p["t0"])) ** 2
            return xp.where(xp.isinf(a), 0.0, (1.0 - 2.0 * xp.minimum(a, 1e300)) * xp.exp(-a))
    if waveform == "continuous":
        ramp = p["ramp"]
        on = (tau >= 0) * 1.0 if ramp == 0 else xp.sin((0.5 * math.pi / ramp) * xp.clip(tau, 0.0, ramp)) ** 2
        return on * xp.sin((2 * math.pi * p["frequency"]) * tau)
    raise ValueError(f"unknown waveform {waveform!r}")
