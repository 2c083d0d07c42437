"""Face connectivity from element vertex ids, and global ids of face points.

The face-point ids are the heart of the flux exchange: two face points that coincide get
the same id, so a gather–scatter sum over the ids adds a point's value to its neighbour's
(NekCEM's formulation, seed paper eqs. (6)-(7)). Boundary face points get ids of their own.
"""

from __future__ import annotations

import numpy as np

from lobatto.mesh.topology import FACE_CORNERS, NUM_FACES, NUM_ORIENTATIONS, reorient


def connectivity_from_vertices(element_vertices: np.ndarray):
    """Match faces by their sorted corner vertex ids (any conforming hex mesh).

    Returns (face_neighbour, neighbour_face, face_orientation), each (E, 6); -1 where a
    face has no partner. A face shared by more than two elements is an error.
    """
    element_vertices = np.asarray(element_vertices, dtype=np.int64)
    num_elements = element_vertices.shape[0]
    corners = element_vertices[:, np.array(FACE_CORNERS)]  # (E, 6, 4)
    keys = np.sort(corners, axis=2).reshape(-1, 4)
    order = np.lexsort(keys.T[::-1])
    sorted_keys = keys[order]
    same_as_next = np.all(sorted_keys[1:] == sorted_keys[:-1], axis=1)
    if np.any(same_as_next[1:] & same_as_next[:-1]):
        raise ValueError("a face is shared by more than two elements: the mesh is not conforming")
    face_neighbour = np.full(num_elements * NUM_FACES, -1, dtype=np.int64)
    neighbour_face = np.full(num_elements * NUM_FACES, -1, dtype=np.int64)
    first = order[:-1][same_as_next]
    second = order[1:][same_as_next]
    face_neighbour[first], neighbour_face[first] = second // NUM_FACES, second % NUM_FACES
    face_neighbour[second], neighbour_face[second] = first // NUM_FACES, first % NUM_FACES
    face_neighbour = face_neighbour.reshape(num_elements, NUM_FACES)
    neighbour_face = neighbour_face.reshape(num_elements, NUM_FACES)

    face_orientation = np.full((num_elements, NUM_FACES), -1, dtype=np.int64)
    e_idx, f_idx = np.nonzero(face_neighbour >= 0)
    ours = corners[e_idx, f_idx].reshape(-1, 2, 2)
    theirs = corners[face_neighbour[e_idx, f_idx], neighbour_face[e_idx, f_idx]].reshape(-1, 2, 2)
    codes = np.full(len(e_idx), -1, dtype=np.int64)
    for code in range(NUM_ORIENTATIONS):  # the first code that maps their corners onto ours
        match = (codes < 0) & np.all(reorient(theirs, code) == ours, axis=(1, 2))
        codes[match] = code
    if np.any(codes < 0):
        i = int(np.argmax(codes < 0))
        raise ValueError(f"element {e_idx[i]} face {f_idx[i]}: corners do not match its neighbour's face")
    face_orientation[e_idx, f_idx] = codes
    return face_neighbour, neighbour_face, face_orientation


def face_point_ids(mesh, order: int) -> np.ndarray:
    """Global ids (E, 6, N+1, N+1) of face points; coinciding points carry equal ids.

    A face pair is numbered by the face with the smaller global key (element id * 6 + face):
    id = 1 + key * (N+1)^2 + point index on that face; its partner takes the same ids
    re-oriented onto its own [a, b] grid. Only global element ids are needed, so every rank
    numbers its own faces without seeing the rest of the mesh.
    """
    nq = order + 1
    keys = mesh.element_ids[:, None] * NUM_FACES + np.arange(NUM_FACES)[None, :]
    nb_keys = np.where(mesh.face_neighbour >= 0, mesh.face_neighbour * NUM_FACES + mesh.neighbour_face, -1)
    owner = (mesh.face_neighbour < 0) | (keys <= nb_keys)
    owner_keys = np.where(owner, keys, nb_keys)
    local = np.arange(nq * nq, dtype=np.int64).reshape(nq, nq)
    ids = np.empty(keys.shape + (nq, nq), dtype=np.int64)
    ids[owner] = local
    for code in np.unique(mesh.face_orientation[~owner]):
        ids[~owner & (mesh.face_orientation == code)] = reorient(local, int(code))
    ids += 1 + owner_keys[:, :, None, None] * (nq * nq)
    return ids
