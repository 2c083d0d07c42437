"""Passive scalars of incompressible flow: advection-diffusion of each [physics] scalars
name T by the velocity, with its own diffusivity kappa and source q,

    dT/dt + u . grad T = kappa lap T + q,

stepped like the velocity (as Nek5000 does): BDFk for dT/dt, the advection term extrapolated
(EXTk) from the lagged terms -C(u^{n+1-j}, T^{n+1-j}) (or, with [time] substeps, the lagged
scalars carried along the characteristics as the velocity's: substeps.py), then one Helmholtz solve

    (kappa K + bdf_0 / dt B) T^{n+1} = sum_j ext_j S^{n+1-j} + B q(t^{n+1})
                                       - B sum_{j>=1} bdf_j T^{n+1-j} / dt + <phi, g>

with S^j = -C(u^j, T^j) (weak, dealiased like the velocity's) and g the boundary flux. The
velocity of the step does not enter: the scalar sees only lagged fields, so the two solves
are independent.

Boundaries, per scalar, from the [boundary.<name>] tables: ``<scalar> = expr`` fixes the
value (Dirichlet, lifted as the velocity's), ``<scalar>_flux = expr`` gives g = kappa dT/dn
(n the outward normal). Faces without data: walls and outflow faces are insulated (g = 0),
a velocity face (inflow) is an error, as the value carried in is unknown. Each distinct set
of Dirichlet boundaries gets one ``Level`` (its mask) and one ``VectorHelmholtzSolver``; the
scalars sharing it set its coefficients in turn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lobatto.config.ranges import KIND_RANGES, check_expression_values
from lobatto.discretization import gll_weights
from lobatto.errors import InputError
from lobatto.mesh.topology import face_slice
from lobatto.solvers.elliptic import VectorHelmholtzSolver
from lobatto.solvers.multigrid import Level


#: the range of a scalar's source and boundary values (spec.py: expressions)
VALUES = KIND_RANGES["expression_t"]


@dataclass
class ScalarFaces:
    """The faces number ``face`` of elements ``rows`` that take one boundary's expression."""

    face: int
    rows: object  # backend int array
    coords: tuple  # backend (len(rows), n, n) x, y, z
    weights: object  # backend (len(rows), n, n): w_a w_b sJ (the flux faces' quadrature)
    expression: object
    name: str = ""  # the [boundary.<name>] table


@dataclass
class Scalar:
    """One scalar's data on this rank (host side until ``ScalarTransport`` builds it)."""

    name: str
    index: int  # its field in the state
    diffusivity: float
    source: object  # Expression in x, y, z, t
    tolerance: float
    max_iterations: int
    dirichlet: frozenset  # the boundaries that fix its value (the same set on every rank)
    dirichlet_faces: np.ndarray  # (E, 6) bool
    values: list  # ScalarFaces with Dirichlet data
    fluxes: list  # ScalarFaces with flux data


def times_of(expression, times) -> tuple:
    """The times at which an expression's range is checked: ``times`` if it uses t, else 0."""
    return tuple(times) if "t" in expression.variables_used else (0.0,)


def scalars_from_case(case, mesh, geometry, backend, face_kind: np.ndarray, first_index: int,
                      times=(0.0,)) -> list:
    """The [physics] scalars of a case as :class:`Scalar` (InputError for a velocity face
    without a value, a boundary that gives both a value and a flux, or data outside its range
    at one of the ``times``)."""
    names = tuple(case.physics.scalars)
    tables = case.tables.get("boundary", {})
    groups = np.array(list(mesh.group_names) + [""], dtype=object)
    group = groups[np.where(mesh.face_group < 0, -1, mesh.face_group)]
    boundary = mesh.face_neighbour < 0
    order = geometry.order
    w = gll_weights(order)
    face_weights = np.outer(w, w) if mesh.dim == 3 else w[None, :]  # an edge's (1, n) in 2-D
    out = []
    for s, name in enumerate(names):
        settings = case.tables[f"scalar.{name}"]
        flux_key = f"{name}_flux"
        for side, data in tables.items():
            if name in data and flux_key in data:
                raise InputError(f"{case.source}: [boundary.{side}] sets both {name} and {flux_key}: a boundary "
                                 f"fixes the value of {name} or its flux, not both")
        dirichlet = frozenset(side for side, data in tables.items() if name in data)
        given = frozenset(side for side, data in tables.items() if flux_key in data) | dirichlet
        dirichlet_faces = boundary & np.isin(group, list(dirichlet))
        missing = (face_kind == "velocity") & ~np.isin(group, list(given))
        if missing.any():
            element, face = np.argwhere(missing)[0]
            where = group[element, face] or "the unnamed boundary"
            raise InputError(f"{case.source}: the scalar {name} has no boundary data on the velocity (inflow) "
                             f"boundary {where} (element {int(mesh.element_ids[element])}, face {int(face)}): give "
                             f"[boundary.{where}] {name} = \"value\" (or {flux_key})")
        faces = {"values": [], "fluxes": []}
        for face in range(mesh.num_faces):
            points = face_slice(face, order)[1:]
            for side, data in tables.items():
                key = name if name in data else flux_key if flux_key in data else None
                rows = np.flatnonzero(boundary[:, face] & (group[:, face] == side)) if key else ()
                if not len(rows):
                    continue
                coords = tuple(backend.asarray(c[(rows,) + points], dtype=np.float64) for c in geometry.coords)
                weights = face_weights * geometry.surface_jacobian[rows, face]
                faces["values" if key == name else "fluxes"].append(
                    ScalarFaces(face, backend.xp.asarray(rows), coords, backend.asarray(weights), data[key], side))
        # the data's range at the run's start and end, before any work (on every rank; the
        # caller gathers the errors); not in the steps: a device sync each step, and an error
        # on one rank only (a value that leaves it mid-run shows in the fields instead)
        x, y, z = geometry.coords
        for t in times_of(settings["source"], times):
            check_expression_values(settings["source"].evaluate(np, x=x, y=y, z=z, t=t), VALUES,
                                    f"[scalar.{name}] source", settings["source"].text, t)
        for kind, key in (("values", name), ("fluxes", flux_key)):
            for f in faces[kind]:
                fx, fy, fz = f.coords
                for t in times_of(f.expression, times):
                    check_expression_values(f.expression.evaluate(backend.xp, x=fx, y=fy, z=fz, t=t), VALUES,
                                            f"[boundary.{f.name}] {key}", f.expression.text, t, backend.xp)
        out.append(Scalar(name, first_index + s, float(settings["diffusivity"]), settings["source"],
                          float(settings["tolerance"]), int(settings["max_iterations"]), dirichlet,
                          dirichlet_faces, faces["values"], faces["fluxes"]))
    return out


class ScalarTransport:
    """The scalars of one flow: their lagged terms, sources, boundary data and solves.

    ``push_history(u)`` at the start of a step (u the whole state at t^n), ``solve(u, t_new,
    dt, bdf, ext)`` once the velocity is done; ``iterations`` of the last step's solves."""

    def __init__(self, system, scalars: list):
        self.system, self.scalars = system, scalars
        backend = system.backend
        self.backend = backend
        self.fields = slice(scalars[0].index, scalars[-1].index + 1)  # their rows of the state
        mesh, geometry = system.mesh, system.geometry
        self.levels, self.solvers = {}, {}
        for s in scalars:  # one level per set of Dirichlet boundaries (the same order on every rank)
            if s.dirichlet not in self.levels:
                level = Level.build(mesh, system.order, backend, system.comm, s.dirichlet_faces, h1=s.diffusivity,
                                    h2=1.0, geometry=geometry)
                self.levels[s.dirichlet] = level
                self.solvers[s.dirichlet] = VectorHelmholtzSolver(level, s.tolerance, s.max_iterations)
        self.coords = backend.asarray(geometry.coords)
        self.mass = system.device_geometry.mass
        self.values: list = []  # lagged (S, E, n, n, n): T^n, T^{n-1}, ...
        self.explicit: list = []  # and their advection terms -C(u, T)
        self.iterations = [0] * len(scalars)
        self.totals = [0] * len(scalars)
        self.results = [None] * len(scalars)

    # The step ----------------------------------------------------------------------------
    def push_history(self, u, history: int):
        """T^n and -C(u^n, T^n) to the front of the history (sub-stepped: T^n alone)."""
        fields = u[self.fields]
        self.values = [fields.copy()] + self.values[:history - 1]
        if self.system.substepper is None:
            explicit = self.system.advection.convective(u[:self.system.dim], fields)
            explicit *= -1.0
            self.explicit = [explicit] + self.explicit[:history - 1]

    def solve(self, u, t_new, dt, bdf, ext):
        """T^{n+1} of every scalar into u, in place (u^n's scalars are in the history)."""
        k = len(ext)
        sigma = bdf[0] / dt
        substepper = self.system.substepper
        if substepper is not None:  # the lagged scalars carried along the step's characteristics
            weak = self.mass * substepper.advected_sum(self.values, bdf, relax=False)
            weak *= -1.0 / dt
        else:
            weak = ext[0] * self.explicit[0]
            for j in range(1, k):
                weak += ext[j] * self.explicit[j]
            lagged = (bdf[1] / dt) * self.values[0]
            for j in range(2, k + 1):
                lagged += (bdf[j] / dt) * self.values[j - 1]
            weak -= self.mass * lagged
        for c, s in enumerate(self.scalars):
            rhs = weak[c:c + 1]
            self._add_source(rhs[0], s, t_new)
            self._add_flux(rhs[0], s, t_new)
            u[s.index] = self._solve_one(rhs, s, sigma, t_new)

    def _solve_one(self, rhs, s: Scalar, sigma: float, t_new: float):
        solver = self.solvers[s.dirichlet]
        level = solver.level
        if (solver.h1, solver.h2) != (s.diffusivity, sigma):
            solver.set_coefficients(s.diffusivity, sigma)
        solver.tolerance, solver.max_iterations = s.tolerance, s.max_iterations
        # s.dirichlet (names) is the same on every rank, s.values (this rank's faces) is not:
        # the lifting's gather-scatter is collective, so a rank without such a face takes part
        lifting = self._lifting(s, t_new, level.assembly) if s.dirichlet else None
        if lifting is not None:
            rhs[0] -= level.operator.apply_local(lifting)
        level.assembly.dssum(rhs)
        rhs *= level.mask
        c = self.scalars.index(s)
        start = self.values[0][c:c + 1] * level.mask
        if lifting is not None:
            start -= lifting * level.mask
        result = solver.solve(rhs, start)
        self.system.check(result, f"scalar {s.name}", t_new, f"[scalar.{s.name}]")
        self.results[c] = result
        self.iterations[c] = result.iterations
        self.totals[c] += result.iterations
        return result.x[0] + lifting if lifting is not None else result.x[0]

    def _evaluate(self, expression, x, y, z, t):
        xp = self.backend.xp
        values = expression.evaluate(xp, x=x, y=y, z=z, t=float(t))
        return xp.broadcast_to(xp.asarray(values, dtype=self.backend.dtype), x.shape)

    def _add_source(self, rhs, s: Scalar, t):
        if s.source.is_constant and float(s.source.evaluate(np)) == 0.0:
            return
        x, y, z = self.coords
        rhs += self.mass * self._evaluate(s.source, x, y, z, t)

    def _add_flux(self, rhs, s: Scalar, t):
        """<phi, g> on the flux faces (local; assembled with the rest)."""
        for f in s.fluxes:
            index = (f.rows,) + face_slice(f.face, self.system.order)[1:]
            rhs[index] += f.weights * self._evaluate(f.expression, *f.coords, t)

    def _lifting(self, s: Scalar, t, assembly):
        """(E, n, n, n) continuous: the boundary values on the Dirichlet points (copies where
        faces meet averaged), zero elsewhere. Collective: every rank calls it."""
        xp = self.backend.xp
        shape = assembly.shape
        lift = xp.zeros((2,) + tuple(shape), dtype=self.backend.dtype)  # values, and how many gave one
        for f in s.values:
            index = (f.rows,) + face_slice(f.face, self.system.order)[1:]
            lift[0][index] = self._evaluate(f.expression, *f.coords, t)
            lift[1][index] = 1.0
        assembly.dssum(lift)
        return lift[0] / (lift[1] + (lift[1] == 0))

    # Reports and checkpoints -------------------------------------------------------------
    def report(self) -> dict:
        residuals = [float(r.residuals[-1]) if r is not None and r.residuals else 0.0 for r in self.results]
        return {"scalar_iterations": int(sum(self.iterations)), "scalar_residual": max(residuals, default=0.0)}

    def summary(self, steps: int) -> dict:
        return {s.name: {"diffusivity": s.diffusivity, "iterations_per_step": self.totals[c] / max(steps, 1)}
                for c, s in enumerate(self.scalars)}

    def history(self, empty) -> dict:
        xp = self.backend.xp
        out = {"scalar_values": xp.concatenate(self.values, axis=0) if self.values else empty}
        if self.system.substepper is None:  # sub-stepped: no advection terms kept
            out["scalar_explicit"] = xp.concatenate(self.explicit, axis=0) if self.explicit else empty
        return out

    def restore_history(self, history: dict) -> None:
        if "scalar_values" not in history:
            return
        count = len(self.scalars)
        values = self.backend.asarray(history["scalar_values"])
        explicit = self.backend.asarray(history["scalar_explicit"]) if "scalar_explicit" in history else values[:0]
        self.values = [values[count * j:count * (j + 1)].copy() for j in range(values.shape[0] // count)]
        self.explicit = [explicit[count * j:count * (j + 1)].copy() for j in range(explicit.shape[0] // count)]
