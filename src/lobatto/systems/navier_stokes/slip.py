"""Constraints on the velocity's direction at boundary points: symmetry (slip) faces fix
u . n = 0, outflow_normal ("ON") faces fix the tangential velocity (u - (u . n) n = 0),
whatever the faces' orientation.

The velocity solve works in the subspace the constraints leave: at each constrained point
the projection Q = I - sum_k v_k v_k^T removes the constrained directions v_k, and the
velocity's Jacobi-PCG (solvers/elliptic.py, VectorHelmholtzSolver's ``constraint``) solves
Q A Q u = Q b, the three components together. The directions come from the faces meeting at
the point: each copy of the point on a symmetry face adds n n^T, on an ON face I - n n^T,
to a 3 x 3 tensor T, summed over the copies (a gather-scatter, so every copy and every rank
sees the same T); the constrained directions are T's eigenvectors whose eigenvalue exceeds
EDGE_RATIO times its largest. On a plane, T = c n n^T and n is constrained; where two
symmetry planes meet at an angle above about 30 degrees both normals are constrained (the
edge of a quarter-channel: only the velocity along the edge is free); on a curved surface
the copies' slightly different normals give one direction, their average. The pressure is
natural on symmetry faces (zero on ON faces, which are open). On wall and velocity points
the Dirichlet mask wins.

Tangential traction on a symmetry face is zero in the sense of the velocity's Laplacian
form, nu du_t/dn = 0: the symmetry condition exactly on a plane (du_n/dt = 0 there); on a
curved symmetry surface the curvature term of the true stress is left out, as in Nek5000.
"""

from __future__ import annotations

import numpy as np

from lobatto.mesh.topology import element_shape, face_slice

#: a direction of T is constrained when its eigenvalue exceeds this times T's largest:
#: tan^2(15 degrees), so two planes meeting at 30 degrees or more constrain both normals
EDGE_RATIO = 0.0718
#: entries of Q this close to 0 or 1 are made exact (axis-aligned faces then constrain one
#: component exactly, as a Dirichlet zero would)
SNAP = 1e-12


class SlipConstraint:
    """The projection at one rank's constrained points; ``project(u)`` works in place on
    (3, E, n, n, n) backend arrays (C-contiguous); (2, E, 1, n, n) on a 2-D mesh."""

    def __init__(self, backend, points: np.ndarray, projections: np.ndarray):
        self.backend = backend
        self.count = int(points.size)
        self.points = backend.xp.asarray(points)
        self.projections = backend.asarray(projections)  # (m, 3, 3)

    @classmethod
    def build(cls, kind: np.ndarray, geometry, assembly, backend):
        """From the faces' kinds (E, 6). Collective (one gather-scatter): every rank calls it
        when any rank has a symmetry or outflow_normal face."""
        order = geometry.order
        d = int(getattr(geometry, "dim", 3))  # 2-D: 2x2 projections of (ux, uy)
        E = kind.shape[0]
        tensor = np.zeros((d * d, E) + element_shape(d, order))
        eye = np.eye(d)[:, :, None, None, None]
        for face in range(2 * d):
            points = face_slice(face, order)[1:]
            for name, sign in (("symmetry", 1.0), ("outflow_normal", -1.0)):
                rows = np.flatnonzero(kind[:, face] == name)
                if not rows.size:
                    continue
                normal = geometry.normals[:d, rows, face]  # (d, r, n, n), unit
                outer = normal[:, None] * normal[None, :]
                part = outer if sign > 0 else eye - outer
                part = part.reshape((d * d,) + part.shape[2:])
                for c in range(d * d):  # per component: (rows, points) keeps the face's axes in order
                    tensor[c][(rows,) + points] += part[c]
        summed = backend.to_host(assembly.dssum(backend.asarray(tensor))).astype(np.float64)
        flat = summed.reshape(d * d, -1)
        points = np.flatnonzero(np.abs(flat).sum(axis=0) > 0)
        t = flat[:, points].T.reshape(-1, d, d)
        t = 0.5 * (t + t.transpose(0, 2, 1))
        values, vectors = np.linalg.eigh(t) if points.size else (np.zeros((0, d)), np.zeros((0, d, d)))
        largest = values.max(axis=1, keepdims=True) if points.size else values
        keep = values > EDGE_RATIO * largest  # (m, d): the constrained directions
        projections = np.broadcast_to(np.eye(d), t.shape).copy()
        for k in range(d):
            v = vectors[:, :, k] * keep[:, k, None]
            projections -= v[:, :, None] * v[:, None, :]
        projections[np.abs(projections) < SNAP] = 0.0
        projections[np.abs(projections - 1.0) < SNAP] = 1.0
        return cls(backend, points, projections)

    def project(self, u):
        """u -> Q u at the constrained points, in place; returns u."""
        if not self.count:
            return u
        flat = u.reshape(u.shape[0], -1)
        if not u.flags.c_contiguous:  # the reshape would be a copy, and the update lost
            raise ValueError("SlipConstraint.project needs a C-contiguous array")  # pragma: no cover
        flat[:, self.points] = self.backend.xp.einsum("mij,jm->im", self.projections, flat[:, self.points])
        return u
