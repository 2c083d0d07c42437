"""-div(k grad u) + h u = f by continuous Galerkin: a steady system, solved once.

    [physics] equations = "poisson", f, k, h      expressions in x, y, z (k > 0, h >= 0)
    [boundary.<name>] value = "..."                Dirichlet data on that boundary
    [boundary.<name>] flux = "..."                 Neumann data g = k du/dn (n outward)
    [solver] method, preconditioner, ...           solvers/elliptic.py

Boundaries without a [boundary.<name>] table take their [mesh] boundary kind ("dirichlet",
the default, or "neumann") with zero data. The operator is ``operators.HelmholtzOperator``
with h1 = k and h2 = h (constants passed as scalars, variable ones folded into its factors),
assembled by ``operators.Assembly``; the solve is ``solvers.elliptic.EllipticSolver``. The
driver runs a steady system through ``lobatto/runner/steady.py``: build, ``solve()``, outputs, summary.
"""

from __future__ import annotations

import math
import time

import numpy as np

from lobatto.config import Integrand, Key, PhysicsSpec
from lobatto.config.ranges import LARGEST, MAGNITUDE_REASON, SMALLEST, Range
from lobatto.config.system_tables import check_boundary_name
from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce, collective_errors
from lobatto.solvers.elliptic import EllipticSolver
from lobatto.solvers.multigrid import Level
from lobatto.solvers.profile import Profile
from lobatto.solvers.settings import elliptic_memory, elliptic_solver_keys
from lobatto.systems.base import System
from lobatto.systems.dg import check_representable
from lobatto.systems.poisson import problem

SOLVER_KEYS = elliptic_solver_keys(tolerance=1e-8, max_iterations=1000, projection=0, method="fcg", absolute=False)

#: what [output.integrals] integrates (docs/probes.md): the solution, sampled once after the solve
INTEGRANDS = {
    "integral": Integrand("volume", "the solution u (its integral over the region)", lambda s, f: f[0]),
    "square": Integrand("volume", "u^2 (its integral: the squared L2 norm over the region)", lambda s, f: f[0] * f[0]),
    "surface_integral": Integrand("surface", "the solution u on the surface (its integral over the surface)",
                                  lambda s, f, n: f[0]),
}

SPEC = PhysicsSpec(
    name="poisson",
    description="steady diffusion-reaction -div(k grad u) + h u = f, continuous Galerkin (Poisson, Helmholtz)",
    fields=("u",),
    dimensions=(2, 3),  # 2-D: quadrilateral meshes (docs/elliptic.md, "2-D")
    fields_2d=("u",),
    boundary_kinds=("dirichlet", "neumann"),
    default_boundary="dirichlet",
    keys=(
        Key("f", "expression", "0", "the source f(x, y, z)"),
        Key("k", "expression", "1", "the diffusivity k(x, y, z) > 0", range=Range(
            SMALLEST, LARGEST, "k > 0 makes the problem elliptic; " + MAGNITUDE_REASON)),
        Key("h", "expression", "0", "the reaction coefficient h(x, y, z) >= 0", range=Range(
            0.0, LARGEST, "h >= 0 keeps the operator positive; " + MAGNITUDE_REASON)),
    ),
    fluxes=("none",),  # continuous Galerkin: no numerical flux
    steady=True,
    integrands=INTEGRANDS,
    tables={"solver": SOLVER_KEYS},
    boundary_keys=(
        Key("value", "expression", None, "Dirichlet data: u on this boundary"),
        Key("flux", "expression", None, "Neumann data: k du/dn on this boundary (n the outward normal)"),
    ),
)

#: the float32 backend cannot reach a tighter relative residual than about this
FLOAT32_TOLERANCE = 1e-5


class PoissonSystem(System):
    spec = SPEC
    output_layout = (None, None, ("u",))  # Nek5000: u as the first passive scalar
    #: state-sized (E, n^3) float64 arrays counted for the memory estimate (runner.build.check_memory),
    #: beyond the geometry: six factors (twelve with a variable k), mass, mask, multiplicity
    #: and its inverse (the level's copies too), the ids and the numbering's labels (int64), the
    #: gather-scatter's index arrays, five Krylov vectors, b, the Dirichlet lifting, the
    #: smoother's and V-cycle's temporaries, the coarser levels. Peak resident memory of
    #: `lobatto run` measured at 0.78-0.94 of the estimate (8^3 and 12^3 elements at N = 7,
    #: constant and variable k; 16^3 at N = 3)
    memory_states = 45

    def __init__(self, mesh, geometry, backend, comm, data: problem.ProblemData, settings: dict):
        self.mesh, self.geometry, self.backend = mesh, geometry, backend
        self.comm = comm if comm is not None and comm.Get_size() > 1 else None
        self.order = geometry.order
        self.num_elements = mesh.num_elements
        self.points = self.num_elements * (self.order + 1) ** mesh.dim
        self.settings = settings
        self.profile = Profile(backend)
        self.setup_seconds = {}
        start = time.perf_counter()
        self.level = Level.build(mesh, self.order, backend, self.comm, data.dirichlet_faces, h1=data.k, h2=data.h,
                                 geometry=geometry)
        self.setup_seconds["operator_and_numbering"] = time.perf_counter() - start
        start = time.perf_counter()
        self.solver = EllipticSolver(mesh, self.level, settings, backend, self.comm, data.dirichlet_faces,
                                     data.k, data.h, self.profile)
        self.setup_seconds["preconditioner"] = time.perf_counter() - start
        start = time.perf_counter()
        self.rhs, self.lifting = self._right_hand_side(data)
        self.setup_seconds["right_hand_side"] = time.perf_counter() - start
        self.unknowns = int(round(self.level.dot(self.level.mask, self.level.mask)))  # reduced over ranks
        self.global_points = self.level.assembly.num_global_points
        self.result = None
        self.solve_seconds = None

    @classmethod
    def memory_estimate(cls, case, layout) -> list:
        """The [solver]'s GMRES basis and multigrid levels (solvers/settings.py)."""
        return elliptic_memory(case.tables["solver"], layout, "solver")

    @classmethod
    def from_case(cls, case, mesh, geometry, backend, comm=None):
        settings = case.tables["solver"]
        if backend.precision == "float32" and settings["tolerance"] < FLOAT32_TOLERANCE:
            raise InputError(f"[solver] tolerance = {settings['tolerance']:g} is below what a float32 iteration "
                             f"reaches (about {FLOAT32_TOLERANCE:g}): use [backend] precision = \"float64\" (and "
                             "[solver] precision = \"float32\" for a float32 preconditioner), or a larger tolerance")
        tables = case.tables.get("boundary", {})
        if case.mesh.from_file:
            for name in tables:
                check_boundary_name(name, mesh.group_names, f"[boundary.{name}]",
                                    f"named surfaces of {case.mesh.file}")
        elif mesh.dim == 2:  # a box's zmin/zmax tables would have no faces: never silently unused
            for name in tables:
                check_boundary_name(name, mesh.group_names, f"[boundary.{name}]", "sides of a 2-D box")
        explicit = (case.raw or {}).get("mesh", {}).get("boundaries", {}) or {}
        for name, (key, _) in tables.items():
            kind = problem.KIND_OF_KEY[key]
            if name in explicit and explicit[name] != kind:
                raise InputError(f"[boundary.{name}] {key} makes {name} a {kind} boundary, but [mesh.boundaries] "
                                 f"{name} = \"{explicit[name]}\": remove one of them")
        with collective_errors(comm):  # local checks: a bad value on one rank stops all
            check_representable(geometry, backend, mesh)  # float32: metrics and mass within its range
            kinds = System.boundary_kind_of(cls, mesh)  # reads only the class's spec
            data = problem.evaluate(case, kinds, mesh, geometry, SPEC.keys, SPEC.boundary_keys, backend.dtype)
        comm = comm if comm is not None and comm.Get_size() > 1 else None
        has_dirichlet = allreduce(comm, int(data.dirichlet_faces.any()), "max")
        h_positive = allreduce(comm, int(np.any(np.asarray(data.h) > 0)), "max")
        if not has_dirichlet and not h_positive:
            raise InputError("poisson: no boundary is Dirichlet and h = 0, so u is fixed only up to a constant: "
                             "give one boundary a value ([boundary.<name>] value = ...) or set [physics] h > 0")
        return cls(mesh, geometry, backend, comm, data, settings)

    def _right_hand_side(self, data: problem.ProblemData):
        """(b, u_D): b = mask (QQ^T (B f + Neumann) - QQ^T A u_D), assembled."""
        backend, assembly = self.backend, self.level.assembly

        def copy(host):  # dssum works in place: never on the host arrays themselves
            return backend.xp.array(host, dtype=backend.dtype)

        given = assembly.dssum(copy(data.dirichlet_set))
        lifting = assembly.dssum(copy(data.dirichlet_values * data.dirichlet_set))
        lifting /= given + (given == 0)
        b = assembly.dssum(copy(data.weighted_source))
        b -= assembly.dssum(self.level.operator.apply_local(lifting))
        b *= self.level.mask
        return b, lifting

    # The solve ------------------------------------------------------------------------------
    def solve(self, x0=None, monitor=None):
        """Solve once; returns u (1, E, n, n, n) on the backend ((1, E, 1, n, n) on a 2-D mesh).
        ``x0``: a start for u (host or backend array of the elements' shape);
        ``monitor(iteration, residual)`` as EllipticSolver."""
        start_x = None
        if x0 is not None:
            start_x = (self.backend.asarray(x0) - self.lifting) * self.level.mask
        self.profile.reset()
        self.backend.synchronize()
        start = time.perf_counter()
        self.result = self.solver.solve(self.rhs, start_x, monitor)
        self.backend.synchronize()
        self.local_solve_seconds = time.perf_counter() - start
        self.solve_seconds = allreduce(self.comm, self.local_solve_seconds, "max")
        u = self.result.x + self.lifting
        return u.reshape((1,) + u.shape)

    def summary(self, stepper=None, comm=None) -> dict:
        """The solve's entries of summary.json (after ``solve``)."""
        r, s = self.result, self.settings
        seconds = self.solve_seconds
        history = [float(v) for v in r.residuals]
        relative = r.relative_residual
        return {
            "unknowns": self.unknowns,
            "global_points": self.global_points,
            "solver": {"method": s["method"], "preconditioner": s["preconditioner"], "precision": s["precision"],
                       "levels": self.solver.level_orders, "coarse": self.solver.coarse_solve,
                       "tolerance": s["tolerance"], "max_iterations": s["max_iterations"],
                       "projection": s["projection"], "smoother_degree": s["smoother_degree"],
                       "smoother": self.solver.smoother,  # null where none ran (one level, no multigrid)
                       "description": self.solver.describe(),
                       "coarse_tolerance": s["coarse_tolerance"]},
            "iterations": r.iterations,
            "converged": bool(r.converged),
            "reason": r.reason,
            "relative_residual": relative if math.isfinite(relative) else None,
            "reference_norm": r.reference_norm,
            "residuals": history,
            "solve_seconds": seconds,
            "seconds_per_iteration": seconds / r.iterations if r.iterations else None,
            "setup_seconds": dict(self.setup_seconds),
            "parts": self.profile.report(self.local_solve_seconds),  # this rank's (rank 0 in the summary)
        }
