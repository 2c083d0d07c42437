"""Valid ranges of case-file numbers, declared beside each key with the reason for them.

A :class:`Range` is the set of values a number may take (bounds open or closed) and why;
``check_number`` and ``check_vector`` turn a raw TOML value into a float or a tuple of
floats, or raise the one-line InputError of the schema's context naming the section, the
key, the range and its reason. Tables parsed by hand (a system's ``[source.<name>]``,
``[pml]``, ``[output.dft]``...) declare a Range per key and check through these; a
:class:`~lobatto.config.physics.Key` may carry one (``range``), checked after its kind.

The bounds are chosen so that what is computed from the values (products such as
frequency times time, squares of rates, exponentials, inverses stored in single precision)
stays finite and normal: most magnitudes are limited to :data:`LARGE` (and positive ones
kept above :data:`SMALL`), which leaves SI values (eps0 = 8.85e-12 F/m, optical
frequencies ~1e15 Hz) and any sensible scaling of units inside.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

#: the largest magnitude of most numbers: the square of a rate (1e60) or a product of two
#: such values with a time or a length stays far inside double precision (1.8e308), and a
#: value or its inverse inside single precision (3.4e38, normal above 1.2e-38)
LARGE = 1e30
#: the smallest magnitude of a positive number that is inverted or divided by
SMALL = 1e-30


def _as_float(value: Any) -> float | None:
    """A finite float of a TOML number (an integer beyond double precision is None)."""
    if not is_number(value):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def is_number(value: Any) -> bool:
    """An int or float that is not a bool (TOML's numbers)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Range:
    """``low <= value <= high`` (``<`` where ``low_open`` / ``high_open``); None: no bound
    (a value must still be finite). ``reason``: why, in a few words, for the error message."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    reason: str = ""

    def contains(self, value: Any) -> bool:
        value = _as_float(value)
        if value is None:
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        if self.high is not None and (value >= self.high if self.high_open else value > self.high):
            return False
        return True

    def contains_array(self, values) -> np.ndarray:
        """``contains`` of every element of an array (NaN and infinities are outside)."""
        values = np.asarray(values, dtype=np.float64)
        inside = np.isfinite(values)
        if self.low is not None:
            inside &= (values > self.low) if self.low_open else (values >= self.low)
        if self.high is not None:
            inside &= (values < self.high) if self.high_open else (values <= self.high)
        return inside

    def bounds(self) -> str:
        """'from 1e-30 to 1e+30', '> 0 and <= 1e+30', or '' without bounds."""
        low, high = self.low, self.high
        if low is not None and high is not None and not self.low_open and not self.high_open:
            return f"from {low:g} to {high:g}"
        parts = []
        if low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {low:g}")
        if high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {high:g}")
        return " and ".join(parts)

    def describe(self) -> str:
        """'a number from 1e-30 to 1e+30', 'a number > 0 and < 1', 'a finite number'."""
        bounds = self.bounds()
        return f"a number {bounds}" if bounds else "a finite number"


#: the common ranges
POSITIVE = Range(SMALL, LARGE, reason="it is inverted or multiplies others: kept well inside double and single "
                                      "precision")
NONNEGATIVE = Range(0.0, LARGE, reason="products with times and lengths must stay finite")
MAGNITUDE = Range(-LARGE, LARGE, reason="products with times and lengths must stay finite")


def check_number(ctx, section: str, key: str, value: Any, allowed: Range) -> float:
    """``value`` as a float when it is a number in ``allowed``, else ``ctx.bad`` naming
    [section] key with the range and its reason (ctx: the schema's context)."""
    if not allowed.contains(value):
        raise ctx.bad(section, key, allowed.describe(), value, allowed.reason if is_number(value) else "")
    return float(value)


def check_vector(ctx, section: str, key: str, value: Any, allowed: Range = MAGNITUDE, length: int = 3) -> tuple:
    """A list of ``length`` numbers, each in ``allowed``, as a tuple of floats."""
    bounds = allowed.bounds()
    what = f"a list of {length} finite numbers" + (f", each {bounds}" if bounds else "")
    if not isinstance(value, (list, tuple)) or len(value) != length or not all(is_number(v) for v in value):
        raise ctx.bad(section, key, what, value)
    if not all(allowed.contains(v) for v in value):
        raise ctx.bad(section, key, what, value, allowed.reason)
    return tuple(float(v) for v in value)


def unit_vector(values) -> tuple:
    """A nonzero finite vector scaled to length 1 without overflow or underflow (the norm of
    [1e308, 1e308, 1e308] or of [1e-320, 0, 0] is not representable, their direction is);
    None for the zero vector."""
    largest = max(abs(float(v)) for v in values)
    if not largest > 0:
        return None
    scaled = [float(v) / largest for v in values]
    norm = math.sqrt(sum(v * v for v in scaled))
    return tuple(v / norm for v in scaled)
