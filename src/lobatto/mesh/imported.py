"""A whole mesh as read from a file (gmsh, Nek5000), before it becomes a :class:`HexMesh`.

Readers (``lobatto.mesh.readers.*``) return an :class:`ImportedMesh`; the builder here turns it
into lobatto's mesh: shared corners, face connectivity, boundary and region names, and the
curved geometry as node coordinates at GLL points of the geometry's order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lobatto.discretization.tensor import dimension_of
from lobatto.errors import InputError
from lobatto.mesh.box import MAX_EXTENT
from lobatto.mesh.connectivity import connectivity_from_vertices
from lobatto.mesh.enclosed import enclosed_sides
from lobatto.mesh.mesh import DEFAULT_BOUNDARY, INTERIOR, HexMesh
from lobatto.mesh.topology import NUM_VERTICES, ORIENTATIONS, face_corners, num_faces, reorient


@dataclass
class ImportedMesh:
    """Every element of a mesh file, in lobatto's conventions.

    element_nodes:   (E, 3, q+1, q+1, q+1) x, y, z of each element at the GLL points of order
                     q >= 1 (q = 1: the 8 corners), axes [k, j, i] like lobatto's volume
                     arrays (i along r). Corner a + 2b + 4c of topology's lexicographic order
                     (a, b, c in {0, 1}) is element_nodes[e, :, c*q, b*q, a*q]. The map from the
                     reference cube is the tensor-product Lagrange interpolant of these nodes.
                     A 2-D mesh (quadrilaterals in the plane z = 0) has (E, 3, 1, q+1, q+1):
                     corner a + 2b is element_nodes[e, :, 0, b*q, a*q], its faces are the
                     four edges (topology's faces 0..3), its surface groups are curves.
    boundary_faces:  {group name: (n, 2) int array of (element, face)} with faces numbered as
                     in lobatto.mesh.topology; every face without a neighbour must be in a group
                     (a group may also hold faces inside the mesh: they take no boundary kind).
    regions:         (E,) int index into region_names (0 when the file names none).
    region_names:    names of the volume groups ("all" when the file names none).
    corner_ids:      optional (E, 8) ((E, 4) in 2-D) vertex ids shared between elements (lexicographic corner
                     order); without them corners are merged by coordinates.
    periodic_faces:  optional (n, 4) int array (element, face, element, face) of faces joined
                     by a periodic boundary.
    source:          the file name, for error messages.
    info:            what the reader says about the file (format, version, geometry order);
                     "element_numbers", (E,) the elements' numbers in the file, is used in messages.
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

    @property
    def dim(self) -> int:
        """2 for quadrilaterals (a k axis of one node), 3 for hexahedra."""
        return dimension_of(self.element_nodes.shape)

    def corner_coordinates(self) -> np.ndarray:
        """(E, 8, 3) the corners in lexicographic order (vertex a + 2b + 4c); (E, 4, 3) in 2-D."""
        return np.stack([self._corner(slice(None), v) for v in range(NUM_VERTICES[self.dim])], axis=1)

    def _corner(self, e, v: int) -> np.ndarray:
        q, nodes = self.geometry_order, self.element_nodes
        k = 0 if self.dim == 2 else (v >> 2) * q
        return nodes[e, :, k, ((v >> 1) & 1) * q, (v & 1) * q]

    def describe_element(self, e: int) -> str:
        """'element 12 (number 345 in FILE) centred at (x, y, z)' for messages."""
        numbers = self.info.get("element_numbers")
        number = "" if numbers is None else f" (number {int(numbers[e])} in the file)"
        centre = self.corner_coordinates_of(e).mean(axis=0)
        return f"element {e}{number} centred at ({centre[0]:.4g}, {centre[1]:.4g}, {centre[2]:.4g})"

    def corner_coordinates_of(self, e: int) -> np.ndarray:
        return np.array([self._corner(e, v) for v in range(NUM_VERTICES[self.dim])])


#: corners closer than this times the smallest element edge are one vertex (files that carry
#: coordinates only, like Nek5000's, repeat each corner once per element, rounded in ASCII files:
#: a .rea's 6 significant digits put the copies of a corner up to ~1e-5 of the coordinates apart,
#: e.g. across a cylinder's seam in Nek5000's own 2-D examples; distinct corners are at least an
#: edge apart, so 1e-3 keeps a margin of 1000; Nek5000's genmap merges within 0.2 of an edge)
MERGE_TOLERANCE = 1e-3
#: corners are merged on a grid of cells MERGE_TOLERANCE times the smallest edge: coordinates
#: beyond this many smallest edges from the origin would overflow its int64 cell numbers
MAX_SPAN_RATIO = 1e12
#: periodic faces must be translates of each other to this fraction of their shortest edge
PERIODIC_TOLERANCE = 1e-6

_EDGES = np.array([(0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7)])
_EDGES_2D = _EDGES[[0, 1, 4, 5]]  # a quad's four edges (its vertices are the first four)


def hex_mesh_from_imported(imported: ImportedMesh, boundary_kinds: dict | None = None,
                           default_kind: str = DEFAULT_BOUNDARY) -> HexMesh:
    """The whole :class:`HexMesh` of a file's mesh.

    boundary_kinds: {group name: the system's boundary kind} for the groups the case file
                    maps ([mesh.boundaries]); every other group takes ``default_kind``.
    Corners are shared through ``corner_ids`` or, without them, merged by coordinates;
    faces are matched by their corners (any orientation), periodic faces joined with the
    orientation their corner coordinates give after the translation between them.
    """
    boundary_kinds = dict(boundary_kinds or {})
    source = imported.source
    _check_nodes(imported)
    corners = imported.corner_coordinates()
    nv = NUM_VERTICES[imported.dim]
    if imported.corner_ids is not None:
        corner_ids = np.asarray(imported.corner_ids, dtype=np.int64)
        if corner_ids.shape != (imported.num_elements, nv):
            raise InputError(f"{source}: corner ids have shape {corner_ids.shape}, expected ({imported.num_elements}, {nv})")
        used, first, element_vertices = np.unique(corner_ids, return_index=True, return_inverse=True)
        element_vertices = element_vertices.reshape(-1, nv)
        vertices = corners.reshape(-1, 3)[first]
    else:
        vertices, element_vertices = merge_corners(corners, imported)
    _check_distinct_corners(element_vertices, imported)
    try:
        face_neighbour, neighbour_face, face_orientation = connectivity_from_vertices(element_vertices)
    except ValueError as error:
        raise InputError(f"{source}: {error}") from None
    if imported.periodic_faces is not None and len(imported.periodic_faces):
        join_periodic_faces(imported, corners, face_neighbour, neighbour_face, face_orientation)
    face_group, boundary_kind, boundary_names, interior_group = _boundary_tags(imported, face_neighbour, neighbour_face,
                                                                               boundary_kinds, default_kind)
    regions = np.asarray(imported.regions, dtype=np.int64).reshape(-1)
    if regions.shape != (imported.num_elements,) or np.any((regions < 0) | (regions >= len(imported.region_names))):
        raise InputError(f"{source}: region indices must be one per element, in 0..{len(imported.region_names) - 1}")
    mesh = HexMesh(
        vertices=vertices,
        element_vertices=element_vertices,
        face_neighbour=face_neighbour,
        neighbour_face=neighbour_face,
        face_orientation=face_orientation,
        boundary_kind=boundary_kind,
        boundary_names=boundary_names,
        curved_nodes=imported.element_nodes if imported.geometry_order > 1 else None,
        regions=regions,
        region_names=tuple(imported.region_names),
        face_group=face_group,
        interior_group=interior_group,
        group_names=tuple(imported.boundary_faces),
        source=source,
        element_numbers=imported.info.get("element_numbers"),
    )
    mesh.check()
    return mesh


def _check_nodes(imported: ImportedMesh) -> None:
    nodes = imported.element_nodes
    if nodes.ndim != 5 or nodes.shape[1] != 3 or not (nodes.shape[2] in (1, nodes.shape[3]) and
                                                      nodes.shape[3] == nodes.shape[4] >= 2):
        raise InputError(f"{imported.source}: element nodes have shape {nodes.shape}, expected (E, 3, q+1, q+1, q+1) "
                         "or, for quadrilaterals, (E, 3, 1, q+1, q+1)")
    if imported.num_elements == 0:
        raise InputError(f"{imported.source}: the mesh has no hexahedra")
    numbers = imported.info.get("element_numbers")

    def element(e: int) -> str:
        return f"element {e}" + ("" if numbers is None else f" (number {int(numbers[e])} in the file)")

    finite = np.isfinite(nodes).reshape(len(nodes), -1).all(axis=1)
    if not finite.all():
        e = int(np.argmin(finite))
        raise InputError(f"{imported.source}: {element(e)} has coordinates that are not finite numbers")
    size = np.abs(nodes).reshape(len(nodes), -1).max(axis=1)
    if np.any(size > MAX_EXTENT):
        e = int(np.argmax(size > MAX_EXTENT))
        raise InputError(f"{imported.source}: {element(e)} has a coordinate of magnitude {size[e]:.3g}; coordinates "
                         f"must lie within {MAX_EXTENT:.0e} of the origin, or the geometric factors (Jacobians, "
                         "1/length) overflow float64: rescale the mesh's units")
    if imported.dim == 2:  # a 2-D field is z-independent with z = 0 (the 2-D geometry's dz/dt = 1)
        off = np.abs(nodes[:, 2]).reshape(len(nodes), -1).max(axis=1)
        if np.any(off != 0):
            e = int(np.argmax(off))
            raise InputError(f"{imported.source}: {element(e)} has a node at |z| = {off[e]:.6g}; a 2-D mesh "
                             "(quadrilaterals) must lie in the plane z = 0")


def smallest_edges(corners: np.ndarray) -> np.ndarray:
    """(E,) the shortest of the 12 straight edges between each element's corners (4 of a quad's)."""
    pairs = _EDGES_2D if corners.shape[1] == NUM_VERTICES[2] else _EDGES
    edges = corners[:, pairs[:, 1]] - corners[:, pairs[:, 0]]
    return np.sqrt(np.sum(edges**2, axis=2)).min(axis=1)


def merge_corners(corners: np.ndarray, imported: ImportedMesh):
    """(vertices, element_vertices): corners closer than MERGE_TOLERANCE times the smallest edge
    become one vertex (the coordinates of the first of them, in element order).

    Points are binned in cells of twice the tolerance; two points within the tolerance lie in
    the same cell or in neighbouring ones, so cells and their 26 neighbours are compared and
    joined into components. Distinct corners are an edge apart, far more than a cell."""
    points = corners.reshape(-1, 3)
    edge = smallest_edges(corners)
    if not np.all(edge > 0):
        e = int(np.argmin(edge))
        raise InputError(f"{imported.source}: {imported.describe_element(e)} has two corners at the same point")
    e = int(np.argmin(edge))
    with np.errstate(over="ignore"):  # a ratio beyond float64 is just too large
        ratio = float(np.abs(points).max()) / float(edge[e])
    if not ratio <= MAX_SPAN_RATIO:  # the cell keys below would overflow int64
        raise InputError(f"{imported.source}: {imported.describe_element(e)} has an edge of {edge[e]:.3g}, "
                         f"{ratio:.3g} times smaller than the mesh's coordinates reach (at most "
                         f"{MAX_SPAN_RATIO:.0e}): check the element's coordinates")
    tol = MERGE_TOLERANCE * float(edge.min())
    cell = 2.0 * tol
    keys = np.floor(points / cell).astype(np.int64)
    cells, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    rep = points[first]  # one point per cell
    row = np.dtype([("x", np.int64), ("y", np.int64), ("z", np.int64)])
    table = np.ascontiguousarray(cells).view(row).ravel()  # sorted (np.unique sorts rows)
    label = np.arange(len(cells))
    pairs = []
    for offset in np.array(np.meshgrid([-1, 0, 1], [-1, 0, 1], [-1, 0, 1], indexing="ij")).reshape(3, -1).T:
        if not offset.any():
            continue
        query = np.ascontiguousarray(cells + offset).view(row).ravel()
        at = np.clip(np.searchsorted(table, query), 0, len(table) - 1)
        found = table[at] == query
        near = found & (np.sqrt(np.sum((rep[at] - rep) ** 2, axis=1)) <= tol)
        pairs.append(np.stack([np.flatnonzero(near), at[near]]))
    pairs = np.concatenate(pairs, axis=1) if pairs else np.zeros((2, 0), dtype=np.int64)
    while pairs.shape[1]:  # components: propagate the smallest label along the pairs
        low = np.minimum(label[pairs[0]], label[pairs[1]])
        new = label.copy()
        np.minimum.at(new, pairs[0], low)
        np.minimum.at(new, pairs[1], low)
        new = new[new]
        if np.array_equal(new, label):
            break
        label = new
    components, vertex_of_cell = np.unique(label, return_inverse=True)
    element_vertices = vertex_of_cell.reshape(-1)[inverse].reshape(corners.shape[:2])
    # coordinates of each vertex: its first corner in element order
    order = np.argsort(element_vertices.reshape(-1), kind="stable")
    starts = np.searchsorted(element_vertices.reshape(-1)[order], np.arange(len(components)))
    vertices = points[order[starts]]
    return vertices, element_vertices


def _check_distinct_corners(element_vertices: np.ndarray, imported: ImportedMesh) -> None:
    ordered = np.sort(element_vertices, axis=1)
    repeated = np.any(ordered[:, 1:] == ordered[:, :-1], axis=1)
    if repeated.any():
        e = int(np.argmax(repeated))
        shape = "hexahedra" if imported.dim == 3 else "quadrilaterals"
        raise InputError(f"{imported.source}: {imported.describe_element(e)} is degenerate: two of its corners "
                         f"are the same vertex (collapsed {shape} are not supported)")


def _face_corners(corners: np.ndarray, e: int, f: int) -> np.ndarray:
    """(3, 2, 2) corner coordinates of face f of element e on the face's [a, b] grid ((3, 1, 2)
    for an edge of a quad)."""
    dim = 2 if corners.shape[1] == NUM_VERTICES[2] else 3
    return corners[e, list(face_corners(dim)[f])].T.reshape(3, dim - 1, 2)


def join_periodic_faces(imported, corners, face_neighbour, neighbour_face, face_orientation) -> None:
    """Join each listed pair of boundary faces (in place): the orientation code is the one
    that maps the partner's corners, moved by the translation between the faces' centres,
    onto this face's corners."""
    pairs = np.asarray(imported.periodic_faces, dtype=np.int64).reshape(-1, 4)
    source, dim = imported.source, imported.dim
    for e1, f1, e2, f2 in pairs:
        for e, f in ((e1, f1), (e2, f2)):
            if not (0 <= e < imported.num_elements and 0 <= f < num_faces(dim)):
                raise InputError(f"{source}: periodic face ({e}, {f}) is outside the mesh's elements and faces")
        for (e, f), (pe, pf) in (((e1, f1), (e2, f2)), ((e2, f2), (e1, f1))):
            current = face_neighbour[e, f]
            if current >= 0 and (current, neighbour_face[e, f]) != (pe, pf):
                raise InputError(f"{source}: {imported.describe_element(e)} face {f} is periodic but already "
                                 f"touches element {current}")
            ours, theirs = _face_corners(corners, e, f), _face_corners(corners, pe, pf)
            shift = theirs.mean(axis=(1, 2)) - ours.mean(axis=(1, 2))
            moved = theirs - shift[:, None, None]
            codes = ORIENTATIONS[dim]
            misfit = [np.abs(reorient(moved, code) - ours).max() for code in codes]
            code = int(codes[int(np.argmin(misfit))])
            edge = min(np.sqrt(np.sum((ours[:, -1, 0] - ours[:, 0, 0]) ** 2)) if dim == 3 else np.inf,
                       np.sqrt(np.sum((ours[:, 0, 1] - ours[:, 0, 0]) ** 2)))
            if min(misfit) > PERIODIC_TOLERANCE * edge:
                raise InputError(f"{source}: periodic faces {imported.describe_element(e)} face {f} and "
                                 f"element {pe} face {pf} are not translates of each other (corners off by "
                                 f"{min(misfit):.3g} after the shift {np.round(shift, 12).tolist()})")
            face_neighbour[e, f], neighbour_face[e, f], face_orientation[e, f] = pe, pf, code


def _boundary_tags(imported, face_neighbour, neighbour_face, boundary_kinds, default_kind):
    """(face_group, boundary_kind, boundary_names, interior_group) from the file's groups and the
    case's map."""
    source = imported.source
    groups = tuple(imported.boundary_faces)
    unknown = [name for name in boundary_kinds if name not in groups]
    if unknown:
        listed = ", ".join(f"'{g}'" for g in groups) if groups else "none"
        raise InputError(f"{source}: [mesh.boundaries] names the group '{unknown[0]}', which the mesh does not "
                         f"have (its surface groups: {listed})")
    num_elements, nf = imported.num_elements, num_faces(imported.dim)
    face_group = np.full((num_elements, nf), -1, dtype=np.int64)
    interior_group = np.full((num_elements, nf), -1, dtype=np.int64)
    kinds = sorted(set(boundary_kinds.values()) | {default_kind})
    kind_index = {kind: i for i, kind in enumerate(kinds)}
    explicit = np.full((num_elements, nf), -1, dtype=np.int64)
    for g, name in enumerate(groups):
        faces = np.asarray(imported.boundary_faces[name], dtype=np.int64).reshape(-1, 2)
        e, f = faces[:, 0], faces[:, 1]
        if np.any((e < 0) | (e >= num_elements) | (f < 0) | (f >= nf)):
            raise InputError(f"{source}: surface group '{name}' lists faces outside the mesh's elements")
        interior = face_neighbour[e, f] >= 0
        if name in boundary_kinds and interior.any():
            i = int(np.argmax(interior))
            raise InputError(f"{source}: [mesh.boundaries] {name} = \"{boundary_kinds[name]}\": the group lies "
                             f"inside the mesh ({imported.describe_element(int(e[i]))} face {int(f[i])} has a "
                             "neighbour across it); only faces on the mesh's boundary take a boundary kind")
        if interior.any():  # seen from the enclosed side where there is one (mesh/enclosed.py)
            inside = enclosed_sides(face_neighbour, neighbour_face, e[interior], f[interior])
            if inside is not None:
                free = interior_group[inside[:, 0], inside[:, 1]] < 0
                interior_group[inside[free, 0], inside[free, 1]] = g
        e, f = e[~interior], f[~interior]
        unset = face_group[e, f] < 0
        face_group[e[unset], f[unset]] = g
        if name in boundary_kinds:
            k = kind_index[boundary_kinds[name]]
            clash = (explicit[e, f] >= 0) & (explicit[e, f] != k)
            if clash.any():
                i = int(np.argmax(clash))
                other = kinds[explicit[e[i], f[i]]]
                raise InputError(f"{source}: {imported.describe_element(int(e[i]))} face {int(f[i])} is in "
                                 f"groups mapped to \"{other}\" and to \"{boundary_kinds[name]}\" "
                                 f"([mesh.boundaries] {name}); give the groups one kind")
            explicit[e, f] = k
    missing = (face_neighbour < 0) & (face_group < 0)
    if missing.any():
        e, f = (int(v) for v in np.argwhere(missing)[0])
        hint = ("the file has no surface groups: name the boundary surfaces (in gmsh, physical surface groups)"
                if not groups else f"its surface groups are {', '.join(repr(g) for g in groups)}")
        raise InputError(f"{source}: {imported.describe_element(e)} face {f} is on the boundary but in no named "
                         f"surface group ({int(missing.sum())} such faces); every boundary face needs a group: {hint}")
    boundary = face_neighbour < 0
    chosen = np.where(explicit >= 0, explicit, kind_index[default_kind])
    used = sorted(set(chosen[boundary].tolist()))
    names = tuple(kinds[i] for i in used) or (default_kind,)
    remap = np.full(len(kinds), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    boundary_kind = np.where(boundary, remap[chosen], INTERIOR)
    return face_group, boundary_kind, names, interior_group
