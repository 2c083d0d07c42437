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

import re
import struct
from pathlib import Path

import numpy as np

from lobatto.errors import InputError

#: MSH element type -> (dimension, nodes), as gmsh 4.15 gives them (getElementProperties); the
#: polygon, polyhedron, one-node and XFEM types, which lobatto cannot use, are left out
ELEMENT_TYPES = {
    1: (1, 2), 2: (2, 3), 3: (2, 4), 4: (3, 4), 5: (3, 8), 6: (3, 6), 7: (3, 5), 8: (1, 3), 9: (2, 6), 10: (2, 9),
    11: (3, 10), 12: (3, 27), 13: (3, 18), 14: (3, 14), 15: (0, 1), 16: (2, 8), 17: (3, 20), 18: (3, 15),
    19: (3, 13), 20: (2, 9), 21: (2, 10), 22: (2, 12), 23: (2, 15), 24: (2, 15), 25: (2, 21), 26: (1, 4),
    27: (1, 5), 28: (1, 6), 29: (3, 20), 30: (3, 35), 31: (3, 56), 32: (3, 22), 33: (3, 28), 36: (2, 16),
    37: (2, 25), 38: (2, 36), 39: (2, 12), 40: (2, 16), 41: (2, 20), 42: (2, 28), 43: (2, 36), 44: (2, 45),
    45: (2, 55), 46: (2, 66), 47: (2, 49), 48: (2, 64), 49: (2, 81), 50: (2, 100), 51: (2, 121), 52: (2, 18),
    53: (2, 21), 54: (2, 24), 55: (2, 27), 56: (2, 30), 57: (2, 24), 58: (2, 28), 59: (2, 32), 60: (2, 36),
    61: (2, 40), 62: (1, 7), 63: (1, 8), 64: (1, 9), 65: (1, 10), 66: (1, 11), 71: (3, 84), 72: (3, 120),
    73: (3, 165), 74: (3, 220), 75: (3, 286), 79: (3, 34), 80: (3, 40), 81: (3, 46), 82: (3, 52), 83: (3, 58),
    92: (3, 64), 93: (3, 125), 94: (3, 216), 95: (3, 343), 96: (3, 512), 97: (3, 729), 98: (3, 1000),
    99: (3, 32), 100: (3, 44), 101: (3, 56), 102: (3, 68), 103: (3, 80), 104: (3, 92), 105: (3, 104),
    118: (3, 30), 119: (3, 55), 120: (3, 91), 121: (3, 140), 122: (3, 204), 123: (3, 285), 124: (3, 385),
    125: (3, 21), 126: (3, 29), 127: (3, 37), 128: (3, 45), 129: (3, 53), 130: (3, 61), 131: (3, 69),
    137: (3, 16),
}
#: node and element tags above this are refused (lobatto keeps tags as int64)
MAX_TAG = 2**62
#: the SDK reads an ASCII MSH 4.1 element with one fgets of a 10000-byte buffer
MAX_ELEMENT_LINE = 9999
#: the SDK reads header and name lines into buffers of 256 bytes (MSH 2.2) or 1024 (MSH 4.1)
MAX_HEADER_LINE = 255
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
_INT = re.compile(rb"[-+]?\d+")


def _gmsh_section(version: str, name: str) -> str:
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


class _Reader:
    """The file's bytes and a position; every error names the file."""

    def __init__(self, path: Path, data: bytes):
        self.path, self.data, self.pos = path, data, 0
        self.order = "<"

    def fail(self, message: str):
        raise InputError(f"{self.path}: {message}")

    def line(self, what: str) -> bytes:
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            if self.pos >= len(self.data):
                self.fail(f"truncated MSH file: it ends before {what}")
            end = len(self.data)
        text = self.data[self.pos:end].rstrip(b"\r")
        self.pos = end + 1
        return text

    def end_of_section(self, name: str) -> None:
        """Past optional blank space, the line ``$End<name>``."""
        while self.pos < len(self.data) and self.data[self.pos:self.pos + 1] in b" \t\r\n":
            self.pos += 1
        at = self.pos
        if self.line(f"$End{name}") != f"$End{name}".encode():
            self.fail(f"damaged MSH file: the ${name} section holds more or other data than it announces "
                      f"(expected $End{name} at byte {at})")

    def body(self, name: str) -> bytes:
        """The text of an ASCII section up to its ``$End<name>`` line (which is consumed)."""
        marker = b"\n$End" + name.encode()
        at = self.data.find(marker, self.pos - 1)
        if at < 0:
            self.fail(f"truncated MSH file: the ${name} section has no $End{name} line")
        text = self.data[self.pos:at + 1]
        self.pos = at + 1
        if self.line(f"$End{name}") != f"$End{name}".encode():
            self.fail(f"damaged MSH file: the ${name} section ends in a damaged $End{name} line")
        return text

    def take(self, dtype, count: int, what: str) -> np.ndarray:
        dtype = np.dtype(dtype).newbyteorder(self.order)
        need = dtype.itemsize * count
        if count < 0 or self.pos + need > len(self.data):
            self.fail(f"truncated or damaged MSH file: {what} take {need} bytes from byte {self.pos}, "
                      f"but the file has {len(self.data)} bytes")
        out = np.frombuffer(self.data, dtype, count, self.pos)
        self.pos += need
        return out

    def scalars(self, code: str, count: int, what: str) -> tuple:
        """``count`` int32 (code 'i') or uint64 ('Q') values; faster than take() for a few."""
        need = struct.calcsize(f"<{count}{code}")
        if self.pos + need > len(self.data):
            self.fail(f"truncated or damaged MSH file: {what} take {need} bytes from byte {self.pos}, "
                      f"but the file has {len(self.data)} bytes")
        values = struct.unpack_from(f"{self.order}{count}{code}", self.data, self.pos)
        self.pos += need
        return values

    def skip(self, itemsize: int, count: int, what: str) -> None:
        need = itemsize * count
        if count < 0 or self.pos + need > len(self.data):
            self.fail(f"truncated or damaged MSH file: {what} take {need} bytes from byte {self.pos}, "
                      f"but the file has {len(self.data)} bytes")
        self.pos += need

    def size(self, what: str, limit: int | None = None) -> int:
        """One size_t count of a binary MSH 4.1 section, at most what the rest of the file can hold."""
        (value,) = self.scalars("Q", 1, what)
        room = len(self.data) - self.pos
        if value > (room if limit is None else min(room, limit)):
            self.fail(f"damaged MSH file: {what} is {value}, more than the {room} bytes left in the file hold")
        return value


class _Tokens:
    """Whitespace-separated numbers of an ASCII section, read the way fscanf reads them."""

    def __init__(self, reader: _Reader, name: str, text: bytes):
        if b"_" in text:
            reader.fail(f"damaged MSH file: the ${name} section holds '_', which is no part of a number")
        self.reader, self.name, self.tokens, self.i = reader, name, text.split(), 0

    def fail(self, message: str):
        self.reader.fail(f"damaged MSH file: ${self.name}: {message}")

    def ints(self, count: int, what: str, low: int = 0, high: int = MAX_TAG) -> np.ndarray:
        if count < 0 or self.i + count > len(self.tokens):
            self.fail(f"{what}: the section ends early ({len(self.tokens) - self.i} numbers left, "
                      f"{count} needed)")
        part = self.tokens[self.i:self.i + count]
        try:
            values = [int(t) for t in part]
        except ValueError:
            bad = next(t for t in part if not _INT.fullmatch(t))
            self.fail(f"{what}: expected an integer, got {bad[:40].decode('ascii', 'replace')!r}")
        if count and (min(values) < low or max(values) > high):
            v = next(v for v in values if not low <= v <= high)
            self.fail(f"{what}: {v} is out of range ({low}..{high})")
        self.i += count
        return np.array(values, dtype=np.int64) if count > 16 else values

    def int(self, what: str, low: int = 0, high: int = MAX_TAG) -> int:
        return int(self.ints(1, what, low, high)[0])

    def floats(self, count: int, what: str) -> None:
        if count < 0 or self.i + count > len(self.tokens):
            self.fail(f"{what}: the section ends early ({len(self.tokens) - self.i} numbers left, "
                      f"{count} needed)")
        part = self.tokens[self.i:self.i + count]
        try:
            np.array(part, dtype=np.float64) if count > 16 else [float(t) for t in part]
        except (ValueError, OverflowError):
            bad = next(t for t in part if not _is_float(t))
            self.fail(f"{what}: expected a number, got {bad[:40].decode('ascii', 'replace')!r}")
        self.i += count

    def done(self) -> None:
        if self.i != len(self.tokens):
            self.fail(f"{len(self.tokens) - self.i} numbers more than the section announces")


def _is_float(token: bytes) -> bool:
    try:
        float(token)
        return True
    except ValueError:
        return False


class _Mesh:
    """What the cross-checks need: node tags, and per element block its tags, type, entity, nodes."""

    def __init__(self):
        self.physical_names = []     # (dim, tag, name)
        self.entities = set()        # (dim, tag)
        self.node_tags = None
        self.blocks = []             # (entity dim, entity tag or None, type, element tags, (n, k) node tags)
        self.periodic = []           # (dim, slave tag, master tag)
        self.seen = []


def check_msh(path) -> dict:
    """Check the MSH file at ``path``; InputError naming the file (and the element) if it is not
    one the gmsh SDK can read safely. Returns {"version", "binary", "nodes", "elements"}."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot read the mesh file ({error.strerror or error})") from None
    r = _Reader(path, data)
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
    mesh = _Mesh()
    while r.pos < len(data):
        start = r.pos
        header = r.line("a section")
        if not header.strip():
            continue
        name = header[1:].decode("ascii", "replace") if header.startswith(b"$") else ""
        if not name or len(header) > MAX_HEADER_LINE or not name.isalnum():
            r.fail(f"damaged MSH file: at byte {start}, {header[:40].decode('ascii', 'replace')!r} is no section "
                   "header ($Name)")
        section = _gmsh_section(version, name)
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
            _skip_text_section(r, name)
        elif name == "MeshFormat":
            r.fail(f"damaged MSH file: a second $MeshFormat section (byte {start})")
        elif name == "PhysicalNames":
            _physical_names(r, mesh)
        elif name == "Entities":
            _entities(r, mesh, binary)
        elif name == "Nodes":
            if "Elements" in mesh.seen:
                r.fail("damaged MSH file: $Elements comes before $Nodes")
            (_nodes41 if version == "4.1" else _nodes22)(r, mesh, binary)
        elif name == "Elements":
            if mesh.node_tags is None:
                r.fail("damaged MSH file: $Elements comes before $Nodes")
            (_elements41 if version == "4.1" else _elements22)(r, mesh, binary)
        elif name == "Periodic":
            _periodic41(r, mesh, binary)
    _cross_check(r, mesh, version)
    count = sum(len(b[3]) for b in mesh.blocks)
    return {"version": version, "binary": binary, "nodes": 0 if mesh.node_tags is None else len(mesh.node_tags),
            "elements": count}


def _skip_text_section(r: _Reader, name: str) -> None:
    """A section the SDK keeps as lines of text: it must end, and hold no line it would take
    for a section header."""
    marker = b"\n$End" + name.encode()
    at = r.data.find(marker, r.pos - 1)
    if at < 0:
        r.fail(f"truncated MSH file: the ${name} section has no $End{name} line")
    for line in r.data[r.pos:at + 1].split(b"\n"):
        if line.startswith(b"$") or len(line) > MAX_HEADER_LINE:
            r.fail(f"damaged MSH file: the ${name} section holds a line that is too long or starts with '$'")
    r.pos = at + 1
    if r.line(f"$End{name}").rstrip() != f"$End{name}".encode():
        r.fail(f"damaged MSH file: the ${name} section ends in a damaged $End{name} line")


def _physical_names(r: _Reader, mesh: _Mesh) -> None:
    text = r.body("PhysicalNames")
    lines = [line.rstrip(b"\r") for line in text.split(b"\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    head = lines[0].split() if lines else []
    if len(head) != 1 or not _INT.fullmatch(head[0]) or int(head[0]) != len(lines) - 1:
        r.fail(f"damaged MSH file: $PhysicalNames announces {head[0][:20].decode('ascii', 'replace') if head else '?'} "
               f"names on its first line and holds {max(len(lines) - 1, 0)}")
    for line in lines[1:]:
        match = re.fullmatch(rb"\s*([-+]?\d{1,9})\s+([-+]?\d{1,9})\s+\"([^\"]*)\"\s*", line)
        if match is None or len(line) > MAX_HEADER_LINE:
            r.fail(f"damaged MSH file: $PhysicalNames line {line[:60].decode('ascii', 'replace')!r} is not "
                   "'DIMENSION TAG \"NAME\"'")
        dim, tag = int(match[1]), int(match[2])
        try:
            name = match[3].decode("utf-8")
        except UnicodeDecodeError:
            r.fail(f"damaged MSH file: the physical name of dimension {dim} tag {tag} is not UTF-8 text")
        if not 0 <= dim <= 3 or tag < 1:
            r.fail(f"damaged MSH file: physical name {name!r} has dimension {dim} and tag {tag} "
                   "(expected a dimension 0..3 and a positive tag)")
        if not name.isprintable():
            r.fail(f"damaged MSH file: the physical name {name!r} (dimension {dim}, tag {tag}) holds control "
                   "characters")
        mesh.physical_names.append((dim, tag, name))


def _entities(r: _Reader, mesh: _Mesh, binary: bool) -> None:
    if binary:
        counts = [r.size("the number of entities") for _ in range(4)]
        for dim in range(4):
            for _ in range(counts[dim]):
                (tag,) = r.scalars("i", 1, "an entity's tag")
                r.skip(8, 3 if dim == 0 else 6, "the bounding box of an entity")
                r.skip(4, r.size("the physical tags of an entity", 2**20),
                       "the physical tags of an entity")
                if dim:
                    r.skip(4, r.size("the bounding entities of an entity", 2**24),
                           "the bounding entities of an entity")
                mesh.entities.add((dim, tag))
        r.end_of_section("Entities")
        return
    t = _Tokens(r, "Entities", r.body("Entities"))
    counts = [int(v) for v in t.ints(4, "the number of entities", 0, 2**31)]
    for dim in range(4):
        for _ in range(counts[dim]):
            tag = t.int("an entity's tag", -2**31, 2**31 - 1)
            t.floats(3 if dim == 0 else 6, "the bounding box of an entity")
            t.ints(t.int("the physical tags of an entity", 0, 2**20), "a physical tag",
                   -2**31, 2**31 - 1)
            if dim:
                t.ints(t.int("the bounding entities of an entity", 0, 2**24), "a bounding entity",
                       -2**31, 2**31 - 1)
            mesh.entities.add((dim, tag))
    t.done()


def _nodes41(r: _Reader, mesh: _Mesh, binary: bool) -> None:
    tags = []
    if binary:
        blocks, total = r.size("the number of node blocks"), r.size("the number of nodes")
        r.skip(8, 2, "the smallest and largest node tags")
        for b in range(blocks):
            dim, entity, parametric = r.scalars("i", 3, "the header of a node block")
            count = r.size("the number of nodes in a block")
            _node_block_header(r, b, dim, parametric)
            tags.append(r.take(np.uint64, count, "the tags of a node block"))
            r.skip(8, count * (3 + (dim if parametric else 0)), "the coordinates of a node block")
            mesh.entities.add((dim, entity))
        r.end_of_section("Nodes")
    else:
        t = _Tokens(r, "Nodes", r.body("Nodes"))
        blocks, total = (int(v) for v in t.ints(2, "the numbers of node blocks and nodes", 0, 2**40))
        t.ints(2, "the smallest and largest node tags")
        for b in range(blocks):
            dim, entity, parametric = (int(v) for v in t.ints(3, "the header of a node block",
                                                              -2**31, 2**31 - 1))
            count = t.int("the number of nodes in a block", 0, 2**40)
            _node_block_header(r, b, dim, parametric)
            tags.append(t.ints(count, "the tags of a node block"))
            t.floats(count * (3 + (dim if parametric else 0)), "the coordinates of a node block")
            mesh.entities.add((dim, entity))
        t.done()
    _set_nodes(r, mesh, tags, total)


def _node_block_header(r: _Reader, b: int, dim: int, parametric: int) -> None:
    if not 0 <= dim <= 3 or parametric not in (0, 1):
        r.fail(f"damaged MSH file: node block {b + 1} is on an entity of dimension {dim} with parametric flag "
               f"{parametric} (expected 0..3 and 0 or 1)")


def _set_nodes(r: _Reader, mesh: _Mesh, tags: list, total: int) -> None:
    tags = np.concatenate([np.asarray(t) for t in tags]) if tags else np.zeros(0, np.int64)  # uint64 if binary
    if len(tags) != total:
        r.fail(f"damaged MSH file: $Nodes announces {total} nodes, its blocks hold {len(tags)}")
    if len(tags) and (tags.min() < 1 or tags.max() > MAX_TAG):
        bad = tags[(tags < 1) | (tags > MAX_TAG)][0]
        r.fail(f"damaged MSH file: node tag {int(bad)} (expected 1..{MAX_TAG})")
    ordered = np.sort(tags.astype(np.int64))
    repeated = ordered[1:] == ordered[:-1]
    if repeated.any():
        r.fail(f"damaged MSH file: node tag {int(ordered[1:][repeated][0])} appears twice in $Nodes")
    mesh.node_tags = ordered


def _nodes22(r: _Reader, mesh: _Mesh, binary: bool) -> None:
    head = r.line("the number of nodes").split()
    if len(head) != 1 or not _INT.fullmatch(head[0]) or not 0 <= int(head[0]) < 2**31:
        r.fail("damaged MSH file: the line after $Nodes is not the number of nodes")
    total = int(head[0])
    if binary:
        records = r.take(np.dtype([("tag", "i4"), ("xyz", "f8", (3,))]), total, f"the {total} nodes")
        r.end_of_section("Nodes")
        tags = records["tag"].astype(np.int64)
    else:
        t = _Tokens(r, "Nodes", r.body("Nodes"))
        if len(t.tokens) != 4 * total:
            t.fail(f"the section announces {total} nodes (4 numbers each) and holds {len(t.tokens)} numbers")
        t.floats(4 * total, "the nodes")  # every token a number, then the tags whole numbers
        t.tokens, t.i = t.tokens[0::4], 0
        tags = np.asarray(t.ints(total, "a node tag", -2**63 + 1, 2**63 - 1), dtype=np.int64)
    if len(tags) and (tags.min() < 1 or tags.max() >= 2**31):
        r.fail(f"damaged MSH file: node tag {int(tags[(tags < 1) | (tags >= 2**31)][0])} (expected 1..{2**31 - 1})")
    _set_nodes(r, mesh, [tags], total)


def _element_type(r: _Reader, etype: int, where: str) -> tuple:
    if etype not in ELEMENT_TYPES:
        r.fail(f"damaged MSH file: {where} has element type {etype}, which is no type of element lobatto can "
               "read (hexahedra, and quadrilaterals, lines, points on the boundary)")
    return ELEMENT_TYPES[etype]


def _elements41(r: _Reader, mesh: _Mesh, binary: bool) -> None:
    if binary:
        blocks, total = r.size("the number of element blocks"), r.size("the number of elements")
        r.skip(8, 2, "the smallest and largest element tags")
        for b in range(blocks):
            dim, entity, etype = r.scalars("i", 3, "the header of an element block")
            count = r.size("the number of elements in a block")
            _, nodes = _element_type(r, etype, f"element block {b + 1}")
            rows = r.take(np.uint64, count * (1 + nodes), f"the {count} elements of block {b + 1}")
            rows = rows.reshape(count, 1 + nodes)
            if count and rows.max() > MAX_TAG:
                r.fail(f"damaged MSH file: element block {b + 1} holds the tag {int(rows.max())} "
                       f"(tags are 1..{MAX_TAG})")
            rows = rows.astype(np.int64)
            mesh.blocks.append((dim, entity, etype, rows[:, 0], rows[:, 1:]))
        r.end_of_section("Elements")
    else:
        text = r.body("Elements")
        if b"_" in text:
            r.fail("damaged MSH file: the $Elements section holds '_', which is no part of a number")
        lines = text.split(b"\n")
        at = 0

        def next_line():
            nonlocal at
            while at < len(lines) and not lines[at].strip():
                at += 1
            if at >= len(lines):
                r.fail("truncated or damaged MSH file: $Elements ends before the elements it announces")
            at += 1
            return lines[at - 1]

        head = _Tokens(r, "Elements", next_line())
        blocks, total = (int(v) for v in head.ints(2, "the numbers of element blocks and elements", 0, 2**40))
        head.ints(2, "the smallest and largest element tags")
        head.done()
        for b in range(blocks):
            t = _Tokens(r, "Elements", next_line())
            dim, entity, etype = (int(v) for v in t.ints(3, "the header of an element block",
                                                         -2**31, 2**31 - 1))
            count = t.int("the number of elements in a block", 0, 2**40)
            t.done()
            _, nodes = _element_type(r, etype, f"element block {b + 1}")
            if count > len(lines) - at:
                r.fail(f"truncated or damaged MSH file: element block {b + 1} announces {count} elements, "
                       f"$Elements has {len(lines) - at} lines left")
            rows = [next_line() for _ in range(count)]
            if any(len(row) > MAX_ELEMENT_LINE for row in rows):
                r.fail(f"damaged MSH file: element block {b + 1} has a line longer than {MAX_ELEMENT_LINE} bytes")
            split = [row.split() for row in rows]
            wrong = [i for i, row in enumerate(split) if len(row) != 1 + nodes]
            if wrong:
                row = split[wrong[0]]
                what = f"element {row[0][:20].decode('ascii', 'replace')}" if row else "an element"
                r.fail(f"damaged MSH file: {what} of block {b + 1} has {len(row) - 1} node tags on its line, "
                       f"its type {etype} has {nodes}")
            t = _Tokens(r, "Elements", b" ".join(b" ".join(row) for row in split))
            values = np.asarray(t.ints(count * (1 + nodes), f"the elements of block {b + 1}"), dtype=np.int64)
            values = values.reshape(count, 1 + nodes)
            mesh.blocks.append((dim, entity, etype, values[:, 0], values[:, 1:]))
        if any(line.strip() for line in lines[at:]):
            r.fail("damaged MSH file: $Elements holds more lines than its blocks announce")
    held = sum(len(block[3]) for block in mesh.blocks)
    if held != total:
        r.fail(f"damaged MSH file: $Elements announces {total} elements, its blocks hold {held}")


def _elements22(r: _Reader, mesh: _Mesh, binary: bool) -> None:
    head = r.line("the number of elements").split()
    if len(head) != 1 or not _INT.fullmatch(head[0]) or not 0 <= int(head[0]) < 2**31:
        r.fail("damaged MSH file: the line after $Elements is not the number of elements")
    total = int(head[0])
    if binary:
        held = 0
        while held < total:
            etype, count, ntags = (int(v) for v in r.take(np.int32, 3, "an element block header"))
            where = f"the element block at byte {r.pos - 12}"
            _, nodes = _element_type(r, etype, where)
            if not 1 <= count <= total - held or not 0 <= ntags <= 3:
                r.fail(f"damaged MSH file: {where} announces {count} elements with {ntags} tags each "
                       f"({total - held} elements left to read; lobatto reads 0 to 3 tags)")
            rows = r.take(np.int32, count * (1 + ntags + nodes), f"the elements of {where}")
            rows = rows.reshape(count, 1 + ntags + nodes).astype(np.int64)
            if ntags == 3 and np.any(rows[:, 3] != 0):
                e = int(rows[np.argmax(rows[:, 3] != 0), 0])
                r.fail(f"damaged MSH file: element {e} has a third tag {int(rows[rows[:, 0] == e][0, 3])}; gmsh "
                       "reads it as a parent element (lobatto reads elements without parents)")
            _tags22(r, rows[:, :1 + ntags], ntags)
            mesh.blocks.append((None, rows[:, 2] if ntags > 1 else np.zeros(count, np.int64), etype,
                                rows[:, 0], rows[:, 1 + ntags:]))
            held += count
        r.end_of_section("Elements")
        return
    text = r.body("Elements")
    t = _Tokens(r, "Elements", text)
    by_type: dict = {}
    for _ in range(total):
        number, etype, ntags = (int(v) for v in t.ints(3, "an element's number, type and tag count",
                                                        -2**31, 2**31 - 1))
        _, nodes = _element_type(r, etype, f"element {number}")
        if not 0 <= ntags <= 3:
            r.fail(f"damaged MSH file: element {number} has {ntags} tags (lobatto reads 0 to 3: physical, "
                   "elementary, and a partition tag that gmsh ignores)")
        row = t.ints(ntags + nodes, f"the tags and nodes of element {number}", -2**31, 2**31 - 1)
        row = list(row)
        by_type.setdefault(etype, []).append([number] + row[:ntags] + [0] * (3 - ntags) + row[ntags:])
    t.done()
    for etype, rows in by_type.items():
        rows = np.array(rows, dtype=np.int64)
        _tags22(r, rows[:, :4], 3)
        mesh.blocks.append((None, rows[:, 2], etype, rows[:, 0], rows[:, 4:]))


def _tags22(r: _Reader, rows: np.ndarray, ntags: int) -> None:
    """Element numbers positive; physical and elementary tags not negative."""
    bad = (rows[:, 0] < 1) | np.any(rows[:, 1:1 + min(ntags, 2)] < 0, axis=1)
    if bad.any():
        row = rows[np.argmax(bad)]
        r.fail(f"damaged MSH file: element {int(row[0])} has tags {row[1:1 + ntags].tolist()} (element numbers "
               "are positive, physical and elementary tags not negative)")


def _periodic41(r: _Reader, mesh: _Mesh, binary: bool) -> None:
    if binary:
        links = r.size("the number of periodic links")
        for k in range(links):
            dim, slave, master = r.scalars("i", 3, f"periodic link {k + 1}")
            _periodic_link(r, mesh, dim, slave, master)
            affine = r.size(f"the affine transformation of periodic link {k + 1}")
            if affine not in (0, 16):
                r.fail(f"damaged MSH file: periodic link {k + 1} has {affine} affine values (0 or 16)")
            r.skip(8, affine, f"the affine transformation of periodic link {k + 1}")
            pairs = r.size(f"the node pairs of periodic link {k + 1}")
            r.skip(16, pairs, f"the node pairs of periodic link {k + 1}")
        r.end_of_section("Periodic")
        return
    t = _Tokens(r, "Periodic", r.body("Periodic"))
    links = t.int("the number of periodic links", 0, 2**31)
    for k in range(links):
        dim, slave, master = (int(v) for v in t.ints(3, f"periodic link {k + 1}", -2**31, 2**31 - 1))
        _periodic_link(r, mesh, dim, slave, master)
        affine = t.int(f"the affine transformation of periodic link {k + 1}", 0, 16)
        if affine not in (0, 16):
            r.fail(f"damaged MSH file: periodic link {k + 1} has {affine} affine values (0 or 16)")
        t.floats(affine, f"the affine transformation of periodic link {k + 1}")
        pairs = t.int(f"the node pairs of periodic link {k + 1}", 0, 2**40)
        t.ints(2 * pairs, f"the node pairs of periodic link {k + 1}")
    t.done()


def _periodic_link(r: _Reader, mesh: _Mesh, dim: int, slave: int, master: int) -> None:
    # the SDK skips the rest of a link whose entities it does not know and then reads the
    # following numbers as the next link: both must exist
    if not 0 <= dim <= 2 or (dim, slave) not in mesh.entities or (dim, master) not in mesh.entities:
        r.fail(f"damaged MSH file: a periodic link joins {dim}-D entities {slave} and {master}, which "
               "$Entities does not have")
    mesh.periodic.append((dim, slave, master))


def _cross_check(r: _Reader, mesh: _Mesh, version: str) -> None:
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
