"""Physical points in a mesh of (curved) hexahedra: which element holds a point, where in its
reference cube, and the weights that interpolate nodal fields there.

An element's map x(r, s, t) is the degree-N interpolant of its GLL coordinates (the
isoparametric map the solver itself uses, curved or not). A point p is searched among the
elements whose node bounding box, widened by BOX_MARGIN of its size, holds it; in each,
Newton's method solves x(r) = p from the centre r = 0. The point is inside when Newton
converges to |r|, |s|, |t| <= 1 + INSIDE_TOLERANCE. Values there are sum u_kji h_i(r) h_j(s)
h_k(t) with the Lagrange basis h of the GLL points: exact for polynomials of degree <= N.

On a 2-D mesh (coords (3, E, 1, n, n), quadrilaterals in z = 0) a point's z is ignored: the
boxes are open along z, Newton solves the 2x2 (x, y) block for (r, s) and t stays 0, and the
weights are (m, 1, n, n) (h(t) = 1 on the single k point).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lobatto.discretization import derivative_matrix, interpolation_matrix
from lobatto.discretization.tensor import dimension_of

#: Newton stops when its step is below this (reference units); quadratic convergence makes
#: the point then accurate to round-off
NEWTON_TOLERANCE = 1e-12
MAX_NEWTON_STEPS = 40
#: found reference coordinates up to 1 + this count as inside (round-off on faces and corners)
INSIDE_TOLERANCE = 1e-9
#: node bounding boxes are widened by this fraction of their largest side: a curved face
#: bulges past its nodes by far less
BOX_MARGIN = 0.1
#: Newton's iterates are kept within [-LIMIT, LIMIT]: far outside the element the polynomial
#: map may fold, and a point outside must not send the iteration off to infinity
REFERENCE_LIMIT = 2.0


@dataclass
class Found:
    """Where Newton's method put one point in each candidate element.

    elements:   (m,) the candidates' local element indices
    reference:  (m, 3) r, s, t reached
    inside:     (m,) True where it converged inside the element
    steps:      Newton steps taken (the same count for all candidates: they iterate together)
    residual:   (m,) |x(r) - p|, the physical distance left
    """

    elements: np.ndarray
    reference: np.ndarray
    inside: np.ndarray
    steps: int
    residual: np.ndarray


def basis(order: int, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(h, dh/dr), each (m, N+1): the Lagrange polynomials of the GLL points and their
    derivatives at the m points r. dh_j is the interpolant of D[:, j] (exact: degree N-1)."""
    h = interpolation_matrix(order, np.asarray(r, dtype=np.float64).reshape(-1))
    return h, h @ derivative_matrix(order)


def axis_weights(order: int, reference: np.ndarray, dim: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(h(r), h(s), h(t)), each (m, n): the factors of tensor_weights, kept apart (3n values per
    point instead of n^3): the value is sum u_kji h_k(t) h_j(s) h_i(r). dim 2: h(t) is (m, 1) ones."""
    reference = np.asarray(reference, dtype=np.float64).reshape(-1, 3)
    hr, hs = (basis(order, reference[:, a])[0] for a in range(2))
    ht = basis(order, reference[:, 2])[0] if dim == 3 else np.ones((len(reference), 1))
    return hr, hs, ht


def tensor_weights(order: int, reference: np.ndarray, dim: int = 3) -> np.ndarray:
    """(m, n, n, n) weights w[k, j, i] = h_k(t) h_j(s) h_i(r) of m reference points (r, s, t):
    ``sum(u_e * w)`` is the element's nodal field u_e (n, n, n) at that point; (m, 1, n, n) for
    dim 2, where t is ignored."""
    hr, hs, ht = axis_weights(order, reference, dim)
    return ht[:, :, None, None] * hs[:, None, :, None] * hr[:, None, None, :]


def element_boxes(coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper), each (E, 3): the elements' node bounding boxes widened by BOX_MARGIN;
    open along z (-inf, inf) on a 2-D mesh, whose points are found whatever their z."""
    flat = coords.reshape(3, coords.shape[1], -1)
    lower, upper = flat.min(axis=2).T, flat.max(axis=2).T
    margin = BOX_MARGIN * (upper - lower).max(axis=1, keepdims=True)
    lower, upper = lower - margin, upper + margin
    if coords.ndim == 5 and dimension_of(coords.shape) == 2:
        lower[:, 2], upper[:, 2] = -np.inf, np.inf
    return lower, upper


def candidates(boxes: tuple[np.ndarray, np.ndarray], point) -> np.ndarray:
    """Local indices of the elements whose widened box holds ``point``."""
    lower, upper = boxes
    p = np.asarray(point, dtype=np.float64)
    return np.nonzero(np.all((lower <= p) & (p <= upper), axis=1))[0]


def candidate_pairs(boxes: tuple[np.ndarray, np.ndarray], points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(point index, element index) of every element whose widened box holds a point, for many
    points at once: the same pairs as ``candidates`` point by point, found through a uniform
    grid of cells about the size of an element box (each element listed in the cells its box
    covers, each point looked up in its own cell), so the work grows like points + elements
    rather than their product. Pairs are ordered by point."""
    lower, upper = boxes
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    empty = np.zeros(0, dtype=np.int64)
    if not len(lower) or not len(points):
        return empty, empty
    open_axis = np.isinf(lower).any(axis=0) | np.isinf(upper).any(axis=0)  # z of a 2-D mesh
    if open_axis.any():  # one layer of cells along it: every point is in it
        lower, upper = np.where(open_axis, 0.0, lower), np.where(open_axis, 0.0, upper)
        points = np.where(open_axis, 0.0, points)
    origin, top = lower.min(axis=0), upper.max(axis=0)
    extent = np.maximum(top - origin, 1e-300)
    size = np.maximum(np.median(upper - lower, axis=0), extent * 1e-6)
    cells = np.clip(np.ceil(extent / size), 1, None)
    while np.prod(cells) > 8 * len(lower) + 8:  # at most about 8 cells per element
        cells = np.maximum(np.ceil(cells / 2), 1)
    cells = cells.astype(np.int64)
    width = extent / cells

    def cell_of(x):
        return np.clip(np.floor((x - origin) / width), 0, cells - 1).astype(np.int64)

    first, last = cell_of(lower), cell_of(upper)
    span = last - first + 1
    count = np.prod(span, axis=1)
    element = np.repeat(np.arange(len(lower)), count)
    offset = np.arange(element.size) - np.repeat(np.cumsum(count) - count, count)
    ix = first[element, 0] + offset % span[element, 0]
    rest = offset // span[element, 0]
    iy = first[element, 1] + rest % span[element, 1]
    iz = first[element, 2] + rest // span[element, 1]
    key = (iz * cells[1] + iy) * cells[0] + ix
    order = np.argsort(key, kind="stable")
    key, element = key[order], element[order]
    within = np.all((origin <= points) & (points <= top), axis=1)
    c = cell_of(points)
    point_key = (c[:, 2] * cells[1] + c[:, 1]) * cells[0] + c[:, 0]
    start = np.searchsorted(key, point_key, "left")
    found = np.where(within, np.searchsorted(key, point_key, "right") - start, 0)
    point_of = np.repeat(np.arange(len(points)), found)
    element_of = element[np.repeat(start, found) + np.arange(point_of.size) - np.repeat(np.cumsum(found) - found,
                                                                                         found)]
    p = points[point_of]
    keep = np.all((lower[element_of] <= p) & (p <= upper[element_of]), axis=1)
    return point_of[keep], element_of[keep]


def newton(coords: np.ndarray, elements: np.ndarray, point) -> Found:
    """Solve x(r) = point in each of ``elements`` (local indices into coords (3, E, n, n, n));
    ``point``: one (3,) for all of them, or (m, 3), one per element. On a 2-D mesh (coords
    (3, E, 1, n, n)) x, y = the point's x, y is solved for r, s; t and the point's z are 0."""
    elements = np.asarray(elements, dtype=np.int64)
    order = coords.shape[-1] - 1
    nodes = coords[:, elements]  # (3, m, n, n, n)
    m = elements.size
    d = dimension_of(coords.shape)  # unknowns: (r, s) of a quad
    p = np.array(np.broadcast_to(np.asarray(point, dtype=np.float64), (m, 3)))
    p[:, d:] = 0.0
    r = np.zeros((m, 3))
    step = np.zeros((m, 3))
    step[:, :d] = np.inf
    steps = 0
    active = np.arange(m)  # candidates still iterating: each stops at its own convergence
    with np.errstate(all="ignore"):  # a singular map outside the element gives NaN: not inside
        for steps in range(1, MAX_NEWTON_STEPS + 1):
            x, jac = _map_and_jacobian(nodes[:, active] if active.size < m else nodes, order, r[active])
            change = np.zeros((len(active), 3))
            change[:, :d] = np.linalg.solve(_regular(jac[:, :d, :d]), (x - p[active])[:, :d, None])[:, :, 0]
            change[~np.isfinite(change).all(axis=1)] = np.nan
            r[active] = np.clip(r[active] - np.nan_to_num(change, nan=0.0), -REFERENCE_LIMIT, REFERENCE_LIMIT)
            step[active] = change
            active = active[np.any(np.abs(change) > NEWTON_TOLERANCE, axis=1)]  # NaN: stops, not converged
            if not active.size:
                break
        x, _ = _map_and_jacobian(nodes, order, r)
        residual = np.sqrt(np.sum((x - p) ** 2, axis=1))
        converged = np.all(np.abs(step) <= NEWTON_TOLERANCE, axis=1)
        inside = converged & np.all(np.abs(r) <= 1.0 + INSIDE_TOLERANCE, axis=1)
    return Found(elements, np.clip(r, -1.0, 1.0), inside, steps, residual)


def _regular(jac: np.ndarray) -> np.ndarray:
    """The Jacobians with singular or non-finite ones replaced by NaN matrices (so that the
    batched solve does not raise; their steps come out NaN)."""
    det = np.linalg.det(np.where(np.isfinite(jac), jac, 0.0))
    bad = ~(np.isfinite(det) & (np.abs(det) > 0)) | ~np.isfinite(jac).all(axis=(1, 2))
    if np.any(bad):
        jac = jac.copy()
        jac[bad] = np.eye(jac.shape[-1]) * np.nan
    return jac


def _map_and_jacobian(nodes: np.ndarray, order: int, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x(r) (m, 3) and dx/dr (m, 3, 3) of m elements' maps (nodes (3, m, n, n, n)), each at its own r;
    nodes (3, m, 1, n, n) of quads: t is ignored and dx/dt = 0."""
    (hr, dr), (hs, ds) = (basis(order, r[:, a]) for a in range(2))
    if dimension_of(nodes.shape) == 2:
        ht, dt = np.ones((len(r), 1)), np.zeros((len(r), 1))
    else:
        ht, dt = basis(order, r[:, 2])
    # one direction at a time (r, then s, then t), not one 4-operand sum: 3-4 times faster at orders 3-7
    along_r = np.einsum("xekji,ei->xekj", nodes, hr)
    along_r_d = np.einsum("xekji,ei->xekj", nodes, dr)
    plane = np.einsum("xekj,ej->xek", along_r, hs)
    plane_s = np.einsum("xekj,ej->xek", along_r, ds)
    plane_r = np.einsum("xekj,ej->xek", along_r_d, hs)
    x = np.einsum("xek,ek->ex", plane, ht)
    jac = np.stack([np.einsum("xek,ek->ex", plane_r, ht), np.einsum("xek,ek->ex", plane_s, ht),
                    np.einsum("xek,ek->ex", plane, dt)], axis=2)
    return x, jac
