"""What goes into a Nek5000 field file, and where: the header, the sections and each
rank's share of them.

io/nek5000.py describes the format and writes the file with plain writes (one rank);
io/nek5000_mpi.py writes the same bytes from every rank through MPI-IO. Both take the
header from :func:`field_file_header` and the element data from the
:class:`FieldFileContent` that :func:`prepare_content` builds, so that the two writers
cannot differ in a byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Mapping

import numpy as np

ENDIAN_TAG = 6.54321
HEADER_BYTES = 132
PREAMBLE_BYTES = HEADER_BYTES + 4  # header and endianness tag; the element map follows
_CHUNK_BYTES = 32 << 20  # convert and write at most about this much at a time


def _host(a) -> np.ndarray:
    if hasattr(a, "get") and not isinstance(a, np.ndarray):
        a = a.get()
    return np.asarray(a)


def field_file_header(wdsz, n, nelt, nelgt, time, step, fid, nfiles, rdcode, dim: int = 3) -> bytes:
    """The 132-byte ASCII header of a field file (the module docstring of io/nek5000.py
    names its fields; ``nz`` is 1 in 2-D); ValueError if the values do not fit."""
    text = "#std %1i %2i %2i %2i %10i %10i %20.13E %9i %6i %6i %s" % (
        wdsz, n, n, n if dim == 3 else 1, nelt, nelgt, time, step, fid, nfiles, rdcode,
    )
    if len(text) > HEADER_BYTES:
        raise ValueError(f"Nek5000 header does not fit in {HEADER_BYTES} bytes: {text!r}")
    return text.ljust(HEADER_BYTES).encode("ascii")


def layout_for_dimension(layout, dim: int) -> tuple:
    """A system's ``output_layout`` (velocity, pressure, scalars[, temperature]) for a file of
    dimension ``dim``: in 2-D a 3-name velocity keeps its x, y names as Nek5000's 2-component
    velocity and its z name becomes the first scalar ((Ax, Ay, Az), scalars (B, C) -> U = (Ax,
    Ay), scalars Az, B, C); a 2-name velocity, and any layout in 3-D, is returned as it is."""
    velocity, pressure, scalars, *rest = layout
    if dim == 2 and velocity is not None and len(velocity) == 3:
        velocity, scalars = tuple(velocity[:2]), (velocity[2],) + tuple(scalars or ())
    return (velocity, pressure, scalars, *rest)


@dataclass
class Section:
    """One section of a field file: every element's share of one variable group, stored
    element after element, ``element_bytes`` each. ``values(positions)`` gives the
    shares of this rank's elements at those positions of its arrays, in file order."""

    name: str
    element_bytes: int
    values: Callable[[np.ndarray], np.ndarray]


@dataclass
class FieldFileContent:
    """What one rank contributes to a field file: its elements (``ids``: 0-based global
    numbers, ascending; ``positions``: where each sits in the rank's arrays) and the
    sections, in file order."""

    wdsz: int
    n: int
    rdcode: str
    ids: np.ndarray
    positions: np.ndarray
    sections: list
    dim: int = 3

    def section_offsets(self, nelgt: int) -> list[int]:
        """Byte offset of each section in a file of ``nelgt`` elements."""
        offsets, start = [], PREAMBLE_BYTES + 4 * nelgt
        for section in self.sections:
            offsets.append(start)
            start += nelgt * section.element_bytes
        return offsets

    def chunks(self, section: Section) -> Iterator[np.ndarray]:
        """This rank's share of ``section`` in file order, as byte arrays of at most
        about _CHUNK_BYTES (whole elements)."""
        per_chunk = _elements_per_chunk(section)
        for e0 in range(0, self.positions.size, per_chunk):
            block = section.values(self.positions[e0 : e0 + per_chunk])
            yield np.ascontiguousarray(block).reshape(-1).view(np.uint8)

    def chunk_counts(self) -> list[int]:
        """How many pieces :meth:`chunks` gives for each section."""
        return [-(-self.positions.size // _elements_per_chunk(s)) for s in self.sections]


def _elements_per_chunk(section: Section) -> int:
    return max(1, _CHUNK_BYTES // section.element_bytes)


def _vector_values(components: list, real) -> Callable:
    def values(positions):
        out = np.empty((positions.size, len(components), components[0].shape[1]), dtype=real)
        for c, comp in enumerate(components):
            out[:, c] = comp[positions]
        return out
    return values


def _vector_extrema(components: list) -> Callable:
    def values(positions):
        mm = np.stack([np.stack([c[positions].min(axis=1), c[positions].max(axis=1)], axis=-1)
                       for c in components], axis=1)  # (e, components, 2)
        # the format's bounds are float32: a value beyond its range (a pressure of 1e100) is
        # bounded by float32's largest, without an overflow warning (the data stays float64)
        big = float(np.finfo(np.float32).max)
        return np.clip(mm, -big, big).astype(np.float32)
    return values


def prepare_content(coords, fields, order: int, *, velocity=None, pressure=None, scalars=None, wdsz: int = 8,
                    element_ids=None, temperature=None) -> FieldFileContent:
    """Check the arguments of :func:`lobatto.io.nek5000.write_field_file` and describe this rank's part of
    the file (ValueError for a bad argument). Thin coords (3, E, 1, n, n) make a 2-D file, as
    Nek5000 writes one: nz = 1, X and U of 2 components (x, y; the z row is not stored), and no
    min/max metadata (Nek5000 writes it in 3-D only)."""
    if wdsz not in (4, 8):
        raise ValueError(f"wdsz must be 4 or 8, got {wdsz}")
    real = np.dtype(np.float64 if wdsz == 8 else np.float32)
    coords = _host(coords)
    n = int(order) + 1
    if coords.ndim != 5 or coords.shape[0] != 3 or coords.shape[2:] not in ((n, n, n), (1, n, n)):
        raise ValueError(f"coords must have shape (3, E, {n}, {n}, {n}), or (3, E, 1, {n}, {n}) in 2-D, got "
                         f"{coords.shape}")
    dim = 3 if coords.shape[2] == n else 2
    if not isinstance(fields, Mapping):
        arrays = [_host(f) for f in fields]
        if velocity is not None or pressure is not None or scalars is not None or temperature is not None:
            raise ValueError("name the fields (a mapping) when giving velocity, pressure, temperature or scalars")
        if len(arrays) < dim:
            raise ValueError(f"unnamed fields: expected at least {dim} (the velocity), got {len(arrays)}")
        names = [str(c) for c in range(len(arrays))]
        fields = dict(zip(names, arrays))
        velocity, scalars = names[:dim], names[dim:]
    velocity = list(velocity) if velocity is not None else []
    scalars = list(scalars) if scalars is not None else []
    if velocity and len(velocity) != dim:
        raise ValueError(f"velocity must name {dim} fields" + (" on a 2-D mesh (x and y: a z component goes "
                         "among the scalars)" if dim == 2 else "") + f", got {velocity}")
    if len(scalars) > 99:
        raise ValueError(f"at most 99 scalars fit a Nek5000 file, got {len(scalars)}")
    nel = coords.shape[1]
    npts = int(np.prod(coords.shape[2:]))

    def field(name):
        if name not in fields:
            raise ValueError(f"no field named {name!r} (have {', '.join(map(str, fields))})")
        a = _host(fields[name])
        if a.shape != coords.shape[1:]:
            raise ValueError(f"field {name!r} must have shape {coords.shape[1:]}, got {a.shape}")
        return a.reshape(nel, npts)

    x = list(coords.reshape(3, nel, npts))[:dim]
    u = [field(v) for v in velocity]
    singles = ([field(pressure)] if pressure is not None else []) + ([field(temperature)] if temperature is not None
                                                                     else []) + [field(s) for s in scalars]
    rdcode = "X" + ("U" if u else "") + ("P" if pressure is not None else "") + ("T" if temperature is not None else "")
    rdcode += f"S{len(scalars):02d}" if scalars else ""
    if element_ids is None:
        ids = np.arange(nel, dtype=np.int64)
    else:
        ids = np.asarray(element_ids, dtype=np.int64).reshape(-1) - 1
        if ids.shape != (nel,):
            raise ValueError(f"element_ids must have {nel} entries, got {np.shape(element_ids)}")
        if nel and ids.min() < 0:
            raise ValueError("element_ids are 1-based global element numbers; got a number below 1")
    positions = np.argsort(ids, kind="stable")
    ids = ids[positions]
    if nel > 1 and not (np.diff(ids) > 0).all():
        raise ValueError("element_ids must not repeat an element")

    vectors = [("X", x)] + ([("U", u)] if u else [])
    names = ([pressure] if pressure is not None else []) + ([temperature] if temperature is not None else []) + scalars
    sections = [Section(name, dim * npts * real.itemsize, _vector_values(comps, real)) for name, comps in vectors]
    sections += [Section(name, npts * real.itemsize, lambda p, v=v: v[p].astype(real, copy=False))
                 for name, v in zip(names, singles)]
    if dim == 3:  # Nek5000 writes the per-element bounds in 3-D only (prepost.f: "if (if3d)")
        sections += [Section(f"{name} min/max", 3 * 2 * 4, _vector_extrema(comps)) for name, comps in vectors]
        sections += [Section(f"{name} min/max", 2 * 4, _vector_extrema([v])) for name, v in zip(names, singles)]
    return FieldFileContent(wdsz, n, rdcode, ids, positions, sections, dim)
