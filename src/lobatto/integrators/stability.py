"""Stability regions of the explicit Runge–Kutta schemes: their stability polynomials R(z)
and how far the region |R(z)| <= 1 reaches from 0 in a direction of the left half-plane.

A step dt is stable for an eigenvalue lambda of the semi-discrete operator when
|R(dt lambda)| <= 1; ``reach(scheme, angle)`` is the largest r with |R(r e^{i angle})| <= 1
along the whole segment from 0 (tables.STABILITY_RADII lists its values on the axes).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from lobatto.integrators.tables import butcher_form

__all__ = ["reach", "stability_polynomial"]

#: |R| may exceed 1 by this much on the boundary (round-off of the polynomial's evaluation)
SLACK = 1e-12
#: the segment is sampled at this spacing before the crossing is bisected (the regions'
#: radii are 1.7-4.7, their boundaries smooth)
SAMPLE = 1e-3


def stability_polynomial(scheme) -> np.ndarray:
    """Coefficients c_k of R(z) = sum_k c_k z^k = 1 + z b^T (I - z a)^-1 1 (exact for the
    explicit schemes: a is strictly lower triangular, so the series ends at z^stages)."""
    a, b, _ = butcher_form(scheme)
    coefficients, power = [1.0], np.ones(len(b))
    for _ in range(len(b)):
        coefficients.append(float(b @ power))
        power = a @ power
    return np.array(coefficients)


@lru_cache(maxsize=256)
def _reach(name: str, coefficients: tuple, angle: float) -> float:
    poly = np.polynomial.Polynomial(coefficients)
    direction = complex(math.cos(angle), math.sin(angle))
    radii = np.arange(1, int(10.0 / SAMPLE)) * SAMPLE
    outside = np.abs(poly(radii * direction)) > 1 + SLACK
    if not outside.any():
        return float(radii[-1])
    first = int(np.argmax(outside))
    low, high = (radii[first - 1] if first else 0.0), radii[first]
    for _ in range(50):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if abs(poly(middle * direction)) <= 1 + SLACK else (low, middle)
    return float(low)


def reach(scheme, angle: float) -> float:
    """The largest r with |R(z)| <= 1 on the segment from 0 to r e^{i angle} (angle in
    radians, pi/2 the imaginary axis, pi the negative real one; clipped to [pi/2, pi]: a
    direction into the right half-plane has no stable segment worth naming)."""
    angle = min(max(float(angle), math.pi / 2), math.pi)
    return _reach(scheme.name, tuple(stability_polynomial(scheme)), angle)
