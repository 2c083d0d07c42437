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
    all_tags, all_nodes, owners = [], [], []
    for dim, entity, etype, tags, element_nodes in mesh.blocks:
        edim, count = ELEMENT_TYPES[etype]
        if dim is not None and (dim != edim or (dim, entity) not in mesh.entities):
            e = int(tags[0]) if len(tags) else 0
            r.fail(f"damaged MSH file: element {e} (type {etype}, {edim}-D) lies on the {dim}-D entity {entity}, "
                   + ("which is no entity of the file" if dim == edim else "of another dimension"))
        all_tags.append(tags)
        all_nodes.append(element_nodes.reshape(-1))
        owners.append(np.repeat(tags, count))
    if all_nodes:
        flat, owner = np.concatenate(all_nodes), np.concatenate(owners)
        at = np.clip(np.searchsorted(nodes, flat), 0, max(len(nodes) - 1, 0))
        known = (nodes[at] == flat) if len(nodes) else np.zeros(len(flat), dtype=bool)
        if not known.all():
            i = int(np.argmin(known))
            span = f"{len(nodes)} nodes, tags {int(nodes[0])}..{int(nodes[-1])}" if len(nodes) else "no nodes"
            r.fail(f"element {int(owner[i])} (as the file numbers it) names node {int(flat[i])}, which is not in "
                   f"$Nodes ({span}): a damaged mesh file")
    tags = np.sort(np.concatenate(all_tags)) if all_tags else np.zeros(0, np.int64)
    if len(tags) and (tags[0] < 1 or tags[-1] > MAX_TAG):
        r.fail(f"damaged MSH file: element tag {int(tags[0] if tags[0] < 1 else tags[-1])} (expected 1..{MAX_TAG})")
    repeated = tags[1:] == tags[:-1]
    if repeated.any():
        r.fail(f"damaged MSH file: two elements have the number {int(tags[1:][repeated][0])}")
