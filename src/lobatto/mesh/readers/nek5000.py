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
``all`` when every element is in the same group). Only meshes whose elements all belong to
the fluid (NELT = NELV) are supported.

The readers are nek5000_re2.py and nek5000_rea.py, the mesh as stored and the checks they
share nek5000_records.py; this module picks the reader and converts to lobatto's conventions.

2-D meshes (NDIM = 2) are read too: a ``.re2`` element record is group + x[4] + y[4], a ``.rea``
element a header line and the lines of x and y of corners 1-4 (counter-clockwise, as Nek
requires); sides 1-4 (s = -1, r = +1, s = +1, r = -1: the first four 3-D faces) carry the
boundary conditions and the 'C' and 'm' curves. The mesh becomes quadrilaterals in z = 0.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto.errors import InputError
from lobatto.mesh.imported import ImportedMesh
from lobatto.mesh.readers.nek5000_curves import NEK_FACE_TO_LOBATTO, element_nodes
from lobatto.mesh.readers.nek5000_re2 import read_re2
from lobatto.mesh.readers.nek5000_rea import read_rea
from lobatto.mesh.readers.nek5000_records import CURVE_TYPES, INTERIOR_CODES, NekMesh, record_ids

__all__ = ["read", "read_nek", "to_imported", "NekMesh", "NEK_FACE_TO_LOBATTO", "CURVE_TYPES", "INTERIOR_CODES"]


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
    return read_re2(path) if suffix == ".re2" else read_rea(path)


# --------------------------------------------------------------------------- conversion

def _periodic_pairs(nek: NekMesh) -> np.ndarray | None:
    elements, faces = np.nonzero(nek.bc_codes == "P")
    if len(elements) == 0:
        return None
    nel = nek.num_elements
    partner = record_ids(np.rint(nek.bc_values[elements, faces, :2]))
    pe, pf = partner[:, 0] - 1, partner[:, 1] - 1
    for i in range(len(elements)):
        e, f = int(elements[i]), int(faces[i])
        where = f"{nek.source}: element {e + 1} face {f + 1} (Nek numbering) is periodic ('P')"
        nf = nek.bc_codes.shape[1]
        if not (0 <= pe[i] < nel and 0 <= pf[i] < nf):
            raise InputError(f"{where} with partner element {pe[i] + 1} face {pf[i] + 1}; expected "
                             f"an element in 1..{nel} and a face in 1..{nf}")
        back = nek.bc_values[pe[i], pf[i], :2]
        back_ids = record_ids(np.rint(back))  # nan or inf in a damaged file: 0, no element
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
