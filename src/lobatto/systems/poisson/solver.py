"""The [solver] table made into a solver: a Krylov method, its preconditioner, and the
projection onto previous solutions, on the assembled operator of a ``solvers.multigrid.Level``.

    method          cg (preconditioned CG: needs a fixed SPD preconditioner), fcg (flexible
                    CG), gmres (restarted flexible GMRES, ``restart`` vectors)
    preconditioner  multigrid (p-multigrid V-cycle over ``levels``), jacobi, none
    precision       float32: the preconditioner runs in float32 inside the float64 iteration
    coarse          the multigrid's coarsest solve: cholesky, pcg, or auto (Cholesky up to
                    solvers.coarse.DENSE_LIMIT points); pcg stops at coarse_tolerance

A preconditioner that is not one fixed linear map (float32 rounding, an iterative coarse
solve) needs fcg or gmres: cg with one is refused, naming the keys to change.
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.errors import InputError
from lobatto.solvers import Jacobi, LowPrecision, SolutionProjection, fgmres, flexible_cg, pcg
from lobatto.solvers.coarse import DENSE_LIMIT
from lobatto.solvers.krylov import zeros_like
from lobatto.solvers.multigrid import PMultigrid, default_orders
from lobatto.systems.poisson.profile import instrument

METHODS = {"cg": pcg, "fcg": flexible_cg, "gmres": fgmres}


def printed(iteration: int) -> bool:
    """Iterations that get a line: every one up to 10, every 10th up to 100, then every 100th."""
    return iteration <= 10 or (iteration <= 100 and iteration % 10 == 0) or iteration % 100 == 0


class EllipticSolver:
    """``solve(b, x0)`` -> SolveResult for the masked, assembled operator of ``level``.

    settings: the [solver] values (method, preconditioner, tolerance, max_iterations,
    projection, levels, precision, coarse, restart, smoother_degree); h1, h2 as for
    ``HelmholtzOperator`` (interpolated to the coarser multigrid orders)."""

    def __init__(self, mesh, level, settings: dict, backend, comm, dirichlet, h1, h2, profile):
        self.level, self.settings, self.profile = level, dict(settings), profile
        self.backend = backend
        self.method = settings["method"]
        self.multigrid = None
        self.levels = [level]
        self.preconditioner, fixed = self._preconditioner(mesh, level, backend, comm, dirichlet, h1, h2)
        if self.method == "cg" and not fixed:
            why = ("float32 rounding makes it vary" if settings["precision"] == "float32" else
                   "its coarse grid is solved iteratively ([solver] coarse = \"pcg\", or \"auto\" above "
                   f"{DENSE_LIMIT} coarse points)")
            raise InputError(f"[solver] method = \"cg\" needs a fixed preconditioner, but {why}: use method = \"fcg\" "
                             "(or \"gmres\")" + ("" if settings["precision"] == "float32" else
                                                 ", or coarse = \"cholesky\" with fewer coarse points"))
        instrument(profile, self.levels, self.multigrid)
        self.apply, self.dot = level.apply, level.dot  # the wrapped (timed) members
        capacity = settings["projection"]
        self.projection = SolutionProjection(self.apply, self.dot, capacity) if capacity else None

    def _preconditioner(self, mesh, level, backend, comm, dirichlet, h1, h2):
        """(M or None, whether M is one fixed symmetric linear map)."""
        s = self.settings
        low = s["precision"] == "float32"
        if s["preconditioner"] == "none":
            return None, True
        if s["preconditioner"] == "jacobi":
            diagonal = level.assembly.dssum(level.operator.diagonal_local())
            if not low:
                return Jacobi(diagonal, level.mask), True
            jacobi = Jacobi(diagonal.astype(np.float32), level.mask.astype(np.float32))
            return LowPrecision(jacobi, backend, comm=comm), False
        orders = tuple(s["levels"]) or default_orders(level.order)
        if orders[0] != level.order:
            raise InputError(f"[solver] levels = {list(orders)} must start at the [discretization] order "
                             f"{level.order} (for example {list(default_orders(level.order))})")
        mg = PMultigrid.build(mesh, backend, orders, comm, dirichlet, h1, h2, dtype=np.float32 if low else None,
                              degree=s["smoother_degree"], coarse=s["coarse"], coarse_tol=s["coarse_tolerance"],
                              finest=None if low else level)
        self.multigrid = mg
        self.levels = ([level] if low else []) + list(mg.levels)
        fixed = mg.symmetric and not low  # before instrument() wraps the coarse solve
        return (LowPrecision(mg, backend, comm=comm) if low else mg), fixed

    @property
    def level_orders(self) -> list:
        return [lv.order for lv in self.multigrid.levels] if self.multigrid is not None else []

    @property
    def coarse_solve(self) -> str | None:
        if self.multigrid is None:
            return None
        coarse = getattr(self.multigrid.coarse, "__wrapped__", self.multigrid.coarse)
        return "cholesky" if type(coarse).__name__ == "DenseCoarseSolve" else "pcg"

    def _timed_preconditioner(self, monitor):
        """M as the Krylov method calls it: timed as "preconditioner" (its own glue: casts,
        residuals, corrections; the parts inside are charged to theirs), and with a line for
        printed iterations (CG methods call M on the residual once per iteration)."""
        inner = self.preconditioner or (lambda r: r.copy())
        timed = self.profile.wrap("preconditioner", inner)
        if monitor is None or self.method == "gmres":
            return timed
        calls = [0]

        def monitored(r):
            if printed(calls[0]):
                monitor(calls[0], self.level.assembly.norm(r))
            calls[0] += 1
            return timed(r)

        return monitored

    def solve(self, b, x0=None, monitor=None):
        """Solve A x = b (b assembled and masked) to [solver] tolerance relative to ||b||.

        x0: a start (ignored once the projection holds solutions); monitor(iteration,
        residual norm): called for printed iterations (collective: every rank must pass one
        or none). Returns the method's SolveResult with ``x`` the whole solution."""
        s = self.settings
        method = METHODS[self.method]
        extra = {"restart": s["restart"]} if self.method == "gmres" else {}
        M = self._timed_preconditioner(monitor)
        if self.projection is not None and len(self.projection):
            x_bar, rhs = self.projection.project(b)
            x0 = None
        else:
            x_bar, rhs = None, b
        bnorm = math.sqrt(self.dot(b, b))
        result = method(self.apply, rhs, x0, M, self.dot, tol=0.0, atol=s["tolerance"] * bnorm,
                        maxiter=s["max_iterations"], **extra)
        if self.projection is not None:
            result.x = self.projection.update(x_bar if x_bar is not None else zeros_like(b), result.x)
        result.reference_norm = bnorm  # the tolerance is relative to b, whatever was projected
        if monitor is not None and self.method == "gmres":
            for k, residual in enumerate(result.residuals):
                if printed(k):
                    monitor(k, residual)
        return result
