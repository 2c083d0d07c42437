"""p-multigrid: a V-cycle over polynomial orders N -> ... -> 1 of the same mesh (nekRS's
pMG), as a preconditioner for CG.

Each level has its own element operator (``HelmholtzOperator`` on the geometry at that
order) and continuous numbering (``Assembly``). Vectors are stored element by element,
continuous (every copy of a point holds its value), zero on Dirichlet points. Between
levels:

    prolong   u_f = J u_c                  J: GLL interpolation from order M to order N, per
                                           element (a continuous u_c gives a continuous u_f)
    restrict  r_c = mask_c QQ^T_c J^T (r_f / multiplicity_f)
                                           the exact transpose of prolongation in the
                                           assembled (global) inner product

One cycle from zero: Chebyshev smoothing (on D^-1 A, Jacobi, or on M A with M the additive
Schwarz of schwarz.py), residual, restriction, the coarser cycle, prolongation and
correction, Chebyshev smoothing again; at the coarsest order a
dense Cholesky solve (small systems), algebraic multigrid V-cycles run on the backend
(amg.py) or Jacobi-PCG to a relative tolerance. With the dense or AMG coarse solve the
cycle is a fixed symmetric positive definite map, so plain PCG may use it; with the
iterative one use flexible CG. ``null_space=True`` (h2 = 0, no Dirichlet
point) makes the coarse solve work on the singular coarse matrix (coarse.py); the smoothers
and transfers need no change (they only apply the operator and its diagonal).
"""

from __future__ import annotations

import numpy as np

from lobatto.errors import InputError
from lobatto.mesh.geometry import compute_geometry
from lobatto.operators.assembly import Assembly
from lobatto.operators.helmholtz import HelmholtzOperator
from lobatto.operators.interpolation import GridTransfer, gll_to_gll, interpolate
from lobatto.solvers.amg import AmgCoarseSolve, amg_available
from lobatto.solvers.chebyshev import Chebyshev
from lobatto.solvers.coarse import DENSE_LIMIT, DenseCoarseSolve, IterativeCoarseSolve
from lobatto.solvers.jacobi import Jacobi
from lobatto.solvers.nullspace import ConstantNullSpace
from lobatto.solvers.schwarz import AdditiveSchwarz

COARSE_METHODS = ("auto", "cholesky", "pcg", "amg")
#: the smoothers' preconditioner: "jacobi" (Chebyshev on D^-1 A) or "schwarz" (Chebyshev on
#: M A, M the overlapping additive Schwarz of schwarz.py, nekRS's default Chebyshev+ASM)
SMOOTHERS = ("jacobi", "schwarz")


def default_orders(order: int) -> tuple[int, ...]:
    """N, N // 2, ... down to 1: 7 -> 3 -> 1, 8 -> 4 -> 2 -> 1, 15 -> 7 -> 3 -> 1."""
    orders = [int(order)]
    while orders[-1] > 1:
        orders.append(orders[-1] // 2)
    return tuple(orders)


def pseudo_random(labels: np.ndarray) -> np.ndarray:
    """Values in (-0.5, 0.5) that depend only on the integer labels given."""
    return np.modf(np.sin(labels.astype(np.float64) * 12.9898 + 78.233) * 43758.5453)[0] * 0.5


def start_vector(level, element_ids: np.ndarray):
    """A rough continuous vector for the eigenvalue estimate, the same for every partition
    (so are the estimates, and the iteration counts): pseudo-random values of (global element
    id, local point), averaged over the copies of each point, zero on fixed points. (The
    continuous ids themselves are numbered differently on different partitions.)"""
    shape = level.assembly.shape
    npts = int(np.prod(shape[1:]))
    labels = np.asarray(element_ids, dtype=np.int64)[:, None] * npts + np.arange(npts)[None, :]
    backend = level.assembly.backend
    start = backend.asarray(pseudo_random(labels).reshape(shape), dtype=level.dtype) * level.inverse_multiplicity
    level.assembly.dssum(start)
    start *= level.mask
    return start


def make_smoother(mesh, level, comm=None, smoother: str = "jacobi", degree: int = 3) -> Chebyshev:
    """The Chebyshev smoother of ``level``: on D^-1 A ("jacobi") or on M A with M the additive
    Schwarz of schwarz.py ("schwarz"); its interval from the partition-independent
    ``start_vector`` (collective over ``comm``)."""
    if smoother not in SMOOTHERS:
        raise ValueError(f"PMultigrid: smoother must be one of {', '.join(SMOOTHERS)}, got {smoother!r}")
    preconditioner = (AdditiveSchwarz(mesh, level, comm) if smoother == "schwarz"
                      else level.jacobi().inverse_diagonal)
    return Chebyshev.with_estimate(level.apply, preconditioner, start_vector(level, mesh.element_ids), level.dot,
                                   degree)


class Level:
    """One order: ``apply(u)`` = mask QQ^T A_local u, ``dot`` the assembled inner product."""

    def __init__(self, operator: HelmholtzOperator, assembly: Assembly):
        self.operator, self.assembly = operator, assembly
        self.order, self.dtype = assembly.order, operator.dtype
        self.mask = assembly.mask.astype(self.dtype)
        self.inverse_multiplicity = assembly.inverse_multiplicity.astype(self.dtype)
        self.dot, self.dots = assembly.dot, assembly.dots

    @classmethod
    def build(cls, mesh, order, backend, comm=None, dirichlet=None, h1=1.0, h2=0.0, dtype=None, geometry=None):
        geometry = geometry if geometry is not None else compute_geometry(mesh, order)
        operator = HelmholtzOperator(geometry, backend, h1, h2, dtype=dtype)
        return cls(operator, Assembly(mesh, order, backend, comm, dirichlet))

    def set_coefficients(self, h1, h2) -> None:
        """New h1, h2 for the operator (``HelmholtzOperator.set_coefficients``: scalars go to
        the kernels as they are); whatever was derived from the old ones (a Jacobi diagonal,
        a smoother's interval) is the caller's to renew."""
        self.operator.set_coefficients(h1, h2)

    def apply(self, u):
        out = self.assembly.apply_operator(self.operator, u)  # the exchange overlapped where it pays
        out *= self.mask
        return out

    def jacobi(self) -> Jacobi:
        diagonal = self.assembly.dssum(self.operator.diagonal_local())
        return Jacobi(diagonal, self.mask)


class Transfer:
    """Prolongation and restriction between a fine Level and the next coarser one."""

    def __init__(self, backend, fine: Level, coarse: Level):
        self.fine, self.coarse = fine, coarse
        self.grid = GridTransfer(backend, coarse.order, fine.order, dtype=fine.dtype)

    def prolong(self, coarse_u):
        return self.grid.prolong(coarse_u)

    def restrict(self, fine_r):
        coarse_r = self.grid.restrict(fine_r * self.fine.inverse_multiplicity)
        self.coarse.assembly.dssum(coarse_r)
        coarse_r *= self.coarse.mask
        return coarse_r


def interpolate_coefficient(backend, value, from_order: int, to_order: int):
    """A scalar h1/h2 as is; an (E, n, n, n) array interpolated to ``to_order``."""
    if np.ndim(value) == 0 or from_order == to_order:
        return value
    host = value.get() if hasattr(value, "get") else value  # a CuPy array comes back to the host first
    return interpolate(backend, backend.asarray(host, dtype=np.float64), gll_to_gll(from_order, to_order))


class PMultigrid:
    """``M(b)``: one V-cycle from zero over ``levels`` (finest first).

    levels:     [Level] of decreasing order; smoothers[i] smooths on levels[i] (all but the
                coarsest); transfers[i] links levels[i] and levels[i + 1]; coarse solves on
                the last level.
    ``PMultigrid.build(mesh, backend, orders=(7, 3, 1), ...)`` makes all of them."""

    def __init__(self, levels, smoothers, transfers, coarse):
        if not (len(smoothers) == len(transfers) == len(levels) - 1 and levels):
            raise ValueError("PMultigrid: need one smoother and one transfer per level above the coarsest")
        self.levels, self.smoothers, self.transfers, self.coarse = levels, smoothers, transfers, coarse

    @property
    def symmetric(self) -> bool:
        """Whether one cycle is a fixed linear map (plain PCG may use it)."""
        return isinstance(self.coarse, (DenseCoarseSolve, AmgCoarseSolve))

    def __call__(self, b):
        return self._cycle(0, b)

    def _cycle(self, index: int, b):
        if index == len(self.levels) - 1:
            return self.coarse(b)
        level, smoother, transfer = self.levels[index], self.smoothers[index], self.transfers[index]
        x = smoother(b)
        coarse_r = transfer.restrict(b - level.apply(x))
        x += transfer.prolong(self._cycle(index + 1, coarse_r))
        return smoother(b, x)

    @classmethod
    def build(cls, mesh, backend, orders, comm=None, dirichlet=None, h1=1.0, h2=0.0, dtype=None,
              degree: int = 3, coarse: str = "auto", coarse_tol: float = 1e-2, coarse_maxiter: int = 200,
              finest: Level | None = None, null_space: bool = False, smoother: str = "jacobi",
              table: str = "solver") -> "PMultigrid":
        """All levels for ``orders`` (e.g. ``default_orders(7)``), in ``dtype`` (default the
        backend's; float32 for a LowPrecision preconditioner). ``h1``/``h2`` as for
        HelmholtzOperator at the finest order (arrays are interpolated to the others).
        ``finest``: an existing Level of the same order and dtype to reuse. ``degree``: of the
        Chebyshev smoother (nekRS's default, 3). ``coarse``: "cholesky", "pcg" (Jacobi-PCG to
        ``coarse_tol``), "amg" (pyamg's hierarchy, cycled on the backend) or "auto"
        (Cholesky up to DENSE_LIMIT coarse points, above it amg where pyamg imports, else
        pcg). ``null_space``: the operator is singular with the constants as null space (h2 = 0, no Dirichlet
        point); the coarse solve then works on 1^T b = 0 and returns 1^T x = 0. ``smoother``:
        "jacobi" (Chebyshev-Jacobi) or "schwarz" (Chebyshev with additive Schwarz, SMOOTHERS).
        ``table``: the case-file table of these settings, for messages."""
        orders = tuple(int(o) for o in orders)
        if not orders or any(o < 1 for o in orders) or any(a <= b for a, b in zip(orders, orders[1:])):
            raise ValueError(f"PMultigrid: orders must decrease and stay >= 1, got {orders}")
        if finest is not None and (finest.order != orders[0] or (dtype is not None and finest.dtype != dtype)):
            raise ValueError(f"PMultigrid: the finest level given has order {finest.order} and dtype {finest.dtype};"
                             f" expected order {orders[0]}" + ("" if dtype is None else f" and dtype {np.dtype(dtype)}"))
        if coarse not in COARSE_METHODS:
            raise ValueError(f"PMultigrid: coarse must be one of {', '.join(COARSE_METHODS)}, got {coarse!r}")
        if smoother not in SMOOTHERS:
            raise ValueError(f"PMultigrid: smoother must be one of {', '.join(SMOOTHERS)}, got {smoother!r}")
        levels = []
        for order in orders:
            if finest is not None and not levels:
                levels.append(finest)
                continue
            levels.append(Level.build(mesh, order, backend, comm, dirichlet,
                                      interpolate_coefficient(backend, h1, orders[0], order),
                                      interpolate_coefficient(backend, h2, orders[0], order), dtype))
        smoothers = [make_smoother(mesh, level, comm, smoother, degree) for level in levels[:-1]]
        transfers = [Transfer(backend, fine, coarse_level) for fine, coarse_level in zip(levels, levels[1:])]
        last = levels[-1]
        if coarse == "auto":
            small = last.assembly.num_global_points <= DENSE_LIMIT
            coarse = "cholesky" if small else ("amg" if amg_available() else "pcg")
        if coarse == "cholesky" and last.assembly.num_global_points > DENSE_LIMIT:
            raise InputError(f"[{table}] coarse = \"cholesky\": the coarse level has {last.assembly.num_global_points} "
                             f"points, above the dense limit of {DENSE_LIMIT} (its M x M factor on every rank); "
                             f"use coarse = \"amg\" or \"auto\", or coarser [{table}] levels on fewer elements")
        if coarse == "cholesky":
            solve = DenseCoarseSolve(last.operator, last.assembly, comm, last.dtype, null_space=null_space)
        elif coarse == "amg":
            solve = AmgCoarseSolve(last.operator, last.assembly, comm, last.dtype, null_space=null_space)
        else:
            solve = IterativeCoarseSolve(last.apply, last.jacobi(), last.dot, coarse_tol, coarse_maxiter,
                                         ConstantNullSpace(last) if null_space else None)
        return cls(levels, smoothers, transfers, solve)
