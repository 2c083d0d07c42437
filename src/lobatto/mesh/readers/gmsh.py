"""gmsh MSH files (versions 4.1 and 2.2) through the gmsh SDK (``pip install gmsh``).

Why the SDK rather than a parser of our own: it reads every MSH version and its binary forms,
it is what made the mesh, and ``gmsh.model.mesh.getBasisFunctions`` gives the Lagrange basis of
every element type it has, so each hexahedron (8, 20, 27, 64, 125... nodes) is evaluated at
the GLL points of its order without depending on gmsh's high-order node numbering. A 20-node
serendipity element lies in the triquadratic space, so its GLL values represent it exactly.

What becomes what:
* hexahedra -> elements, ordered by their gmsh element tag; the nodes at GLL points of the
  highest hexahedron order in the file (a lower-order element is exact at a higher order);
* physical surface groups -> named boundary surfaces (their quadrilaterals matched to hex
  faces by corner node tags); physical volume groups -> regions;
* corner node tags -> shared corners. A group without a name is named by its tag ("7").
* periodic surfaces (``setPeriodic``, the file's $Periodic section) -> periodic face pairs:
  each hex face on a periodic surface is joined to the face on its master surface whose
  corners are the master nodes of its own.

A file with no 3-D elements is a 2-D mesh: its quadrilaterals (types 3, 16, 10, 36, 37: order
1-4, the 8-node one serendipity) in the plane z = 0 are the elements, physical curves the
boundaries, physical surfaces the regions, periodic curves the periodic edges; clockwise quads
are mirrored like inside-out hexahedra. The dimension is one per file: "the elements of the
highest dimension", hexahedra when there are any.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from lobatto.discretization import gll_points
from lobatto.discretization.tensor import dimension_of
from lobatto.errors import InputError
from lobatto.mesh.imported import ImportedMesh
from lobatto.mesh.readers.msh_check import check_msh
from lobatto.mesh.topology import NUM_VERTICES, face_corners, num_faces

ALL_HEX_HINT = ("lobatto needs an all-hexahedral mesh: in gmsh, recombine a transfinite or structured mesh "
                "(Mesh.RecombineAll = 1, Mesh.Recombine3DAll = 1) or split every element into hexahedra "
                "with Mesh.SubdivisionAlgorithm = 2")
ALL_QUAD_HINT = ("a 2-D mesh must be all quadrilaterals: in gmsh, recombine the surface (setRecombine, "
                 "Mesh.RecombineAll = 1) or split every element into quadrilaterals with Mesh.SubdivisionAlgorithm = 1")
NO_HEX_HINT = ("When a model has physical groups, gmsh saves only the elements in them: add a physical volume group, "
               "or set Mesh.SaveAll = 1")
#: in a 2-D mesh, nodes with |z| up to this times the mesh's extent are taken to be at z = 0
PLANE_TOLERANCE = 1e-12
#: words for the groups of each dimension, in messages
_GROUP = {1: "curve", 2: "surface", 3: "volume"}


def _import_gmsh():
    try:
        import gmsh
    except ImportError:
        raise InputError("[mesh] generator = \"gmsh\" reads files with the gmsh SDK, which is not installed: "
                         "pip install gmsh (or pip install 'lobatto[gmsh]')") from None
    return gmsh


@contextmanager
def _session(gmsh, path: Path):
    """The file opened in a model of its own. An SDK the caller already initialised (a script
    that made the mesh) keeps its models: ours is added, then removed."""
    own = not gmsh.isInitialized()
    if own:
        gmsh.initialize(readConfigFiles=False, interruptible=False)
        gmsh.option.setNumber("General.Terminal", 0)
    else:
        previous = gmsh.model.getCurrent()
    # MSH 2.2's $Periodic is read only with Mesh.IgnorePeriodicity = 0, which msh_check does
    # not check (its default, 1, keeps the section as text): set it for the read, then restore
    ignore = gmsh.option.getNumber("Mesh.IgnorePeriodicity")
    gmsh.option.setNumber("Mesh.IgnorePeriodicity", 1)
    try:
        gmsh.model.add(f"lobatto-read-{id(path)}")
        try:
            gmsh.merge(str(path))
        except Exception as error:  # the SDK raises plain Exception with gmsh's message
            raise InputError(f"{path}: gmsh cannot read the file: {error}") from None
        yield
    finally:
        if own:
            gmsh.finalize()
        else:
            gmsh.option.setNumber("Mesh.IgnorePeriodicity", ignore)
            gmsh.model.remove()
            gmsh.model.setCurrent(previous)


def read(path, geometry_order: int | None = None) -> ImportedMesh:
    """Every hexahedron of a gmsh MSH file, with its named surfaces and volumes.

    geometry_order is unused: gmsh elements are polynomials and keep their own order."""
    path = Path(path)
    gmsh = _import_gmsh()
    # before the SDK sees the file: on some damaged files it crashes the process (msh_check)
    version = check_msh(path)["version"]
    with _session(gmsh, path):
        tags, nodes, corner_tags, order, flipped = _elements(gmsh, path)
        dim = 2 if corner_tags.shape[1] == NUM_VERTICES[2] else 3
        faces = _FaceTable(corner_tags, dim)
        boundary_faces = _surface_groups(gmsh, path, faces)
        periodic_faces = _periodic_faces(gmsh, path, faces)
        regions, region_names = _volume_groups(gmsh, path, tags, dim)
    return ImportedMesh(
        element_nodes=nodes,
        boundary_faces=boundary_faces,
        regions=regions,
        region_names=region_names,
        corner_ids=corner_tags,
        periodic_faces=periodic_faces,
        source=str(path),
        info={"format": "gmsh", "version": version, "geometry_order": order, "element_numbers": tags,
              "mirrored_elements": flipped},
    )


def _element_counts(gmsh, dim: int) -> dict:
    counts = {}
    for element_type in gmsh.model.mesh.getElementTypes(dim):
        name = gmsh.model.mesh.getElementProperties(element_type)[0]
        counts[name] = counts.get(name, 0) + len(gmsh.model.mesh.getElementsByType(element_type)[0])
    return counts


def _gll_local_points(order: int, local: np.ndarray) -> np.ndarray:
    """(n^3 * 3,) gmsh local coordinates of the GLL points of `order`, i fastest (lobatto's
    [k, j, i] order), on the reference cube spanned by the element's corner nodes; (n^2 * 3,)
    with w = 0 on the reference square of a quadrilateral (local (num_nodes, 2))."""
    lo, hi = local.min(axis=0), local.max(axis=0)
    xi = gll_points(order)
    if local.shape[1] == 2:
        grid = np.array([(x, y) for y, x in itertools.product(xi, xi)])
        return np.pad(lo + 0.5 * (grid + 1.0) * (hi - lo), ((0, 0), (0, 1))).ravel()
    grid = np.array([(x, y, z) for z, y, x in itertools.product(xi, xi, xi)])
    return (lo + 0.5 * (grid + 1.0) * (hi - lo)).ravel()


def _elements(gmsh, path: Path):
    """The hexahedra, or where the file has no 3-D element its quadrilaterals (a 2-D mesh)."""
    if len(gmsh.model.mesh.getElementTypes(3)) or not len(gmsh.model.mesh.getElementTypes(2)):
        return _hexahedra(gmsh, path)
    counts = _element_counts(gmsh, 2)
    quads = sum(n for name, n in counts.items() if name.startswith("Quadrilateral"))
    others = {name: n for name, n in counts.items() if not name.startswith("Quadrilateral")}
    _, coords, _ = gmsh.model.mesh.getNodes(returnParametricCoord=False)
    coords = np.asarray(coords, dtype=np.float64).reshape(-1, 3)
    extent = float(np.abs(coords).max(initial=0.0))
    if np.any(np.abs(coords[:, 2]) > PLANE_TOLERANCE * extent):
        z = coords[np.argmax(np.abs(coords[:, 2])), 2]
        raise InputError(f"{path}: the file has no hexahedra (no 3-D elements), and its 2-D elements are no 2-D "
                         f"mesh: a node lies at z = {z:.6g}, and a 2-D mesh lies in the plane z = 0. {NO_HEX_HINT}")
    if others:
        listed = ", ".join(f"{n} {name}" for name, n in sorted(others.items()))
        raise InputError(f"{path}: the 2-D mesh has elements other than quadrilaterals ({listed}; {quads} "
                         f"quadrilaterals): {ALL_QUAD_HINT}")
    return _polynomial_elements(gmsh, 2)


def _hexahedra(gmsh, path: Path):
    """(tags, nodes (E, 3, q+1, q+1, q+1), corner node tags (E, 8), q, mirrored count)."""
    counts = _element_counts(gmsh, 3)
    others = {name: n for name, n in counts.items() if not name.startswith("Hexahedron")}
    if others:
        listed = ", ".join(f"{n} {name}" for name, n in sorted(others.items()))
        raise InputError(f"{path}: the mesh has 3-D elements other than hexahedra ({listed}; "
                         f"{sum(n for name, n in counts.items() if name.startswith('Hexahedron'))} hexahedra): "
                         f"{ALL_HEX_HINT}")
    if not len(gmsh.model.mesh.getElementTypes(3)):
        raise InputError(f"{path}: the file has no hexahedra (no 3-D elements). {NO_HEX_HINT}")
    return _polynomial_elements(gmsh, 3)


def _polynomial_elements(gmsh, dim: int):
    """(tags, nodes (E, 3, q+1, q+1, q+1) or (E, 3, 1, q+1, q+1), corner node tags (E, 2**dim), q,
    mirrored count) of the elements of dimension dim, all hexahedra or all quadrilaterals."""
    types = list(gmsh.model.mesh.getElementTypes(dim))
    node_tags, node_coords, _ = gmsh.model.mesh.getNodes(returnParametricCoord=False)
    node_tags = np.asarray(node_tags, dtype=np.int64)
    node_coords = np.asarray(node_coords, dtype=np.float64).reshape(-1, 3)
    if dim == 2:
        node_coords[:, 2] = 0.0  # within PLANE_TOLERANCE of it (_elements)
    sorter = np.argsort(node_tags)
    order = max(gmsh.model.mesh.getElementProperties(t)[2] for t in types)
    n = order + 1
    all_tags, all_nodes, all_corners = [], [], []
    for element_type in types:
        name, _, _, num_nodes, local, _ = gmsh.model.mesh.getElementProperties(element_type)
        local = np.asarray(local, dtype=np.float64).reshape(num_nodes, dim)
        element_tags, element_node_tags = gmsh.model.mesh.getElementsByType(element_type)
        element_node_tags = np.asarray(element_node_tags, dtype=np.int64).reshape(-1, num_nodes)
        at = sorter[np.searchsorted(node_tags, element_node_tags, sorter=sorter)]
        x = node_coords[at]  # (E, num_nodes, 3)
        # (finite, within mesh/box.py MAX_EXTENT: msh_check checked every node of $Nodes in each format)
        _, basis, _ = gmsh.model.mesh.getBasisFunctions(element_type, _gll_local_points(order, local), "Lagrange")
        basis = np.asarray(basis, dtype=np.float64).reshape(n**dim, num_nodes)
        nodes = np.einsum("pm,emc->ecp", basis, x).reshape(len(x), 3, n if dim == 3 else 1, n, n)
        # lobatto's corner a + 2b + 4c is the node at local (lo or hi) per axis, found by coordinates
        lo, hi = local.min(axis=0), local.max(axis=0)
        corner_nodes = []
        for v in range(NUM_VERTICES[dim]):
            want = np.where([(v & 1), (v >> 1) & 1, (v >> 2) & 1][:dim], hi, lo)
            corner_nodes.append(int(np.argmin(np.abs(local - want).sum(axis=1))))
        all_tags.append(np.asarray(element_tags, dtype=np.int64))
        all_nodes.append(nodes)
        all_corners.append(element_node_tags[:, corner_nodes])
    tags = np.concatenate(all_tags)
    by_tag = np.argsort(tags, kind="stable")
    tags, nodes, corners = tags[by_tag], np.concatenate(all_nodes)[by_tag], np.concatenate(all_corners)[by_tag]
    flipped = _right_handed(nodes, corners)
    return tags, nodes, corners, order, flipped


def _right_handed(nodes: np.ndarray, corners: np.ndarray) -> int:
    """Mirror (in place, along r) elements whose map from the reference cube turns it inside out
    (a negative Jacobian at the centre); lobatto needs positive Jacobians. Returns how many.
    A quadrilateral is inside out when it runs clockwise seen from +z."""
    q = nodes.shape[-1] - 1
    if dimension_of(nodes.shape) == 2:
        c = np.stack([nodes[:, :2, 0, (v >> 1) * q, (v & 1) * q] for v in range(4)], axis=1)
        dr, ds = (c[:, 1] + c[:, 3]) - (c[:, 0] + c[:, 2]), (c[:, 2] + c[:, 3]) - (c[:, 0] + c[:, 1])
        mirrored = dr[:, 0] * ds[:, 1] - dr[:, 1] * ds[:, 0] < 0
        nodes[mirrored] = nodes[mirrored][..., ::-1]
        corners[mirrored] = corners[mirrored][:, [1, 0, 3, 2]]
        return int(mirrored.sum())
    c = np.stack([nodes[:, :, (v >> 2) * q, ((v >> 1) & 1) * q, (v & 1) * q] for v in range(8)], axis=1)
    dr = (c[:, 1] + c[:, 3] + c[:, 5] + c[:, 7]) - (c[:, 0] + c[:, 2] + c[:, 4] + c[:, 6])
    ds = (c[:, 2] + c[:, 3] + c[:, 6] + c[:, 7]) - (c[:, 0] + c[:, 1] + c[:, 4] + c[:, 5])
    dt = (c[:, 4] + c[:, 5] + c[:, 6] + c[:, 7]) - (c[:, 0] + c[:, 1] + c[:, 2] + c[:, 3])
    mirrored = np.einsum("ec,ec->e", dr, np.cross(ds, dt)) < 0
    if mirrored.any():
        nodes[mirrored] = nodes[mirrored][..., ::-1]
        corners[mirrored] = corners[mirrored][:, [1, 0, 3, 2, 5, 4, 7, 6]]
    return int(mirrored.sum())


def _group_name(gmsh, dim: int, tag: int) -> str:
    return gmsh.model.getPhysicalName(dim, tag) or str(tag)


class _FaceTable:
    """The hex faces (element * 6 + face) by their corner node tags, for lookups by corners; in
    2-D the quads' edges (element * 4 + edge) by their two end nodes."""

    def __init__(self, corner_tags: np.ndarray, dim: int = 3):
        self.dim, self.num_faces, per_face = dim, num_faces(dim), 2 ** (dim - 1)
        self.row = np.dtype([(f"c{i}", np.int64) for i in range(per_face)])
        self.corners = corner_tags[:, np.array(face_corners(dim))].reshape(-1, per_face)  # (6E, 4) or (4E, 2)
        table = np.ascontiguousarray(np.sort(self.corners, axis=1)).view(self.row).ravel()
        self.order = np.argsort(table, kind="stable")
        self.table = table[self.order]

    def find(self, corners: np.ndarray):
        """(first, last): the faces with these corners (any order) are order[first:last]."""
        query = np.ascontiguousarray(np.sort(corners, axis=1)).view(self.row).ravel()
        return np.searchsorted(self.table, query, side="left"), np.searchsorted(self.table, query, side="right")


def _surface_groups(gmsh, path: Path, faces: _FaceTable) -> dict:
    """{group name: (n, 2) (element, face)}: each quadrilateral of a physical surface group on
    the hex faces with the same four corner nodes (both sides of a face inside the mesh); in
    2-D each line of a physical curve group on the quads' edges with the same two end nodes."""
    order, nf, per_face = faces.order, faces.num_faces, 2 ** (faces.dim - 1)
    word = _GROUP[faces.dim - 1]
    side, element = ("faces", "hexahedra") if faces.dim == 3 else ("edges", "quadrilaterals")
    shape, hint = ("quadrilateral", ALL_HEX_HINT) if faces.dim == 3 else ("line", ALL_QUAD_HINT)
    groups: dict = {}
    for dim, tag in gmsh.model.getPhysicalGroups(faces.dim - 1):
        name = _group_name(gmsh, dim, tag)
        if name in groups:
            raise InputError(f"{path}: two physical {word} groups are named '{name}'")
        keys = []
        for entity in gmsh.model.getEntitiesForPhysicalGroup(dim, tag):
            types, _, element_node_tags = gmsh.model.mesh.getElements(dim, entity)
            for element_type, node_list in zip(types, element_node_tags):
                type_name, _, _, num_nodes, _, primary = gmsh.model.mesh.getElementProperties(element_type)
                if primary != per_face:
                    raise InputError(f"{path}: physical {word} group '{name}' holds {type_name} elements; the "
                                     f"{side} of {element} are {shape}s: {hint}")
                sides = np.asarray(node_list, dtype=np.int64).reshape(-1, num_nodes)[:, :per_face]
                keys.append(np.sort(sides, axis=1))
        if not keys:
            groups[name] = np.zeros((0, 2), dtype=np.int64)
            continue
        first, last = faces.find(np.concatenate(keys))
        if np.any(last == first):
            missing = np.concatenate(keys)[int(np.argmax(last == first))]
            what = "no face of any hexahedron" if faces.dim == 3 else "no edge of any quadrilateral"
            raise InputError(f"{path}: physical {word} group '{name}' has a {shape} (nodes "
                             f"{missing.tolist()}) that is {what}")
        hits = np.concatenate([order[a:b] for a, b in zip(first, last)])  # faces inside: both sides
        hits = np.unique(hits)
        groups[name] = np.stack([hits // nf, hits % nf], axis=1)
    return groups


def _periodic_faces(gmsh, path: Path, faces: _FaceTable):
    """(n, 4) (element, face, element, face): every hex face on a periodic surface and the face
    on its master surface; None without periodic surfaces. In 2-D: periodic curves and edges."""
    pairs, nf = [], faces.num_faces
    word, face = (_GROUP[faces.dim - 1], "hex face" if faces.dim == 3 else "quadrilateral edge")
    for dim, tag in gmsh.model.getEntities(faces.dim - 1):
        master, slaves, masters, _ = gmsh.model.mesh.getPeriodicNodes(dim, tag)
        if master == tag or len(slaves) == 0:
            continue
        slaves, masters = np.asarray(slaves, dtype=np.int64), np.asarray(masters, dtype=np.int64)
        by_slave = np.argsort(slaves)
        on_surface = np.flatnonzero(np.isin(faces.corners, slaves).all(axis=1))
        mapped = masters[by_slave][np.searchsorted(slaves, faces.corners[on_surface], sorter=by_slave)]
        first, last = faces.find(mapped)
        if np.any(last - first != 1):
            raise InputError(f"{path}: {word} {tag} is periodic with {word} {master}, but a {face} on it has "
                             f"{'no' if np.any(last == first) else 'more than one'} partner face on {word} {master}")
        partner = faces.order[first]
        pairs.append(np.stack([on_surface // nf, on_surface % nf, partner // nf, partner % nf], axis=1))
    return np.concatenate(pairs) if pairs else None


def _volume_groups(gmsh, path: Path, element_tags: np.ndarray, dim: int = 3):
    """(regions (E,), region names) from the physical volume groups (surface groups in 2-D);
    without any, one "all"."""
    physical = gmsh.model.getPhysicalGroups(dim)
    word = _GROUP[dim]
    if not physical:
        return np.zeros(len(element_tags), dtype=np.int64), ("all",)
    regions = np.full(len(element_tags), -1, dtype=np.int64)
    names = []
    for index, (dim, tag) in enumerate(physical):
        name = _group_name(gmsh, dim, tag)
        if name in names:
            raise InputError(f"{path}: two physical {word} groups are named '{name}'")
        names.append(name)
        members = [np.asarray(t, dtype=np.int64) for entity in gmsh.model.getEntitiesForPhysicalGroup(dim, tag)
                   for t in gmsh.model.mesh.getElements(dim, entity)[1]]
        if not members:
            continue
        rows = np.searchsorted(element_tags, np.concatenate(members))
        taken = regions[rows] >= 0
        if taken.any():
            other = names[regions[rows[int(np.argmax(taken))]]]
            raise InputError(f"{path}: gmsh element {element_tags[rows[int(np.argmax(taken))]]} is in two physical "
                             f"{word} groups, '{other}' and '{name}'; lobatto gives each element one region")
        regions[rows] = index
    if np.any(regions < 0):
        names.append("unassigned")
        regions[regions < 0] = len(names) - 1
    return regions, tuple(names)
