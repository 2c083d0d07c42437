"""Boundaries of incompressible flow: which faces fix the velocity, which fix the pressure,
and the velocity data on them.

    wall            u = 0 (no slip)                                             Nek5000 "W"
    velocity        u = the [boundary.<name>] ux, uy, uz expressions in x, y, z, t (missing:
                    0); a [boundary.<name>] table with ux, uy or uz makes its faces velocity
                    faces                                                       "v"
    outflow         zero traction: p = 0, the velocity free (natural condition)  "O"
    symmetry        u . n = 0, zero tangential traction (slip.py)               "SYM"
    outflow_normal  u - (u . n) n = 0, p = 0 (slip.py, open_faces.py)            "ON"
    traction        -p n + nu du/dn = t, the [boundary.<name>] tx, ty, tz (open_faces.py)

Periodic sides are no boundary. On a 2-D mesh the velocity has (ux, uy) and the faces are the
four edges (a uz key is refused by the system's check_dimension). The velocity is Dirichlet on wall and velocity faces, the
pressure on the open faces (outflow, outflow_normal, traction: ``outflow_faces``); with no
open face the pressure is fixed only up to a constant, and the pressure solve works in the
space of zero mean (null_space). Symmetry and outflow_normal faces constrain the velocity's
direction in the velocity solve (slip.py).

The data is evaluated on the backend at the face points of each (face, table) group, at
each step's new time when an expression uses t, once otherwise. Where a point lies on
faces with different data (the edge between an inflow and a wall), the copies are
averaged, as the Poisson system does, so the boundary field is continuous.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lobatto.config.ranges import KIND_RANGES, check_expression_values
from lobatto.errors import InputError
from lobatto.discretization import gll_weights
from lobatto.mesh.mesh import INTERIOR
from lobatto.mesh.topology import element_shape, face_slice
from lobatto.systems.navier_stokes.open_faces import OPEN_KINDS, TRACTION, OpenBoundaries

COMPONENTS = ("ux", "uy", "uz")
#: the range of the boundary velocity's values (spec.py's boundary keys: expressions)
BOUNDARY_RANGE = KIND_RANGES["expression_t"]


@dataclass
class FaceGroup:
    """The faces number ``face`` of elements ``rows`` that take one table's data."""

    face: int
    rows: object  # backend int array
    coords: tuple  # backend (len(rows), n, n) x, y, z
    weighted_normals: object  # backend (dim, len(rows), n, n): n w_a w_b sJ ((2, r, 1, n) in 2-D)
    expressions: tuple  # three Expressions or None
    name: str = ""  # the [boundary.<name>] table


#: kinds whose faces take no velocity data (a [boundary.<name>] ux, uy or uz there is refused)
NO_VELOCITY_DATA = ("outflow", "symmetry", "outflow_normal", "traction")


def check_face_tables(kinds: list, mesh, tables: dict) -> None:
    """InputError for a [boundary.<name>] table whose data the kind of its faces (on this
    rank) does not take: velocity data on an open or symmetry face, traction data on a face
    that is not a traction face."""
    base = face_kinds(kinds, mesh, {})
    group = _face_groups(mesh)
    for name, table in tables.items():
        present = set(base[group == name]) - {""}
        velocity = [c for c in COMPONENTS if c in table]
        traction = [c for c in TRACTION if c in table]
        if velocity and traction:
            raise InputError(f"[boundary.{name}] gives both velocity ({', '.join(velocity)}) and traction "
                             f"({', '.join(traction)}) data: a face fixes one or the other")
        refused = sorted(present & set(NO_VELOCITY_DATA))
        if velocity and refused:
            raise InputError(f"[boundary.{name}] gives velocity data ({', '.join(velocity)}), but its faces are "
                             f"\"{refused[0]}\" faces, which take none: make the surface \"velocity\" in "
                             "[mesh.boundaries] (or leave it the default wall) or remove the keys")
        if traction and present - {"traction"}:
            other = sorted(present - {"traction"})[0]
            raise InputError(f"[boundary.{name}] gives traction data ({', '.join(traction)}), but its faces are "
                             f"\"{other}\" faces: make the surface \"traction\" in [mesh.boundaries] or remove "
                             "the keys")


def face_quadrature(dim: int, order: int) -> np.ndarray:
    """A face's GLL weights w_a w_b on its (a, b) grid: (n, n), or (1, n) on a 2-D mesh's edge."""
    w = gll_weights(order)
    return np.outer(w, w) if dim == 3 else w[None, :]


def _face_groups(mesh) -> np.ndarray:
    groups = np.array(list(mesh.group_names) + [""], dtype=object)
    return groups[np.where(mesh.face_group < 0, -1, mesh.face_group)]


def face_kinds(kinds: list, mesh, tables: dict) -> np.ndarray:
    """(E, 6) object array: the kind of each boundary face ("" for interior faces).
    ``kinds``: the kind of each of ``mesh.boundary_names``; a face in a [boundary.<name>]
    table is a velocity face."""
    names = np.array(list(kinds) + [""], dtype=object)
    kind = names[np.where(mesh.boundary_kind == INTERIOR, -1, mesh.boundary_kind)]
    boundary = mesh.face_neighbour < 0
    kind = np.where(boundary, kind, "")
    groups = np.array(list(mesh.group_names) + [""], dtype=object)
    group = groups[np.where(mesh.face_group < 0, -1, mesh.face_group)]
    for name in tables:
        kind = np.where(boundary & (group == name), "velocity", kind)
    return kind


class FlowBoundaries:
    """Velocity and pressure boundary data of one rank."""

    def __init__(self, mesh, geometry, backend, kinds: list, tables: dict, traction_tables: dict | None = None,
                 backflow: bool = False):
        self.backend = backend
        order = geometry.order
        self.kind = face_kinds(kinds, mesh, tables)
        self.velocity_faces = (self.kind == "wall") | (self.kind == "velocity")
        #: the faces where the pressure is given (zero, or -t . n on traction faces)
        self.outflow_faces = np.isin(self.kind, OPEN_KINDS)
        #: the faces whose velocity direction is constrained (slip.py); ``constraint``: the
        #: SlipConstraint the system builds on them (None: none on any rank)
        self.slip_faces = np.isin(self.kind, ("symmetry", "outflow_normal"))
        self.constraint = None
        group = _face_groups(mesh)
        self.open = OpenBoundaries(self.kind, group, geometry, backend, traction_tables or {}, backflow)
        w = gll_weights(order)
        self.dim = dim = mesh.dim
        face_weights = face_quadrature(dim, order)
        xp = backend.xp
        self.groups: list[FaceGroup] = []
        for face in range(mesh.num_faces):
            points = face_slice(face, order)[1:]
            for name, data in tables.items():
                rows = np.flatnonzero((group[:, face] == name) & (self.kind[:, face] == "velocity"))
                if not rows.size:
                    continue
                coords = tuple(backend.asarray(c[(rows,) + points], dtype=np.float64) for c in geometry.coords)
                normals = geometry.normals[:dim, rows, face] * (face_weights * geometry.surface_jacobian[rows, face])
                self.groups.append(FaceGroup(face, xp.asarray(rows), coords, backend.asarray(normals),
                                             tuple(data.get(c) for c in COMPONENTS[:dim]), name))
        self.time_dependent = any("t" in e.variables_used for g in self.groups for e in g.expressions if e is not None)
        self.shape = (dim, mesh.num_elements) + element_shape(dim, order)
        self.order = order
        self._cached = None  # (values per group) when nothing depends on t
        #: whether the velocity solves lift boundary data: the same on every rank (the system
        #: sets it over the ranks; a rank may have no group and still take part)
        self.lifted = bool(self.groups)

    def check(self, times) -> None:
        """InputError unless the data is within its declared range at the ``times`` (the run's
        start and end, at set-up; the steps do not check it: a device sync each step, and an
        error on one rank only)."""
        xp = self.backend.xp
        for t in times if self.time_dependent else (0.0,):
            for g in self.groups:
                x, y, z = g.coords
                for c, e in enumerate(g.expressions):
                    if e is not None:
                        check_expression_values(e.evaluate(xp, x=x, y=y, z=z, t=float(t)), BOUNDARY_RANGE,
                                                f"[boundary.{g.name}] {COMPONENTS[c]}", e.text, t, xp)
        self.open.check(times)

    def values(self, t: float) -> list:
        """[(dim, rows, n, n) backend array] per group: the boundary velocity at time t."""
        if self._cached is not None:
            return self._cached
        xp = self.backend.xp
        out = []
        for g in self.groups:
            x, y, z = g.coords
            v = xp.zeros((self.dim,) + x.shape, dtype=self.backend.dtype)
            for c, e in enumerate(g.expressions):
                if e is not None:
                    v[c] = e.evaluate(xp, x=x, y=y, z=z, t=float(t))
            out.append(v)
        if not self.time_dependent:
            self._cached = out
        return out

    def lifting(self, values: list, assembly):
        """(3, E, n, n, n) continuous field: the boundary velocity on Dirichlet points (copies
        averaged), zero elsewhere (walls: zero). Collective (two gather-scatters): every rank
        calls it, one without a velocity face too (its part is zero)."""
        xp = self.backend.xp
        lift = xp.zeros(self.shape, dtype=self.backend.dtype)
        given = xp.zeros(self.shape[1:], dtype=self.backend.dtype)
        for g, v in zip(self.groups, values):
            index = (g.rows,) + face_slice(g.face, self.order)[1:]
            for c in range(self.dim):
                lift[c][index] = v[c]
            given[index] = 1.0
        assembly.dssum(lift)
        assembly.dssum(given)
        lift /= given + (given == 0)
        return lift

    def normal_flux(self, values: list):
        """(E, n, n, n) local: sum over velocity faces of w_a w_b sJ (n . u_boundary) at face
        points (the boundary term of the pressure equation, before assembly)."""
        xp = self.backend.xp
        out = xp.zeros(self.shape[1:], dtype=self.backend.dtype)
        for g, v in zip(self.groups, values):
            index = (g.rows,) + face_slice(g.face, self.order)[1:]
            out[index] += (g.weighted_normals * v).sum(axis=0)
        return out
