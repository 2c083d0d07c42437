"""Unstructured hexahedral mesh data: vertices, elements, face connectivity, boundary tags."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from lobatto.mesh.topology import NUM_FACES

INTERIOR = -1  # boundary_kind value of a face that has a neighbour
#: name of boundary faces that were given none; a system reads it as its default kind
DEFAULT_BOUNDARY = "default"


@dataclass
class HexMesh:
    """A conforming mesh of (possibly curved) hexahedra.

    vertices:           (V, 3) vertex coordinates.
    element_vertices:   (E, 8) vertex indices, lexicographic (see topology).
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

    def __post_init__(self):
        if self.element_ids is None:
            self.element_ids = np.arange(self.element_vertices.shape[0], dtype=np.int64)
        if self.num_global_elements is None:
            self.num_global_elements = int(self.element_vertices.shape[0])

    @property
    def num_elements(self) -> int:
        return int(self.element_vertices.shape[0])

    def describe_element(self, e: int) -> str:
        corners = self.vertices[self.element_vertices[e]]
        centre = corners.mean(axis=0)
        label = ""
        if self.element_labels is not None:
            label = " (box index " + ",".join(str(int(v)) for v in self.element_labels[e]) + ")"
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
        labels = None if self.element_labels is None else self.element_labels[order]
        return replace(
            self,
            element_vertices=self.element_vertices[order],
            face_neighbour=self.face_neighbour[order],
            neighbour_face=self.neighbour_face[order],
            face_orientation=self.face_orientation[order],
            boundary_kind=self.boundary_kind[order],
            element_ids=self.element_ids[order],
            element_labels=labels,
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
        assert self.face_neighbour.shape == (self.num_elements, NUM_FACES)
