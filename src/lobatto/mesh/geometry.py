"""Geometry at GLL points: coordinates, metric terms, Jacobian, face normals, surface Jacobians.

For each element the map from the reference cube is evaluated at the GLL points (the
trilinear map of its vertices, or, on a curved mesh, the tensor-product Lagrange interpolant
of its nodes at the GLL points of the geometry's order q), then the optional deformation is
added pointwise; everything else is computed from that degree-N interpolant, so both elements sharing a face see identical face coordinates and normals
that are opposite to round-off.

On a 2-D mesh (quads, a k axis of one point) the map is completed by z = t (dz/dt = 1, no t
derivative), so the 3-D cofactor formulas give the 2-D metrics with a t row (0, 0, 1), J =
x_r y_s - x_s y_r, and the factors of the four edge faces; the arrays keep their 3-D layout
with k of length 1 (mass J w_j w_i: per unit depth).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lobatto.discretization import derivative_matrix, gll_points, gll_weights, interpolation_matrix
from lobatto.errors import InputError
from lobatto.mesh.topology import FACE_REFERENCE_AXIS, FACE_SIGN, face_slice
from lobatto.discretization.tensor import derivative_r, derivative_s, derivative_t, dimension_of

AFFINE_TOLERANCE = 1e-12


@dataclass
class Geometry:
    """Geometric factors of one mesh at order N; arrays are NumPy on the host.

    coords:          (3, E, n, n, n)  x, y, z at GLL points, n = N+1, axes [k, j, i]
    metrics:         (3, 3, E, n, n, n)  metrics[b, a] = d r_b / d x_a  (rx ry rz; sx sy sz; tx ty tz)
    jacobian:        (E, n, n, n)  det(d x / d r)
    mass:            (E, n, n, n)  J * w_i w_j w_k, the diagonal mass matrix
    normals:         (3, E, 6, n, n)  outward unit normals at face points
    surface_jacobian:(E, 6, n, n)
    lift:            (E, 6, n, n)  sJ / (J * w_end): scales a face flux into the volume equation
    affine:          (E,) bool, True where d x / d r is constant over the element
    min_spacing:     smallest distance between neighbouring GLL points
    """

    order: int
    coords: np.ndarray
    metrics: np.ndarray
    jacobian: np.ndarray
    mass: np.ndarray
    normals: np.ndarray
    surface_jacobian: np.ndarray
    lift: np.ndarray
    affine: np.ndarray
    min_spacing: float
    dim: int = 3


def multilinear_coordinates(vertices: np.ndarray, element_vertices: np.ndarray, order: int) -> np.ndarray:
    """(3, E, n, n, n) coordinates of the trilinear map of each element at the GLL points
    ((3, E, 1, n, n), the bilinear map, for quads: element_vertices (E, 4))."""
    xi = gll_points(order)
    lo, hi = 0.5 * (1 - xi), 0.5 * (1 + xi)
    shape1d = np.stack([lo, hi])  # (2, n)
    corners = vertices[element_vertices]  # (E, 8, 3)
    num_vertices = element_vertices.shape[1]
    nk = order + 1 if num_vertices == 8 else 1
    coords = np.zeros((3, element_vertices.shape[0], nk, order + 1, order + 1))
    for v in range(num_vertices):
        p, q, l = v & 1, (v >> 1) & 1, (v >> 2) & 1
        along_k = shape1d[l] if nk > 1 else np.ones(1)  # a quad's k axis: one point, weight 1
        weight = along_k[:, None, None] * shape1d[q][None, :, None] * shape1d[p][None, None, :]
        coords += corners[:, v, :].T[:, :, None, None, None] * weight[None, None]
    return coords


trilinear_coordinates = multilinear_coordinates  # the 3-D name


def curved_coordinates(curved_nodes: np.ndarray, order: int) -> np.ndarray:
    """(3, E, n, n, n) coordinates at the GLL points of order N of the elements whose nodes
    (E, 3, q+1, q+1, q+1) sit at the GLL points of order q: the interpolant, one axis at a time.
    For q > N this truncates the geometry to degree N (what the solver can represent)."""
    q = curved_nodes.shape[-1] - 1
    nodes = np.moveaxis(np.asarray(curved_nodes, dtype=np.float64), 1, 0)  # (3, E, q+1, q+1, q+1)
    if q == order:
        return nodes.copy()
    interp = interpolation_matrix(q, gll_points(order))  # (n, q+1)
    out = np.einsum("ai,xekji->xekja", interp, nodes)
    out = np.einsum("bj,xekja->xekba", interp, out)
    if dimension_of(nodes.shape) == 2:  # a quad: no k axis to interpolate along
        return out
    return np.einsum("ck,xekba->xecba", interp, out)


def element_coordinates(mesh, order: int) -> np.ndarray:
    """(3, E, n, n, n) the undeformed element maps at the GLL points of order N."""
    if mesh.curved_nodes is not None:
        return curved_coordinates(mesh.curved_nodes, order)
    return multilinear_coordinates(mesh.vertices, mesh.element_vertices, order)


def face_factors(metrics: np.ndarray, jacobian: np.ndarray, order: int) -> tuple:
    """(normals (3, E, 6, n, n), surface Jacobian (E, 6, n, n), lift (E, 6, n, n)) from the
    metrics at the face points: n = +-grad r_b / |grad r_b|, sJ = J |grad r_b|, lift = sJ / (J w_end).
    On a 2-D mesh (jacobian (E, 1, n, n)) the four edges: (3, E, 4, 1, n) etc."""
    n = order + 1
    num_elements = jacobian.shape[0]
    w = gll_weights(order)
    faces = 6 if jacobian.shape[-3] == n else 4
    na = n if faces == 6 else 1
    normals = np.empty((3, num_elements, faces, na, n))
    surface_jacobian = np.empty((num_elements, faces, na, n))
    lift = np.empty((num_elements, faces, na, n))
    for face in range(faces):
        sl = face_slice(face, order)
        grad = metrics[FACE_REFERENCE_AXIS[face]][sl]  # (3, E, n, n): grad of r, s or t
        norm = np.sqrt(np.sum(grad**2, axis=0))
        normals[:, :, face] = FACE_SIGN[face] * grad / norm
        surface_jacobian[:, face] = jacobian[sl] * norm
        lift[:, face] = norm / w[0]
    return normals, surface_jacobian, lift


def curl_form_factors(geometry: Geometry) -> tuple:
    """(metrics, normals, lift) with J a^b of the curved elements in Kopriva's conservative curl
    form, (J a^b)_a = -(curl_r (x_l grad_r x_m))_b for (a, m, l) cyclic, every derivative the
    GLL one; affine elements keep the cofactors (``geometry``'s own arrays when all are affine).

    Continuously these are the cofactors. Discretely they also meet the metric identities
    sum_b d_b (J a^b) = 0 exactly (the derivative matrices of different axes commute), which the
    split-form volume terms of the DG systems (tensor.split_curl) need to keep a uniform state
    uniform; interpolated cofactors meet them only to their interpolation error. The CG
    operators keep the cofactors (with the curl form an elliptic solve on a curved mesh in the
    tests was 1.5e-5 off instead of below 1e-5)."""
    curved = np.flatnonzero(~np.asarray(geometry.affine, dtype=bool))
    if not curved.size or geometry.dim == 2:
        # in 2-D the cofactors (x_r y_s - x_s y_r form) meet the metric identities already:
        # D_r D_s = D_s D_r
        return geometry.metrics, geometry.normals, geometry.lift
    order = geometry.order
    d = derivative_matrix(order)
    along = (derivative_r, derivative_s, derivative_t)
    x, jac = geometry.coords[:, curved], geometry.jacobian[curved]
    dx = [[f(np, x[a], d) for f in along] for a in range(3)]  # dx[a][c] = d x_a / d r_c
    metrics = geometry.metrics.copy()
    with np.errstate(all="ignore"):
        for a in range(3):
            m, l = (a + 1) % 3, (a + 2) % 3
            v = [x[l] * dx[m][c] for c in range(3)]  # x_l grad_r x_m, components along r, s, t
            for b in range(3):
                b1, b2 = (b + 1) % 3, (b + 2) % 3
                metrics[b, a][curved] = (along[b2](np, v[b1], d) - along[b1](np, v[b2], d)) / jac
        normals, _, lift = face_factors(metrics, geometry.jacobian, order)
    return metrics, normals, lift


def compute_geometry(mesh, order: int, deform=None) -> Geometry:
    """Geometric factors; stops with an InputError naming the first degenerate element.

    Floating-point exceptions (a zero Jacobian divides by zero, say) are not reported as
    NumPy warnings: the checks here name the element instead. Memory: the persistent
    arrays take 14 P + 5 F float64 values (P points, F face points); the peak, while the
    metric terms are formed from d x / d r, is about 25 P (lobatto.machine.resources counts both).
    """
    with np.errstate(all="ignore"):
        return _compute_geometry(mesh, order, deform)


def _element_size(mesh, e: int) -> str:
    """'hx x hy x hz': the extent of element e's corners along each axis."""
    corners = mesh.vertices[mesh.element_vertices[e]]
    size = corners.max(axis=0) - corners.min(axis=0)
    return " x ".join(f"{h:.3g}" for h in size)


def _first_bad(bad_per_element: np.ndarray) -> int | None:
    return int(np.argmax(bad_per_element)) if np.any(bad_per_element) else None


def _compute_geometry(mesh, order: int, deform=None) -> Geometry:
    coords = element_coordinates(mesh, order)
    deform = deform if deform is not None else mesh.deform
    if deform is not None:
        displacement = np.asarray(deform(coords[0], coords[1], coords[2]), dtype=np.float64)
        if mesh.dim == 2:  # a 2-D mesh stays in the plane z = 0
            displacement = displacement * np.array([1.0, 1.0, 0.0]).reshape((3,) + (1,) * (displacement.ndim - 1))
        coords = coords + displacement
    if deform is not None:
        hint = "reduce the [mesh.deform] amplitude or refine the mesh"
    elif mesh.source is not None:
        hint = f"check the element in {mesh.source} (its nodes must give a positive Jacobian everywhere)"
    else:
        hint = "check [mesh] lower/upper (each side must have a positive, representable length)"

    d = derivative_matrix(order)
    dim = mesh.dim
    # dxdr[a, b] = d x_a / d r_b, filled in place (no stacked temporaries)
    dxdr = np.empty((3, 3) + coords.shape[1:])
    for a in range(3):
        dxdr[a, 0] = derivative_r(np, coords[a], d)
        dxdr[a, 1] = derivative_s(np, coords[a], d)
        if dim == 3:
            dxdr[a, 2] = derivative_t(np, coords[a], d)
    if dim == 2:  # the map completed by z = t: a thin axis has no t derivative
        dxdr[2, :2] = 0.0
        dxdr[:2, 2] = 0.0
        dxdr[2, 2] = 1.0
    jacobian = (
        dxdr[0, 0] * (dxdr[1, 1] * dxdr[2, 2] - dxdr[1, 2] * dxdr[2, 1])
        - dxdr[0, 1] * (dxdr[1, 0] * dxdr[2, 2] - dxdr[1, 2] * dxdr[2, 0])
        + dxdr[0, 2] * (dxdr[1, 0] * dxdr[2, 1] - dxdr[1, 1] * dxdr[2, 0])
    )
    min_jac = jacobian.reshape(jacobian.shape[0], -1).min(axis=1)
    finite = np.isfinite(jacobian).reshape(jacobian.shape[0], -1).all(axis=1)
    bad = _first_bad((min_jac <= 0) | ~finite)
    if bad is not None:
        corners = mesh.vertices[mesh.element_vertices[bad]]
        scale = float(np.max(corners.max(axis=0) - corners.min(axis=0))) ** dim / 2**dim  # J of a cube that size
        if not finite[bad]:
            state, detail = "degenerate", "is not finite"
        elif min_jac[bad] >= -1e-10 * scale:
            state, detail = "degenerate (flat)", f"is zero (minimum {min_jac[bad]:.3g})"
        else:
            state, detail = "inverted", f"is negative (minimum {min_jac[bad]:.3g})"
        raise InputError(
            f"[mesh] {mesh.describe_element(bad)}, size {_element_size(mesh, bad)}, is {state}: its Jacobian "
            f"det(dx/dr) {detail}; it must be positive and finite everywhere: {hint}"
        )
    # Inverse of the Jacobian matrix by cofactors: metrics[b, a] = d r_b / d x_a.
    metrics = np.empty_like(dxdr)
    for b in range(3):
        for a in range(3):
            b1, b2 = (b + 1) % 3, (b + 2) % 3
            a1, a2 = (a + 1) % 3, (a + 2) % 3
            metrics[b, a] = (dxdr[a1, b1] * dxdr[a2, b2] - dxdr[a1, b2] * dxdr[a2, b1]) / jacobian

    num_elements = mesh.num_elements
    # affine: d x / d r constant over the element (component by component: no 9-array temporaries)
    affine = np.ones(num_elements, dtype=bool)
    for a in range(3):
        for b in range(3):
            part = dxdr[a, b].reshape(num_elements, -1)
            first = part[:, :1]
            affine &= np.all(np.abs(part - first) <= AFFINE_TOLERANCE * (1 + np.abs(first)), axis=1)
    del part, first

    del dxdr

    w = gll_weights(order)
    wk = w if dim == 3 else np.ones(1)  # per unit depth in 2-D
    w3 = wk[:, None, None] * w[None, :, None] * w[None, None, :]
    mass = jacobian * w3

    normals, surface_jacobian, lift = face_factors(metrics, jacobian, order)

    spacing = np.inf
    for axis in (1, 2, 3)[3 - dim:]:  # not along a thin k axis (no neighbouring points)
        diffs = np.diff(coords, axis=axis + 1)
        spacing = min(spacing, float(np.sqrt(np.sum(diffs**2, axis=0)).min()))
    del diffs

    # Factors that overflowed or underflowed (an element far too small or too large for
    # float64, or nearly degenerate) would turn the first step into NaN: name the element.
    ok = np.ones(num_elements, dtype=bool)
    for array, axis in ((metrics, 2), (normals, 1), (lift, 0), (surface_jacobian, 0), (mass, 0)):
        others = tuple(i for i in range(array.ndim) if i != axis)
        ok &= np.isfinite(array).all(axis=others)  # a bool temporary, no copy of the array
    ok &= (mass > 0).all(axis=(1, 2, 3)) & (lift > 0).all(axis=(1, 2, 3))
    bad = _first_bad(~ok)
    if bad is not None or not (np.isfinite(spacing) and spacing > 0):
        e = 0 if bad is None else bad
        raise InputError(
            f"[mesh] {mesh.describe_element(e)}, size {_element_size(mesh, e)}, is degenerate: its "
            f"geometric factors (inverse metric, normals, face lift) are not finite float64 numbers "
            f"(smallest Jacobian {min_jac[e]:.3g}); {hint}"
        )

    return Geometry(order, coords, metrics, jacobian, mass, normals, surface_jacobian, lift, affine, spacing, dim)
