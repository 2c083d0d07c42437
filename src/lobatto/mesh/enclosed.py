"""Which side of an interior surface is inside: the faces of a named surface group that lie
inside the mesh (gmsh physical surfaces between volumes) have an element on each side; a
monitor on them takes one side (monitors/dft.py). The side is the enclosed one: with the
group's faces cut, the mesh falls apart into connected parts, and the side whose part holds no
face of the mesh's boundary is inside (a sphere's shell: the ball), its outward normals point
out of the enclosed volume. Where both or neither part touches the boundary (an open sheet, a
surface around a volume that reaches the boundary) no side is chosen.
"""

from __future__ import annotations

import numpy as np


def enclosed_sides(face_neighbour: np.ndarray, neighbour_face: np.ndarray, element: np.ndarray,
                   face: np.ndarray) -> np.ndarray | None:
    """(n, 2) (element, face) of the enclosed side of the interior faces given (either side or
    both listed; the whole mesh's connectivity, whose global ids are its rows); None when a
    face's side cannot be told."""
    from scipy.sparse import coo_matrix  # SciPy comes with pyamg
    from scipy.sparse.csgraph import connected_components

    num_elements = face_neighbour.shape[0]
    other, other_face = face_neighbour[element, face], neighbour_face[element, face]
    cut = np.zeros(face_neighbour.shape, dtype=bool)
    cut[element, face] = cut[other, other_face] = True
    e, f = np.nonzero((face_neighbour >= 0) & ~cut)
    graph = coo_matrix((np.ones(e.size, dtype=np.int8), (e, face_neighbour[e, f])), shape=(num_elements,) * 2)
    _, label = connected_components(graph, directed=False)
    touches = np.zeros(label.max() + 1, dtype=bool)
    touches[label[np.any(face_neighbour < 0, axis=1)]] = True
    here, there = ~touches[label[element]], ~touches[label[other]]
    if np.any(here == there):  # the same part on both sides, or both parts in or out
        return None
    rows = np.concatenate([np.stack([element[here], face[here]], axis=1),
                           np.stack([other[there], other_face[there]], axis=1)])
    return np.unique(rows, axis=0)
