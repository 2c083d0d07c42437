"""Open boundaries of incompressible flow: the faces where the pressure is given (outflow,
outflow_normal, traction), their natural terms in the velocity equation, and the backflow
stabilisation.

The velocity's weak form has the boundary term  int_G (nu du/dn - p n) . v ds; with the
pressure's gradient taken strongly in the velocity equation (system.py, step 3) the natural
condition of the velocity's Laplacian is nu du/dn = g, and the pressure's Dirichlet value on
the face sets the normal part:

    outflow         p = 0, g = 0                       (Nek5000 "O": zero traction)
    outflow_normal  p = 0, u_t = 0 (slip.py), u_n free  (Nek5000 "ON")
    traction        p = -t . n, g = t - (t . n) n      (the traction t = (tx, ty, tz) of the
                    [boundary.<name>] table, expressions in x, y, z, t; missing: 0), so that
                    -p n + nu du/dn = t; exact for a flow whose du_n/dn vanishes on the face

Backflow stabilisation ([physics] backflow_stabilization = true) adds to g, on outflow and
outflow_normal faces, 1/2 min(u . n, 0) u (the directional do-nothing condition of Braack and Mucha 2014,
Bazilevs et al. 2009's backflow term with beta = 1, Dong et al. 2014's energy-stable
condition in its simplest form), with u the extrapolated velocity (explicit, as Dong). In
the kinetic energy budget it cancels the energy that inflow carries in through an open
face, 1/2 |u|^2 |u . n| where u . n < 0, so a vortex leaving the domain does not feed
energy back in; where the flow leaves it is zero and the face is the plain one above.
Traction faces keep the traction they are given (an inlet driven by a traction has u . n < 0
everywhere, and the term would change the traction asked for).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lobatto.config.ranges import KIND_RANGES, check_expression_values
from lobatto.discretization import gll_weights
from lobatto.mesh.topology import element_shape, face_slice

OPEN_KINDS = ("outflow", "outflow_normal", "traction")
#: the open kinds the backflow stabilisation acts on
BACKFLOW_KINDS = ("outflow", "outflow_normal")
TRACTION = ("tx", "ty", "tz")


@dataclass
class OpenFaceGroup:
    """Faces number ``face`` of elements ``rows``: unit normals and area weights w_a w_b sJ."""

    face: int
    rows: object  # backend int array
    normals: object  # backend (3, r, n, n)
    area: object  # backend (r, n, n)
    coords: tuple = ()  # backend (r, n, n) x, y, z (traction faces)
    expressions: tuple = ()  # (tx, ty, tz) Expressions or None
    name: str = ""


class OpenBoundaries:
    """One rank's open faces: the pressure's Dirichlet data and the velocity's natural terms."""

    def __init__(self, kind: np.ndarray, group: np.ndarray, geometry, backend, tables: dict, backflow: bool):
        self.backend, self.order, self.backflow = backend, geometry.order, bool(backflow)
        self.faces = np.isin(kind, OPEN_KINDS)
        self.dim = dim = int(getattr(geometry, "dim", 3))  # 2-D: (tx, ty), normals (2, r, 1, n)
        w = gll_weights(self.order)
        face_weights = np.outer(w, w) if dim == 3 else w[None, :]
        xp = backend.xp
        self.open: list[OpenFaceGroup] = []  # every open face (the pressure's Dirichlet points)
        self.backflow_faces: list[OpenFaceGroup] = []  # outflow and outflow_normal faces
        self.traction: list[OpenFaceGroup] = []  # traction faces with data, per table
        for face in range(2 * dim):
            points = face_slice(face, self.order)[1:]

            def faces(rows, **more):
                return OpenFaceGroup(face, xp.asarray(rows), backend.asarray(geometry.normals[:dim, rows, face]),
                                  backend.asarray(face_weights * geometry.surface_jacobian[rows, face]), **more)

            rows = np.flatnonzero(self.faces[:, face])
            if rows.size:
                self.open.append(faces(rows))
            rows = np.flatnonzero(np.isin(kind[:, face], BACKFLOW_KINDS))
            if rows.size and self.backflow:
                self.backflow_faces.append(faces(rows))
            for name, data in tables.items():
                rows = np.flatnonzero((kind[:, face] == "traction") & (group[:, face] == name))
                if rows.size:
                    coords = tuple(backend.asarray(c[(rows,) + points], dtype=np.float64) for c in geometry.coords)
                    self.traction.append(faces(rows, coords=coords, expressions=tuple(data.get(c) for c in TRACTION[:dim]),
                                               name=name))
        self.shape = (dim, kind.shape[0]) + element_shape(dim, self.order)
        #: whether the pressure has nonzero Dirichlet data: the same on every rank (the system
        #: sets it over the ranks: the lifting's gather-scatter is collective)
        self.pressure_lifted = bool(self.traction)

    def check(self, times) -> None:
        """InputError unless the traction data is within its declared range at ``times``."""
        xp = self.backend.xp
        for t in times:
            for g in self.traction:
                x, y, z = g.coords
                for c, e in enumerate(g.expressions):
                    if e is not None:
                        check_expression_values(e.evaluate(xp, x=x, y=y, z=z, t=float(t)), KIND_RANGES["expression_t"],
                                                f"[boundary.{g.name}] {TRACTION[c]}", e.text, t, xp)

    def _traction(self, g, t: float):
        xp = self.backend.xp
        x, y, z = g.coords
        v = xp.zeros((self.dim,) + x.shape, dtype=self.backend.dtype)
        for c, e in enumerate(g.expressions):
            if e is not None:
                v[c] = e.evaluate(xp, x=x, y=y, z=z, t=float(t))
        return v

    def pressure_lifting(self, t: float, assembly):
        """(E, n, n, n) continuous: -t . n on traction points, 0 on the other open points (the
        copies averaged), 0 elsewhere. Collective: every rank calls it when pressure_lifted."""
        xp = self.backend.xp
        lift = xp.zeros(self.shape[1:], dtype=self.backend.dtype)
        given = xp.zeros(self.shape[1:], dtype=self.backend.dtype)
        for g in self.open:
            given[(g.rows,) + face_slice(g.face, self.order)[1:]] = 1.0
        for g in self.traction:
            lift[(g.rows,) + face_slice(g.face, self.order)[1:]] = -(self._traction(g, t) * g.normals).sum(axis=0)
        assembly.dssum(lift)
        assembly.dssum(given)
        lift /= given + (given == 0)
        return lift

    def natural(self, velocity, t: float):
        """(3, E, n, n, n) local, or None: int g . v ds at face points (w_a w_b sJ g), g the
        tangential traction and the backflow term; before assembly."""
        if not self.traction and not self.backflow_faces:
            return None
        xp = self.backend.xp
        out = xp.zeros(self.shape, dtype=self.backend.dtype)
        # per component: an index (rows, points) keeps the face's axes in order (with a leading
        # slice NumPy would move the advanced axes first)
        for g in self.traction:
            index = (g.rows,) + face_slice(g.face, self.order)[1:]
            traction = self._traction(g, t)
            traction -= (traction * g.normals).sum(axis=0) * g.normals
            for c in range(self.dim):
                out[c][index] += traction[c] * g.area
        if self.backflow:
            for g in self.backflow_faces:
                index = (g.rows,) + face_slice(g.face, self.order)[1:]
                u = xp.stack([velocity[c][index] for c in range(self.dim)])
                weight = 0.5 * xp.minimum((u * g.normals).sum(axis=0), 0.0) * g.area
                for c in range(self.dim):
                    out[c][index] += weight * u[c]
        return out
