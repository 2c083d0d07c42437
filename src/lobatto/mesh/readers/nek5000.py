"""Nek5000 meshes: binary ``.re2`` files and the mesh section of ASCII ``.rea`` files.

``read(path, geometry_order)`` returns an :class:`ImportedMesh`. What is read, as Nek5000's own
readers (core/reader_re2.f, core/reader_rea.f) read it:

``.re2``: an 80-byte ASCII header ``#v00N`` + NELT (i9) + NDIM (i3) + NELV (i9); a float32 test
word 6.54321 that tells the byte order; then per element its group and the x, y, z of its 8
corners; the count and records of curved sides; the count and records of boundary conditions
for the first field (further fields follow and are not read). ``#v001`` stores 4-byte words
(int32 ids, float32 values), ``#v002``/``#v003`` 8-byte ones (ids as float64); a record is
element, side, 5 values, and the code as characters padding one word.

``.rea``: the line containing ``MESH DATA``, then ``NEL NDIM NELV``, then per element a header
line (``ELEMENT e [..] GROUP g``) and six lines: x, y, z of corners 1–4, then of corners 5–8.
NEL < 0 means the mesh is in the ``.re2`` of the same name. Then ``CURVED SIDE DATA`` and the
boundary conditions in Nek's fixed-width formats, which depend on the element count.

Boundary codes: ``E`` (and a blank code) is an interior face, ``P`` a periodic face whose first
two values are the partner element and face; every other code, stripped (``W``, ``v``, ``O``,
``PEC``), names a boundary group. Element groups become regions ``group<g>`` (one region
``all`` when every element is in the same group). Only 3-D meshes whose elements all belong to
the fluid (NELT = NELV) are supported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lobatto.errors import InputError
from lobatto.mesh.box import MAX_EXTENT
from lobatto.mesh.imported import ImportedMesh
from lobatto.mesh.readers.nek5000_curves import (
    CIRCLE_EDGES,
    NEK_FACE_TO_LOBATTO,
    element_nodes,
)

__all__ = ["read", "read_nek", "to_imported", "NekMesh", "NEK_FACE_TO_LOBATTO", "CURVE_TYPES", "INTERIOR_CODES"]

#: curve types built: midpoint edge, circle edge, sphere face
CURVE_TYPES = ("m", "C", "s")
#: how many of a curve record's five values each type uses (midpoint; radius; centre and radius)
CURVE_VALUES = {"m": 3, "C": 1, "s": 4}
#: boundary codes of faces that have a neighbour
INTERIOR_CODES = ("E", "")
RE2_VERSIONS = {"#v001": 4, "#v002": 8, "#v003": 8}
ENDIAN_TEST = 6.54321
HEADER_BYTES = 80


@dataclass
class NekMesh:
    """A Nek5000 mesh as its file stores it: Nek's corner, edge and face numbering, 0-based.

    corners:  (E, 8, 3) corners, counter-clockwise per layer.
    groups:   (E,) element group numbers.
    curves:   {"elements", "sides", "values", "types"}: one entry per curved edge (face for
              ``s``), side 0..11 (0..5), five values, one-letter type.
    bc_codes: (E, 6) stripped boundary codes of the first field, Nek face order.
    bc_values:(E, 6, 5) their values.
    """

    corners: np.ndarray
    groups: np.ndarray
    curves: dict
    bc_codes: np.ndarray
    bc_values: np.ndarray
    source: str
    info: dict = field(default_factory=dict)

    @property
    def num_elements(self) -> int:
        return int(self.corners.shape[0])


def read(path, geometry_order: int) -> ImportedMesh:
    """Read a ``.re2`` or ``.rea`` file into an :class:`ImportedMesh` of the given geometry order."""
    nek = read_nek(path)
    return to_imported(nek, geometry_order)


def read_nek(path) -> NekMesh:
    """The file's mesh in Nek's own conventions (see :class:`NekMesh`)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".re2", ".rea"):
        raise InputError(f"{path}: not a Nek5000 mesh (expected a .re2 or .rea file)")
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    return _read_re2(path) if suffix == ".re2" else _read_rea(path)


# --------------------------------------------------------------------------- .re2

def _re2_header(path: Path, data: bytes) -> tuple[str, int, int, int]:
    if len(data) < HEADER_BYTES + 4:
        raise InputError(f"{path}: truncated .re2 file ({len(data)} bytes, shorter than its "
                         f"{HEADER_BYTES + 4}-byte header)")
    header = data[:HEADER_BYTES].decode("ascii", errors="replace")
    version = header[:5]
    if version not in RE2_VERSIONS:
        raise InputError(f"{path}: unknown .re2 header version {version!r} "
                         f"(expected one of {', '.join(RE2_VERSIONS)})")
    try:  # Fortran (a5, i9, i3, i9)
        nelt, ndim, nelv = int(header[5:14]), int(header[14:17]), int(header[17:26])
    except ValueError:
        raise InputError(f"{path}: cannot read NELT, NDIM, NELV from the header {header[:26]!r}") from None
    return version, nelt, ndim, nelv


def _check_counts(path: Path, nelt: int, ndim: int, nelv: int) -> None:
    if ndim != 3:
        raise InputError(f"{path}: a {ndim}-D mesh; lobatto reads 3-D meshes only")
    if nelt <= 0:
        raise InputError(f"{path}: element count {nelt} (expected a positive number)")
    if nelv != nelt:
        raise InputError(f"{path}: NELT = {nelt} but NELV = {nelv}: meshes with solid "
                         "(thermal-only) elements are not supported")


def _byte_order(path: Path, data: bytes) -> str:
    for order in ("<", ">"):
        if abs(np.frombuffer(data, f"{order}f4", 1, HEADER_BYTES)[0] - ENDIAN_TEST) < 1e-5:
            return order
    raise InputError(f"{path}: the word after the header is not the test value {ENDIAN_TEST} "
                     "in either byte order (not a .re2 file, or a damaged one)")


class _Cursor:
    """Reads consecutive records from the file's bytes, with errors that name the section."""

    def __init__(self, path: Path, data: bytes, offset: int, order: str, word: int):
        self.path, self.data, self.offset, self.order, self.word = path, data, offset, order, word

    def take(self, dtype: np.dtype, count: int, what: str) -> np.ndarray:
        need = dtype.itemsize * count
        if self.offset + need > len(self.data):
            raise InputError(f"{self.path}: truncated file: {what} need {need} bytes at byte "
                             f"{self.offset}, but the file has {len(self.data)} bytes")
        out = np.frombuffer(self.data, dtype, count, self.offset)
        self.offset += need
        return out

    def count(self, what: str) -> int:
        kind = "f8" if self.word == 8 else "i4"
        value = self.take(np.dtype(f"{self.order}{kind}"), 1, f"the number of {what}")[0]
        if not np.isfinite(value) or value < 0 or value != int(value):
            raise InputError(f"{self.path}: the number of {what} is {value} at byte {self.offset - self.word}")
        return int(value)

    def side_records(self, count: int, what: str) -> np.ndarray:
        """Records of (element, side, 5 values, code) as a structured array."""
        real = f"{self.order}f{self.word}"
        ident = real if self.word == 8 else f"{self.order}i4"
        dtype = np.dtype([("element", ident), ("side", ident), ("values", real, (5,)),
                          ("code", f"S{self.word}")])
        return self.take(dtype, count, what)


def _ids(values) -> np.ndarray:
    """Element and side numbers of records as integers; a value that is no whole number in range
    (a damaged file) becomes 0, which the range checks after this refuse."""
    values = np.asarray(values, dtype=np.float64)
    return np.where(np.isfinite(values) & (np.abs(values) < 2.0**62), values, 0).astype(np.int64)


def _decode_codes(raw: np.ndarray, width: int) -> np.ndarray:
    return np.array([bytes(c[:width]).decode("ascii", errors="replace").replace("\x00", " ").strip()
                     for c in raw], dtype=object)


def _read_re2(path: Path) -> NekMesh:
    data = path.read_bytes()
    version, nelt, ndim, nelv = _re2_header(path, data)
    _check_counts(path, nelt, ndim, nelv)
    order = _byte_order(path, data)
    word = RE2_VERSIONS[version]
    cursor = _Cursor(path, data, HEADER_BYTES + 4, order, word)
    real = f"{order}f{word}"
    group = real if word == 8 else f"{order}i4"
    records = cursor.take(np.dtype([("group", group), ("xyz", real, (3, 8))]), nelt,
                          f"the {nelt} elements the header announces")
    corners = np.ascontiguousarray(np.transpose(records["xyz"], (0, 2, 1)), dtype=np.float64)
    _check_corners(path, corners)
    group_values = records["group"].astype(np.float64)
    whole = np.isfinite(group_values) & (np.abs(group_values) < 2.0**31)
    if not whole.all():  # before the cast to int, which would warn on nan, inf or 1e300
        e = int(np.argmin(whole))
        raise InputError(f"{path}: element {e + 1} has group {group_values[e]}, expected an integer")
    groups = group_values.astype(np.int64)

    ncurves = cursor.count("curved sides")
    crec = cursor.side_records(ncurves, f"the {ncurves} curved-side records")
    curves = _curves(path, nelt, _ids(crec["element"]), _ids(crec["side"]),
                     crec["values"].astype(np.float64), _decode_codes(crec["code"], 1))

    nbcs = cursor.count("boundary conditions")
    brec = cursor.side_records(nbcs, f"the {nbcs} boundary-condition records")
    values = brec["values"].astype(np.float64)
    codes = _decode_codes(brec["code"], 3)
    if word == 4 and nelt >= 1_000_000:
        # Nek stores a periodic partner as an int32 in the first float32 slot beyond 1e6
        # elements (reader_re2.f, buf_to_bc), since float32 cannot hold such ids exactly.
        as_int = brec["values"][:, 0].view(f"{order}i4")
        values[codes == "P", 0] = as_int[codes == "P"]
    bc_codes = np.full((nelt, 6), "E", dtype=object)
    bc_values = np.zeros((nelt, 6, 5))
    element, side = _ids(brec["element"]), _ids(brec["side"])
    bad = (element < 1) | (element > nelt) | (side < 1) | (side > 6)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{path}: boundary-condition record {i + 1} is for element {element[i]} "
                         f"face {side[i]}; expected an element in 1..{nelt} and a face in 1..6")
    bc_codes[element - 1, side - 1] = codes
    bc_values[element - 1, side - 1] = values
    info = {"format": "Nek5000 .re2", "version": version,
            "precision": "float64" if word == 8 else "float32",
            "byte order": "little-endian" if order == "<" else "big-endian"}
    return NekMesh(corners, groups, curves, bc_codes, bc_values, str(path), info)


# --------------------------------------------------------------------------- curves

def _check_corners(path, corners: np.ndarray) -> None:
    """Corners (E, 8, 3) that are finite and within MAX_EXTENT, before any geometry is built
    from them (where they would overflow); elements are named 1-based, as Nek counts them."""
    size = np.abs(corners).reshape(len(corners), -1).max(axis=1, initial=0.0)
    bad = ~np.isfinite(size) | (size > MAX_EXTENT)
    if bad.any():
        e = int(np.argmax(bad))
        if not np.isfinite(size[e]):
            raise InputError(f"{path}: element {e + 1} has corner coordinates that are not finite numbers")
        raise InputError(f"{path}: element {e + 1} has a corner coordinate of magnitude {size[e]:.3g}; coordinates "
                         f"must lie within {MAX_EXTENT:.0e} of the origin: rescale the mesh's units")


def _curves(path, nelt: int, elements, sides, values, types) -> dict:
    """Check the curve records (1-based element and side) and keep the curved ones, 0-based;
    a later record for the same side replaces an earlier one, as in Nek5000."""
    keep = np.array([t not in ("", "0") for t in types], dtype=bool)
    elements, sides, values, types = elements[keep], sides[keep], values[keep], types[keep]
    for i in range(len(types)):
        e, s, t = int(elements[i]), int(sides[i]), types[i]
        if not 1 <= e <= nelt:
            raise InputError(f"{path}: a curved side is for element {e}; expected 1..{nelt}")
        if t not in CURVE_TYPES:
            raise InputError(f"{path}: element {e} edge {s}: curve type {t!r} is not supported "
                             f"(supported: m = midpoint, C = circle, s = sphere)")
        limit = 6 if t == "s" else 12
        if not 1 <= s <= limit:
            raise InputError(f"{path}: element {e}: curve type {t!r} on side {s}; expected 1..{limit}")
        if t == "C" and s - 1 not in CIRCLE_EDGES:
            raise InputError(f"{path}: element {e} edge {s}: circle ('C') sides are defined on "
                             "edges 1-8 only (Nek5000 ignores them elsewhere)")
        used = values[i][:CURVE_VALUES[t]]
        if not np.all(np.isfinite(used)) or np.any(np.abs(used) > MAX_EXTENT):
            raise InputError(f"{path}: element {e} side {s}: curve {t!r} has values {list(map(float, used))}; "
                             f"expected finite numbers within {MAX_EXTENT:.0e}")
    key = (elements - 1) * 100 + (sides - 1) + np.where(types == "s", 50, 0)
    _, last = np.unique(key[::-1], return_index=True)
    pick = np.sort(len(key) - 1 - last)
    return {"elements": (elements[pick] - 1).astype(np.int64), "sides": (sides[pick] - 1).astype(np.int64),
            "values": values[pick].astype(np.float64), "types": np.asarray(types[pick], dtype=object)}


# --------------------------------------------------------------------------- .rea

def _floats(path: Path, line: str, lineno: int, count: int, what: str) -> list[float]:
    try:
        values = [float(v.replace("D", "E").replace("d", "e")) for v in line.split()[:count]]
    except ValueError:
        values = []
    if len(values) != count:
        raise InputError(f"{path}:{lineno}: expected {count} numbers ({what}), got {line.strip()!r}")
    return values


def _find(path: Path, lines: list[str], start: int, mark: str, what: str) -> int:
    for i in range(start, len(lines)):
        if mark in lines[i].upper():
            return i
    raise InputError(f"{path}: no {what} (a line containing {mark!r}) after line {start}")


def _fixed(line: str, start: int, width: int, count: int) -> list[float]:
    """Fortran Gw.d fields: fixed columns, a blank field reads as 0."""
    out = []
    for n in range(count):
        text = line[start + n * width: start + (n + 1) * width].strip()
        out.append(float(text.replace("D", "E").replace("d", "e")) if text else 0.0)
    return out


def _read_rea(path: Path) -> NekMesh:
    lines = path.read_text(errors="replace").splitlines()
    at = _find(path, lines, 0, "MESH DATA", "mesh section")
    if at + 1 >= len(lines):
        raise InputError(f"{path}: truncated after the MESH DATA line")
    try:
        nel, ndim, nelv = (int(float(v)) for v in lines[at + 1].split()[:3])
    except (ValueError, OverflowError):  # too few numbers, text, inf or nan
        raise InputError(f"{path}:{at + 2}: expected NEL NDIM NELV, got {lines[at + 1].strip()!r}") from None
    if nel < 0:
        return _rea_with_re2(path, -nel, ndim)
    _check_counts(path, nel, ndim, nelv)
    if 7 * nel > len(lines) - at - 2:  # each element takes 7 lines: refuse before allocating for nel
        raise InputError(f"{path}: truncated mesh section: NEL = {nel} elements need {7 * nel} lines, "
                         f"the file has {len(lines) - at - 2} after the NEL line")
    corners = np.empty((nel, 8, 3))
    groups = np.zeros(nel, dtype=np.int64)
    row = at + 2
    for e in range(nel):
        if row + 7 > len(lines):
            raise InputError(f"{path}: truncated mesh section: NEL = {nel} but only {e} elements follow")
        head = lines[row].upper()
        if "ELEMENT" not in head:
            raise InputError(f"{path}:{row + 1}: expected the header of element {e + 1} of NEL = {nel}, "
                             f"got {lines[row].strip()!r} (element count mismatch or damaged section)")
        words = head.split()
        if "GROUP" in words and words.index("GROUP") + 1 < len(words):
            try:
                groups[e] = int(words[words.index("GROUP") + 1])
            except ValueError:
                pass
        for block in range(6):
            layer, axis = divmod(block, 3)
            corners[e, 4 * layer: 4 * layer + 4, axis] = _floats(
                path, lines[row + 1 + block], row + 2 + block, 4, f"element {e + 1} corner coordinates")
        row += 7
    at = _find(path, lines, row, "CURVED SIDE", "curved-side section")
    _check_corners(path, corners)
    curves = _rea_curves(path, lines, at, nel)
    bc_codes, bc_values = _rea_bcs(path, lines, at, nel)
    info = {"format": "Nek5000 .rea", "version": "ASCII"}
    return NekMesh(corners, groups, curves, bc_codes, bc_values, str(path), info)


def _rea_with_re2(path: Path, nel: int, ndim: int) -> NekMesh:
    _check_counts(path, nel, ndim, nel)
    re2 = path.with_suffix(".re2")
    if not re2.is_file():
        raise InputError(f"{path}: its mesh section says the mesh is in {re2.name} (NEL < 0), "
                         f"but there is no file {re2}")
    nek = _read_re2(re2)
    if nek.num_elements != nel:
        raise InputError(f"{path}: element count mismatch: the .rea says {nel} elements, "
                         f"{re2.name} holds {nek.num_elements}")
    nek.info["via"] = path.name
    return nek


def _rea_curves(path: Path, lines: list[str], at: int, nel: int) -> dict:
    try:
        count = int(lines[at + 1].split()[0])
    except (IndexError, ValueError):
        raise InputError(f"{path}:{at + 2}: expected the number of curved sides") from None
    if count < 0:
        raise InputError(f"{path}:{at + 2}: the number of curved sides is {count}; expected 0 or more")
    # Fortran formats of core/reader_rea.f rdcurve: (I3,I3,5G14.6,1X,A1), (I2,I6,...), (I2,I12,...)
    side_width, elem_width = (3, 3) if nel < 1000 else (2, 6) if nel < 1_000_000 else (2, 12)
    start = side_width + elem_width
    elements, sides, values, types = [], [], [], []
    for n in range(count):
        lineno = at + 3 + n
        if lineno > len(lines):
            raise InputError(f"{path}: truncated curved-side section: {count} sides announced, {n} found")
        line = lines[lineno - 1]
        try:
            sides.append(int(line[:side_width]))
            elements.append(int(line[side_width:start]))
            values.append(_fixed(line, start, 14, 5))
        except ValueError:
            raise InputError(f"{path}:{lineno}: cannot read a curved side in Nek's fixed columns "
                             f"(I{side_width},I{elem_width},5G14.6,1X,A1): {line.rstrip()!r}") from None
        # the type is in column start + 72 (1X, A1); take whatever follows the values, so that a
        # line spaced one column off still keeps its curve
        types.append(line[start + 70:].strip()[:1])
    return _curves(path, nel, np.array(elements, dtype=np.int64), np.array(sides, dtype=np.int64),
                   np.array(values, dtype=np.float64).reshape(-1, 5), np.array(types, dtype=object))


def _rea_bcs(path: Path, lines: list[str], at: int, nel: int) -> tuple[np.ndarray, np.ndarray]:
    """The first field's boundary conditions (fields marked ``NO ...`` are skipped)."""
    row = _find(path, lines, at, "BOUNDARY CONDITIONS", "boundary-condition section") + 1
    while row < len(lines) and "NO " in lines[row].upper() and "BOUNDARY" in lines[row].upper():
        row += 1
    if row >= len(lines) or "BOUNDARY" not in lines[row].upper():
        raise InputError(f"{path}:{row + 1}: expected a field's boundary-condition header")
    row += 1
    # Fortran formats of core/reader_rea.f rdbdry, by element count
    if nel < 1000:
        ids, start, width = ((4, 7), (7, 10)), 10, 14
    elif nel < 100_000:
        ids, start, width = ((4, 9), (9, 10)), 10, 14
    elif nel < 1_000_000:
        ids, start, width = ((4, 10),), 10, 14
    else:
        ids, start, width = ((4, 16),), 16, 18
    codes = np.empty((nel, 6), dtype=object)
    values = np.zeros((nel, 6, 5))
    for e in range(nel):
        for f in range(6):
            lineno = row + 6 * e + f + 1
            if lineno > len(lines):
                raise InputError(f"{path}: truncated boundary conditions: expected 6 lines for each "
                                 f"of {nel} elements, the file ends at element {e + 1} face {f + 1}")
            line = lines[lineno - 1]
            try:
                numbers = [int(line[a:b]) for a, b in ids]
                values[e, f] = _fixed(line, start, width, 5)
            except ValueError:
                raise InputError(f"{path}:{lineno}: cannot read the boundary condition of element "
                                 f"{e + 1} face {f + 1} in Nek's fixed columns: {line.rstrip()!r}") from None
            if numbers[0] != e + 1 or (len(numbers) > 1 and numbers[1] != f + 1):
                raise InputError(f"{path}:{lineno}: expected the boundary condition of element "
                                 f"{e + 1} face {f + 1}, the line is for {'/'.join(map(str, numbers))}")
            codes[e, f] = line[1:4].strip()
    return codes, values


# --------------------------------------------------------------------------- conversion

def _periodic_pairs(nek: NekMesh) -> np.ndarray | None:
    elements, faces = np.nonzero(nek.bc_codes == "P")
    if len(elements) == 0:
        return None
    nel = nek.num_elements
    partner = _ids(np.rint(nek.bc_values[elements, faces, :2]))
    pe, pf = partner[:, 0] - 1, partner[:, 1] - 1
    for i in range(len(elements)):
        e, f = int(elements[i]), int(faces[i])
        where = f"{nek.source}: element {e + 1} face {f + 1} (Nek numbering) is periodic ('P')"
        if not (0 <= pe[i] < nel and 0 <= pf[i] < 6):
            raise InputError(f"{where} with partner element {pe[i] + 1} face {pf[i] + 1}; expected "
                             f"an element in 1..{nel} and a face in 1..6")
        back = nek.bc_values[pe[i], pf[i], :2]
        back_ids = _ids(np.rint(back))  # nan or inf in a damaged file: 0, no element
        if nek.bc_codes[pe[i], pf[i]] != "P" or back_ids[0] != e + 1 or back_ids[1] != f + 1:
            raise InputError(f"{where} with element {pe[i] + 1} face {pf[i] + 1}, but that face is "
                             f"{nek.bc_codes[pe[i], pf[i]]!r} with values {back.tolist()}, not 'P' back to it")
    first = (elements < pe) | ((elements == pe) & (faces < pf))
    to_lobatto = np.array(NEK_FACE_TO_LOBATTO)
    return np.stack([elements[first], to_lobatto[faces[first]], pe[first], to_lobatto[pf[first]]],
                    axis=1).astype(np.int64)


def _boundary_faces(nek: NekMesh) -> dict:
    to_lobatto = np.array(NEK_FACE_TO_LOBATTO)
    groups = {}
    for code in sorted(set(nek.bc_codes.ravel().tolist()) - set(INTERIOR_CODES) - {"P"}):
        elements, faces = np.nonzero(nek.bc_codes == code)
        groups[code] = np.stack([elements, to_lobatto[faces]], axis=1).astype(np.int64)
    return groups


def to_imported(nek: NekMesh, geometry_order: int) -> ImportedMesh:
    """Convert to lobatto's conventions, building the curved geometry at order geometry_order."""
    curves = nek.curves

    def where(i):
        side = "face" if curves["types"][i] == "s" else "edge"
        return (f"{nek.source}: element {int(curves['elements'][i]) + 1} {side} "
                f"{int(curves['sides'][i]) + 1} ({curves['types'][i]!r})")

    nodes = element_nodes(nek.corners, curves, int(geometry_order), where)
    group_ids, regions = np.unique(nek.groups, return_inverse=True)
    names = ("all",) if len(group_ids) == 1 else tuple(f"group{g}" for g in group_ids.tolist())
    info = dict(nek.info, order=int(geometry_order), curved_sides=len(curves["types"]),
                element_numbers=np.arange(1, nek.num_elements + 1))  # Nek counts from 1
    return ImportedMesh(element_nodes=nodes, boundary_faces=_boundary_faces(nek),
                        regions=regions.astype(np.int64).reshape(-1), region_names=names,
                        corner_ids=None, periodic_faces=_periodic_pairs(nek), source=nek.source,
                        info=info)
