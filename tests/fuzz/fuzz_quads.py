"""The 2-D part of the mesh fuzzer (fuzz_meshes.py): quadrilateral source meshes and the
mutations that know their structure.

Sources (``QUAD_SOURCES``, in tests/data/fuzz_meshes): a 3 x 2 strip of quads in MSH 4.1 and
2.2 (ASCII and binary), the same periodic along x, an O-grid disc of 9-node quads; Nek5000
NDIM = 2 ``.re2`` (``#v002``, ``#v001``), ``.rea`` and a ``.rea`` with a midpoint- and a
circle-curved edge.

``op_quad`` edits what the readers read rather than bytes: two corners of an element swapped
(a twisted, "bow-tie" element), an element's corners reversed (clockwise: gmsh's are mirrored
back by the reader, Nek's are refused), a corner made NaN, a cell of another kind mixed in (a
triangle or a hexahedron in a gmsh quad mesh), or the file's dimension changed (Nek's NDIM 2 ->
3, which makes the records the wrong size). Each must still end in exit 0 or a one-line error.
"""

from __future__ import annotations

import re

import numpy as np

#: 2-D source file -> generator
QUAD_SOURCES = {
    "quad_msh41.msh": "gmsh", "quad_msh22.msh": "gmsh", "quad_msh41_bin.msh": "gmsh", "quad_msh22_bin.msh": "gmsh",
    "quad_periodic_msh41.msh": "gmsh", "quad_order2_msh41.msh": "gmsh", "quad_v002.re2": "nek",
    "quad_v001.re2": "nek", "quad.rea": "nek", "quad_curved.rea": "nek",
}
QUAD_KINDS = ("swap corners", "clockwise", "nan corner", "mixed cell", "dimension")


def write_sources(directory) -> None:
    """The 2-D sources: gmsh through tests/quad_meshes.py, Nek through tests/nek_mesh_writer.py."""
    import gmsh
    from nek_mesh_writer import box_corners2d, write_re2, write_rea
    from quad_meshes import disc, strip

    started = not gmsh.isInitialized()
    if started:
        gmsh.initialize(readConfigFiles=False, interruptible=False)
        gmsh.option.setNumber("General.Terminal", 0)
    try:
        for version, tag in ((4.1, "msh41"), (2.2, "msh22")):
            for binary in (False, True):
                gmsh.option.setNumber("Mesh.MshFileVersion", version)
                gmsh.option.setNumber("Mesh.Binary", int(binary))
                strip(directory / f"quad_{tag}{'_bin' if binary else ''}.msh", periodic=False)
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.option.setNumber("Mesh.Binary", 0)
        strip(directory / "quad_periodic_msh41.msh", periodic=True)
        disc(directory / "quad_order2_msh41.msh", order=2, version=4.1)
    finally:
        if started:
            gmsh.finalize()
    corners, index = box_corners2d(2, 1, (0.0, 0.0), (2.0, 1.0))
    walls = [(e, f, "W", np.zeros(5)) for e in (1, 2) for f in range(1, 5) if (e, f) not in ((1, 2), (2, 4))]
    write_re2(directory / "quad_v002.re2", corners, bcs=walls)
    write_re2(directory / "quad_v001.re2", corners, bcs=walls, version="#v001")
    write_rea(directory / "quad.rea", corners, bcs=walls)
    # element 1's bottom side 1 bulged by a midpoint, element 2's top side 3 by a circle arc
    curves = [(1, 1, [0.5, -0.05, 0.0, 0, 0], "m"), (2, 3, [-2.0, 0, 0, 0, 0], "C")]
    write_rea(directory / "quad_curved.rea", corners, bcs=walls, curves=curves)


# ---------------------------------------------------------------------------------- Nek5000
def _re2_records(data: bytes):
    """(offset, record dtype, count) of a .re2's element records, or None."""
    head = data[:80].decode("ascii", "replace").split()
    if len(data) < 84 or len(head) < 3 or not head[1].isdigit() or not head[2].isdigit():
        return None
    word = 4 if head[0] == "#v001" else 8
    ndim, nel = int(head[2]), int(head[1])
    ident = np.dtype(f"<i{word}") if word == 4 else np.dtype("<f8")
    record = np.dtype([("group", ident), ("xyz", f"<f{word}", (ndim, 2 ** ndim))])
    count = min(nel, (len(data) - 84) // record.itemsize)
    return (84, record, count) if count > 0 else None


def _re2(rng, data: bytes, kind: str) -> tuple:
    if kind == "dimension":
        new = re.sub(rb"^(#v00\d\s+\d+\s+)2", rb"\g<1>3", data[:80])
        return new + data[80:], "NDIM 2 -> 3 in the header"
    found = _re2_records(data)
    if found is None:
        return data, "no element records"
    offset, record, count = found
    records = np.frombuffer(data, record, count, offset).copy()
    e = rng.randrange(count)
    xyz = records["xyz"][e]  # (ndim, corners)
    what = _edit_corners(rng, xyz, kind)
    return data[:offset] + records.tobytes() + data[offset + records.nbytes:], f"element {e + 1}: {what}"


def _edit_corners(rng, xyz, kind: str) -> str:
    """Edit (ndim, corners) in place: swap two corners, reverse them, collapse one onto its
    neighbour (a triangle as a degenerate quad: Nek's mixed cell), or a NaN."""
    corners = xyz.shape[1]
    if kind == "mixed cell":
        a = rng.randrange(4)
        b = (a + 1) % 4
        xyz[:, b] = xyz[:, a]
        return f"corner {b + 1} moved onto corner {a + 1} (a triangle)"
    if kind == "swap corners":
        a, b = rng.sample(range(corners), 2)
        xyz[:, [a, b]] = xyz[:, [b, a]]
        return f"corners {a + 1} and {b + 1} swapped"
    if kind == "clockwise":
        xyz[:, :4] = xyz[:, 3::-1]
        return "corners reversed (clockwise)"
    axis, c = rng.randrange(xyz.shape[0]), rng.randrange(corners)
    xyz[axis, c] = float("nan")
    return f"corner {c + 1} {'xyz'[axis]} = nan"


def _rea(rng, data: bytes, kind: str) -> tuple:
    lines = data.split(b"\n")
    if kind == "dimension":
        for i, line in enumerate(lines):
            if b"NEL,NDIM" in line or b"DIMENSIONAL RUN" in line:
                lines[i] = re.sub(rb"(\s)2(\s)", rb"\g<1>3\g<2>", line, count=1)
        return b"\n".join(lines), "NDIM 2 -> 3"
    heads = [i for i, line in enumerate(lines) if b"ELEMENT" in line and b"GROUP" in line]
    if not heads:
        return data, "no element"
    i = rng.choice(heads)
    rows = lines[i + 1:i + 3]
    try:
        xyz = np.array([[float(v) for v in row.split()] for row in rows])
    except ValueError:
        return data, "element rows not numbers"
    if xyz.ndim != 2 or xyz.shape[1] < 4:
        return data, "element rows too short"
    what = _edit_corners(rng, xyz, kind)
    lines[i + 1:i + 3] = [b"".join(b"%24.16e" % v for v in row) for row in xyz]
    return b"\n".join(lines), f"{lines[i].split(b'[')[0].strip().decode()}: {what}"


# ------------------------------------------------------------------------------------- gmsh
QUAD_TYPES = {3: 4, 16: 8, 10: 9}  # element type -> nodes (the first 4 are the corners)
MIXED = {2: 3, 5: 8}  # a triangle or a hexahedron, made of the file's own node tags


def _msh_elements(data: bytes):
    """(start, end) of the $Elements section's body, or None."""
    m = re.search(rb"\$Elements\r?\n", data)
    end = data.find(b"$EndElements", m.end()) if m else -1
    return (m.end(), end) if m and end > 0 else None


def _msh(rng, data: bytes, kind: str) -> tuple:
    span = _msh_elements(data)
    if span is None:
        return data, "no $Elements"
    start, end = span
    lines = data[start:end].split(b"\n")
    v4 = re.search(rb"\$MeshFormat\r?\n4", data) is not None
    quads = []  # (line index, first corner column)
    block_type = None
    remaining = 0
    for i, line in enumerate(lines[1:], 1):
        fields = line.split()
        if v4:
            if remaining == 0:
                if len(fields) == 4:
                    block_type, remaining = int(fields[2]), int(fields[3])
                continue
            remaining -= 1
            if block_type in QUAD_TYPES and len(fields) > 4:
                quads.append((i, 1))
        elif len(fields) > 3 and fields[1].isdigit() and int(fields[1]) in QUAD_TYPES:
            quads.append((i, 3 + int(fields[2])))
    if not quads:
        return data, "no quadrilateral"
    if kind == "mixed cell":
        return _msh_mixed(rng, data, lines, quads, v4, start, end)
    if kind in ("nan corner", "dimension"):
        return _msh_node(rng, data, v4, kind)
    i, first = rng.choice(quads)
    fields = lines[i].split()
    corners = fields[first:first + 4]
    if kind == "swap corners":
        a, b = rng.sample(range(4), 2)
        corners[a], corners[b] = corners[b], corners[a]
        what = f"corners {a + 1} and {b + 1} swapped"
    else:
        corners = corners[::-1]
        what = "corners reversed (clockwise)"
    fields[first:first + 4] = corners
    lines[i] = b" ".join(fields)
    return data[:start] + b"\n".join(lines) + data[end:], f"element line {i}: {what}"


def _msh_node(rng, data: bytes, v4: bool, kind: str) -> tuple:
    """A node's coordinate made NaN, or its z moved off the plane z = 0 ("dimension")."""
    m = re.search(rb"\$Nodes\r?\n", data)
    end = data.find(b"$EndNodes", m.end()) if m else -1
    if end < 0:
        return data, "no $Nodes"
    lines = data[m.end():end].split(b"\n")
    width = 3 if v4 else 4  # "x y z" (4.1) or "tag x y z" (2.2); 4.1's block headers have 4 fields
    rows = [i for i, line in enumerate(lines[1:], 1) if len(line.split()) == width]
    if not rows:
        return data, "no coordinate line"
    i = rng.choice(rows)
    fields = lines[i].split()
    column = width - 1 if kind == "dimension" else rng.randrange(width - 3, width)
    old, fields[column] = fields[column], (b"0.25" if kind == "dimension" else b"nan")
    lines[i] = b" ".join(fields)
    body = b"\n".join(lines)
    return data[:m.end()] + body + data[end:], f"node line {i}: {'xyz'[column - width + 3]} {old.decode()} -> " \
                                               f"{fields[column].decode()}"


def _msh_mixed(rng, data, lines, quads, v4, start, end) -> tuple:
    """One more element of another kind (a triangle or a hexahedron) on the file's nodes."""
    i, first = rng.choice(quads)
    nodes = lines[i].split()[first:first + 4]
    kind = rng.choice(sorted(MIXED))
    tags = (nodes[:3] if kind == 2 else nodes + nodes)
    tag = b"%d" % (10**6)
    if v4:
        head = lines[0].split()
        if len(head) != 4:
            return data, "no 4.1 element header"
        lines[0] = b" ".join([b"%d" % (int(head[0]) + 1), b"%d" % (int(head[1]) + 1), head[2], tag])
        dim = b"2" if kind == 2 else b"3"
        block = [dim + b" 1 " + b"%d" % kind + b" 1", tag + b" " + b" ".join(tags)]
    else:
        lines[0] = b"%d" % (int(lines[0]) + 1) if lines[0].strip().isdigit() else lines[0]
        block = [tag + b" %d 2 0 1 " % kind + b" ".join(tags)]
    body = lines[:-1] + block + lines[-1:] if lines[-1] == b"" else lines + block
    name = "triangle" if kind == 2 else "hexahedron"
    return data[:start] + b"\n".join(body) + data[end:], f"a {name} on the nodes of element line {i}"


def op_quad(rng, data: bytes, name: str, kind: str | None = None) -> tuple:
    """A structural edit (``kind``, else a random one of QUAD_KINDS) of the 2-D mesh ``data`` of
    the source ``name`` (module docstring); for ASCII gmsh and Nek files (fuzz_meshes.py gives
    binary gmsh files the byte ops only)."""
    kind = kind or rng.choice(QUAD_KINDS)
    edit = _re2 if name.endswith(".re2") else _rea if name.endswith(".rea") else _msh
    try:
        new, what = edit(rng, data, kind)
    except (ValueError, IndexError) as error:  # an earlier mutation broke what the edit parses
        return data, f"{kind}: not applied to the damaged file ({type(error).__name__})"
    return new, f"{kind}: {what}"

