"""The mesh section of Nek5000's ASCII ``.rea`` files (the format is described in nek5000.py's
docstring): elements and their corners, curved sides and the first field's boundary
conditions in Nek's fixed-width columns, read into a :class:`NekMesh`; NEL < 0 points to the
``.re2`` of the same name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto.errors import InputError
from lobatto.mesh.readers.nek5000_re2 import read_re2
from lobatto.mesh.readers.nek5000_records import (NekMesh, check_corners, check_counts, check_quadrilaterals,
                                                  curve_records)

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


def read_rea(path: Path) -> NekMesh:
    """The mesh of the ``.rea`` file ``path`` (or of the ``.re2`` it points to)."""
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
    check_counts(path, nel, ndim, nelv)
    # an element is a header line and x, y, z of corners 1-4, then of 5-8; x, y of 1-4 in 2-D
    per = 1 + (6 if ndim == 3 else 2)
    if per * nel > len(lines) - at - 2:  # refuse before allocating for nel
        raise InputError(f"{path}: truncated mesh section: NEL = {nel} elements need {per * nel} lines, "
                         f"the file has {len(lines) - at - 2} after the NEL line")
    corners = np.zeros((nel, 2**ndim, 3))  # z = 0 in 2-D
    groups = np.zeros(nel, dtype=np.int64)
    row = at + 2
    for e in range(nel):
        if row + per > len(lines):
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
        for block in range(per - 1):
            layer, axis = divmod(block, ndim)
            corners[e, 4 * layer: 4 * layer + 4, axis] = _floats(
                path, lines[row + 1 + block], row + 2 + block, 4, f"element {e + 1} corner coordinates")
        row += per
    at = _find(path, lines, row, "CURVED SIDE", "curved-side section")
    check_corners(path, corners)
    if ndim == 2:
        check_quadrilaterals(path, corners)
    curves = _rea_curves(path, lines, at, nel, ndim)
    bc_codes, bc_values = _rea_bcs(path, lines, at, nel, 2 * ndim)
    info = {"format": "Nek5000 .rea", "version": "ASCII"}
    return NekMesh(corners, groups, curves, bc_codes, bc_values, str(path), info)


def _rea_with_re2(path: Path, nel: int, ndim: int) -> NekMesh:
    check_counts(path, nel, ndim, nel)
    re2 = path.with_suffix(".re2")
    if not re2.is_file():
        raise InputError(f"{path}: its mesh section says the mesh is in {re2.name} (NEL < 0), "
                         f"but there is no file {re2}")
    nek = read_re2(re2)
    if nek.num_elements != nel:
        raise InputError(f"{path}: element count mismatch: the .rea says {nel} elements, "
                         f"{re2.name} holds {nek.num_elements}")
    nek.info["via"] = path.name
    return nek


def _rea_curves(path: Path, lines: list[str], at: int, nel: int, ndim: int = 3) -> dict:
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
    return curve_records(path, nel, np.array(elements, dtype=np.int64), np.array(sides, dtype=np.int64),
                         np.array(values, dtype=np.float64).reshape(-1, 5), np.array(types, dtype=object), ndim)


def _rea_bcs(path: Path, lines: list[str], at: int, nel: int, nf: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """The first field's boundary conditions (fields marked ``NO ...`` are skipped): nf lines
    per element, 6 in 3-D, 4 in 2-D."""
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
    codes = np.empty((nel, nf), dtype=object)
    values = np.zeros((nel, nf, 5))
    for e in range(nel):
        for f in range(nf):
            lineno = row + nf * e + f + 1
            if lineno > len(lines):
                raise InputError(f"{path}: truncated boundary conditions: expected {nf} lines for each "
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
