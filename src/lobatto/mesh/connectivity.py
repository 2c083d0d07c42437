"""Face connectivity from element vertex ids, and global ids of face points.

The face-point ids are the heart of the flux exchange: two face points that coincide get
the same id, so a gather–scatter sum over the ids adds a point's value to its neighbour's
(NekCEM's formulation, seed paper eqs. (6)-(7)). Boundary face points get ids of their own.
"""

from __future__ import annotations

import numpy as np

from lobatto.mesh.topology import NUM_VERTICES, ORIENTATIONS, face_corners, face_shape, num_faces, reorient


def connectivity_from_vertices(element_vertices: np.ndarray):
    """Match faces by their sorted corner vertex ids (any conforming hex or quad mesh).

    Returns (face_neighbour, neighbour_face, face_orientation), each (E, 6) ((E, 4) for
    quads, element_vertices (E, 4)); -1 where a face has no partner. A face shared by more
    than two elements is an error.
    """
    element_vertices = np.asarray(element_vertices, dtype=np.int64)
    num_elements = element_vertices.shape[0]
    dim = 2 if element_vertices.shape[1] == NUM_VERTICES[2] else 3
    nf, per_face = num_faces(dim), 2 ** (dim - 1)
    corners = element_vertices[:, np.array(face_corners(dim))]  # (E, 6, 4) or (E, 4, 2)
    keys = np.sort(corners, axis=2).reshape(-1, per_face)
    order = np.lexsort(keys.T[::-1])
    sorted_keys = keys[order]
    same_as_next = np.all(sorted_keys[1:] == sorted_keys[:-1], axis=1)
    if np.any(same_as_next[1:] & same_as_next[:-1]):
        raise ValueError("a face is shared by more than two elements: the mesh is not conforming")
    face_neighbour = np.full(num_elements * nf, -1, dtype=np.int64)
    neighbour_face = np.full(num_elements * nf, -1, dtype=np.int64)
    first = order[:-1][same_as_next]
    second = order[1:][same_as_next]
    face_neighbour[first], neighbour_face[first] = second // nf, second % nf
    face_neighbour[second], neighbour_face[second] = first // nf, first % nf
    face_neighbour = face_neighbour.reshape(num_elements, nf)
    neighbour_face = neighbour_face.reshape(num_elements, nf)

    face_orientation = np.full((num_elements, nf), -1, dtype=np.int64)
    e_idx, f_idx = np.nonzero(face_neighbour >= 0)
    corner_grid = (-1, 1 if dim == 2 else 2, 2)  # an edge's two corners are a (1, 2) [a, b] grid
    ours = corners[e_idx, f_idx].reshape(corner_grid)
    theirs = corners[face_neighbour[e_idx, f_idx], neighbour_face[e_idx, f_idx]].reshape(corner_grid)
    codes = np.full(len(e_idx), -1, dtype=np.int64)
    for code in ORIENTATIONS[dim]:  # the first code that maps their corners onto ours
        match = (codes < 0) & np.all(reorient(theirs, code) == ours, axis=(1, 2))
        codes[match] = code
    if np.any(codes < 0):
        i = int(np.argmax(codes < 0))
        raise ValueError(f"element {e_idx[i]} face {f_idx[i]}: corners do not match its neighbour's face")
    face_orientation[e_idx, f_idx] = codes
    return face_neighbour, neighbour_face, face_orientation


def face_point_ids(mesh, order: int) -> np.ndarray:
    """Global ids (E, 6, N+1, N+1) of face points ((E, 4, 1, N+1) on a 2-D mesh);
    coinciding points carry equal ids.

    A face pair is numbered by the face with the smaller global key (element id * faces +
    face): id = 1 + key * points per face + point index on that face; its partner takes the
    same ids re-oriented onto its own [a, b] grid. Only global element ids are needed, so every
    rank numbers its own faces without seeing the rest of the mesh.
    """
    nf = mesh.num_faces
    na, nq = face_shape(mesh.dim, order)
    keys = mesh.element_ids[:, None] * nf + np.arange(nf)[None, :]
    nb_keys = np.where(mesh.face_neighbour >= 0, mesh.face_neighbour * nf + mesh.neighbour_face, -1)
    owner = (mesh.face_neighbour < 0) | (keys <= nb_keys)
    owner_keys = np.where(owner, keys, nb_keys)
    local = np.arange(na * nq, dtype=np.int64).reshape(na, nq)
    ids = np.empty(keys.shape + (na, nq), dtype=np.int64)
    ids[owner] = local
    for code in np.unique(mesh.face_orientation[~owner]):
        ids[~owner & (mesh.face_orientation == code)] = reorient(local, int(code))
    ids += 1 + owner_keys[:, :, None, None] * (na * nq)
    return ids
