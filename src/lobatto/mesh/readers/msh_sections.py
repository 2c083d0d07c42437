"""The sections of a MSH file, each read the way the gmsh SDK reads it (GModelIO_MSH2.cpp,
GModelIO_MSH4.cpp): counts, sizes, element types and tags checked, what the cross-checks need
kept (lobatto.mesh.readers.msh_check)."""

from __future__ import annotations

import re

import numpy as np

from lobatto.mesh.readers.msh_format import (
    ELEMENT_TYPES,
    INT_TOKEN,
    MAX_ELEMENT_LINE,
    MAX_HEADER_LINE,
    MAX_TAG,
    MshContents,
    MshReader,
    MshTokens,
)


def skip_text_section(r: MshReader, name: str) -> None:
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


def physical_names(r: MshReader, mesh: MshContents) -> None:
    text = r.body("PhysicalNames")
    lines = [line.rstrip(b"\r") for line in text.split(b"\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    head = lines[0].split() if lines else []
    if len(head) != 1 or not INT_TOKEN.fullmatch(head[0]) or int(head[0]) != len(lines) - 1:
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


def entities(r: MshReader, mesh: MshContents, binary: bool) -> None:
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
    t = MshTokens(r, "Entities", r.body("Entities"))
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


def nodes41(r: MshReader, mesh: MshContents, binary: bool) -> None:
    tags, xyz = [], []
    if binary:
        blocks, total = r.size("the number of node blocks"), r.size("the number of nodes")
        r.skip(8, 2, "the smallest and largest node tags")
        for b in range(blocks):
            dim, entity, parametric = r.scalars("i", 3, "the header of a node block")
            count = r.size("the number of nodes in a block")
            _node_block_header(r, b, dim, parametric)
            tags.append(r.take(np.uint64, count, "the tags of a node block"))
            width = 3 + (dim if parametric else 0)
            xyz.append(r.take(np.float64, count * width, "the coordinates of a node block").reshape(count, width)[:, :3])
            mesh.entities.add((dim, entity))
        r.end_of_section("Nodes")
    else:
        t = MshTokens(r, "Nodes", r.body("Nodes"))
        blocks, total = (int(v) for v in t.ints(2, "the numbers of node blocks and nodes", 0, 2**40))
        t.ints(2, "the smallest and largest node tags")
        for b in range(blocks):
            dim, entity, parametric = (int(v) for v in t.ints(3, "the header of a node block",
                                                              -2**31, 2**31 - 1))
            count = t.int("the number of nodes in a block", 0, 2**40)
            _node_block_header(r, b, dim, parametric)
            tags.append(t.ints(count, "the tags of a node block"))
            width = 3 + (dim if parametric else 0)
            xyz.append(t.floats(count * width, "the coordinates of a node block").reshape(count, width)[:, :3])
            mesh.entities.add((dim, entity))
        t.done()
    _set_nodes(r, mesh, tags, xyz, total)


def _node_block_header(r: MshReader, b: int, dim: int, parametric: int) -> None:
    if not 0 <= dim <= 3 or parametric not in (0, 1):
        r.fail(f"damaged MSH file: node block {b + 1} is on an entity of dimension {dim} with parametric flag "
               f"{parametric} (expected 0..3 and 0 or 1)")


def _set_nodes(r: MshReader, mesh: MshContents, tags: list, xyz: list, total: int) -> None:
    tags = np.concatenate([np.asarray(t) for t in tags]) if tags else np.zeros(0, np.int64)  # uint64 if binary
    if len(tags) != total:
        r.fail(f"damaged MSH file: $Nodes announces {total} nodes, its blocks hold {len(tags)}")
    if len(tags) and (tags.min() < 1 or tags.max() > MAX_TAG):
        bad = tags[(tags < 1) | (tags > MAX_TAG)][0]
        r.fail(f"damaged MSH file: node tag {int(bad)} (expected 1..{MAX_TAG})")
    order = np.argsort(tags.astype(np.int64), kind="stable")
    ordered = tags.astype(np.int64)[order]
    repeated = ordered[1:] == ordered[:-1]
    if repeated.any():
        r.fail(f"damaged MSH file: node tag {int(ordered[1:][repeated][0])} appears twice in $Nodes")
    mesh.node_tags = ordered
    mesh.node_xyz = (np.concatenate(xyz) if xyz else np.zeros((0, 3)))[order]


def nodes22(r: MshReader, mesh: MshContents, binary: bool) -> None:
    head = r.line("the number of nodes").split()
    if len(head) != 1 or not INT_TOKEN.fullmatch(head[0]) or not 0 <= int(head[0]) < 2**31:
        r.fail("damaged MSH file: the line after $Nodes is not the number of nodes")
    total = int(head[0])
    if binary:
        records = r.take(np.dtype([("tag", "i4"), ("xyz", "f8", (3,))]), total, f"the {total} nodes")
        r.end_of_section("Nodes")
        tags, xyz = records["tag"].astype(np.int64), records["xyz"]
    else:
        t = MshTokens(r, "Nodes", r.body("Nodes"))
        if len(t.tokens) != 4 * total:
            t.fail(f"the section announces {total} nodes (4 numbers each) and holds {len(t.tokens)} numbers")
        xyz = t.floats(4 * total, "the nodes").reshape(total, 4)[:, 1:]  # every token a number, tags whole
        t.tokens, t.i = t.tokens[0::4], 0
        tags = np.asarray(t.ints(total, "a node tag", -2**63 + 1, 2**63 - 1), dtype=np.int64)
    if len(tags) and (tags.min() < 1 or tags.max() >= 2**31):
        r.fail(f"damaged MSH file: node tag {int(tags[(tags < 1) | (tags >= 2**31)][0])} (expected 1..{2**31 - 1})")
    _set_nodes(r, mesh, [tags], [xyz], total)


def _element_type(r: MshReader, etype: int, where: str) -> tuple:
    if etype not in ELEMENT_TYPES:
        r.fail(f"damaged MSH file: {where} has element type {etype}, which is no type of element lobatto can "
               "read (hexahedra, and quadrilaterals, lines, points on the boundary)")
    return ELEMENT_TYPES[etype]


def elements41(r: MshReader, mesh: MshContents, binary: bool) -> None:
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

        head = MshTokens(r, "Elements", next_line())
        blocks, total = (int(v) for v in head.ints(2, "the numbers of element blocks and elements", 0, 2**40))
        head.ints(2, "the smallest and largest element tags")
        head.done()
        for b in range(blocks):
            t = MshTokens(r, "Elements", next_line())
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
            t = MshTokens(r, "Elements", b" ".join(b" ".join(row) for row in split))
            values = np.asarray(t.ints(count * (1 + nodes), f"the elements of block {b + 1}"), dtype=np.int64)
            values = values.reshape(count, 1 + nodes)
            mesh.blocks.append((dim, entity, etype, values[:, 0], values[:, 1:]))
        if any(line.strip() for line in lines[at:]):
            r.fail("damaged MSH file: $Elements holds more lines than its blocks announce")
    held = sum(len(block[3]) for block in mesh.blocks)
    if held != total:
        r.fail(f"damaged MSH file: $Elements announces {total} elements, its blocks hold {held}")


def elements22(r: MshReader, mesh: MshContents, binary: bool) -> None:
    head = r.line("the number of elements").split()
    if len(head) != 1 or not INT_TOKEN.fullmatch(head[0]) or not 0 <= int(head[0]) < 2**31:
        r.fail("damaged MSH file: the line after $Elements is not the number of elements")
    total = int(head[0])
    by_type: dict = {}  # element type -> rows [number, 3 tags (0 where missing), nodes]
    arrays: dict = {}  # element type -> such rows as arrays
    if binary:  # gmsh writes a block header per element: plain Python ints are faster than arrays
        held = 0
        while held < total:
            etype, count, ntags = r.scalars("i", 3, "an element block header")
            where = f"the element block at byte {r.pos - 12}"
            _, nodes = _element_type(r, etype, where)
            if not 1 <= count <= total - held or not 0 <= ntags <= 3:
                r.fail(f"damaged MSH file: {where} announces {count} elements with {ntags} tags each "
                       f"({total - held} elements left to read; lobatto reads 0 to 3 tags)")
            width = 1 + ntags + nodes
            values = r.scalars("i", count * width, f"the elements of {where}")
            rows = by_type.setdefault(etype, [])
            for k in range(0, count * width, width):
                row = values[k:k + width]
                if ntags == 3 and row[3] != 0:
                    r.fail(f"damaged MSH file: element {row[0]} has a third tag {row[3]}; gmsh reads it as a "
                           "parent element (lobatto reads elements without parents)")
                rows.append(row[:1 + ntags] + (0,) * (3 - ntags) + row[1 + ntags:])
            held += count
        r.end_of_section("Elements")
    elif not _elements22_by_lines((text := r.body("Elements")), total, arrays):
        t = MshTokens(r, "Elements", text)
        try:  # every token a whole number: convert all at once, then walk the elements
            flat = [int(token) for token in t.tokens]
        except ValueError:
            flat = None
        if flat is None or (flat and (min(flat) < -2**31 or max(flat) >= 2**31)):
            t.ints(len(t.tokens), "the elements", -2**31, 2**31 - 1)  # names the bad token
        i = 0
        for _ in range(total):
            if i + 3 > len(flat):
                t.fail(f"the section ends before the {total} elements it announces")
            number, etype, ntags = flat[i:i + 3]
            _, nodes = _element_type(r, etype, f"element {number}")
            if not 0 <= ntags <= 3:
                r.fail(f"damaged MSH file: element {number} has {ntags} tags (lobatto reads 0 to 3: physical, "
                       "elementary, and a partition tag that gmsh ignores)")
            end = i + 3 + ntags + nodes
            if end > len(flat):
                t.fail(f"the tags and nodes of element {number}: the section ends early")
            by_type.setdefault(etype, []).append([number] + flat[i + 3:i + 3 + ntags] + [0] * (3 - ntags)
                                                 + flat[i + 3 + ntags:end])
            i = end
        if i != len(flat):
            t.fail(f"{len(flat) - i} numbers more than the section announces")
    for etype in sorted(set(by_type) | set(arrays)):
        rows = np.concatenate(arrays.get(etype, []) + [np.array(by_type.get(etype, []), dtype=np.int64)
                                                       .reshape(-1, 4 + ELEMENT_TYPES[etype][1])])
        _tags22(r, rows[:, :4], 3)
        mesh.blocks.append((None, rows[:, 2], etype, rows[:, 0], rows[:, 4:]))


_NODES = np.zeros(max(ELEMENT_TYPES) + 1, dtype=np.int64)  # element type -> nodes, 0 for no type
for _type, (_, _count) in ELEMENT_TYPES.items():
    _NODES[_type] = _count


def _elements22_by_lines(text: bytes, total: int, out: dict) -> bool:
    """The elements of an ASCII MSH 2.2 section when each line holds one (as gmsh writes them),
    converted by numpy a line length at a time; False to read the section token by token."""
    lines = [line for line in (raw.split() for raw in text.split(b"\n")) if line]
    if len(lines) != total or b"_" in text:
        return False
    groups: dict = {}
    for line in lines:
        groups.setdefault(len(line), []).append(line)
    try:
        arrays = {width: np.array(rows, dtype=np.int64) for width, rows in groups.items() if width >= 3}
    except (ValueError, OverflowError):
        return False
    if sum(len(a) for a in arrays.values()) != total:
        return False
    for width, rows in arrays.items():
        etype, ntags = rows[:, 1], rows[:, 2]
        known = (etype >= 0) & (etype < len(_NODES))
        if not known.all() or np.any((ntags < 0) | (ntags > 3)) or np.any(3 + ntags + _NODES[etype] != width):
            return False
        if np.abs(rows).max() >= 2**31 or np.any(_NODES[etype] == 0):
            return False
    for width, rows in arrays.items():
        for (etype, ntags), at in _groups(rows[:, 1], rows[:, 2]):
            part = rows[at]
            tags = np.zeros((len(part), 3), dtype=np.int64)
            tags[:, :ntags] = part[:, 3:3 + ntags]
            out.setdefault(int(etype), []).append(np.concatenate([part[:, :1], tags, part[:, 3 + ntags:]], axis=1))
    return True


def _groups(etype: np.ndarray, ntags: np.ndarray):
    keys = np.stack([etype, ntags], axis=1)
    for key in np.unique(keys, axis=0):
        yield (int(key[0]), int(key[1])), np.flatnonzero((keys == key).all(axis=1))


def _tags22(r: MshReader, rows: np.ndarray, ntags: int) -> None:
    """Element numbers positive; physical and elementary tags not negative."""
    bad = (rows[:, 0] < 1) | np.any(rows[:, 1:1 + min(ntags, 2)] < 0, axis=1)
    if bad.any():
        row = rows[np.argmax(bad)]
        r.fail(f"damaged MSH file: element {int(row[0])} has tags {row[1:1 + ntags].tolist()} (element numbers "
               "are positive, physical and elementary tags not negative)")


def periodic41(r: MshReader, mesh: MshContents, binary: bool) -> None:
    if binary:
        links = r.size("the number of periodic links")
        for k in range(links):
            dim, slave, master = r.scalars("i", 3, f"periodic link {k + 1}")
            _periodic_link(r, mesh, dim, slave, master)
            affine = r.size(f"the affine transformation of periodic link {k + 1}")
            if affine not in (0, 16):
                r.fail(f"damaged MSH file: periodic link {k + 1} has {affine} affine values (0 or 16)")
            values = r.take(np.float64, affine, f"the affine transformation of periodic link {k + 1}")
            pairs = r.size(f"the node pairs of periodic link {k + 1}")
            nodes = r.take(np.uint64, 2 * pairs, f"the node pairs of periodic link {k + 1}")
            mesh.periodic.append((k + 1, values if affine else None, _node_pairs(r, k, nodes)))
        r.end_of_section("Periodic")
        return
    t = MshTokens(r, "Periodic", r.body("Periodic"))
    links = t.int("the number of periodic links", 0, 2**31)
    for k in range(links):
        dim, slave, master = (int(v) for v in t.ints(3, f"periodic link {k + 1}", -2**31, 2**31 - 1))
        _periodic_link(r, mesh, dim, slave, master)
        affine = t.int(f"the affine transformation of periodic link {k + 1}", 0, 16)
        if affine not in (0, 16):
            r.fail(f"damaged MSH file: periodic link {k + 1} has {affine} affine values (0 or 16)")
        values = t.floats(affine, f"the affine transformation of periodic link {k + 1}")
        pairs = t.int(f"the node pairs of periodic link {k + 1}", 0, 2**40)
        nodes = np.asarray(t.ints(2 * pairs, f"the node pairs of periodic link {k + 1}"), dtype=np.int64)
        mesh.periodic.append((k + 1, values if affine else None, _node_pairs(r, k, nodes)))
    t.done()


def _node_pairs(r: MshReader, k: int, nodes: np.ndarray) -> np.ndarray:
    if len(nodes) and nodes.max() > MAX_TAG:
        r.fail(f"damaged MSH file: periodic link {k + 1} names node {int(nodes.max())} (tags are 1..{MAX_TAG})")
    return nodes.astype(np.int64).reshape(-1, 2)


def _periodic_link(r: MshReader, mesh: MshContents, dim: int, slave: int, master: int) -> None:
    # the SDK skips the rest of a link whose entities it does not know and then reads the
    # following numbers as the next link: both must exist
    if not 0 <= dim <= 2 or (dim, slave) not in mesh.entities or (dim, master) not in mesh.entities:
        r.fail(f"damaged MSH file: a periodic link joins {dim}-D entities {slave} and {master}, which "
               "$Entities does not have")


