"""Reference-element topology: face numbering, face-point layout and orientation.

Faces of the reference hexahedron (index order of a volume array is [k, j, i] with i along r):
    0: r = -1 (i = 0)    1: r = +1 (i = N)
    2: s = -1 (j = 0)    3: s = +1 (j = N)
    4: t = -1 (k = 0)    5: t = +1 (k = N)
Points on a face are stored as an (N+1, N+1) array [a, b] that is the volume array's slice
with the normal index fixed: [k, j] on r-faces, [k, i] on s-faces, [j, i] on t-faces.

Element vertices are numbered lexicographically, vertex (p, q, l) in {0,1}^3 at index p + 2q + 4l.

A 2-D mesh (quadrilaterals) is stored as 3-D elements whose k axis has one point: volume
arrays end in (1, n, n), face arrays in (1, n). Its faces (edges) are faces 0..3 above, so every
per-face table holds in 2-D as its first four entries; the quad vertex (p, q) is p + 2q, the
first four hex vertices. ``element_shape`` and ``face_shape`` are the places that know the thin
axis.
"""

from __future__ import annotations

import numpy as np

NUM_FACES = 6
FACE_AXIS = (2, 2, 1, 1, 0, 0)  # axis of the [k, j, i] volume array that a face fixes
FACE_SIDE = (0, 1, 0, 1, 0, 1)  # 0: lower end of that axis, 1: upper end
FACE_SIGN = (-1.0, 1.0, -1.0, 1.0, -1.0, 1.0)  # outward normal along +/- grad of the coordinate
FACE_REFERENCE_AXIS = (0, 0, 1, 1, 2, 2)  # 0: r, 1: s, 2: t
OPPOSITE_FACE = (1, 0, 3, 2, 5, 4)

# Vertex indices at the face corners, in face-local order (a,b) = (0,0), (0,1), (1,0), (1,1).
FACE_CORNERS = (
    (0, 2, 4, 6),
    (1, 3, 5, 7),
    (0, 1, 4, 5),
    (2, 3, 6, 7),
    (0, 1, 2, 3),
    (4, 5, 6, 7),
)

NUM_ORIENTATIONS = 8

#: element corner count by dimension
NUM_VERTICES = {2: 4, 3: 8}
# Vertex indices at the corners of the four edges of a quad, face-local order b = 0, 1.
FACE_CORNERS_2D = ((0, 2), (1, 3), (0, 1), (2, 3))
#: orientation codes a face can have: a (1, n) face of a quad is only reversed along b
ORIENTATIONS = {2: (0, 4), 3: tuple(range(NUM_ORIENTATIONS))}


def face_corners(dim: int) -> tuple:
    """Vertex indices at each face's corners (2-D: the edges' two ends, in b order)."""
    return FACE_CORNERS if dim == 3 else FACE_CORNERS_2D


def num_faces(dim: int) -> int:
    return 2 * dim


def element_shape(dim: int, order: int) -> tuple:
    """The trailing (k, j, i) shape of a volume array: (n, n, n), or (1, n, n) in 2-D."""
    n = order + 1
    return (n if dim == 3 else 1, n, n)


def face_shape(dim: int, order: int) -> tuple:
    """The trailing [a, b] shape of a face array: (n, n), or (1, n) in 2-D."""
    n = order + 1
    return (n if dim == 3 else 1, n)


def face_slice(face: int, order: int) -> tuple:
    """Index into the trailing (k, j, i) axes selecting the face points in [a, b] order."""
    end = 0 if FACE_SIDE[face] == 0 else order
    idx = [slice(None)] * 3
    idx[FACE_AXIS[face]] = end
    return (Ellipsis, *idx)


def reorient(neighbour_face_data: np.ndarray, code: int) -> np.ndarray:
    """Express data given on a neighbour face's [a, b] grid on our face's [a, b] grid.

    The orientation code's bits: 1 transposes, 2 flips a, 4 flips b (applied in that order
    to the trailing two axes). Connectivity stores, for each face, the code that maps its
    neighbour's data onto it.
    """
    data = neighbour_face_data
    if code & 1:
        data = np.swapaxes(data, -1, -2)
    if code & 2:
        data = data[..., ::-1, :]
    if code & 4:
        data = data[..., :, ::-1]
    return data


def find_orientation(our_corners: np.ndarray, neighbour_corners: np.ndarray) -> int:
    """The orientation code mapping the neighbour face's corner vertex ids onto ours, or -1."""
    ours, theirs = np.asarray(our_corners), np.asarray(neighbour_corners)
    dim = 2 if ours.size == 2 else 3
    ours, theirs = ours.reshape(-1, 2), theirs.reshape(-1, 2)  # (1, 2): an edge's [a, b] grid
    for code in ORIENTATIONS[dim]:
        if np.array_equal(reorient(theirs, code), ours):
            return code
    return -1
