"""The coarse solve of the p-multigrid cycle by algebraic multigrid: a smoothed-aggregation
hierarchy built once on the host (pyamg), its V-cycle run on the backend without waiting.

Why: the order-1 coarse level of a large mesh (36^3 elements: 50,653 points) is too big to
factor densely, and Jacobi-PCG on it waits for the host at every iteration (two dot
products): on a GPU each iteration costs a fixed ~0.7 ms whatever the size, and tens of them
per V-cycle made it half the solve. An AMG V-cycle is a fixed sequence of sparse products
and vector updates with no reduction a host must read, so it is queued like any other kernel
(on the CUDA backend its second call tries to record it as a graph; CuPy's cuSPARSE products
refuse stream capture, so there it runs as plain launches).

Set-up, once: the order-1 matrix is assembled sparse from the element matrices with the
canonical numbering of coarse.py (the same matrix on every partition), its Dirichlet rows
and columns dropped; rank 0 builds the hierarchy (pyamg's random start vectors seeded, so
a rerun builds the same one) and broadcasts it: every rank holds the whole hierarchy and
runs the same cycle on the same gathered right-hand side (one allreduce, as the dense
solve), so results do not depend on the rank count.

One cycle, on each level but the last: Chebyshev smoothing on D^-1 A (the bounds estimated
once on the host), residual, restriction P^T, the next level, prolongation P, the same
Chebyshev smoothing from that guess; on the last level (at most MAX_COARSE points) a dense
(pseudo-)inverse. Pre- and post-smoother are the same symmetric polynomial, so the cycle is a
fixed symmetric positive (semi-)definite linear map: plain CG may use it.

Pure-Neumann problems (``null_space=True``): the matrix is singular with the constants as
null space; smoothed aggregation with the constants as near-null space keeps that (P maps
coarse to fine null vectors), the last level is inverted on its range (the smallest
eigenvalue, the null one, dropped), and the cycle is wrapped in x -> Q x, Q = I - 1 1^T / n,
on both sides, so the map stays symmetric and returns 1.x = 0 as the dense solve does.
"""

from __future__ import annotations

import numpy as np

from lobatto.backends.base import PlainStep
from lobatto.errors import InputError, SolverError
from lobatto.solvers.chebyshev import LOWER_FACTOR, UPPER_FACTOR, Chebyshev, estimate_max_eigenvalue
from lobatto.solvers.coarse import CoarseVector, canonical_numbering, gathered_entries

#: the last AMG level is inverted densely at this many points or fewer (a matrix-vector
#: product with its inverse is one launch; 2,000^2 float64 is 32 MB)
MAX_COARSE = 2000
#: Chebyshev degree of the AMG levels' smoother: a product with A per degree and sweep
DEGREE = 2
#: V-cycles per coarse solve (x += V(b - A x) after the first): a fixed linear map either way.
#: Two: at the 36^3 coarse level one cycle leaves 0.20 of the error (A-norm), two 0.05, and
#: an outer iteration saved (a fine V-cycle) costs far more than a coarse cycle's launches
#: (24^3 x N = 3 on the CPU: 9 outer iterations with Jacobi-PCG to 1e-2, 11 with one cycle, 10 with two)
CYCLES = 2


def amg_available() -> bool:
    """Whether pyamg imports (the coarse = "auto" choice above the dense limit asks)."""
    try:
        import pyamg  # noqa: F401  (probing only)
    except ImportError:
        return False
    return True


def import_pyamg():
    try:
        import pyamg
    except ImportError as exc:
        raise InputError("[solver] coarse = \"amg\" needs the pyamg package (pip install pyamg), which is not "
                         f"installed ({exc}); use coarse = \"pcg\" or \"auto\"") from exc
    return pyamg


def host_smoother_bounds(matrix) -> tuple[np.ndarray, float]:
    """(inverse diagonal, largest eigenvalue of D^-1 A estimated from a fixed start vector)."""
    inverse_diagonal = 1.0 / matrix.diagonal()
    start = np.sin(np.arange(matrix.shape[0]) * 12.9898 + 78.233)  # rough, and the same every time
    start -= start.mean()  # consistent for a singular A as well
    lam = estimate_max_eigenvalue(lambda v: matrix @ v, inverse_diagonal, start, np.dot)
    return inverse_diagonal, lam


def dense_inverse(matrix: np.ndarray, null_space: bool) -> np.ndarray:
    """The inverse of the (symmetric) last level's matrix; with ``null_space`` its
    pseudo-inverse on the range, the smallest eigenvalue (the null one) dropped."""
    values, vectors = np.linalg.eigh(0.5 * (matrix + matrix.T))
    keep = slice(1, None) if null_space else slice(None)
    values, vectors = values[keep], vectors[:, keep]
    if not values.size:  # one aggregate (pyamg may coarsen to it): only the constants, projected out
        return np.zeros_like(matrix)
    if not values[0] > 1e-13 * values[-1]:
        raise SolverError("coarse grid: the last AMG level's matrix is singular beyond the constants (a domain in "
                          "several disconnected pieces, or a part touching no Dirichlet side)")
    return (vectors / values) @ vectors.T


def build_hierarchy(matrix, null_space: bool, max_coarse: int = MAX_COARSE) -> dict:
    """Host hierarchy of the SPD (or, with ``null_space``, constants-singular) CSR ``matrix``:
    {"levels": [(A, P, inverse diagonal, largest eigenvalue of D^-1 A)], "inverse": dense}."""
    size = matrix.shape[0]
    if size <= max_coarse:  # small enough to invert whole (no point at all: every one is a Dirichlet point)
        return {"levels": [], "inverse": dense_inverse(matrix.toarray(), null_space) if size else np.zeros((0, 0))}
    pyamg = import_pyamg()
    state = np.random.get_state()
    np.random.seed(0)  # pyamg estimates spectral radii from random vectors: the same hierarchy every time
    try:
        solver = pyamg.smoothed_aggregation_solver(matrix, B=np.ones((matrix.shape[0], 1)), symmetry="symmetric",
                                                   max_coarse=max_coarse, max_levels=20)
    finally:
        np.random.set_state(state)
    levels = []
    for level in solver.levels[:-1]:
        inverse_diagonal, lam = host_smoother_bounds(level.A)
        levels.append((level.A.tocsr(), level.P.tocsr(), inverse_diagonal, lam))
    return {"levels": levels, "inverse": dense_inverse(solver.levels[-1].A.toarray(), null_space)}


def host_hierarchy(values, rows, cols, size: int, free, null_space: bool, max_coarse: int, order: int) -> dict:
    """build_hierarchy of the matrix of the gathered element entries (coarse.gathered_entries),
    restricted to the ``free`` (not Dirichlet) points; "operator": that matrix."""
    import scipy.sparse  # pyamg's own dependency

    # duplicates are summed in input order: global element order, whatever the partition
    matrix = scipy.sparse.coo_matrix((values, (rows, cols)), shape=(size, size)).tocsr()
    matrix = matrix[free][:, free].tocsr()
    if not np.isfinite(matrix.data).all():
        raise SolverError(f"coarse grid: the assembled order-{order} matrix ({size} points) has non-finite entries: "
                          "the operator's coefficients times the metric factors overflow")
    return {**build_hierarchy(matrix, null_space, max_coarse), "operator": matrix}


class AmgCoarseSolve:
    """x ~ A_c^-1 b on the coarse level by ``cycles`` AMG V-cycles run on the backend (see
    the module docstring); the same arguments as coarse.DenseCoarseSolve."""

    def __init__(self, operator, assembly, comm=None, dtype=None, null_space: bool = False,
                 max_coarse: int | None = None, degree: int | None = None, cycles: int | None = None):
        import_pyamg()  # the clear error first, on every rank
        # the module's constants read now, so a study may change them
        max_coarse = MAX_COARSE if max_coarse is None else int(max_coarse)
        degree = DEGREE if degree is None else int(degree)
        cycles = CYCLES if cycles is None else int(cycles)
        size = assembly.num_global_points
        comm = comm if comm is not None and comm.Get_size() > 1 else None
        numbering, owner = canonical_numbering(assembly, comm)
        rows, cols, values, fixed = gathered_entries(operator, assembly, comm, numbering)
        self.null_space = bool(null_space)
        if self.null_space and fixed.any():
            raise ValueError("AmgCoarseSolve: null_space=True with Dirichlet points (they fix the constant)")
        free = np.flatnonzero(~fixed)
        hierarchy = None
        if comm is None or comm.Get_rank() == 0:
            try:
                hierarchy = host_hierarchy(values, rows, cols, size, free, self.null_space, max_coarse,
                                           assembly.order)
            except Exception as exc:  # noqa: BLE001  (raised below on every rank, not only here)
                hierarchy = exc
        if comm is not None:
            hierarchy = comm.bcast(hierarchy, root=0)
        if isinstance(hierarchy, Exception):
            raise hierarchy
        backend = assembly.backend
        self.backend, self.dtype = backend, np.dtype(dtype or operator.dtype)
        self.vector = CoarseVector(backend, numbering, owner, size, assembly.shape, comm)
        self.size, self.cycles = size, int(cycles)
        self.level_sizes = [a.shape[0] for a, *_ in hierarchy["levels"]] + [hierarchy["inverse"].shape[0]]
        self.matrices, self.prolongations, self.restrictions, self.smoothers = [], [], [], []
        for a, p, inverse_diagonal, lam in hierarchy["levels"]:
            a_dev = backend.sparse_matrix(a, self.dtype)
            self.matrices.append(a_dev)
            self.prolongations.append(backend.sparse_matrix(p, self.dtype))
            self.restrictions.append(backend.sparse_matrix(p.T.tocsr(), self.dtype))
            self.smoothers.append(Chebyshev(a_dev.__matmul__, backend.asarray(inverse_diagonal, dtype=self.dtype),
                                            UPPER_FACTOR * lam, LOWER_FACTOR * lam, degree))
        self.operator = (backend.sparse_matrix(hierarchy["operator"], self.dtype) if not self.matrices
                         else self.matrices[0])
        self.inverse = backend.asarray(hierarchy["inverse"], dtype=self.dtype)
        self.free = backend.asarray(free, dtype=np.int64)
        self._b = backend.zeros(free.size, dtype=self.dtype)
        self._x = backend.zeros(size, dtype=self.dtype)
        # the whole cycle reads _b and writes _x: recorded once as a CUDA graph (plain calls elsewhere)
        self.step = backend.capture(self._run)
        self.graph_mismatch = None  # after the first replay: whether it differed from a plain cycle

    def _vcycle(self, index: int, b):
        if index == len(self.matrices):
            return self.inverse @ b
        smoother = self.smoothers[index]
        x = smoother(b)
        coarse_b = self.restrictions[index] @ (b - self.matrices[index] @ x)
        x += self.prolongations[index] @ self._vcycle(index + 1, coarse_b)
        return smoother(b, x)

    def _run(self) -> None:
        b = self._b
        if self.null_space:
            b = b - b.mean()
        x = self._vcycle(0, b)
        for _ in range(self.cycles - 1):
            x += self._vcycle(0, b - self.operator @ x)
        if self.null_space:
            x -= x.mean()
        self._x[self.free] = x

    def __call__(self, b):
        self._b[...] = self.vector.gather(b)[self.free]
        self.step()
        if self.graph_mismatch is None and self.step.captured:
            self._check_replay()
        return self.vector.scatter(self._x)

    def _check_replay(self) -> None:
        """Once, after the first replay: run the cycle plainly on the same b and compare. A
        library call that escaped the recording (a product queued on another stream) would
        leave its result out of every replay; then the cycle runs plainly from now on."""
        xp = self.backend.xp
        replayed = self._x.copy()
        self._run()
        difference = float(xp.abs(replayed - self._x).max())
        self.graph_mismatch = not difference <= 1e-5 * float(xp.abs(self._x).max())
        if self.graph_mismatch:
            self.step = PlainStep(self._run)
            self.step.fallback_reason = f"the replayed graph differed from a plain cycle by {difference:.3g}"
