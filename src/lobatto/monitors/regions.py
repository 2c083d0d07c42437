"""The named parts of a mesh that monitors integrate over or transform on: volume regions
(groups of elements) and surfaces (groups of boundary faces), as integrals.py and dft.py
look them up by the names a case gives."""

from __future__ import annotations

import numpy as np

from lobatto.mesh.box import SIDE_NAMES

#: the region of every element, on every mesh
WHOLE_MESH = "all"


def region_index(mesh) -> tuple[np.ndarray, tuple]:
    """(E,) region index of each element and the region names; one region "all" on meshes
    that have none."""
    regions = getattr(mesh, "regions", None)
    if regions is None:
        return np.zeros(mesh.num_elements, dtype=np.int64), (WHOLE_MESH,)
    return np.asarray(regions), tuple(getattr(mesh, "region_names", (WHOLE_MESH,)))


def surface_index(mesh) -> tuple[np.ndarray, tuple]:
    """(E, faces) surface index of each face (-1: none) and the surface names. Meshes without
    named surfaces that come from the box generator name their sides by face number."""
    group = getattr(mesh, "face_group", None)
    if group is not None:
        return np.asarray(group), tuple(getattr(mesh, "group_names", ()))
    if getattr(mesh, "element_labels", None) is not None:  # a box: face f lies on side f
        faces = np.broadcast_to(np.arange(mesh.num_faces), mesh.face_neighbour.shape)
        return np.where(mesh.face_neighbour < 0, faces, -1), SIDE_NAMES[:mesh.num_faces]
    return np.full(mesh.face_neighbour.shape, -1), ()
