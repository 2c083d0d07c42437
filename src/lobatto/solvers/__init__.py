"""Iterative solvers on callables (layer 4, beside ``lobatto.operators``).

krylov       pcg, flexible_cg, fgmres -> SolveResult
jacobi       Jacobi: the exact assembled diagonal
chebyshev    Chebyshev smoother, estimate_max_eigenvalue
projection   SolutionProjection: A-conjugate projection onto previous solutions
precision    LowPrecision: a float32 preconditioner inside a float64 iteration
multigrid    PMultigrid: p-multigrid V-cycle on the operators package

See docs/elliptic.md.
"""

from lobatto.solvers.chebyshev import Chebyshev, estimate_max_eigenvalue
from lobatto.solvers.jacobi import Jacobi
from lobatto.solvers.krylov import SolveResult, euclidean_dot, fgmres, flexible_cg, pcg
from lobatto.solvers.precision import LowPrecision
from lobatto.solvers.projection import SolutionProjection

__all__ = ["Chebyshev", "Jacobi", "LowPrecision", "SolutionProjection", "SolveResult", "estimate_max_eigenvalue",
           "euclidean_dot", "fgmres", "flexible_cg", "pcg"]
