"""Derived fields of the flow for the snapshots ([output] derived, spec.py DERIVED;
docs/navier-stokes.md, "Derived fields").

All of them come from one velocity gradient G[c, a] = d u_c / d x_a, computed element by
element (collocation: operators/differential.gradient) and made continuous by the
mass-weighted average of the copies of each shared point, dssum(B G) / dssum(B) (as
Nek5000's comp_vort3 does for the vorticity): every output is then a pointwise function of
one continuous field, continuous itself. Where the elements represent the velocity exactly
(a polynomial of degree <= N on affine elements), G is exact and so is every output, to
round-off.

    vorticity   omega = (G_zy - G_yz, G_xz - G_zx, G_yx - G_xy), and |omega|
    S, Omega    (G + G^T) / 2, (G - G^T) / 2
    q_criterion Q = (|Omega|^2 - |S|^2) / 2 = -G_ij G_ji / 2 (Frobenius norms)
    lambda2     the middle eigenvalue of S^2 + Omega^2 (Jeong & Hussain 1995), by a batched
                symmetric eigenvalue solve (xp.linalg.eigvalsh: LAPACK, or cuSOLVER on CuPy)
    divergence  G_xx + G_yy + G_zz
    wall_shear  tau = t - (t . n) n, t = nu (G + G^T) n, n the outward unit normal of the
                fluid: the tangential viscous traction the boundary exerts on the fluid, per
                unit density (OpenFOAM's wallShearStress sign: against the flow next to a
                fixed wall), at the points of wall and velocity faces, 0 elsewhere. A point on
                several such faces (an edge) takes their values averaged with the faces'
                quadrature weights w_a w_b sJ (a gather-scatter of the weighted sums).

Everything runs on the backend (NumPy or CuPy through backend.xp); the results go to the host.
"""

from __future__ import annotations

import numpy as np

from lobatto.discretization import gll_weights
from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce
from lobatto.mesh.topology import face_slice
from lobatto.operators.differential import gradient

#: boundary kinds whose faces carry the wall shear (the velocity is given there)
SHEAR_KINDS = ("wall", "velocity")
#: points of one lambda2 batch: its (points, 3, 3) temporaries stay near 0.5 GB in float64
LAMBDA2_POINTS = 2 ** 20
#: values per point a snapshot's derived fields hold at most on the backend: the gradient (9),
#: the ten derived components, the wall shear's sums (4)
DERIVED_ARRAYS = 23


class DerivedOutputs:
    """The system's ``check_derived`` and ``derived_fields`` (systems/base.py), for a system
    with ``boundaries`` (boundaries.py), ``assembly``, ``device_geometry``,
    ``inverse_assembled_mass`` and ``viscosity``: NavierStokesSystem mixes it in."""

    def check_derived(self, names) -> None:
        """The wall shear needs a wall: refused (on every rank: the count is reduced) when no
        rank has a wall or velocity face."""
        if "lambda2" in names and self.dim == 2:
            raise InputError("[output] derived: 'lambda2' has no 2-D meaning (a planar flow's S^2 + Omega^2 has a "
                             "zero eigenvalue along z): use 'q_criterion' or 'vorticity' (omega_z) instead")
        if "wall_shear" not in names:
            return
        walls = np.isin(self.boundaries.kind, SHEAR_KINDS)
        if not allreduce(self.comm, int(walls.any()), "max"):
            raise InputError("[output] derived: 'wall_shear' is computed on wall and velocity faces, and this "
                             "mesh has none (its boundaries are periodic or outflow); remove it from derived")

    def derived_fields(self, u, names) -> dict:
        """{component name: host float64 (E, n, n, n)} of the derived fields ``names``;
        collective (the gather-scatters), so every rank calls it with the same names."""
        if not names:
            return {}
        g = self.velocity_gradient(u)
        xp = self.backend.xp
        values = {}
        for name in names:
            if name in ("vorticity", "vorticity_magnitude") and "vorticityx" not in values:
                values.update(zip(("vorticityx", "vorticityy", "vorticityz"),
                                  (g[2, 1] - g[1, 2], g[0, 2] - g[2, 0], g[1, 0] - g[0, 1])))
            if name == "vorticity_magnitude":
                values[name] = xp.sqrt(values["vorticityx"] ** 2 + values["vorticityy"] ** 2
                                       + values["vorticityz"] ** 2)
            elif name == "q_criterion":
                values[name] = -0.5 * sum(g[i, j] * g[j, i] for i in range(3) for j in range(3))
            elif name == "lambda2":
                values[name] = lambda2(xp, g)
            elif name == "divergence":
                values[name] = g[0, 0] + g[1, 1] + g[2, 2]
            elif name == "wall_shear":
                values.update(zip(("wall_shearx", "wall_sheary", "wall_shearz"), self.wall_shear(g)))
        wanted = [c for name in names for c in self.spec.derived[name].components]
        return {c: self.backend.to_host(values[c]).astype(np.float64, copy=False) for c in wanted}

    def velocity_gradient(self, u):
        """(3, 3, E, n, n, n) continuous G[c, a] = d u_c / d x_a: each element's gradient,
        then the mass-weighted average of the copies of each point (collective). 2-D: the z
        row and column are exact zeros, so every formula below is the 3-D one (omega_x =
        omega_y = 0, the wall shear's z component 0)."""
        geometry = self.device_geometry
        d = self.dim
        g = self.backend.xp.zeros((3, 3) + tuple(u.shape[1:]), dtype=u.dtype)
        for c in range(d):
            g[c, :d] = gradient(geometry, self.backend, u[c])
        g *= geometry.mass
        self.assembly.dssum(g)
        g *= self.inverse_assembled_mass
        return g

    def wall_shear(self, g):
        """(3, E, n, n, n) tau on the points of wall and velocity faces, 0 elsewhere (collective:
        a rank without such a face takes part with zeros)."""
        xp, order = self.backend.xp, self.order
        shape = tuple(g.shape[2:])
        tau = xp.zeros((3,) + shape, dtype=g.dtype)
        weight = xp.zeros(shape, dtype=g.dtype)
        walls = np.isin(self.boundaries.kind, SHEAR_KINDS)
        w = gll_weights(order)
        face_weights = np.outer(w, w) if self.dim == 3 else w[None, :]
        for face in range(2 * self.dim):
            rows = np.flatnonzero(walls[:, face])
            if not rows.size:
                continue
            index = (xp.asarray(rows),) + face_slice(face, order)[1:]
            normal = self.backend.asarray(self.geometry.normals[:, rows, face], dtype=g.dtype)
            area = self.backend.asarray(face_weights * self.geometry.surface_jacobian[rows, face], dtype=g.dtype)
            traction = [self.viscosity * sum((g[c, a][index] + g[a, c][index]) * normal[a] for a in range(3))
                        for c in range(3)]
            normal_part = sum(traction[c] * normal[c] for c in range(3))
            for c in range(3):
                tau[c][index] += area * (traction[c] - normal_part * normal[c])
            weight[index] += area
        self.assembly.dssum(tau)
        self.assembly.dssum(weight)
        tau /= weight + (weight == 0)
        return tau


def lambda2(xp, g):
    """(E, n, n, n) the middle eigenvalue of S^2 + Omega^2 at every point of G (3, 3, E, n, n, n),
    LAMBDA2_POINTS points at a time (a batch takes about 60 values per point)."""
    shape = tuple(g.shape[2:])
    flat = g.reshape(3, 3, -1)
    out = xp.empty(flat.shape[2], dtype=g.dtype)
    for first in range(0, flat.shape[2], LAMBDA2_POINTS):
        a = xp.moveaxis(flat[:, :, first:first + LAMBDA2_POINTS], 2, 0)  # (points, 3, 3): a[p, c, d] = du_c/dx_d
        s = 0.5 * (a + xp.swapaxes(a, 1, 2))
        w = 0.5 * (a - xp.swapaxes(a, 1, 2))
        m = s @ s + w @ w
        m = 0.5 * (m + xp.swapaxes(m, 1, 2))  # symmetric to the last bit (eigvalsh reads one triangle)
        # a non-finite point (a run gone unstable) gives NaN, not an error on this rank alone
        # (LAPACK refuses NaN, and the other ranks would wait in the next gather-scatter)
        bad = ~xp.isfinite(m).all(axis=(1, 2))
        m[bad] = 0.0
        values = xp.linalg.eigvalsh(m)[:, 1]
        values[bad] = xp.nan
        out[first:first + LAMBDA2_POINTS] = values
    return out.reshape(shape)


def derived_memory(case, layout) -> list:
    """The memory items of [output] derived (none without it): DERIVED_ARRAYS arrays of one
    field's points on the backend while a snapshot is written (counted from this module, not
    measured)."""
    output = case.output
    if not any(output.derived_for(fmt) for fmt in output.formats):
        return []
    return [layout.backend_item(f"[output] derived: the velocity gradient and the derived fields ({DERIVED_ARRAYS} "
                                "values per point, while a snapshot is written)",
                                DERIVED_ARRAYS * layout.points * layout.value_bytes,
                                advice="derive fewer fields, or use more ranks")]
