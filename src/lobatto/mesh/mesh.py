"""Unstructured hexahedral mesh data: vertices, elements, face connectivity, boundary tags.

A mesh of quadrilaterals (element_vertices (E, 4)) is a 2-D mesh: ``dim`` 2, four faces per
element, and fields on it have a k axis of one point (mesh/topology.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from lobatto.mesh.topology import NUM_VERTICES, num_faces

INTERIOR = -1  # boundary_kind value of a face that has a neighbour
#: name of boundary faces that were given none; a system reads it as its default kind
DEFAULT_BOUNDARY = "default"


@dataclass
class HexMesh:
    """A conforming mesh of (possibly curved) hexahedra.

    vertices:           (V, 3) vertex coordinates.
    element_vertices:   (E, 8) vertex indices, lexicographic (see topology); (E, 4) for quads
                        (a 2-D mesh: the per-face arrays below are then (E, 4), vertices z = 0).
    face_neighbour:     (E, 6) global id of the neighbouring element, or -1 on a boundary.
    neighbour_face:     (E, 6) the neighbour's face index that touches this face.
    face_orientation:   (E, 6) code mapping the neighbour's face data onto this face.
    boundary_kind:      (E, 6) index into boundary_names on boundary faces, INTERIOR elsewhere.
    boundary_names:     names of the boundaries (the mesh attaches no meaning to them; a
                        system maps each to one of its boundary kinds).
    element_ids:        (E,) global element ids (0..E-1 when the mesh is whole; a rank's part
                        of a partitioned mesh holds its own elements' ids).
    element_labels:     optional (E, 3) structured indices, used in error messages.
    deform:             optional callable (x, y, z) -> (dx, dy, dz) applied to every GLL point.
    curved_nodes:       optional (E, 3, q+1, q+1, q+1) (2-D: (E, 3, 1, q+1, q+1)) x, y, z at the GLL points of geometry
                        order q, axes [k, j, i]: the element map is their tensor-product Lagrange
                        interpolant (None: the trilinear map of the corners).
    regions:            (E,) index into region_names (the volume group of each element).
    region_names:       names of the volume groups (a box has one, "all").
    face_group:         (E, 6) index into group_names on boundary faces, -1 on interior faces:
                        the named surface a boundary face belongs to (a box's sides xmin..zmax).
                        boundary_kind says what the system does there; face_group where it is.
    group_names:        names of the boundary surfaces.
    interior_group:     (E, 6) index into group_names on the enclosed side of a named surface's
                        faces inside the mesh (mesh/enclosed.py), -1 elsewhere: where monitors
                        see a closed interior surface (a sphere's shell) from inside.
    source:             the mesh file, or None for a generated mesh.
    element_numbers:    optional (E,) each element's number in the mesh file, for messages (-1: grown,
                        mesh/extrude.py).
    """

    vertices: np.ndarray
    element_vertices: np.ndarray
    face_neighbour: np.ndarray
    neighbour_face: np.ndarray
    face_orientation: np.ndarray
    boundary_kind: np.ndarray
    boundary_names: tuple = (DEFAULT_BOUNDARY,)
    element_ids: np.ndarray | None = None
    element_labels: np.ndarray | None = None
    deform: object | None = None
    num_global_elements: int | None = None
    curved_nodes: np.ndarray | None = None
    regions: np.ndarray | None = None
    region_names: tuple = ("all",)
    face_group: np.ndarray | None = None
    group_names: tuple = ()
    source: str | None = None
    element_numbers: np.ndarray | None = None
    interior_group: np.ndarray | None = None

    def __post_init__(self):
        num_elements = self.element_vertices.shape[0]
        if self.element_ids is None:
            self.element_ids = np.arange(num_elements, dtype=np.int64)
        if self.num_global_elements is None:
            self.num_global_elements = int(num_elements)
        if self.regions is None:
            self.regions = np.zeros(num_elements, dtype=np.int64)
        if self.face_group is None:
            self.face_group = np.full((num_elements, self.num_faces), -1, dtype=np.int64)
        if self.interior_group is None:
            self.interior_group = np.full((num_elements, self.num_faces), -1, dtype=np.int64)

    @property
    def num_elements(self) -> int:
        return int(self.element_vertices.shape[0])

    @property
    def dim(self) -> int:
        """2 for a mesh of quadrilaterals, 3 for hexahedra."""
        return 2 if self.element_vertices.shape[1] == NUM_VERTICES[2] else 3

    @property
    def num_faces(self) -> int:
        return num_faces(self.dim)

    @property
    def geometry_order(self) -> int:
        """q of curved_nodes, 1 for the trilinear map of the corners."""
        return 1 if self.curved_nodes is None else int(self.curved_nodes.shape[-1]) - 1

    def describe_element(self, e: int) -> str:
        corners = self.vertices[self.element_vertices[e]]
        centre = corners.mean(axis=0)
        label = ""
        if self.element_labels is not None and self.element_labels[e][0] < 0:
            label = " (grown behind a surface: no box index)"
        elif self.element_labels is not None:
            label = " (box index " + ",".join(str(int(v)) for v in self.element_labels[e]) + ")"
        elif self.source is not None and self.element_numbers is not None and self.element_numbers[e] < 0:
            label = f" (grown behind a surface: not in {self.source})"
        elif self.source is not None and self.element_numbers is not None:
            label = f" (number {int(self.element_numbers[e])} in {self.source})"
        elif self.source is not None:
            label = f" of {self.source}"
        return f"element {int(self.element_ids[e])}{label} centred at ({centre[0]:.4g}, {centre[1]:.4g}, {centre[2]:.4g})"

    def halo_elements(self) -> np.ndarray:
        """(E,) True for elements with a face neighbour held by another rank."""
        has_neighbour = self.face_neighbour >= 0
        held = self.local_index(np.where(has_neighbour, self.face_neighbour, 0)) >= 0
        return np.any(has_neighbour & ~held, axis=1)

    def reordered(self, order) -> HexMesh:
        """The same mesh with its elements in the given order (per-element arrays permuted)."""
        order = np.asarray(order, dtype=np.int64)
        if sorted(order.tolist()) != list(range(self.num_elements)):
            raise ValueError(f"reordered: expected a permutation of 0..{self.num_elements - 1}")
        return self._take(order)

    def subset(self, element_ids) -> HexMesh:
        """The part of this mesh made of the given global element ids (a rank's part), in
        that order; global ids, connectivity (by global id) and names are kept, vertices
        not used by the part are dropped."""
        element_ids = np.asarray(element_ids, dtype=np.int64)
        rows = self.local_index(element_ids)
        if np.any(rows < 0):
            missing = element_ids[rows < 0]
            raise ValueError(f"subset: element ids not in this mesh: {missing[:5].tolist()}")
        if len(np.unique(element_ids)) != len(element_ids):
            raise ValueError("subset: element ids repeat")
        part = self._take(rows)
        used, element_vertices = np.unique(part.element_vertices, return_inverse=True)
        return replace(part, vertices=self.vertices[used],
                       element_vertices=element_vertices.reshape(part.element_vertices.shape))

    def _take(self, rows: np.ndarray) -> HexMesh:
        """This mesh with the per-element arrays' rows taken in the given order."""
        def rows_of(array):
            return None if array is None else array[rows]

        return replace(
            self,
            element_vertices=self.element_vertices[rows],
            face_neighbour=self.face_neighbour[rows],
            neighbour_face=self.neighbour_face[rows],
            face_orientation=self.face_orientation[rows],
            boundary_kind=self.boundary_kind[rows],
            element_ids=self.element_ids[rows],
            element_labels=rows_of(self.element_labels),
            element_numbers=rows_of(self.element_numbers),
            curved_nodes=rows_of(self.curved_nodes),
            regions=self.regions[rows],
            face_group=self.face_group[rows],
            interior_group=self.interior_group[rows],
        )

    def halo_last(self) -> HexMesh:
        """Interior elements first, then those touching other ranks (kept in their order).

        A DG stage then updates the leading block while the face exchange is in flight and
        the trailing block after it (systems/dg.py)."""
        halo = self.halo_elements()
        if not halo.any() or halo[-int(halo.sum()):].all():
            return self
        return self.reordered(np.argsort(halo, kind="stable"))

    def local_index(self, global_ids: np.ndarray) -> np.ndarray:
        """Position of each global element id among this mesh's elements, -1 if not held."""
        sorter = np.argsort(self.element_ids)
        sorted_ids = self.element_ids[sorter]
        pos = np.clip(np.searchsorted(sorted_ids, global_ids), 0, max(len(sorted_ids) - 1, 0))
        found = sorted_ids[pos] == global_ids if len(sorted_ids) else np.zeros(np.shape(global_ids), bool)
        return np.where(found, sorter[pos], -1)

    def check(self) -> None:
        """Consistency of the connectivity where both sides are held here: neighbours point back."""
        e_idx, f_idx = np.nonzero(self.face_neighbour >= 0)
        nb = self.local_index(self.face_neighbour[e_idx, f_idx])
        held = nb >= 0
        e_idx, f_idx, nb = e_idx[held], f_idx[held], nb[held]
        nf = self.neighbour_face[e_idx, f_idx]
        back_e = self.local_index(self.face_neighbour[nb, nf])
        back_f = self.neighbour_face[nb, nf]
        bad = (back_e != e_idx) | (back_f != f_idx)
        if np.any(bad):
            i = int(np.argmax(bad))
            raise ValueError(f"face connectivity is not symmetric at element {e_idx[i]} face {f_idx[i]}")
        boundary = self.face_neighbour < 0
        if np.any(self.boundary_kind[boundary] < 0):
            raise ValueError("a boundary face has no boundary kind")
        if np.any(self.boundary_kind >= len(self.boundary_names)):
            raise ValueError(f"a boundary kind index is outside boundary_names {self.boundary_names}")
        if np.any(self.face_group[~boundary] >= 0) or np.any(self.face_group >= len(self.group_names)):
            raise ValueError(f"face_group must be -1 on interior faces and index group_names {self.group_names}")
        if np.any(self.interior_group[boundary] >= 0) or np.any(self.interior_group >= len(self.group_names)):
            raise ValueError(f"interior_group must be -1 on boundary faces and index group_names {self.group_names}")
        if np.any((self.regions < 0) | (self.regions >= len(self.region_names))):
            raise ValueError(f"a region index is outside region_names {self.region_names}")
        if self.element_vertices.shape[1] not in NUM_VERTICES.values():
            raise ValueError(f"element_vertices must be (E, 4) quads or (E, 8) hexahedra, got {self.element_vertices.shape}")
        if self.curved_nodes is not None:
            q1 = self.curved_nodes.shape[-1]
            assert self.curved_nodes.shape == (self.num_elements, 3, q1 if self.dim == 3 else 1, q1, q1)
        for name in ("face_neighbour", "neighbour_face", "face_orientation", "boundary_kind", "face_group",
                     "interior_group"):
            assert getattr(self, name).shape == (self.num_elements, self.num_faces), name
