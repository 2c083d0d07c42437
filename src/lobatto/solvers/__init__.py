"""Iterative solvers on callables (layer 4, beside ``lobatto.operators``).

krylov       pcg, flexible_cg, fgmres -> SolveResult
jacobi       Jacobi: the exact assembled diagonal
chebyshev    Chebyshev smoother (on D^-1 A or M A), estimate_max_eigenvalue
schwarz      AdditiveSchwarz: overlapping Schwarz with FDM local solves (a smoother's M)
projection   SolutionProjection: A-conjugate projection onto previous solutions
precision    LowPrecision: a float32 preconditioner inside a float64 iteration
multigrid    PMultigrid: p-multigrid V-cycle on the operators package
coarse       DenseCoarseSolve, IterativeCoarseSolve: the multigrid's coarsest solve
nullspace    ConstantNullSpace: consistent b and zero-mean x when A 1 = 0
profile      Profile, instrument, PARTS: time per part of a solve
elliptic     EllipticSolver (a [solver] table made into a solver), VectorHelmholtzSolver
             (k components in one Jacobi-PCG); import them from their modules

See docs/elliptic.md.
"""

from lobatto.solvers.chebyshev import Chebyshev, estimate_max_eigenvalue
from lobatto.solvers.jacobi import Jacobi
from lobatto.solvers.krylov import SolveResult, euclidean_dot, fgmres, flexible_cg, pcg
from lobatto.solvers.precision import LowPrecision
from lobatto.solvers.projection import SolutionProjection

__all__ = ["Chebyshev", "Jacobi", "LowPrecision", "SolutionProjection", "SolveResult", "estimate_max_eigenvalue",
           "euclidean_dot", "fgmres", "flexible_cg", "pcg"]
