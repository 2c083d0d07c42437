"""Exact solutions and mesh deformations shared by the CPU and GPU tests."""

from __future__ import annotations

import numpy as np

PI, SQRT2 = np.pi, np.sqrt(2.0)


class Fn:
    """A Python function standing in for a compiled case expression."""

    def __init__(self, f):
        self.f = f

    def evaluate(self, xp, x, y, z, t):
        return self.f(x, y, z, t)


# TM110 mode of the PEC unit cube.
CAVITY_TM110 = {
    "Ez": Fn(lambda x, y, z, t: np.sin(PI * x) * np.sin(PI * y) * np.cos(SQRT2 * PI * t)),
    "Hx": Fn(lambda x, y, z, t: -np.sin(PI * x) * np.cos(PI * y) * np.sin(SQRT2 * PI * t) / SQRT2),
    "Hy": Fn(lambda x, y, z, t: np.cos(PI * x) * np.sin(PI * y) * np.sin(SQRT2 * PI * t) / SQRT2),
}


def bump(x, y, z):
    """A smooth interior deformation of the unit cube that leaves its boundary in place."""
    b = 0.05 * np.sin(PI * x) * np.sin(PI * y) * np.sin(PI * z)
    return b, b, 0.0 * b
