"""Geometry at GLL points: coordinates, metric terms, Jacobian, face normals, surface Jacobians.

For each element the trilinear map of its vertices is evaluated at the GLL points, then the
optional deformation is added pointwise; everything else is computed from that degree-N
interpolant, so both elements sharing a face see identical face coordinates and normals
that are opposite to round-off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lobatto.discretization import derivative_matrix, gll_points, gll_weights
from lobatto.errors import InputError
from lobatto.mesh.topology import FACE_REFERENCE_AXIS, FACE_SIGN, NUM_FACES, face_slice
from lobatto.discretization.tensor import reference_gradient

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


def trilinear_coordinates(vertices: np.ndarray, element_vertices: np.ndarray, order: int) -> np.ndarray:
    """(3, E, n, n, n) coordinates of the trilinear map of each element at the GLL points."""
    xi = gll_points(order)
    lo, hi = 0.5 * (1 - xi), 0.5 * (1 + xi)
    shape1d = np.stack([lo, hi])  # (2, n)
    corners = vertices[element_vertices]  # (E, 8, 3)
    coords = np.zeros((3, element_vertices.shape[0], order + 1, order + 1, order + 1))
    for v in range(8):
        p, q, l = v & 1, (v >> 1) & 1, (v >> 2) & 1
        weight = shape1d[l][:, None, None] * shape1d[q][None, :, None] * shape1d[p][None, None, :]
        coords += corners[:, v, :].T[:, :, None, None, None] * weight[None, None]
    return coords


def compute_geometry(mesh, order: int, deform=None) -> Geometry:
    """Geometric factors; stops with an InputError naming the first inverted element."""
    coords = trilinear_coordinates(mesh.vertices, mesh.element_vertices, order)
    deform = deform if deform is not None else mesh.deform
    if deform is not None:
        coords = coords + np.asarray(deform(coords[0], coords[1], coords[2]), dtype=np.float64)

    d = derivative_matrix(order)
    # dxdr[a, b] = d x_a / d r_b
    dxdr = np.stack([reference_gradient(np, coords[a], d) for a in range(3)])
    jacobian = (
        dxdr[0, 0] * (dxdr[1, 1] * dxdr[2, 2] - dxdr[1, 2] * dxdr[2, 1])
        - dxdr[0, 1] * (dxdr[1, 0] * dxdr[2, 2] - dxdr[1, 2] * dxdr[2, 0])
        + dxdr[0, 2] * (dxdr[1, 0] * dxdr[2, 1] - dxdr[1, 1] * dxdr[2, 0])
    )
    min_jac = jacobian.reshape(jacobian.shape[0], -1).min(axis=1)
    if np.any(min_jac <= 0) or not np.all(np.isfinite(jacobian)):
        bad = int(np.argmax((min_jac <= 0) | ~np.isfinite(min_jac)))
        raise InputError(
            f"[mesh] {mesh.describe_element(bad)} is inverted or degenerate: "
            f"its Jacobian reaches {min_jac[bad]:.3g} (must be > 0 everywhere); "
            "reduce the [mesh.deform] amplitude or refine the mesh"
        )
    # Inverse of the Jacobian matrix by cofactors: metrics[b, a] = d r_b / d x_a.
    metrics = np.empty_like(dxdr)
    for b in range(3):
        for a in range(3):
            b1, b2 = (b + 1) % 3, (b + 2) % 3
            a1, a2 = (a + 1) % 3, (a + 2) % 3
            metrics[b, a] = (dxdr[a1, b1] * dxdr[a2, b2] - dxdr[a1, b2] * dxdr[a2, b1]) / jacobian

    w = gll_weights(order)
    w3 = w[:, None, None] * w[None, :, None] * w[None, None, :]
    mass = jacobian * w3

    n = order + 1
    num_elements = mesh.num_elements
    normals = np.empty((3, num_elements, NUM_FACES, n, n))
    surface_jacobian = np.empty((num_elements, NUM_FACES, n, n))
    lift = np.empty((num_elements, NUM_FACES, n, n))
    for face in range(NUM_FACES):
        sl = face_slice(face, order)
        grad = metrics[FACE_REFERENCE_AXIS[face]][sl]  # (3, E, n, n): grad of r, s or t
        jac = jacobian[sl]
        norm = np.sqrt(np.sum(grad**2, axis=0))
        normals[:, :, face] = FACE_SIGN[face] * grad / norm
        surface_jacobian[:, face] = jac * norm
        lift[:, face] = norm / w[0]  # sJ / (J w_end) with sJ = J |grad r|

    spread = dxdr.reshape(3, 3, num_elements, -1)
    affine = np.all(np.abs(spread - spread[..., :1]) <= AFFINE_TOLERANCE * (1 + np.abs(spread[..., :1])), axis=(0, 1, 3))

    spacing = np.inf
    for axis in (1, 2, 3):
        diffs = np.diff(coords, axis=axis + 1)
        spacing = min(spacing, float(np.sqrt(np.sum(diffs**2, axis=0)).min()))

    return Geometry(order, coords, metrics, jacobian, mass, normals, surface_jacobian, lift, affine, spacing)
