"""Gauss–Lobatto–Legendre (GLL) points, weights, derivative and interpolation matrices.

All functions are cached per order: they are called with the same N many times.
Points are sorted ascending on [-1, 1]; the first and last are -1 and +1 exactly.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

MAX_ORDER = 24


def _check_order(order: int) -> int:
    if not isinstance(order, (int, np.integer)) or not 1 <= order <= MAX_ORDER:
        raise ValueError(f"GLL order must be an integer in 1..{MAX_ORDER}, got {order!r}")
    return int(order)


def legendre(order: int, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Legendre polynomial P_N(x) and its derivative by the three-term recurrence."""
    x = np.asarray(x, dtype=np.float64)
    p_prev, p = np.ones_like(x), x.copy()
    if order == 0:
        return p_prev, np.zeros_like(x)
    for k in range(1, order):
        p_prev, p = p, ((2 * k + 1) * x * p - k * p_prev) / (k + 1)
    # P'_N from P_N and P_{N-1}; at x = +-1 use the closed form to avoid 0/0.
    with np.errstate(divide="ignore", invalid="ignore"):
        dp = order * (x * p - p_prev) / (x * x - 1.0)
    ends = np.abs(np.abs(x) - 1.0) < 1e-300
    dp = np.where(ends, 0.5 * order * (order + 1) * np.sign(x) ** (order + 1), dp)
    return p, dp


@lru_cache(maxsize=None)
def _points_weights(order: int) -> tuple[np.ndarray, np.ndarray]:
    n = order
    # Interior points are the roots of P'_N; Newton on P'_N from Chebyshev–Lobatto guesses,
    # using P''_N from the Legendre ODE: (1-x^2) P'' = 2x P' - N(N+1) P.
    x = -np.cos(np.pi * np.arange(n + 1) / n)
    interior = x[1:-1].copy()
    for _ in range(100):
        p, dp = legendre(n, interior)
        ddp = (2 * interior * dp - n * (n + 1) * p) / (1 - interior**2)
        step = dp / ddp
        interior -= step
        if np.max(np.abs(step), initial=0.0) < 1e-16:
            break
    x = np.concatenate(([-1.0], np.sort(interior), [1.0]))
    # Symmetrise: exact antisymmetry keeps the derivative matrix antisymmetric to round-off.
    x = 0.5 * (x - x[::-1])
    p, _ = legendre(n, x)
    w = 2.0 / (n * (n + 1) * p**2)
    w = 0.5 * (w + w[::-1])
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


def gll_points(order: int) -> np.ndarray:
    """The N+1 GLL points on [-1, 1], ascending."""
    return _points_weights(_check_order(order))[0]


def gll_weights(order: int) -> np.ndarray:
    """The N+1 GLL quadrature weights (exact for polynomials of degree 2N-1)."""
    return _points_weights(_check_order(order))[1]


def _barycentric_weights(x: np.ndarray) -> np.ndarray:
    diff = x[:, None] - x[None, :]
    np.fill_diagonal(diff, 1.0)
    return 1.0 / np.prod(diff, axis=1)


@lru_cache(maxsize=None)
def derivative_matrix(order: int) -> np.ndarray:
    """D[i, j] = h_j'(x_i): derivative at point i of the Lagrange polynomial of point j.

    Off-diagonal entries from barycentric weights; the diagonal by the negative-sum
    rule, which makes D exact on constants to round-off.
    """
    x = gll_points(order)
    lam = _barycentric_weights(x)
    diff = x[:, None] - x[None, :]
    np.fill_diagonal(diff, 1.0)
    d = (lam[None, :] / lam[:, None]) / diff
    np.fill_diagonal(d, 0.0)
    np.fill_diagonal(d, -d.sum(axis=1))
    d.setflags(write=False)
    return d


def interpolation_matrix(order: int, targets: np.ndarray) -> np.ndarray:
    """I[m, j] = h_j(targets[m]): evaluates a nodal GLL polynomial at arbitrary points."""
    x = gll_points(order)
    targets = np.asarray(targets, dtype=np.float64)
    lam = _barycentric_weights(x)
    diff = targets[:, None] - x[None, :]
    exact = np.abs(diff) < 1e-15
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = lam[None, :] / diff
        mat = terms / terms.sum(axis=1, keepdims=True)
    rows = exact.any(axis=1)
    mat[rows] = exact[rows].astype(np.float64)
    return mat
