"""Node coordinates of Nek5000 elements with curved sides, at GLL points of order q.

Nek5000 builds an element's geometry in ``genxyz`` (core/genxyz.f) and this module follows it:

1. the trilinear map of the 8 corners, plus the midpoint (``m``) edges: the quadratic edge
   through the two end points and the midpoint (at edge parameter 0), blended into the element
   by edge-based Gordon–Hall interpolation (``linquad``/``xyzquad``);
2. sphere (``s``) faces: the face's points on the sphere, pushed into the element with a weight
   that is 1 on the face and falls linearly to 0 on the opposite face (``sphsrf``);
3. circle (``C``) edges 1–8: the arc's deviation from the straight edge, added with the linear
   weights of the two other directions (``arcsrf``).

Each curved edge or face is built from its own data only (end points, radius, midpoint,
centre), symmetrically in its two directions, so two elements that share it, and both say
so, get the same nodes there: the mesh stays conforming. Circles are not polynomials; the nodes
lie on the circle and the error between them falls spectrally with q.

Nek's numbering, 1-based in its files, 0-based here: corners counter-clockwise in the bottom
layer (1–4) and then the top layer (5–8); edges 1–4 join corners 1-2, 2-3, 3-4, 4-1, edges 5–8
the same on top, edges 9–12 join 1-5, 2-6, 3-7, 4-8; faces (preprocessor order) 1: s = -1,
2: r = +1, 3: s = +1, 4: r = -1, 5: t = -1, 6: t = +1.

A 2-D element (4 corners, sides 1-4 = edges 1-4) is built as the flat 3-D element whose top
layer repeats its corners, curves on its bottom edges only: the k = 0 plane of that element
is exactly the 2-D edge-based Gordon–Hall map (the weights of the top edges vanish there).
"""

from __future__ import annotations

import numpy as np

from lobatto.discretization.gll import gll_points
from lobatto.errors import InputError
from lobatto.mesh.topology import FACE_AXIS, FACE_CORNERS, FACE_SIDE, face_slice

#: lexicographic corner (topology's a + 2b + 4c) of each Nek corner; the permutation is its
#: own inverse, so it also gives the Nek corner of each lexicographic one
NEK_CORNER_TO_LEX = (0, 1, 3, 2, 4, 5, 7, 6)
#: lobatto face (topology) of each Nek preprocessor face
NEK_FACE_TO_LOBATTO = (2, 1, 3, 0, 4, 5)
#: Nek's 12 edges as (start corner, end corner), Nek corner numbers, 0-based
NEK_EDGES = ((0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4),
             (0, 4), (1, 5), (2, 6), (3, 7))
#: Nek5000 builds circle arcs only on the edges of the bottom and top faces (arcsrf)
CIRCLE_EDGES = range(8)
#: Nek's tolerance (crn3d) on sphere-face corners lying on the sphere, relative to the radius
SPHERE_CORNER_TOLERANCE = 1e-4


def _hats(order: int) -> np.ndarray:
    """(2, q+1) linear weights (1-x)/2 and (1+x)/2 at the GLL points."""
    x = gll_points(order)
    return np.stack([0.5 * (1.0 - x), 0.5 * (1.0 + x)])


def trilinear_nodes(corners_lex: np.ndarray, order: int) -> np.ndarray:
    """(E, 3, q+1, q+1, q+1) nodes of the trilinear map of (E, 8, 3) lexicographic corners."""
    hat = _hats(order)
    c = np.moveaxis(corners_lex.reshape(-1, 2, 2, 2, 3), -1, 1)  # [e, xyz, c, b, a]: corner a + 2b + 4c
    c = c @ hat                                               # [e, d, c, b, i]
    c = np.swapaxes(np.swapaxes(c, -1, -2) @ hat, -1, -2)     # [e, d, c, j, i]
    return np.moveaxis(np.moveaxis(c, 2, -1) @ hat, -1, 2)    # [e, d, k, j, i]


def _edge_geometry(edge: int) -> tuple[int, int, int, bool]:
    """(start lex corner, end lex corner, reference axis 0/1/2 = r/s/t, runs along +axis)."""
    start, end = (NEK_CORNER_TO_LEX[c] for c in NEK_EDGES[edge])
    bit = start ^ end
    axis = {1: 0, 2: 1, 4: 2}[bit]
    return start, end, axis, bool(end & bit)


def _add_edge_deviation(nodes: np.ndarray, elements: np.ndarray, edge: int,
                        deviation: np.ndarray, hat: np.ndarray) -> None:
    """Add (n, 3, q+1) edge deviations (in the edge's start-to-end order) to the elements,
    weighted by the linear hats of the two other directions (edge-based Gordon–Hall)."""
    start, _, axis, forward = _edge_geometry(edge)
    if not forward:
        deviation = deviation[..., ::-1]
    a, b, c = start & 1, (start >> 1) & 1, (start >> 2) & 1
    if axis == 0:    # varies along i; fixed j side b, k side c
        term = np.einsum("ndi,k,j->ndkji", deviation, hat[c], hat[b])
    elif axis == 1:  # varies along j; fixed i side a, k side c
        term = np.einsum("ndj,k,i->ndkji", deviation, hat[c], hat[a])
    else:            # varies along k; fixed i side a, j side b
        term = np.einsum("ndk,j,i->ndkji", deviation, hat[b], hat[a])
    nodes[elements] += term  # each element once per edge: the curves were made unique


def midpoint_edges(p1: np.ndarray, p2: np.ndarray, mid: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """(n, 3, q+1) deviation from the straight edge of the quadratic through p1, mid, p2."""
    bubble = 1.0 - tau**2
    return (mid - 0.5 * (p1 + p2))[:, :, None] * bubble[None, None, :]


def circle_edges(p1: np.ndarray, p2: np.ndarray, radius: np.ndarray, tau: np.ndarray,
                 where) -> np.ndarray:
    """(n, 3, q+1) deviation from the straight edge of Nek's circle arc from p1 to p2.

    The arc lies in the x-y plane (z stays linear along the edge, as in Nek5000's arcsrf):
    radius |R|, centre on the left of the direction p1 -> p2 for R > 0 and on its right for
    R < 0, the shorter arc, points equally spaced in angle at the GLL parameters tau.
    ``where(i)`` names curve i in error messages.
    """
    d = p2[:, :2] - p1[:, :2]
    gap = np.hypot(d[:, 0], d[:, 1])
    bad = ~(np.abs(2.0 * radius) > gap * 1.00001)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{where(i)}: circle radius {radius[i]:g} is too small for an edge of "
                         f"length {gap[i]:g} in the x-y plane (|2R| must exceed it)")
    left = np.stack([-d[:, 1], d[:, 0]], axis=1) / gap[:, None]
    offset = np.sign(radius) * np.sqrt(radius**2 - 0.25 * gap**2)
    centre = 0.5 * (p1[:, :2] + p2[:, :2]) + offset[:, None] * left
    theta1 = np.arctan2(p1[:, 1] - centre[:, 1], p1[:, 0] - centre[:, 0])
    theta2 = np.arctan2(p2[:, 1] - centre[:, 1], p2[:, 0] - centre[:, 0])
    sweep = np.angle(np.exp(1j * (theta2 - theta1)))  # the shorter way round, in (-pi, pi]
    s = 0.5 * (tau + 1.0)
    theta = theta1[:, None] + sweep[:, None] * s[None, :]
    r = np.abs(radius)[:, None]
    arc = np.stack([centre[:, 0:1] + r * np.cos(theta), centre[:, 1:2] + r * np.sin(theta)], axis=1)
    line = p1[:, :2, None] * (1.0 - s) + p2[:, :2, None] * s
    deviation = np.zeros((len(p1), 3, len(tau)))
    deviation[:, :2] = arc - line
    # the end points are on the arc by construction; make them exactly so
    deviation[:, :, 0] = deviation[:, :, -1] = 0.0
    return deviation


def _slerp(u1: np.ndarray, u2: np.ndarray, s: np.ndarray) -> np.ndarray:
    """(n, 3, m) points of the great-circle arcs between unit vectors u1, u2 at fractions s."""
    cos = np.clip(np.einsum("nd,nd->n", u1, u2), -1.0, 1.0)
    angle = np.arccos(cos)[:, None]
    w1 = np.sin((1.0 - s)[None, :] * angle) / np.sin(angle)
    w2 = np.sin(s[None, :] * angle) / np.sin(angle)
    return u1[:, :, None] * w1[:, None, :] + u2[:, :, None] * w2[:, None, :]


def sphere_face_points(corners: np.ndarray, centre: np.ndarray, radius: np.ndarray,
                       tau: np.ndarray) -> np.ndarray:
    """(n, 3, q+1, q+1) points of a face on a sphere, face-local [a, b] order.

    corners (n, 4, 3) in face-local order (a, b) = (0,0), (0,1), (1,0), (1,1). The edges are
    great-circle arcs, equally spaced in angle; an interior point is where the great circle
    through the two edge points of its row meets the one through those of its column (Nek5000's
    sphsrf), which does not depend on how the face is oriented.
    """
    u = corners - centre[:, None, :]
    u /= np.linalg.norm(u, axis=2, keepdims=True)
    s = 0.5 * (tau + 1.0)
    q = len(tau) - 1
    p = np.empty((len(u), 3, q + 1, q + 1))
    p[:, :, :, 0] = _slerp(u[:, 0], u[:, 2], s)
    p[:, :, :, q] = _slerp(u[:, 1], u[:, 3], s)
    p[:, :, 0, :] = _slerp(u[:, 0], u[:, 1], s)
    p[:, :, q, :] = _slerp(u[:, 2], u[:, 3], s)
    rows = np.cross(p[:, :, 0, :], p[:, :, q, :], axis=1)  # normal of the circle through row b
    cols = np.cross(p[:, :, :, 0], p[:, :, :, q], axis=1)  # normal of the circle through column a
    inner = np.cross(cols[:, :, :, None], rows[:, :, None, :], axis=1)
    inner /= np.linalg.norm(inner, axis=1, keepdims=True)
    # two antipodal intersections: take the one on the face's side of the sphere
    side = np.sign(np.einsum("ndab,nd->nab", inner, u.sum(axis=1)))
    inner *= side[:, None]
    p[:, :, 1:q, 1:q] = inner[:, :, 1:q, 1:q]
    return centre[:, :, None, None] + radius[:, None, None, None] * p


def _add_sphere_faces(nodes, corners_lex, elements, faces, values, tau, where) -> None:
    """Move each sphere face onto its sphere, blending linearly to the opposite face."""
    for face in range(6):
        pick = faces == face
        if not np.any(pick):
            continue
        els = elements[pick]
        centre, radius = values[pick, :3], values[pick, 3]
        corners = corners_lex[els][:, list(FACE_CORNERS[face])]
        distance = np.linalg.norm(corners - centre[:, None, :], axis=2)
        off = (radius <= 0) | np.any(np.abs(distance - radius[:, None])
                                     > SPHERE_CORNER_TOLERANCE * np.abs(radius[:, None]), axis=1)
        if np.any(off):
            i = int(np.flatnonzero(pick)[np.flatnonzero(off)[0]])
            raise InputError(f"{where(i)}: the face's corners are not on the sphere of centre "
                             f"{tuple(float(v) for v in values[i, :3])} and radius {values[i, 3]:g}")
        target = sphere_face_points(corners, centre, radius, tau)
        sel = face_slice(face, len(tau) - 1)
        shift = target - nodes[els][(slice(None), slice(None), *sel[1:])]
        weight = 0.5 * (1.0 + tau) if FACE_SIDE[face] else 0.5 * (1.0 - tau)
        axis = FACE_AXIS[face]  # of [k, j, i]
        if axis == 2:
            term = np.einsum("ndkj,i->ndkji", shift, weight)
        elif axis == 1:
            term = np.einsum("ndki,j->ndkji", shift, weight)
        else:
            term = np.einsum("ndji,k->ndkji", shift, weight)
        nodes[els] += term  # each element once per face


def element_nodes(corners_nek: np.ndarray, curves: dict, order: int, where) -> np.ndarray:
    """(E, 3, q+1, q+1, q+1) node coordinates of Nek elements at GLL points of order q.

    corners_nek: (E, 8, 3) corners in Nek's order. curves: {"elements", "sides", "values",
    "types"}: 0-based element, 0-based Nek edge (face for ``s``), the five curve values and
    the one-letter type, already checked to be one of ``m``, ``C``, ``s``. ``where(i)`` names
    curve i in error messages. corners_nek (E, 4, 3) in 2-D gives (E, 3, 1, q+1, q+1).
    """
    if corners_nek.shape[1] == 4:
        flat = np.concatenate([corners_nek, corners_nek], axis=1)
        return element_nodes(flat, curves, order, where)[:, :, :1].copy()
    corners_lex = corners_nek[:, list(NEK_CORNER_TO_LEX)]
    nodes = trilinear_nodes(corners_lex, order)
    tau = gll_points(order)
    hat = _hats(order)
    elements, sides = curves["elements"], curves["sides"]
    values, types = curves["values"], curves["types"]

    def edge_ends(pick, edge):
        start, end = NEK_EDGES[edge]
        return corners_nek[elements[pick], start], corners_nek[elements[pick], end]

    for edge in range(12):
        pick = (types == "m") & (sides == edge)
        if np.any(pick):
            p1, p2 = edge_ends(pick, edge)
            _add_edge_deviation(nodes, elements[pick], edge,
                                midpoint_edges(p1, p2, values[pick, :3], tau), hat)
    sphere = types == "s"
    if np.any(sphere):
        index = np.flatnonzero(sphere)
        lobatto_faces = np.array(NEK_FACE_TO_LOBATTO)[sides[sphere]]
        _add_sphere_faces(nodes, corners_lex, elements[sphere], lobatto_faces, values[sphere],
                          tau, lambda i: where(int(index[i])))
    for edge in CIRCLE_EDGES:
        pick = (types == "C") & (sides == edge)
        if np.any(pick):
            index = np.flatnonzero(pick)
            p1, p2 = edge_ends(pick, edge)
            deviation = circle_edges(p1, p2, values[pick, 0], tau, lambda i: where(int(index[i])))
            _add_edge_deviation(nodes, elements[pick], edge, deviation, hat)
    return nodes
