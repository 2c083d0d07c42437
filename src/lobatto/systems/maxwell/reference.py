"""Reference Maxwell kernels, written once against the array namespace `xp`.

They define what every tuned kernel must compute. Layouts:
  u, du:    (6, E, n, n, n) fields Ex Ey Ez Hx Hy Hz, axes [k, j, i]; (6, E, 1, n, n) on a 2-D mesh
  traces:   (6, E, 6, n, n) -n x E and -n x H at the face points of every face
  metrics:  (3, 3, E, n, n, n) metrics[b, a] = d r_b / d x_a;  jacobian: (E, n, n, n) det(dx/dr)
  normals:  (3, E, 6, n, n); lift: (E, 6, n, n); face_factors: (2, E, 6)

rhs and stage take an optional ``elements = (first, stop)``: only those elements are
computed (the rest of ``out`` / ``u`` / ``residual`` is left untouched), so that a stage can
update interior elements while the face exchange of the others is in flight.
"""

from __future__ import annotations

from lobatto.backends.base import reference_kernel
from lobatto.discretization.tensor import chain_rule_curl, split_curl
from lobatto.mesh.topology import face_slice
from lobatto.systems.dg import face_values, over_elements


def cross(xp, a, b):
    return xp.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


@reference_kernel("maxwell_traces")
def make_traces(backend, order, dim=3):  # dim: read from the shapes
    xp = backend.xp

    def traces(u, normals, out):
        faces = face_values(xp, u, order)
        out[0:3] = -cross(xp, normals, faces[0:3])
        out[3:6] = -cross(xp, normals, faces[3:6])
        return out

    return traces


@reference_kernel("maxwell_rhs")
def make_rhs(backend, order, dim=3):  # dim: read from the shapes
    xp = backend.xp

    @over_elements
    def rhs(u, sums, geometry, out, epsilon, mu, alpha):
        out[0:3] = curl(xp, u[3:6], geometry) / epsilon
        out[3:6] = -curl(xp, u[0:3], geometry) / mu
        add_surface_terms(xp, order, sums, geometry, out, epsilon, mu, alpha)
        return out

    return rhs


def curl(xp, f, geometry):
    """The volume curl: split form on curved elements, the chain rule on affine ones (where the
    two are equal, as the tuned kernels do it) and everywhere when geometry["split_form"] is False."""
    d, metrics = geometry["derivative"], geometry["metrics"]
    out = chain_rule_curl(xp, f, d, metrics)
    if geometry.get("split_form", True):
        affine = geometry.get("affine")
        curved = xp.arange(f.shape[1]) if affine is None else xp.flatnonzero(affine == 0)
        if curved.size:
            out[:, curved] = split_curl(xp, f[:, curved], d, metrics[:, :, curved], geometry["jacobian"][curved])
    return out


def add_surface_terms(xp, order, sums, geometry, out, epsilon, mu, alpha):
    """du += lift * F at face points, boundary ghost factors applied to the sums first."""
    normals, lift, factors = geometry["normals"], geometry["lift"], geometry["face_factors"]
    impedance = (mu / epsilon) ** 0.5
    sum_e = sums[0:3] * factors[0][:, :, None, None]
    sum_h = sums[3:6] * factors[1][:, :, None, None]
    flux_e = 0.5 * (sum_h - (alpha / impedance) * cross(xp, normals, sum_e)) * (lift / epsilon)
    flux_h = 0.5 * (-sum_e - (alpha * impedance) * cross(xp, normals, sum_h)) * (lift / mu)
    for f in range(flux_e.shape[2]):  # six faces, or the four edges of a 2-D mesh
        sl = face_slice(f, order)
        out[0:3][sl] += flux_e[:, :, f]
        out[3:6][sl] += flux_h[:, :, f]
