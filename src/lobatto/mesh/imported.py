"""A whole mesh as read from a file (gmsh, Nek5000), before it becomes a :class:`HexMesh`.

Readers (``lobatto.mesh.readers.*``) return an :class:`ImportedMesh`; the builder here turns it
into lobatto's mesh: shared corners, face connectivity, boundary and region names, and the
curved geometry as node coordinates at GLL points of the geometry's order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class ImportedMesh:
    """Every element of a mesh file, in lobatto's conventions.

    element_nodes:   (E, 3, q+1, q+1, q+1) x, y, z of each element at the GLL points of order
                     q >= 1 (q = 1: the 8 corners), axes [k, j, i] like lobatto's volume
                     arrays (i along r). Corner a + 2b + 4c of topology's lexicographic order
                     (a, b, c in {0, 1}) is element_nodes[e, :, c*q, b*q, a*q]. The map from the reference cube is the
                     tensor-product Lagrange interpolant of these nodes.
    boundary_faces:  {group name: (n, 2) int array of (element, face)} with faces numbered as
                     in lobatto.mesh.topology; every face without a neighbour must be in a group.
    regions:         (E,) int index into region_names (0 when the file names none).
    region_names:    names of the volume groups ("all" when the file names none).
    corner_ids:      optional (E, 8) vertex ids shared between elements (lexicographic corner
                     order); without them corners are merged by coordinates.
    periodic_faces:  optional (n, 4) int array (element, face, element, face) of faces joined
                     by a periodic boundary.
    source:          the file name, for error messages.
    """

    element_nodes: np.ndarray
    boundary_faces: dict
    regions: np.ndarray
    region_names: tuple = ("all",)
    corner_ids: np.ndarray | None = None
    periodic_faces: np.ndarray | None = None
    source: str = "<mesh>"
    info: dict = field(default_factory=dict)  # reader details for the summary (format, version, order)

    @property
    def num_elements(self) -> int:
        return int(self.element_nodes.shape[0])

    @property
    def geometry_order(self) -> int:
        return int(self.element_nodes.shape[-1]) - 1
