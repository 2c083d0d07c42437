"""Nek5000 binary field files (``<case>0.f00001`` ...) and the ``.nek5000`` index.

ParaView and VisIt open the index; pymech and VTK's ``vtkNek5000Reader`` read the field
files. One file per snapshot holds every element of the mesh, whatever the number of ranks
(Nek5000's default, ``nfiles = 1``): the readers checked (docs/output.md) read only the first
file of a multi-file snapshot and take its element count for the whole mesh. Layout:

* a 132-byte ASCII header
  ``#std wdsz nx ny nz nelt nelgt time istep fid0 nfiles rdcode``
  (``wdsz`` 8: float64 data, 4: float32; ``rdcode`` here ``XUS03`` or ``XUP``;
  ``nelt``, the elements in this file, equals ``nelgt``, all elements);
* the float32 value 6.54321, from which a reader learns the byte order;
* ``nelgt`` int32 global element numbers (1-based), the element map;
* geometry ``X``: element by element, in each element all x, then all y, then all z;
* vector ``U`` (if any): element by element, in each element ux, uy, uz blocks;
* pressure ``P`` (if any): element by element;
* temperature ``T`` (if any): element by element;
* scalars ``S01``..: scalar by scalar, each for all elements (the outer loop is over
  scalars here, unlike X and U);
* per-element (min, max) float32 pairs of every component, in the same group order
  (metadata Nek5000 writes in 3D; the readers ignore it).

Elements are stored in order of their global number, so the map is 1, 2, ..., nelgt:
pymech places each element by the map, but vtkNek5000Reader shows them in file order, and
both then agree with the mesh's numbering. Within an element points run with i (along r)
fastest, then j, then k, which is C order of lobatto's ``[k, j, i]`` arrays.

With several ranks every rank writes its own elements at their offsets in the one file
(MPI-IO, io/nek5000_mpi.py); a serial run writes the same bytes with plain writes. What goes
where (header, sections, each rank's share) is io/nek5000_content.py's, which both writers use.

Which of a system's fields go to U, P and the scalars is the system's choice (its
``output_layout``): the writer takes the layout as arguments, and the reader names the
groups it finds with names the caller gives.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from lobatto.io.atomic import atomic_open, atomic_write_text
from lobatto.io.nek5000_content import (  # Section, FieldFileContent, PREAMBLE_BYTES: importable here as before
    ENDIAN_TAG,
    HEADER_BYTES,
    PREAMBLE_BYTES,
    FieldFileContent,
    Section,
    field_file_header,
    layout_for_dimension,
    prepare_content,
)

__all__ = [
    "layout_for_dimension",
    "write_field_file",
    "read_field_file",
    "write_index",
    "field_file_name",
]


def field_file_name(case_name: str, number: int, rank_file: int = 0) -> str:
    """``<case><rank_file>.f<number:05d>``, matching ``filetemplate: <case>%01d.f%05d``."""
    if not 0 <= number <= 99999:
        raise ValueError(f"Nek5000 file numbers run from 0 to 99999, got {number}")
    return f"{case_name}{rank_file:01d}.f{number:05d}"


def write_field_file(
    path: str | os.PathLike,
    coords,
    fields,
    time: float,
    step: int,
    order: int,
    *,
    velocity: Sequence[str] | None = None,
    pressure: str | None = None,
    scalars: Sequence[str] | None = None,
    wdsz: int = 8,
    element_ids: Sequence[int] | None = None,
    fid: int = 0,
    nfiles: int = 1,
    comm=None,
    temperature: str | None = None,
) -> None:
    """Write one Nek5000 field file atomically; with ``comm`` (several ranks) collectively,
    each rank giving its own elements.

    ``coords`` (3, E, N+1, N+1, N+1); ``fields`` a mapping from names to (E, N+1, N+1, N+1)
    arrays, with ``velocity`` (three names or None), ``pressure`` (a name or None) and
    ``scalars`` (names) saying where each goes, and ``temperature`` (a name or None) for
    Nek5000's temperature slot T, between the pressure and the scalars. ``fields`` may also be an array or list of
    arrays with no names given: then the first three are the velocity and the rest scalars.
    ``wdsz`` 8 writes float64, 4 float32. ``element_ids`` are the 1-based global numbers of
    the E elements (default 1..E); over all ranks they number the elements 1..nelgt once
    each, and the file stores them in that order. ``fid`` and ``nfiles`` only fill the
    header's fields of those names.

    A failed write (disk full, permission) raises :class:`lobatto.errors.OutputError` naming
    ``path`` (on every rank with ``comm``), and leaves any previous file there.
    """
    if comm is not None and comm.Get_size() > 1:
        from lobatto.io.nek5000_mpi import write_field_file_collective

        def prepare():
            return prepare_content(coords, fields, order, velocity=velocity, pressure=pressure, scalars=scalars,
                                   wdsz=wdsz, element_ids=element_ids, temperature=temperature)

        write_field_file_collective(path, prepare, comm, float(time), int(step), fid, nfiles)
        return
    content = prepare_content(coords, fields, order, velocity=velocity, pressure=pressure, scalars=scalars,
                              wdsz=wdsz, element_ids=element_ids, temperature=temperature)
    nel = content.ids.size
    if nel and content.ids[-1] != nel - 1:
        raise ValueError(f"element_ids must number the {nel} elements 1..{nel} (one file holds every element)")
    with atomic_open(path, "wb") as fh:
        fh.write(field_file_header(content.wdsz, content.n, nel, nel, float(time), int(step), fid, nfiles,
                                   content.rdcode, content.dim))
        fh.write(np.array([ENDIAN_TAG], dtype=np.float32).tobytes())
        fh.write((content.ids + 1).astype(np.int32).tobytes())
        for section in content.sections:
            for chunk in content.chunks(section):
                fh.write(chunk)


def _parse_rdcode(code: str, ndim: int) -> list[tuple[str, int]]:
    """'XUPTS03' -> [('X', ndim), ('U', ndim), ('P', 1), ('T', 1), ('S', 3)]."""
    groups = []
    i = 0
    while i < len(code):
        c = code[i]
        if c in "XU":
            groups.append((c, ndim))
            i += 1
        elif c in "PT":
            groups.append((c, 1))
            i += 1
        elif c == "S":
            digits = code[i + 1 : i + 3]
            if not digits.isdigit():
                raise ValueError(f"bad scalar count in rdcode {code!r}")
            groups.append(("S", int(digits)))
            i += 3
        else:
            raise ValueError(f"unknown variable {c!r} in rdcode {code!r}")
    return groups


def read_field_file(path: str | os.PathLike, velocity: Sequence[str] = ("ux", "uy", "uz"),
                    pressure: str = "P", scalars: Sequence[str] = ()) -> dict:
    """Read a Nek5000 field file (any of X, U, P, T, Snn; either byte order).

    Returns ``{"coords": (3, E, nz, ny, nx) or None, "fields": {name: (E, nz,
    ny, nx)}, "time", "step", "order", "wdsz", "nelgt", "fid", "nfiles",
    "rdcode", "element_ids", "byteorder"}``. U's components are named by ``velocity``,
    P by ``pressure``, T "T", and scalar k by ``scalars[k-1]`` (beyond those, "S01", "S02"
    ...). Elements are sorted by their global number.
    """
    data = Path(path).read_bytes()
    if len(data) < HEADER_BYTES + 4:
        raise ValueError(f"{path}: too short for a Nek5000 field file")
    header = data[:HEADER_BYTES].decode("ascii", "replace").split()
    if not header or header[0] != "#std" or len(header) < 12:
        raise ValueError(f"{path}: not a Nek5000 field file (header {' '.join(header[:3])!r})")
    wdsz = int(header[1])
    nx, ny, nz = (int(v) for v in header[2:5])
    nelt, nelgt = int(header[5]), int(header[6])
    time = float(header[7])
    step = int(header[8])
    fid, nfiles = int(header[9]), int(header[10])
    rdcode = "".join(header[11:])
    ndim = 3 if nz > 1 else 2

    pos = HEADER_BYTES
    tag = data[pos : pos + 4]
    if abs(np.frombuffer(tag, dtype="<f4")[0] - ENDIAN_TAG) < 1e-5:
        bo = "<"
    elif abs(np.frombuffer(tag, dtype=">f4")[0] - ENDIAN_TAG) < 1e-5:
        bo = ">"
    else:
        raise ValueError(f"{path}: cannot tell the byte order (bad endianness tag)")
    pos += 4
    elmap = np.frombuffer(data, dtype=bo + "i4", count=nelt, offset=pos).astype(np.int64)
    pos += 4 * nelt
    real = np.dtype(bo + ("f8" if wdsz == 8 else "f4"))
    npts = nx * ny * nz
    shape = (nelt, nz, ny, nx)

    def read_block(count: int) -> np.ndarray:
        nonlocal pos
        nbytes = count * real.itemsize
        if pos + nbytes > len(data):
            raise ValueError(f"{path}: file is truncated")
        a = np.frombuffer(data, dtype=real, count=count, offset=pos)
        pos += nbytes
        return a

    order_idx = np.argsort(elmap, kind="stable")
    coords = None
    fields: dict[str, np.ndarray] = {}
    for kind, ncomp in _parse_rdcode(rdcode, ndim):
        if kind in "XU":
            a = read_block(nelt * ncomp * npts).reshape(nelt, ncomp, npts).transpose(1, 0, 2)
            comps = [np.array(a[c].reshape(shape)[order_idx], dtype=real.newbyteorder("=")) for c in range(ncomp)]
            if kind == "X":
                coords = np.stack(comps)
            else:
                for name, arr in zip(velocity, comps):
                    fields[name] = arr
        elif kind in "PT":
            a = read_block(nelt * npts).reshape(shape)[order_idx]
            fields[pressure if kind == "P" else "T"] = np.array(a, dtype=real.newbyteorder("="))
        else:  # scalars, scalar-major
            for s in range(ncomp):
                a = read_block(nelt * npts).reshape(shape)[order_idx]
                name = scalars[s] if s < len(scalars) else f"S{s + 1:02d}"
                fields[name] = np.array(a, dtype=real.newbyteorder("="))
    return {
        "coords": coords,
        "fields": fields,
        "time": time,
        "step": step,
        "order": nx - 1,
        "wdsz": wdsz,
        "nelgt": nelgt,
        "fid": fid,
        "nfiles": nfiles,
        "rdcode": rdcode,
        "element_ids": elmap[order_idx],
        "byteorder": "little" if bo == "<" else "big",
    }


def write_index(path_nek5000: str | os.PathLike, case_name: str, first: int, last: int) -> None:
    """Write the ``<case>.nek5000`` file that ParaView and VisIt open.

    ``first`` and ``last`` are the numbers of the first and last field files
    (``<case>0.f<first:05d>`` .. ``<case>0.f<last:05d>``). Written atomically; a failed
    write raises :class:`lobatto.errors.OutputError`.
    """
    first, last = int(first), int(last)
    if last < first:
        raise ValueError(f"last ({last}) must not be smaller than first ({first})")
    text = (
        f"filetemplate: {case_name}%01d.f%05d\n"
        f"firsttimestep: {first}\n"
        f"numtimesteps: {last - first + 1}\n"
    )
    atomic_write_text(path_nek5000, text)
