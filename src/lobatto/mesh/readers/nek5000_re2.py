"""Nek5000's binary ``.re2`` mesh files (the format is described in nek5000.py's docstring):
header, byte order, element corners and groups, curved sides and the first field's boundary
conditions, read into a :class:`NekMesh`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto.errors import InputError
from lobatto.mesh.readers.nek5000_records import (NekMesh, check_corners, check_counts, check_quadrilaterals,
                                                  curve_records, record_ids)

RE2_VERSIONS = {"#v001": 4, "#v002": 8, "#v003": 8}
ENDIAN_TEST = 6.54321
HEADER_BYTES = 80


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


def _decode_codes(raw: np.ndarray, width: int) -> np.ndarray:
    return np.array([bytes(c[:width]).decode("ascii", errors="replace").replace("\x00", " ").strip()
                     for c in raw], dtype=object)


def read_re2(path: Path) -> NekMesh:
    """The mesh of the ``.re2`` file ``path`` (InputError naming the file for a damaged one)."""
    data = path.read_bytes()
    version, nelt, ndim, nelv = _re2_header(path, data)
    check_counts(path, nelt, ndim, nelv)
    order = _byte_order(path, data)
    word = RE2_VERSIONS[version]
    cursor = _Cursor(path, data, HEADER_BYTES + 4, order, word)
    real = f"{order}f{word}"
    group = real if word == 8 else f"{order}i4"
    # group, then x, y (, z) of the 2**ndim corners: 2-D records are group + x[4] + y[4]
    records = cursor.take(np.dtype([("group", group), ("xyz", real, (ndim, 2**ndim))]), nelt,
                          f"the {nelt} elements the header announces")
    corners = np.zeros((nelt, 2**ndim, 3))  # z = 0 in 2-D
    corners[:, :, :ndim] = np.transpose(records["xyz"], (0, 2, 1))
    check_corners(path, corners)
    if ndim == 2:
        check_quadrilaterals(path, corners)
    group_values = records["group"].astype(np.float64)
    whole = np.isfinite(group_values) & (np.abs(group_values) < 2.0**31)
    if not whole.all():  # before the cast to int, which would warn on nan, inf or 1e300
        e = int(np.argmin(whole))
        raise InputError(f"{path}: element {e + 1} has group {group_values[e]}, expected an integer")
    groups = group_values.astype(np.int64)

    ncurves = cursor.count("curved sides")
    crec = cursor.side_records(ncurves, f"the {ncurves} curved-side records")
    curves = curve_records(path, nelt, record_ids(crec["element"]), record_ids(crec["side"]),
                           crec["values"].astype(np.float64), _decode_codes(crec["code"], 1), ndim)

    nbcs = cursor.count("boundary conditions")
    brec = cursor.side_records(nbcs, f"the {nbcs} boundary-condition records")
    values = brec["values"].astype(np.float64)
    codes = _decode_codes(brec["code"], 3)
    if word == 4 and nelt >= 1_000_000:
        # Nek stores a periodic partner as an int32 in the first float32 slot beyond 1e6
        # elements (reader_re2.f, buf_to_bc), since float32 cannot hold such ids exactly.
        as_int = brec["values"][:, 0].view(f"{order}i4")
        values[codes == "P", 0] = as_int[codes == "P"]
    nf = 2 * ndim
    bc_codes = np.full((nelt, nf), "E", dtype=object)
    bc_values = np.zeros((nelt, nf, 5))
    element, side = record_ids(brec["element"]), record_ids(brec["side"])
    bad = (element < 1) | (element > nelt) | (side < 1) | (side > nf)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{path}: boundary-condition record {i + 1} is for element {element[i]} "
                         f"face {side[i]}; expected an element in 1..{nelt} and a face in 1..{nf}")
    bc_codes[element - 1, side - 1] = codes
    bc_values[element - 1, side - 1] = values
    info = {"format": "Nek5000 .re2", "version": version,
            "precision": "float64" if word == 8 else "float32",
            "byte order": "little-endian" if order == "<" else "big-endian"}
    return NekMesh(corners, groups, curves, bc_codes, bc_values, str(path), info)
