"""A check of a gmsh MSH file's structure (MSH 2.2 and 4.1, ASCII and binary) before the gmsh SDK
reads it.

Why: the SDK trusts the file. In MSH 2.2 an element naming the node one past the last reads
past the end of an array (SIGSEGV); in MSH 4.1 blocks that hold more nodes or elements than the
section header announces overrun the SDK's caches (``double free or corruption``); a physical
name of dimension 7 indexes past a 4-entry table; an unknown element type in a binary MSH 2.2
file leaves a null element that is dereferenced later. None of that can be caught in-process, so
every count, size, tag and cross-reference the SDK relies on is checked here first, in the form
the SDK reads it (GModelIO_MSH2.cpp, GModelIO_MSH4.cpp of gmsh 4.x), and a damaged file is an
InputError naming the file, the section and, where there is one, the element as the file
numbers it.

What is accepted is a strict subset of what the SDK reads: the sections gmsh writes for a mesh
($MeshFormat, $PhysicalNames, $Entities, $Nodes, $Elements, $Periodic) and other sections it
keeps as text; not partitioned files, ghost elements, parametrizations or post-processing data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto.errors import InputError
from lobatto.mesh.box import MAX_EXTENT
from lobatto.mesh.readers.msh_format import ELEMENT_TYPES, MAX_HEADER_LINE, MAX_TAG, MshContents, MshReader
from lobatto.mesh.readers.msh_sections import (
    elements22,
    elements41,
    entities,
    nodes22,
    nodes41,
    periodic41,
    physical_names,
    skip_text_section,
)

__all__ = ["check_msh", "ELEMENT_TYPES"]

#: sections of a mesh the SDK parses (the rest it keeps as text); by version
KNOWN = {
    "2.2": ("MeshFormat", "PhysicalNames", "Nodes", "Elements"),
    "4.1": ("MeshFormat", "PhysicalNames", "Entities", "Nodes", "Elements", "Periodic"),
}
#: sections the SDK parses that lobatto does not take
REFUSED = {
    "PartitionedEntities": "a partitioned mesh: write the whole mesh in one file",
    "GhostElements": "a partitioned mesh: write the whole mesh in one file",
    "Parametrizations": "surface parametrizations: write the mesh without them",
    "ParametricNodes": "parametric nodes: write the mesh without them",
    "NodeData": "post-processing data: write the mesh alone",
    "ElementData": "post-processing data: write the mesh alone",
    "ElementNodeData": "post-processing data: write the mesh alone",
    "InterpolationScheme": "post-processing data: write the mesh alone",
}

def gmsh_section(version: str, name: str) -> str:
    """The section the SDK takes a header ``$name`` for: it compares prefixes (``$NodesX`` is
    $Nodes to it, and any ``$NO...`` is $Nodes in MSH 2.2); '' for one it keeps as text."""
    if version == "2.2":
        prefixes = [("MeshFormat", "MeshFormat"), ("PhysicalNames", "PhysicalNames"), ("NO", "Nodes"),
                    ("Nodes", "Nodes"), ("ParametricNodes", "ParametricNodes"), ("ELM", "Elements"),
                    ("Elements", "Elements"), ("InterpolationScheme", "InterpolationScheme"),
                    ("NodeData", "NodeData"), ("ElementData", "ElementData"), ("ElementNodeData", "ElementNodeData")]
    else:
        prefixes = [("MeshFormat", "MeshFormat"), ("PhysicalNames", "PhysicalNames"), ("Entities", "Entities"),
                    ("PartitionedEntities", "PartitionedEntities"), ("Nodes", "Nodes"), ("Elements", "Elements"),
                    ("Periodic", "Periodic"), ("GhostElements", "GhostElements"),
                    ("Parametrizations", "Parametrizations"), ("NodeData", "NodeData"),
                    ("ElementData", "ElementData"), ("ElementNodeData", "ElementNodeData")]
    for prefix, section in prefixes:
        if name.startswith(prefix):
            return section
    return ""


def check_msh(path) -> dict:
    """Check the MSH file at ``path``; InputError naming the file (and the element) if it is not
    one the gmsh SDK can read safely. Returns {"version", "binary", "nodes", "elements"}."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot read the mesh file ({error.strerror or error})") from None
    r = MshReader(path, data)
    if r.line("$MeshFormat") != b"$MeshFormat":
        r.fail("not a gmsh MSH file (it must start with $MeshFormat; write the mesh with gmsh's "
               "File > Export or gmsh.write('mesh.msh'))")
    words = r.line("the MSH version").split()
    version = words[0].decode("ascii", "replace")[:20] if words else "?"
    if version not in ("2.2", "4.1"):
        r.fail(f"MSH version {version} is not supported (write MSH 4.1 or 2.2)")
    if len(words) != 3 or words[1] not in (b"0", b"1") or words[2] != b"8":
        r.fail(f"damaged MSH file: the $MeshFormat line {b' '.join(words)[:60].decode('ascii', 'replace')!r} "
               "is not 'VERSION FILE-TYPE 8' with FILE-TYPE 0 (ASCII) or 1 (binary)")
    binary = words[1] == b"1"
    if binary:
        one = data[r.pos:r.pos + 4]
        if one not in (b"\x01\x00\x00\x00", b"\x00\x00\x00\x01"):
            r.fail("damaged binary MSH file: the word after the $MeshFormat line is not the integer 1 "
                   "in either byte order")
        r.order = "<" if one[0] == 1 else ">"
        r.pos += 4
    r.end_of_section("MeshFormat")
    mesh = MshContents()
    while r.pos < len(data):
        start = r.pos
        header = r.line("a section")
        if not header.strip():
            continue
        name = header[1:].decode("ascii", "replace") if header.startswith(b"$") else ""
        if not name or len(header) > MAX_HEADER_LINE or not name.isalnum():
            r.fail(f"damaged MSH file: at byte {start}, {header[:40].decode('ascii', 'replace')!r} is no section "
                   "header ($Name)")
        section = gmsh_section(version, name)
        if section and section != name:
            r.fail(f"damaged MSH file: the section header ${name} (byte {start}) is not ${section}, but gmsh "
                   f"would read it as one")
        if name in REFUSED or section in REFUSED:
            r.fail(f"the file has a ${name} section ({REFUSED[name if name in REFUSED else section]}); "
                   "lobatto reads meshes")
        if name in mesh.seen and section:
            r.fail(f"damaged MSH file: a second ${name} section (byte {start})")
        mesh.seen.append(name)
        if not section or name not in KNOWN[version]:
            skip_text_section(r, name)
        elif name == "MeshFormat":
            r.fail(f"damaged MSH file: a second $MeshFormat section (byte {start})")
        elif name == "PhysicalNames":
            physical_names(r, mesh)
        elif name == "Entities":
            entities(r, mesh, binary)
        elif name == "Nodes":
            if "Elements" in mesh.seen:
                r.fail("damaged MSH file: $Elements comes before $Nodes")
            (nodes41 if version == "4.1" else nodes22)(r, mesh, binary)
        elif name == "Elements":
            if mesh.node_tags is None:
                r.fail("damaged MSH file: $Elements comes before $Nodes")
            (elements41 if version == "4.1" else elements22)(r, mesh, binary)
        elif name == "Periodic":
            periodic41(r, mesh, binary)
    cross_check(r, mesh, version)
    count = sum(len(b[3]) for b in mesh.blocks)
    return {"version": version, "binary": binary, "nodes": 0 if mesh.node_tags is None else len(mesh.node_tags),
            "elements": count}


def cross_check(r: MshReader, mesh: MshContents, version: str) -> None:
    if mesh.node_tags is None or "Elements" not in mesh.seen:
        r.fail("damaged MSH file: it has no " + ("$Nodes" if mesh.node_tags is None else "$Elements")
               + " section, so no mesh")
    nodes = mesh.node_tags
    all_tags, all_nodes, owners, dims = [], [], [], []
    for dim, entity, etype, tags, element_nodes in mesh.blocks:
        edim, count = ELEMENT_TYPES[etype]
        if dim is not None and (dim != edim or (dim, entity) not in mesh.entities):
            e = int(tags[0]) if len(tags) else 0
            r.fail(f"damaged MSH file: element {e} (type {etype}, {edim}-D) lies on the {dim}-D entity {entity}, "
                   + ("which is no entity of the file" if dim == edim else "of another dimension"))
        all_tags.append(tags)
        all_nodes.append(element_nodes.reshape(-1))
        owners.append(np.repeat(tags, count))
        dims.append(np.full(len(tags) * count, edim))
    if all_nodes:
        flat, owner = np.concatenate(all_nodes), np.concatenate(owners)
        at = np.clip(np.searchsorted(nodes, flat), 0, max(len(nodes) - 1, 0))
        known = (nodes[at] == flat) if len(nodes) else np.zeros(len(flat), dtype=bool)
        if not known.all():
            i = int(np.argmin(known))
            span = f"{len(nodes)} nodes, tags {int(nodes[0])}..{int(nodes[-1])}" if len(nodes) else "no nodes"
            r.fail(f"the element (number {int(owner[i])} in the file) names node {int(flat[i])}, which is not in "
                   f"$Nodes ({span}): a damaged mesh file")
        _check_coordinates(r, mesh, flat, owner, np.concatenate(dims))
    _check_periodic(r, mesh)
    tags = np.sort(np.concatenate(all_tags)) if all_tags else np.zeros(0, np.int64)
    if len(tags) and (tags[0] < 1 or tags[-1] > MAX_TAG):
        r.fail(f"damaged MSH file: element tag {int(tags[0] if tags[0] < 1 else tags[-1])} (expected 1..{MAX_TAG})")
    repeated = tags[1:] == tags[:-1]
    if repeated.any():
        r.fail(f"damaged MSH file: two elements have the number {int(tags[1:][repeated][0])}")


def _check_coordinates(r: MshReader, mesh: MshContents, flat: np.ndarray, owner: np.ndarray,
                       dims: np.ndarray) -> None:
    """Node coordinates finite and within MAX_EXTENT: the SDK crashed on a nan or 1e100 node of a
    periodic surface (and lobatto's geometry would overflow); named by an element that uses the
    node, as the file numbers it."""
    xyz = mesh.node_xyz
    bad = ~np.isfinite(xyz).all(axis=1) | (np.abs(xyz).max(axis=1, initial=0.0) > MAX_EXTENT)
    if not bad.any():
        return
    flat_bad = bad[np.searchsorted(mesh.node_tags, flat)]  # every node of flat is in $Nodes (checked)
    if flat_bad.any():  # the lowest-numbered element of the highest dimension (a hexahedron) with one
        at = np.flatnonzero(flat_bad)
        j = at[np.lexsort((owner[at], -dims[at]))[0]]
        i = int(np.searchsorted(mesh.node_tags, flat[j]))
        what = f"the element (number {int(owner[j])} in the file) has node {int(flat[j])}"
    else:
        i = int(np.argmax(bad))
        what = f"node {int(mesh.node_tags[i])}"
    where = ", ".join(f"{v:.3g}" for v in xyz[i])
    r.fail(f"{what} at ({where}): coordinates must be finite numbers within {MAX_EXTENT:.0e} of the origin "
           "(a damaged file? else rescale the mesh's units)")


def _check_periodic(r: MshReader, mesh: MshContents) -> None:
    """Each MSH 4.1 periodic link: an affine transformation that is a translation no longer than
    twice the mesh's extent (the SDK crashed on others), node pairs in $Nodes, and each slave node
    the image of its master node to 1e-6 of the mesh's extent."""
    nodes, xyz = mesh.node_tags, mesh.node_xyz
    extent = float(np.max(xyz.max(axis=0) - xyz.min(axis=0))) if len(xyz) else 0.0
    tolerance = 1e-6 * max(extent, 1e-300)
    for k, affine, pairs in mesh.periodic:
        if affine is not None:
            matrix = np.asarray(affine).reshape(4, 4)
            shift = matrix[:3, 3]
            linear = np.abs(matrix[:3, :3] - np.eye(3)).max()
            if not (np.array_equal(matrix[3], [0.0, 0.0, 0.0, 1.0]) and linear <= 1e-12
                    and np.abs(shift).max() <= 2 * extent):
                # lobatto joins translates only (imported.join_periodic_faces); the SDK crashed on
                # other transformations of surfaces without node pairs to check them against
                r.fail(f"periodic link {k} has the affine transformation "
                       f"{[float(f'{v:.3g}') for v in affine]}, which is no translation within the mesh's extent "
                       "(lobatto joins periodic surfaces that are translates of each other; a damaged file?)")
        if not len(pairs):
            continue
        at = np.clip(np.searchsorted(nodes, pairs), 0, max(len(nodes) - 1, 0))
        known = nodes[at] == pairs if len(nodes) else np.zeros(pairs.shape, dtype=bool)
        if not known.all():
            r.fail(f"damaged MSH file: periodic link {k} names node {int(pairs[~known][0])}, which is not in $Nodes")
        if affine is None:
            continue
        matrix = np.asarray(affine).reshape(4, 4)
        image = xyz[at[:, 1]] @ matrix[:3, :3].T + matrix[:3, 3]
        off = np.abs(image - xyz[at[:, 0]]).max(axis=1)
        if not off.max() <= tolerance:
            j = int(np.argmax(off))
            r.fail(f"damaged MSH file: periodic link {k}: node {int(pairs[j, 0])} is {off[j]:.3g} away from the image of "
                   f"node {int(pairs[j, 1])} under the link's affine transformation")
