"""Continuous numbering: one global id per distinct GLL point of a conforming hex mesh.

Points that coincide between elements (on shared faces, edges and vertices, periodic wraps
included) get the same id; a gather–scatter sum over these ids is the direct stiffness
summation Q Q^T of continuous Galerkin (``operators.assembly``).

Method (needs only face connectivity and global element ids, so each rank numbers its own
part): every point starts with the unique label ``element_id * n^3 + local index`` (n^2 on a
2-D mesh, whose elements have a k axis of one point and four faces). A sweep
takes, at every face point, the minimum of its label and its partner's (a gather–scatter
"min" over ``mesh.face_point_ids``) and then gives every volume point the minimum over the
2 or 3 face slots it occupies (edge and corner points lie on several faces of their
element). Labels only decrease, so sweeps stop when none changes on any rank. A label
crosses one face per sweep: elements around an edge are a chain or ring of face
neighbours, and so are those around a vertex, so a few sweeps suffice (as many as the
longest such chain, halved).

Meshes covered: every mesh ``lobatto.mesh`` can hold whose elements around each edge and
each vertex are connected through faces that contain that edge or vertex, which is every
conforming hex mesh of a domain that is locally a manifold (with boundary), any face
orientations, periodic wraps (an element may be its own neighbour). Not covered: elements
that touch only along an edge or at a vertex with no face path between them inside the
edge's or vertex's star (a "pinched" domain); their points there stay distinct.
"""

from __future__ import annotations

import numpy as np

from lobatto.comm import GatherScatter
from lobatto.mesh.connectivity import face_point_ids
from lobatto.mesh.topology import element_shape, face_slice, num_faces
from lobatto.machine.parallel import allreduce


def face_volume_index(order: int, dim: int = 3) -> np.ndarray:
    """(6, n, n) flat volume index (k * n^2 + j * n + i) of each face point [a, b]; (4, 1, n)
    in 2-D."""
    shape = element_shape(dim, order)
    volume = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    return np.stack([volume[face_slice(f, order)] for f in range(num_faces(dim))])


def _face_slots(order: int, dim: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(boundary volume points (B,), their face slots (B, dim)) of the reference element.

    A slot is a flat index into an element's face points (f * n^2 + a * n + b in 3-D); a
    point lies on up to dim faces, and one on fewer repeats its first slot."""
    index = face_volume_index(order, dim).ravel()
    points = np.unique(index)
    slots = np.empty((len(points), dim), dtype=np.int64)
    order_of = np.argsort(index, kind="stable")
    starts = np.searchsorted(index[order_of], points)
    counts = np.diff(np.append(starts, len(index)))
    for c in range(dim):
        slots[:, c] = order_of[starts + np.minimum(c, counts - 1)]
    return points, slots


def connected_labels(mesh, order: int, comm=None) -> tuple[np.ndarray, int]:
    """(E, n^3) labels ((E, n^2) in 2-D), equal on coinciding points: the smallest
    ``element_id * n^3 + local index`` among a point's copies (independent of the
    partition); and the number of sweeps taken."""
    npts = int(np.prod(element_shape(mesh.dim, order)))
    labels = mesh.element_ids.astype(np.int64)[:, None] * npts + np.arange(npts, dtype=np.int64)[None, :]
    face_index = face_volume_index(order, mesh.dim).ravel()
    points, slots = _face_slots(order, mesh.dim)
    gs = GatherScatter(face_point_ids(mesh, order).ravel(), comm)
    sweeps = 0
    try:
        while True:
            sweeps += 1
            faces = np.take(labels, face_index, axis=1)  # (E, 6 n^2) (2-D: 4 n), C-contiguous
            gs.apply(faces.reshape(-1), "min")  # in place through the view
            smallest = faces[:, slots].min(axis=2)  # (E, B): never above the point's own label
            changed = bool(np.any(smallest != labels[:, points]))
            labels[:, points] = smallest
            if not allreduce(comm, int(changed), "max"):
                break
    finally:
        gs.free()
    return labels, sweeps


def dense_ids(labels: np.ndarray, element_ids: np.ndarray, comm=None) -> tuple[np.ndarray, int]:
    """(ids 0..M-1 in the shape of labels, M): each label class numbered once over all ranks.

    A class is numbered by the rank holding its smallest label's own point (exactly one
    point keeps its starting label), in increasing label order after the ids of the ranks
    before it; the classes do not depend on the partition, the numbers do."""
    flat = labels.reshape(labels.shape[0], -1)
    npts = flat.shape[1]
    owned = flat == np.asarray(element_ids, dtype=np.int64)[:, None] * npts + np.arange(npts)[None, :]
    owned_labels = np.sort(flat[owned])
    count = len(owned_labels)
    if comm is None or comm.Get_size() == 1:
        # every class is here: its number is the position of its label among the owned ones
        return np.searchsorted(owned_labels, flat).reshape(labels.shape).astype(np.int64), count
    offset = comm.exscan(count) or 0  # None on rank 0
    total = comm.allreduce(count)
    numbers = np.full(flat.shape, -1, dtype=np.int64)
    numbers[owned] = offset + np.searchsorted(owned_labels, flat[owned])
    gs = GatherScatter((flat + 1).ravel(), comm)  # id 0 means "not participating"
    try:
        gs.apply(numbers.reshape(-1), "max")
    finally:
        gs.free()
    return numbers.reshape(labels.shape), total


def continuous_ids(mesh, order: int, comm=None) -> np.ndarray:
    """(E, n, n, n) ((E, 1, n, n) in 2-D) int64 global ids 0..M-1 of the GLL points, equal
    exactly where points coincide between elements, consistent across the ranks of ``comm``
    (collective).

    M, the number of distinct points of the whole mesh, is ``ids.max() + 1`` reduced over
    ranks (``Assembly.num_global_points``). See the module docstring for the meshes covered.
    """
    labels, _ = connected_labels(mesh, order, comm)
    ids, _ = dense_ids(labels, mesh.element_ids, comm)
    return ids.reshape(mesh.num_elements, *element_shape(mesh.dim, order))
