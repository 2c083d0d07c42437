"""Valid ranges of case-file numbers, each with its reason (docs/case-file.md, "Ranges").

A :class:`Range` is declared beside its key: in a system's :class:`~lobatto.config.physics.Key`
(``Key(..., range=Range(...))``), or in :data:`SECTION_RANGES` for the keys of the generic
sections (``[time]``, ``[mesh]``, ``[output]``, ``[checkpoint]``, ``[output.probes]``) that
``config/sections.py`` reads. A key of a numeric kind without a range of its own gets its kind's
(:func:`kind_range`): magnitudes within ``1e-100 .. 1e100``, so that the products a run forms
of a few of them (a coefficient times metric factors, squared in a norm) stay inside
float64's ``1e-308 .. 1.8e308``. Expression keys carry a range too: the system checks the
values on the mesh against it (before any solve), as an expression's value is only known there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lobatto.errors import InputError

#: the largest magnitude of a number of a case (and of an expression's value on the mesh)
LARGEST = 1e100
#: the smallest nonzero magnitude of a positive number
SMALLEST = 1e-100
#: why: a product of three such numbers stays within float64 (1e-308 .. 1.8e308)
MAGNITUDE_REASON = "products of a few such values, as a run forms them, must stay within float64's 1e+-308"


def _show(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e4:
        return str(int(value))
    return f"{value:g}"


@dataclass(frozen=True)
class Range:
    """The values a key takes: ``low`` to ``high`` (None: no bound on that side), each end
    included unless ``low_open`` / ``high_open``; ``reason``: why, in a few words."""

    low: float | None = None
    high: float | None = None
    reason: str = ""
    low_open: bool = False
    high_open: bool = False

    def contains(self, value: float) -> bool:
        """False for NaN, for a value outside, and for a number too big for a float."""
        try:
            v = float(value)
        except OverflowError:
            return False
        if math.isnan(v):
            return False
        if self.low is not None and (v < self.low or (self.low_open and v == self.low)):
            return False
        if self.high is not None and (v > self.high or (self.high_open and v == self.high)):
            return False
        return True

    def within(self, values, xp=np):
        """Elementwise ``contains`` of an array (False for NaN), without floating-point warnings;
        ``xp``: the array's namespace (numpy or cupy)."""
        values = xp.asarray(values)
        ok = ~xp.isnan(values)
        with np.errstate(all="ignore"):  # a bound beyond float32 casts to inf: still the right answer
            if self.low is not None:
                ok &= (values > self.low) if self.low_open else (values >= self.low)
            if self.high is not None:
                ok &= (values < self.high) if self.high_open else (values <= self.high)
        return ok

    def text(self) -> str:
        """The range in words: ``from 1e-100 to 1e+100``, ``> 0 and < 1``, ``<= 1000``."""
        low = None if self.low is None else (">" if self.low_open else ">=") + " " + _show(self.low)
        high = None if self.high is None else ("<" if self.high_open else "<=") + " " + _show(self.high)
        if low and high and not self.low_open and not self.high_open:
            return f"from {_show(self.low)} to {_show(self.high)}"
        return " and ".join(part for part in (low, high) if part) or "any number"

    def describe(self) -> str:
        """``text()`` with the reason: ``from 1 to 100 (reason)``."""
        return f"{self.text()} ({self.reason})" if self.reason else self.text()


#: the default range of each numeric key kind (config/physics.py KEY_KINDS)
KIND_RANGES = {
    "positive": Range(SMALLEST, LARGEST, MAGNITUDE_REASON),
    "nonnegative": Range(0.0, LARGEST, MAGNITUDE_REASON),
    "number": Range(-LARGEST, LARGEST, MAGNITUDE_REASON),
    "expression": Range(-LARGEST, LARGEST, MAGNITUDE_REASON),
    "expression_t": Range(-LARGEST, LARGEST, MAGNITUDE_REASON),
}


def kind_range(kind: str) -> Range | None:
    """The range a key of this kind has when it declares none (None: integers, choices...)."""
    return KIND_RANGES.get(kind)


#: the most steps of a solve (Krylov iterations) a case may ask for
MAX_ITERATIONS = 10**6
ITERATIONS_REASON = "a solve that has not converged in a million iterations will not; more only runs for days"

#: a number of steps: a run takes at most 1e9 (runner.schedule.MAX_STEPS)
STEPS = Range(0, 10**9, "a number of steps, and a run takes at most 1e9")
#: coordinates of the box and of points in it; the box's extents have their own bounds (mesh/box.py)
COORDINATES = Range(-LARGEST, LARGEST, MAGNITUDE_REASON)

#: ranges of the generic sections' numeric keys, read by config/sections.py (through config/toolkit.py)
SECTION_RANGES = {
    ("time", "t_end"): Range(SMALLEST, LARGEST, MAGNITUDE_REASON),
    ("time", "dt"): Range(SMALLEST, LARGEST, MAGNITUDE_REASON),
    ("time", "initial_dt"): Range(SMALLEST, LARGEST, MAGNITUDE_REASON),
    ("time", "cfl"): Range(0.0, 100.0, "a CFL number: the stable ones are below 1 for the explicit schemes, a few "
                           "for the multistep ones", low_open=True),
    ("time", "target_cfl"): Range(0.0, 100.0, "a CFL number: extrapolated advection is unstable well below 100, "
                                  "sub-stepped advection (substeps) a few times substeps", low_open=True),
    ("time", "max_cfl"): Range(0.0, 1e6, "a CFL number: a guard against a run gone wrong", low_open=True),
    ("time", "steady_tolerance"): Range(0.0, 1e6, "a relative change per unit time: any positive number (one "
                                        "below the round-off of the state per unit time is never reached)",
                                        low_open=True),
    ("time", "steady_every"): Range(1, 10**6, "steps between checks (each costs a copy of the state and one "
                                    "reduction): from every step to a million"),
    ("time", "until_decayed"): Range(0.0, 1.0, "a fraction of the watched maximum: 1 or more would stop at the "
                                     "first check, and 0 is never reached", low_open=True, high_open=True),
    ("time", "decay_interval"): Range(SMALLEST, LARGEST, MAGNITUDE_REASON),
    ("time", "substeps"): Range(0, 100, "RK4 sub-steps per step: each costs 4 convective evaluations per lagged "
                                "field, and 100 carry a step's CFL number to its range's end (100) at a sub-step "
                                "CFL of 1"),
    ("mesh", "lower"): COORDINATES,
    ("mesh", "upper"): COORDINATES,
    ("output", "every"): STEPS,
    ("output", "log_every"): STEPS,
    ("output.probes", "every"): Range(1, 10**9, STEPS.reason),
    ("output.probes", "points"): COORDINATES,
    ("checkpoint", "every"): STEPS,
    ("checkpoint", "keep"): Range(1, 10**6, "checkpoints kept on disk"),
    ("checkpoint", "wall_minutes"): Range(1e-6, 1e7, "minutes of wall time: from 60 us (every step) to 19 years"),
}


def precision_range(dtype) -> Range:
    """The magnitudes a nonzero value may have in a run of this precision: a product of two
    stays a normal number (float32: about 1e-19 .. 1.8e19; float64 is wider than LARGEST)."""
    info = np.finfo(dtype)
    name = np.dtype(dtype).name
    return Range(float(np.sqrt(info.tiny)), float(np.sqrt(info.max)),
                 f"{name} holds {float(info.tiny):.1e} to {float(info.max):.1e}, and a product of two such values "
                 "must stay within it")


def check_precision(value: float, dtype, where: str) -> None:
    """InputError unless a nonzero value is within ``precision_range(dtype)``; ``where``
    names the key (``[physics] viscosity``)."""
    valid = precision_range(dtype)
    if value != 0 and not valid.contains(abs(value)):
        hint = ' (or use [backend] precision = "float64")' if np.dtype(dtype) == np.float32 else ""
        raise InputError(f"{where} = {value:g} is too {'small' if abs(value) < 1 else 'large'} for "
                         f"{np.dtype(dtype).name}: its magnitude must be {valid.describe()}; rescale the "
                         f"problem's units{hint}")


def section_range(section: str, key: str) -> Range | None:
    return SECTION_RANGES.get((section, key))


def show_value(value: float) -> str:
    """A value of an expression for a message: ``inf (it overflows float64)``, ``nan (not a number)``."""
    value = float(value)
    if math.isinf(value):
        return f"{value:g} (it overflows float64)"
    if math.isnan(value):
        return "nan (not a number)"
    return f"{value:.4g}"


def check_expression_values(values, valid: Range, where: str, text: str, t: float | None = None, xp=np):
    """InputError unless every value of the expression (``where`` names its key, as
    ``[physics] force_x``; ``text``: its text) is within ``valid``; ``t``: the time evaluated at."""
    ok = valid.within(values, xp)
    if bool(ok.all()):
        return values
    bad = float(xp.asarray(values)[~ok].reshape(-1)[0])
    when = "" if t is None else f" at t = {t:.6g}"
    raise InputError(f"{where} = \"{text}\" is {show_value(bad)}{when} at some points; its values must be "
                     f"{valid.describe()}")


# ======================================================== tables a system parses by hand
# A table that a system parses itself (``[source.<name>]``, ``[pml]``, ``[output.dft]``...)
# declares a Range per key beside its parser and checks through these: the value as a float
# (or a tuple of them), or the one-line ``ctx.bad`` naming [section] key, the range and why.

#: the largest magnitude of such tables' numbers (a system's own choice): the square of a rate (1e60), or a
#: product of two with a time or a length, stays far inside float64, and a value or its
#: inverse inside float32 (3.4e38; normal above 1.2e-38); SI values (eps0 = 8.85e-12, optical
#: frequencies ~1e15 Hz) and any sensible scaling of units fit
LARGE = 1e30
#: the smallest magnitude of a positive number of those tables that is inverted or divided by
SMALL = 1e-30
#: any finite number of magnitude up to LARGE
MAGNITUDE = Range(-LARGE, LARGE, "products with times and lengths must stay finite")
NONNEGATIVE = Range(0.0, LARGE, "products with times and lengths must stay finite")


def is_number(value) -> bool:
    """An int or float that is not a bool (TOML's numbers)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def finite_float(value) -> float | None:
    """A TOML number as a finite float, else None (NaN, inf, an integer beyond float64, a bool)."""
    if not is_number(value):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def _expected(what: str, valid: Range, each: str = "") -> str:
    """``what`` and the range with its reason, worded as config/toolkit.py's ``within``:
    ``a number from 1e-30 to 1e+30 (reason)``."""
    if valid.text() == "any number":
        return f"{what} ({valid.reason})" if valid.reason else what
    return f"{what}{each} {valid.describe()}"


def check_number(ctx, section: str, key: str, value, valid: Range) -> float:
    """``value`` as a float when it is a finite number within ``valid``, else ``ctx.bad``
    naming [section] key with the range and its reason (``ctx``: the schema's context)."""
    number = finite_float(value)
    if number is None or not valid.contains(number):
        what = "a finite number" if valid.text() == "any number" else "a number"
        raise ctx.bad(section, key, _expected(what, valid), value)
    return number


def check_vector(ctx, section: str, key: str, value, valid: Range = MAGNITUDE, length: int = 3) -> tuple:
    """A list of ``length`` finite numbers, each within ``valid``, as a tuple of floats."""
    what = _expected(f"a list of {length} finite numbers", valid, ", each")
    if not isinstance(value, (list, tuple)) or len(value) != length or not all(is_number(v) for v in value):
        raise ctx.bad(section, key, what, value)
    numbers = [finite_float(v) for v in value]
    if any(v is None or not valid.contains(v) for v in numbers):
        raise ctx.bad(section, key, what, value)
    return tuple(numbers)


def box_length(ctx, section: str, table, keys=("lower", "upper")) -> int:
    """2 where a box's ``lower`` and ``upper`` both have 2 entries (a 2-D mesh's rectangle, as
    [output.dft] boxes), else 3 (a wrong length is then refused as a 3-D box's); one of 2 and
    one of 3 entries is refused here, naming both."""
    lengths = [len(table[k]) if isinstance(table.get(k), list) else None for k in keys]
    if sorted(lengths, key=str) == [2, 3]:
        raise ctx.error(f"[{section}] {keys[0]} has {lengths[0]} entries and {keys[1]} {lengths[1]}: give 2 each "
                        "(a rectangle on a 2-D mesh) or 3 each")
    return 2 if lengths == [2, 2] else 3


def unit_vector(values) -> tuple | None:
    """A nonzero finite vector scaled to length 1 without overflow or underflow (the norm of
    [1e308, 1e308, 1e308] or of [1e-320, 0, 0] is not representable, their direction is);
    None for the zero vector."""
    largest = max(abs(float(v)) for v in values)
    if not largest > 0:
        return None
    scaled = [float(v) / largest for v in values]
    norm = math.sqrt(sum(v * v for v in scaled))
    return tuple(v / norm for v in scaled)
