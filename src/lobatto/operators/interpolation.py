"""Interpolation between element grids: GLL to GLL (p-multigrid), GLL to finer GLL or Gauss
grids (over-integration), applied as tensor products on (..., E, n, n, n) arrays, or along i
and j only on a 2-D mesh's (..., E, 1, n, n) arrays (the k axis of one point stays).

A matrix J (m, n) maps n nodal values on a line to m values; in 3-D it acts along i, j and k
in turn (three batched matrix products, no loop over elements). p-multigrid uses

    prolong  = J (coarse GLL -> fine GLL): the coarse polynomial evaluated on the fine grid
    restrict = J^T (fine -> coarse): the transpose, which maps fine residuals (integrals
               against the fine basis) to integrals against the coarse basis.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from lobatto.discretization import gll_points
from lobatto.discretization.tensor import along


def interpolation_matrix(from_points, to_points) -> np.ndarray:
    """(len(to_points), len(from_points)) Lagrange interpolation from the nodes
    ``from_points`` (distinct) to ``to_points`` (barycentric form; exact rows where a
    target is a node)."""
    x = np.asarray(from_points, dtype=np.float64)
    y = np.asarray(to_points, dtype=np.float64)
    if x.ndim != 1 or len(np.unique(x)) != len(x):
        raise ValueError("interpolation_matrix: from_points must be distinct points on a line")
    diff = x[:, None] - x[None, :]
    np.fill_diagonal(diff, 1.0)
    weights = 1.0 / np.prod(diff, axis=1)
    offset = y[:, None] - x[None, :]
    at_node = offset == 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = weights[None, :] / offset
        matrix = terms / terms.sum(axis=1, keepdims=True)
    rows = at_node.any(axis=1)
    matrix[rows] = at_node[rows].astype(np.float64)
    return matrix


def gauss_points(order: int) -> np.ndarray:
    """The order + 1 Gauss–Legendre points on (-1, 1), ascending (exact to degree 2 order + 1)."""
    return np.polynomial.legendre.leggauss(int(order) + 1)[0]


@lru_cache(maxsize=None)
def _gll_to_gll(from_order: int, to_order: int) -> np.ndarray:
    matrix = interpolation_matrix(gll_points(from_order), gll_points(to_order))
    matrix.setflags(write=False)
    return matrix


def gll_to_gll(from_order: int, to_order: int) -> np.ndarray:
    """(to_order + 1, from_order + 1): GLL nodal values of order N to those of order M."""
    return _gll_to_gll(int(from_order), int(to_order))


@lru_cache(maxsize=None)
def _gll_to_gauss(from_order: int, to_order: int) -> np.ndarray:
    matrix = interpolation_matrix(gll_points(from_order), gauss_points(to_order))
    matrix.setflags(write=False)
    return matrix


def gll_to_gauss(from_order: int, to_order: int) -> np.ndarray:
    """(to_order + 1, from_order + 1): GLL nodal values of order N to the M + 1 Gauss points."""
    return _gll_to_gauss(int(from_order), int(to_order))


def interpolate(backend, u, matrix):
    """J applied along each of the three axes of u (..., E, n, n, n) -> (..., E, m, m, m);
    along i and j of a 2-D field (..., E, 1, n, n) -> (..., E, 1, m, m).

    ``matrix`` (m, n) is a host array or already one of the backend's (then no copy is made
    per call); the result has u's dtype."""
    xp = backend.xp
    J = xp.asarray(matrix, dtype=u.dtype)
    m, n = J.shape
    thin = len(u.shape) >= 3 and u.shape[-3:] == (1, n, n) and n > 1  # n = 1: a 3-D order-0 grid
    if u.shape[-3:] != (n, n, n) and not thin:
        raise ValueError(f"interpolate: u must end in ({n}, {n}, {n}) (or (1, {n}, {n}) on a 2-D mesh) for a "
                         f"({m}, {n}) matrix, got {u.shape}")
    lead = u.shape[:-3]
    x = along(xp, u, J, 1)  # along i: [(., k, j), a]
    x = along(xp, x, J, m)  # along j: [(., k), b, a]
    if thin:
        return x.reshape(lead + (1, m, m))
    x = along(xp, x, J, m * m)  # along k: [., c, (b, a)]
    return x.reshape(lead + (m, m, m))


class GridTransfer:
    """Prolongation and restriction between GLL orders, with the matrices held on the
    backend (one copy for the life of a multigrid level)."""

    def __init__(self, backend, coarse_order: int, fine_order: int, dtype=None):
        self.backend = backend
        self.coarse_order, self.fine_order = int(coarse_order), int(fine_order)
        dtype = np.dtype(dtype or backend.dtype)
        J = gll_to_gll(self.coarse_order, self.fine_order)
        self.prolongation = backend.asarray(J, dtype=dtype)
        self.restriction = backend.asarray(np.ascontiguousarray(J.T), dtype=dtype)

    def prolong(self, u):
        """Coarse (..., E, nc, nc, nc) -> fine (..., E, nf, nf, nf): interpolation."""
        return interpolate(self.backend, u, self.prolongation)

    def restrict(self, r):
        """Fine -> coarse by the transpose of ``prolong``."""
        return interpolate(self.backend, r, self.restriction)


def prolong(backend, u, fine_order: int):
    """u (..., E, nc, nc, nc) on GLL order nc - 1 interpolated to GLL order ``fine_order``."""
    return interpolate(backend, u, gll_to_gll(u.shape[-1] - 1, fine_order))


def restrict(backend, r, coarse_order: int):
    """r (..., E, nf, nf, nf) mapped by the transpose of ``prolong`` to GLL order ``coarse_order``."""
    return interpolate(backend, r, np.ascontiguousarray(gll_to_gll(coarse_order, r.shape[-1] - 1).T))
