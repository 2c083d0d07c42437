"""Coarse-grid solves of the p-multigrid cycle: a dense Cholesky factorisation of the
assembled coarse matrix when the coarse system is small, Jacobi-PCG to a relative tolerance
otherwise.

The dense matrix is assembled from element matrices, which come from applying the level's
element operator to the n^3 local unit vectors (all elements at once: n^3 applications at
setup, 8 at order 1; n^2 and 4 on a 2-D mesh, whose elements are (1, n, n)), and summed into global rows and columns by the level's continuous ids
(0..M-1 over all ranks). Every rank holds the whole M x M matrix and its factor, so a coarse
solve is one allreduce of an M-vector and two triangular products, the same on every rank.

The same on every partition too: the matrix is numbered by each point's smallest (global
element id, local point) key, not by the partition's continuous ids; every rank gathers all
element matrices and adds them in global element order; and the right-hand side is read at
each point's copy of that smallest key (the coarse right-hand side is continuous: all copies
hold the same value), so the allreduce adds one value and zeros.

With ``null_space=True`` (h2 = 0, no Dirichlet point: A_c 1 = 0) the factored matrix is
A_c + sigma 1 1^T, sigma = mean(diag A_c) / M, which puts the constant vector's eigenvalue
(sigma M) inside A_c's spectrum instead of at zero. For a coarse right-hand side with
1.b = 0, which restricting a consistent fine residual gives (prolongation keeps constants),
its solution x has 1.x = 0 and A_c x = b; with 1.b != 0 (round-off) the consistent part
is solved. The iterative solve makes b consistent first and returns the zero-mean x.
"""

from __future__ import annotations

import numpy as np

from lobatto.errors import SolverError
from lobatto.machine.parallel import allreduce
from lobatto.solvers.krylov import pcg

#: coarse systems up to this many points are factorised (the M x M factor is 8 M^2 bytes:
#: 72 MB at the limit, on every rank)
DENSE_LIMIT = 3000
#: a Cholesky pivot below this times the largest diagonal entry (squared) means singular
SINGULAR_PIVOT = 1e-12


def element_matrices(operator):
    """(E, n^3, n^3) host matrices of ``operator.apply_local`` (row i, column j); (E, n^2, n^2)
    on a 2-D mesh (the points per element, whatever the shape)."""
    backend, shape = operator.backend, operator.shape
    npts = int(np.prod(shape[1:]))
    columns = []
    for j in range(npts):  # setup only: one application per local basis function
        unit = np.zeros((shape[0], npts))
        unit[:, j] = 1.0
        image = operator.apply_local(backend.asarray(unit.reshape(shape), dtype=operator.dtype))
        columns.append(backend.to_host(image).reshape(shape[0], npts).astype(np.float64))
    return np.stack(columns, axis=2)


def canonical_numbering(assembly, comm=None) -> tuple[np.ndarray, np.ndarray]:
    """((E, n^3) int64 numbers 0..M-1 of the points, ordered by each point's smallest
    (global element id, local point) key: the same numbering on every partition; (E, n^3)
    bool: the copy holding that smallest key (one per point over all ranks)). Collective."""
    keys = assembly.point_keys()
    # float64 whatever the run's precision: keys are exact below 2**53 (float32 would lose them
    # above 2**24, which an AMG coarse level of a few million elements passes)
    smallest = assembly.backend.asarray(keys.astype(np.float64).reshape(assembly.shape), dtype=np.float64)
    assembly.gs.apply(smallest.reshape(1, -1), "min")
    smallest = assembly.backend.to_host(smallest).reshape(keys.shape).astype(np.int64)
    owner = smallest == keys
    mine = keys[owner]
    every = np.sort(np.concatenate(comm.allgather(mine))) if comm is not None else np.sort(mine)
    return np.searchsorted(every, smallest), owner


def gathered_entries(operator, assembly, comm=None, numbering=None):
    """(rows, cols, values, fixed): every element matrix entry of all ranks as global (row,
    column, value), in global element order (whatever the partition), and the fixed (M,) bool
    of Dirichlet points, the same on every rank of ``comm``. ``numbering``: (E, n^3) point
    numbers (default ``assembly.ids``; ``canonical_numbering`` for the same on every partition)."""
    size = assembly.num_global_points
    ids = assembly.ids.reshape(assembly.num_elements, -1) if numbering is None else numbering
    local = element_matrices(operator)
    parts = [(assembly.element_ids, ids, local)]
    if comm is not None:
        parts = comm.allgather(parts[0])
    elements = np.concatenate([p[0] for p in parts])
    order = np.argsort(elements, kind="stable")
    every = np.concatenate([p[1] for p in parts])[order]
    local = np.concatenate([p[2] for p in parts])[order]
    rows = np.broadcast_to(every[:, :, None], local.shape).ravel()
    cols = np.broadcast_to(every[:, None, :], local.shape).ravel()
    fixed = np.zeros(size)
    fixed[ids.ravel()] = 1.0 - assembly.backend.to_host(assembly.mask).reshape(-1)
    fixed = allreduce(comm, fixed, "max") > 0
    return rows, cols, local.ravel(), fixed


def assembled_matrix(operator, assembly, comm=None, numbering=None) -> tuple[np.ndarray, np.ndarray]:
    """(M x M assembled matrix with identity rows and columns on fixed points, fixed (M,)
    bool), the same on every rank of ``comm``. ``numbering``: (E, n^3) point numbers
    (default ``assembly.ids``; ``canonical_numbering`` for the same matrix on every
    partition). The element matrices of all ranks are added in global element order."""
    size = assembly.num_global_points
    rows, cols, values, fixed = gathered_entries(operator, assembly, comm, numbering)
    # bincount adds in input order: global element order, whatever the partition
    matrix = np.bincount(rows * size + cols, weights=values, minlength=size * size)
    matrix = matrix.reshape(size, size)
    matrix[fixed, :] = 0.0
    matrix[:, fixed] = 0.0
    matrix[fixed, fixed] = 1.0
    return matrix, fixed


class CoarseVector:
    """Moves a coarse level's element-by-element vector to the global numbering of a solve
    held whole on every rank (``gather``: one allreduce of an M-vector) and back
    (``scatter``). ``numbering``, ``owner``: from ``canonical_numbering``."""

    def __init__(self, backend, numbering, owner, size: int, shape, comm=None):
        self.ids = backend.asarray(numbering.reshape(-1), dtype=np.int64)
        self.owner_points = backend.asarray(np.flatnonzero(owner.reshape(-1)), dtype=np.int64)
        self.owner_ids = backend.asarray(numbering.reshape(-1)[owner.reshape(-1)], dtype=np.int64)
        self.size, self.shape = size, shape
        self.backend, self.comm = backend, comm

    def gather(self, b):
        # b is continuous (the restricted, assembled residual): each point's value is read at
        # one copy, the one of smallest key, and the other ranks add zeros: exact in any order
        global_b = self.backend.xp.zeros(self.size, dtype=b.dtype)
        global_b[self.owner_ids] = b.reshape(-1)[self.owner_points]
        if self.comm is not None:
            global_b = self.backend.asarray(allreduce(self.comm, self.backend.to_host(global_b)), dtype=b.dtype)
        return global_b

    def scatter(self, x):
        return x[self.ids].reshape(self.shape)


class DenseCoarseSolve:
    """x = A_c^-1 b on a small coarse level: A_c = L L^T, applied as L^-T (L^-1 b), a fixed
    symmetric linear map (so the V-cycle stays a symmetric preconditioner for CG)."""

    def __init__(self, operator, assembly, comm=None, dtype=None, null_space: bool = False):
        size = assembly.num_global_points
        if size > DENSE_LIMIT:
            raise ValueError(f"DenseCoarseSolve: {size} coarse points is above the dense limit {DENSE_LIMIT}")
        comm = comm if comm is not None and comm.Get_size() > 1 else None
        numbering, owner = canonical_numbering(assembly, comm)
        matrix, self.fixed = assembled_matrix(operator, assembly, comm, numbering)
        self.null_space = bool(null_space)
        factored = matrix
        if self.null_space:
            if self.fixed.any():
                raise ValueError("DenseCoarseSolve: null_space=True with Dirichlet points (they fix the constant)")
            factored = matrix + np.diag(matrix).mean() / size  # + sigma 1 1^T
        if not np.isfinite(factored).all():  # not a question of Neumann sides: say what it is
            raise SolverError(f"coarse grid: the assembled order-{assembly.order} matrix ({size} points) has "
                              "non-finite entries: the operator's coefficients times the metric factors overflow")
        try:
            factor = np.linalg.cholesky(factored)
            # a singular matrix may still factor, with a pivot at round-off level
            with np.errstate(all="ignore"):
                singular = not np.diag(factor).min() ** 2 >= SINGULAR_PIVOT * np.diag(matrix).max()
        except np.linalg.LinAlgError:
            singular = True
        entries = np.abs(matrix[np.ix_(~self.fixed, ~self.fixed)])
        entries = entries[entries > 0]
        spread = f"its entries span {entries.min():.3g} to {entries.max():.3g}, " if entries.size else ""
        if singular and self.null_space:
            raise SolverError(f"coarse grid: the assembled order-{assembly.order} matrix ({size} points) plus "
                              "sigma 1 1^T is not positive definite: its null space is more than the constants "
                              f"(a domain in several disconnected pieces), or {spread}too many orders of magnitude "
                              "for float64 (elements far longer on one axis than another, coefficients far apart)")
        if singular and self.fixed.any():  # Dirichlet points fix the constant: not a pure Neumann problem
            raise SolverError(f"coarse grid: the assembled order-{assembly.order} matrix ({size} points) is not "
                              f"positive definite, though Dirichlet points fix it: {spread}too many orders of "
                              "magnitude for float64 (elements far longer on one axis than another, coefficients "
                              "far apart), or a part of the domain touches no Dirichlet side")
        if singular:
            raise SolverError(f"coarse grid: the assembled order-{assembly.order} matrix ({size} points) is not "
                              "positive definite: a pure Neumann problem (h2 = 0, no Dirichlet side) has a "
                              "constant null space; fix one side or add h2 > 0")
        backend = assembly.backend
        dtype = np.dtype(dtype or operator.dtype)
        self.matrix = matrix
        self.inverse_factor = backend.asarray(np.linalg.inv(factor), dtype=dtype)
        self.vector = CoarseVector(backend, numbering, owner, size, assembly.shape, comm)
        self.size = size

    def __call__(self, b):
        y = self.inverse_factor @ self.vector.gather(b)
        return self.vector.scatter(self.inverse_factor.T @ y)


class IterativeCoarseSolve:
    """Jacobi-PCG on the coarse level to ``tol`` relative to the coarse right-hand side
    (at most ``maxiter`` iterations; a coarse solve that stops short is still a correction).
    It is not a fixed linear map: use flexible CG (or FGMRES) outside."""

    def __init__(self, apply, jacobi, dot, tol: float = 1e-2, maxiter: int = 200, null_space=None):
        self.apply, self.jacobi, self.dot, self.tol, self.maxiter = apply, jacobi, dot, tol, maxiter
        self.null_space = null_space  # a solvers.nullspace.ConstantNullSpace of the level, or None
        self.iterations: list[int] = []

    def __call__(self, b):
        if self.null_space is not None:
            b = self.null_space.consistent(b)
        result = pcg(self.apply, b, M=self.jacobi, dot=self.dot, tol=self.tol, maxiter=self.maxiter)
        self.iterations.append(result.iterations)
        return result.x if self.null_space is None else self.null_space.remove_mean(result.x)
