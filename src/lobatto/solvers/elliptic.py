"""Elliptic solves on the assembled operator of a ``solvers.multigrid.Level``, ready to use.

``EllipticSolver``: a [solver] table made into a solver: a Krylov method, its
preconditioner, and the projection onto previous solutions (a pressure, a steady diffusion
problem).

    method              cg (preconditioned CG: needs a fixed SPD preconditioner), fcg
                        (flexible CG), gmres (restarted flexible GMRES, ``restart`` vectors)
    preconditioner      multigrid (p-multigrid V-cycle over ``levels``), jacobi, none
    precision           float32: the preconditioner runs in float32 inside the float64 iteration
    smoother            the multigrid's Chebyshev smoother on D^-1 A (jacobi) or on M A with
                        M the overlapping additive Schwarz (schwarz; solvers/schwarz.py)
    coarse              the multigrid's coarsest solve: cholesky, amg (algebraic multigrid
                        cycled on the backend), pcg, or auto (Cholesky up to
                        solvers.coarse.DENSE_LIMIT points, amg above where pyamg imports,
                        else pcg); pcg stops at coarse_tolerance
    tolerance           stop at ||r|| <= max(tolerance ||b||, absolute_tolerance) (assembled
    absolute_tolerance  norms); an absolute one is what a time-dependent pressure needs, whose
                        b -> 0 at a steady state (a relative target then sinks into round-off)

A preconditioner that is not one fixed linear map (float32 rounding, an iterative coarse
solve) needs fcg or gmres: cg with one is refused, naming the keys to change.
``null_space=True`` solves a singular problem (h2 = 0, no Dirichlet point): b is made
consistent, the preconditioner's output and the solution have their mean removed
(solvers/nullspace.py says which projections and why), and the coarse solve works on the
singular coarse matrix. A zero b returns x = 0 after 0 iterations.

``VectorHelmholtzSolver``: Jacobi-PCG on k fields at once with one operator and one
Dirichlet mask (the velocity's three Helmholtz solves): one CG whose dot products sum over
the components, one gather-scatter per application for all of them.
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.errors import InputError
from lobatto.solvers import Jacobi, LowPrecision, SolutionProjection, fgmres, flexible_cg, pcg
from lobatto.solvers.coarse import DENSE_LIMIT
from lobatto.solvers.krylov import zeros_like
from lobatto.solvers.multigrid import PMultigrid, default_orders
from lobatto.solvers.nullspace import ConstantNullSpace, check_singular
from lobatto.solvers.profile import Profile, instrument

METHODS = {"cg": pcg, "fcg": flexible_cg, "gmres": fgmres}

#: settings a caller may leave out (the steady system passes every one from its [solver] table)
DEFAULT_SETTINGS = {"method": "fcg", "preconditioner": "multigrid", "tolerance": 1e-8, "absolute_tolerance": 0.0,
                    "max_iterations": 1000, "projection": 0, "levels": (), "precision": "float64",
                    "coarse": "auto", "coarse_tolerance": 1e-2, "restart": 30, "smoother_degree": 3,
                    "smoother": "jacobi"}


def printed(iteration: int) -> bool:
    """Iterations that get a line: every one up to 10, every 10th up to 100, then every 100th."""
    return iteration <= 10 or (iteration <= 100 and iteration % 10 == 0) or iteration % 100 == 0


def _tolerance(value, name: str) -> float:
    value = float(value)
    if not (math.isfinite(value) and value >= 0):
        raise InputError(f"{name} must be a finite number >= 0, got {value!r}")
    return value


class EllipticSolver:
    """``solve(b, x0)`` -> SolveResult for the masked, assembled operator of ``level``.

    settings: the [solver] values (method, preconditioner, tolerance, absolute_tolerance,
    max_iterations, projection, levels, precision, coarse, coarse_tolerance, restart,
    smoother_degree, smoother; missing ones from DEFAULT_SETTINGS); h1, h2 as for ``HelmholtzOperator``
    (interpolated to the coarser multigrid orders); profile: a ``Profile`` (None: untimed);
    null_space: the operator's null space is the constants (h2 = 0, no Dirichlet point),
    checked; table: the case-file table of the settings, for messages ("solver.pressure")."""

    def __init__(self, mesh, level, settings: dict, backend, comm, dirichlet, h1, h2, profile=None,
                 null_space: bool = False, table: str = "solver"):
        settings = {**DEFAULT_SETTINGS, **settings}
        self.table = table
        self.level, self.settings = level, settings
        self.profile = profile if profile is not None else Profile(backend, enabled=False)
        self.backend = backend
        self.method = settings["method"]
        self.absolute_tolerance = _tolerance(settings["absolute_tolerance"], f"[{table}] absolute_tolerance")
        self.null_space = None
        if null_space:
            check_singular(level, "EllipticSolver")
            self.null_space = ConstantNullSpace(level)
        self.multigrid = None
        self.levels = [level]
        self.preconditioner, fixed = self._preconditioner(mesh, level, backend, comm, dirichlet, h1, h2)
        if self.method == "cg" and not fixed:
            why = ("float32 rounding makes it vary" if settings["precision"] == "float32" else
                   f"its coarse grid is solved iteratively ([{table}] coarse = \"pcg\", or \"auto\" above "
                   f"{DENSE_LIMIT} coarse points)")
            raise InputError(f"[{table}] method = \"cg\" needs a fixed preconditioner, but {why}: use method = \"fcg\" "
                             "(or \"gmres\")" + ("" if settings["precision"] == "float32" else
                                                 ", or coarse = \"amg\" (or \"cholesky\" with fewer coarse "
                                                 "points)"))
        instrument(self.profile, self.levels, self.multigrid)
        self.apply, self.dot, self.dots = level.apply, level.dot, level.dots  # the wrapped (timed) members
        capacity = settings["projection"]
        self.projection = SolutionProjection(self.apply, self.dot, capacity, dots=self.dots,
                                             combine=backend.kernel("linear_combination")) if capacity else None

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
            raise InputError(f"[{self.table}] levels = {list(orders)} must start at the [discretization] order "
                             f"{level.order} (for example {list(default_orders(level.order))})")
        mg = PMultigrid.build(mesh, backend, orders, comm, dirichlet, h1, h2, dtype=np.float32 if low else None,
                              degree=s["smoother_degree"], coarse=s["coarse"], coarse_tol=s["coarse_tolerance"],
                              finest=None if low else level, null_space=self.null_space is not None,
                              smoother=s["smoother"], table=self.table)
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
        return {"DenseCoarseSolve": "cholesky", "AmgCoarseSolve": "amg"}.get(type(coarse).__name__, "pcg")

    @property
    def smoother(self) -> str | None:
        """The multigrid smoother that runs; None without multigrid or with a single level
        (the coarse solve alone), where the [solver] smoother key has nothing to smooth."""
        if self.multigrid is None or not self.multigrid.smoothers:
            return None
        return self.settings["smoother"]

    def describe(self) -> str:
        """What solves, for the printed lines: 'fcg + multigrid [5, 2, 1] (schwarz smoother,
        cholesky coarse)'; the keys that took effect, not the ones given."""
        s = self.settings
        text = f"{self.method} + {s['preconditioner']}"
        if self.multigrid is not None:
            smoother = f"{self.smoother} smoother" if self.smoother else "no smoother: one level"
            text += f" {self.level_orders} ({smoother}, {self.coarse_solve} coarse)"
        if s["preconditioner"] != "none" and s["precision"] == "float32":
            text += ", float32 preconditioner"
        return text

    def _timed_preconditioner(self, monitor):
        """M as the Krylov method calls it: timed as "preconditioner" (its own glue: casts,
        residuals, corrections, the mean removal of a singular problem; the parts inside are
        charged to theirs), and with a line for printed iterations (CG methods call M on the
        residual once per iteration)."""
        inner = self.preconditioner or (lambda r: r.copy())
        if self.null_space is not None:
            unprojected, remove_mean = inner, self.null_space.remove_mean
            inner = lambda r: remove_mean(unprojected(r))  # noqa: E731
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
        """Solve A x = b (b assembled and masked) to ||r|| <= max(tolerance ||b||,
        absolute_tolerance).

        x0: a start (ignored once the projection holds solutions, and for a zero b, whose
        solution is 0); monitor(iteration, residual norm): called for printed iterations
        (collective: every rank must pass one or none). With null_space, b is first made
        consistent (||b|| is then its norm) and x has zero mean. Returns the method's
        SolveResult with ``x`` the whole solution."""
        s = self.settings
        method = METHODS[self.method]
        extra = {"restart": s["restart"]} if self.method == "gmres" else {}
        if self.method == "cg":  # fusing r.r with r.Mr costs one more M: a cycle for multigrid
            extra["fused"] = s["preconditioner"] != "multigrid"
        M = self._timed_preconditioner(monitor)
        if self.null_space is not None:
            b = self.null_space.consistent(b)
        bnorm = math.sqrt(self.dot(b, b))
        if bnorm == 0.0:
            x0 = None  # the iteration starts at its answer, converged at 0 iterations
        if self.projection is not None and len(self.projection) and bnorm > 0:
            x_bar, rhs = self.projection.project(b)
            x0 = None
        else:
            x_bar, rhs = None, b
        target = max(s["tolerance"] * bnorm, self.absolute_tolerance)
        result = method(self.apply, rhs, x0, M, self.dot, tol=0.0, atol=target, maxiter=s["max_iterations"],
                        dots=self.dots, **extra)
        if self.projection is not None and bnorm > 0:
            result.x = self.projection.update(x_bar if x_bar is not None else zeros_like(b), result.x)
        if self.null_space is not None:
            result.x = self.null_space.remove_mean(result.x)
        result.reference_norm = bnorm  # the tolerance is relative to b, whatever was projected
        if monitor is not None and self.method == "gmres":
            for k, residual in enumerate(result.residuals):
                if printed(k):
                    monitor(k, residual)
        return result


class VectorHelmholtzSolver:
    """Jacobi-PCG for h1 K u + h2 B u = b on k fields at once, b (k, E, n, n, n).

    level: a ``solvers.multigrid.Level`` with scalar coefficients; its assembly's mask (the
    Dirichlet points) applies to every component, and this solver sets its coefficients
    (``set_coefficients``). The assembled diagonals of K and B are kept, so a new h1, h2 (a
    new dt) costs one array combination, not new element matrices. profile: a ``Profile``
    that times the level's members and the preconditioner (None: untimed).

    ``solve(b, x0)``: b assembled and masked, Dirichlet data lifted (b = mask QQ^T (B f -
    A_local u_D), u_D the data on Dirichlet points, zero elsewhere; then u = x + u_D); x0 an
    initial guess for x (an extrapolated velocity minus u_D), masked here.

    constraint: None, or an object whose ``project(u)`` maps a (k, E, n, n, n) field in place
    onto the admissible directions at each point (a symmetric projection Q per point, the
    same at every copy: slip boundaries); the solve is then Q A Q x = Q b in that subspace
    (b and x0 projected here). Jacobi keeps it: its diagonal is the same for every component."""

    def __init__(self, level, tolerance: float = 1e-8, max_iterations: int = 200, absolute_tolerance: float = 0.0,
                 profile=None, constraint=None):
        self.level = level
        self.constraint = constraint
        self.tolerance = _tolerance(tolerance, "VectorHelmholtzSolver: tolerance")
        self.absolute_tolerance = _tolerance(absolute_tolerance, "VectorHelmholtzSolver: absolute_tolerance")
        if int(max_iterations) < 1:
            raise InputError(f"VectorHelmholtzSolver: max_iterations must be >= 1, got {max_iterations}")
        self.max_iterations = int(max_iterations)
        operator, assembly = level.operator, level.assembly
        h1, h2 = operator.h1, operator.h2
        if np.ndim(h1) or np.ndim(h2):
            raise InputError("VectorHelmholtzSolver: the level's h1 and h2 must be scalars (array coefficients are "
                             "folded into the operator's factors, which set_coefficients could not renew)")
        operator.set_coefficients(1.0, 0.0)
        self.stiffness_diagonal = assembly.dssum(operator.diagonal_local())
        self.mass_diagonal = assembly.dssum(operator.mass.astype(level.dtype, copy=True))
        self.profile = profile
        if profile is not None:
            instrument(profile, [level])
        self.set_coefficients(h1, h2)

    def set_coefficients(self, h1: float, h2: float) -> None:
        """h1 > 0 (the viscosity), h2 >= 0 (bdf[0] / dt): operator and Jacobi diagonal."""
        h1, h2 = float(h1), float(h2)
        if not (math.isfinite(h1) and math.isfinite(h2) and h1 > 0 and h2 >= 0):
            raise InputError(f"VectorHelmholtzSolver: need h1 > 0 and h2 >= 0 (finite), got h1 = {h1!r}, h2 = {h2!r}")
        self.level.set_coefficients(h1, h2)
        self.h1, self.h2 = h1, h2
        self.jacobi = Jacobi(h1 * self.stiffness_diagonal + h2 * self.mass_diagonal, self.level.mask)
        self._precondition = self.jacobi if self.profile is None else self.profile.wrap("preconditioner", self.jacobi)

    def apply(self, u):
        """mask QQ^T A_local u for every component of u (k, E, n, n, n): the element operator
        per component (its kernels take one field), one gather-scatter for all of them."""
        out = self.level.assembly.apply_operator(self.level.operator, u)
        out *= self.level.mask
        if self.constraint is not None:
            self.constraint.project(out)
        return out

    def dot(self, u, v) -> float:
        """The assembled inner product summed over the components."""
        return self.level.dot(u, v)

    def dots(self, pairs) -> list:
        """Several of ``dot`` with one reduction (pcg finds it through ``dot``)."""
        return self.level.dots(pairs)

    def solve(self, b, x0=None):
        """SolveResult of Jacobi-PCG from x0 (default zero) to ||r|| <= max(tolerance ||b||,
        absolute_tolerance), norms over all components; ``x`` has b's shape."""
        shape = tuple(b.shape)
        if len(shape) != 5 or shape[1:] != self.level.assembly.shape:
            raise InputError(f"VectorHelmholtzSolver: b must have shape (k, E, n, n, n) with (E, n, n, n) = "
                             f"{self.level.assembly.shape}, got {shape}")
        if x0 is not None and tuple(x0.shape) != shape:
            raise InputError(f"VectorHelmholtzSolver: x0 must have b's shape {shape}, got {tuple(x0.shape)}")
        if self.constraint is not None:
            b = self.constraint.project(b.copy())
        bnorm = math.sqrt(self.dot(b, b))
        if bnorm == 0.0 or x0 is None:
            x0 = None  # b = 0: x = 0 is the solution
        else:
            x0 = x0 * self.level.mask
            if self.constraint is not None:
                self.constraint.project(x0)
        target = max(self.tolerance * bnorm, self.absolute_tolerance)
        return pcg(self.apply, b, x0, self._precondition, self.dot, tol=0.0, atol=target,
                   maxiter=self.max_iterations)
