"""nekRS's HPF-RT regularisation: relaxation towards a low-pass filtered field.

In each direction the nodal values at the N + 1 GLL points are transformed to Legendre
coefficients, u(r) = sum_k c_k P_k(r) (V[i, k] = P_k(r_i), c = V^{-1} u); the low-pass filter
scales them by sigma_k and transforms back, F = V diag(sigma) V^{-1} (n x n). With ``modes``
filtered modes, sigma_k = 1 for k = 0 .. N - modes and sigma_k = 0 for the top ``modes`` (a sharp
cut). nekRS's lowPassFilterSetup ramps the filtered ones instead, sigma_k = 1 - ((k + 1 - k0) /
modes)^2 for k >= k0 = N + 1 - modes (``ramp=True``); both are the same for modes = 1, the
usual setting. In 3-D the filter is the tensor product F3 = F x F x F (along i, j and k), and

    relaxation(u) = weight * (u - F3 u)

pointwise, for u (..., E, n, n, n): zero on fields whose Legendre degree is <= N - modes in every
direction, weight * u on those made only of the filtered modes. (I - F) applied per direction
would not be this: u - F3 u also has the terms where only one or two directions are filtered.

Use in the Navier–Stokes step: -relaxation(u^n) is added to the explicit terms, with the
extrapolated advection and forcing, as nekRS does (``vectorFilterRTHex3D``: EXT -= strength
(u - F u)). It is a strong-form (pointwise) term: to add it to a weak right-hand side such as
``Advection.convective``'s, multiply it by the mass B first. It drains energy from the top
Legendre modes of each element at the rate ``weight`` (1 / time) and leaves the resolved ones.
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.discretization import gll_points
from lobatto.errors import InputError
from lobatto.operators.interpolation import interpolate


def lowpass_matrix(order: int, modes: int, ramp: bool = False) -> np.ndarray:
    """(n, n) host matrix F = V diag(sigma) V^{-1} on the GLL points of ``order``."""
    n = order + 1
    vandermonde = np.polynomial.legendre.legvander(gll_points(order), order)  # [i, k] = P_k(r_i)
    sigma = np.ones(n)
    first = n - modes
    if ramp:
        sigma[first:] = 1.0 - ((np.arange(first, n) + 1.0 - first) / modes) ** 2
    else:
        sigma[first:] = 0.0
    # F = V diag(sigma) V^{-1}: solve F V = V diag(sigma) as V^T F^T = (V diag(sigma))^T
    return np.linalg.solve(vandermonde.T, (vandermonde * sigma).T).T


class HighPassFilter:
    """HPF-RT on a backend: ``relaxation(u) = weight * (u - F3 u)`` (see the module docstring).

    order:   the GLL order N
    modes:   how many of the top Legendre modes the low-pass removes, 1 .. N - 1
    weight:  the relaxation rate (nekRS's hpfrt strength; its default is 10)
    ramp:    nekRS's quadratic ramp over the filtered modes instead of the sharp cut
    """

    def __init__(self, order, backend, modes: int = 1, weight: float = 10.0, ramp: bool = False, dtype=None):
        if not isinstance(order, (int, np.integer)) or order < 2:
            raise InputError(f"HighPassFilter: order must be an integer >= 2 (one mode kept above the mean), got {order!r}")
        self.order = int(order)
        if not isinstance(modes, (int, np.integer)) or isinstance(modes, bool) or not 1 <= modes <= self.order - 1:
            raise InputError(f"HighPassFilter: modes must be an integer in 1..{self.order - 1} (N - 1 for N = "
                             f"{self.order}), got {modes!r}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float, np.floating, np.integer)) \
                or not math.isfinite(weight) or weight < 0:
            raise InputError(f"HighPassFilter: weight must be a finite number >= 0, got {weight!r}")
        self.modes = int(modes)
        self.weight = float(weight)
        self.ramp = bool(ramp)
        self.backend = backend
        self.dtype = np.dtype(dtype or backend.dtype)
        self.matrix = lowpass_matrix(self.order, self.modes, self.ramp)  # host, (n, n)
        self._matrix = backend.asarray(self.matrix, dtype=self.dtype)

    def lowpass(self, u):
        """F3 u: the filter along i, j and k of u (..., E, n, n, n) (i and j of a 2-D field
        (..., E, 1, n, n))."""
        n = self.order + 1
        if tuple(u.shape[-3:]) not in ((n, n, n), (1, n, n)):
            raise InputError(f"HighPassFilter: fields must end in ({n}, {n}, {n}) (or (1, {n}, {n}) on a 2-D mesh) "
                             f"for order {self.order}, got {u.shape}")
        return interpolate(self.backend, u, self._matrix)

    def relaxation(self, u, out=None):
        """weight * (u - F3 u), same shape as u; written into ``out`` if given."""
        result = u - self.lowpass(u)
        result *= self.weight
        if out is None:
            return result
        out[...] = result
        return out
