"""Meshes: generators, connectivity, face-point ids and geometric factors."""

from lobatto.mesh.box import box_mesh
from lobatto.mesh.connectivity import connectivity_from_vertices, face_point_ids
from lobatto.mesh.geometry import Geometry, compute_geometry
from lobatto.mesh.mesh import DEFAULT_BOUNDARY, INTERIOR, HexMesh

__all__ = [
    "DEFAULT_BOUNDARY",
    "INTERIOR",
    "Geometry",
    "HexMesh",
    "box_mesh",
    "compute_geometry",
    "connectivity_from_vertices",
    "face_point_ids",
]
