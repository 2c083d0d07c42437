"""Shared helpers of the 2-D tests (issue 34): the curved-quad deformation, the 13-quad strip
the kernel tests run on (13: not a multiple of any block's element count, so the last block
is partly idle), and the extruded-twin comparison (plan section 2.1: a 2-D array equals every
k plane of the twin's z-constant one)."""

from __future__ import annotations

import numpy as np

from lobatto.mesh import box_mesh


def deform_xy(x, y, z):
    """A smooth z-independent deformation (curved quads); z stays 0."""
    return 0.06 * np.sin(np.pi * x) * np.sin(2 * np.pi * y), 0.05 * np.sin(2 * np.pi * x) * np.cos(np.pi * y), 0 * z


def kernel_strip():
    """13 curved quads of [0, 2] x [0, 1], periodic along x."""
    return box_mesh((13, 1), upper=(2.0, 1.0), periodic=(True, False), deform=deform_xy)


def extruded(a2, n):
    """(..., E, 1, n, n) -> the z-constant (..., E, n, n, n) of the twin."""
    return np.ascontiguousarray(np.repeat(a2, n, axis=-3))


def padded(a, components):
    """a (c, ...) with zero components appended up to ``components``."""
    return np.concatenate([a, np.zeros((components - a.shape[0],) + a.shape[1:])])


def close(got, expected, tolerance):
    """got equals expected to ``tolerance`` relative to expected's largest value (finite, nonzero)."""
    error, scale = np.abs(got - expected).max(), np.abs(expected).max()
    assert np.isfinite(got).all() and scale > 0 and error <= tolerance * scale, (error, scale)
