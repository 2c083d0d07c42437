"""Writers of Nek5000 mesh files, for tests: binary ``.re2`` and ASCII ``.rea``.

They follow the formats as Nek5000's readers read them (core/reader_re2.f, core/reader_rea.f)
and take the mesh in Nek's own conventions, 1-based: corners (E, 8, 3) counter-clockwise per
layer ((E, 4, 2|3) counter-clockwise for a 2-D mesh, written with NDIM = 2), curves as (element, edge or face, five values, type), boundary conditions as (element,
face, code, five values) with Nek's preprocessor face numbers. Nothing here comes from lobatto's
reader, so a test that writes with these and reads with lobatto checks the reader's conventions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HEADER_BYTES = 80
ENDIAN_TEST = 6.54321


def _curve_rows(curves):
    return [(int(e), int(s), np.asarray(v, dtype=np.float64).reshape(5), str(t)) for e, s, v, t in curves]


def write_re2(path, corners, *, groups=None, curves=(), bcs=(), version="#v002", byte_order="<",
              extra_fields=0):
    """A .re2 file. ``bcs`` lists the faces that are not ``E`` (Nek fills the rest with ``E``);
    ``extra_fields`` more boundary-condition sections follow (all faces ``W``), which a reader
    of the first field must skip."""
    corners = np.asarray(corners, dtype=np.float64)
    nel = len(corners)
    ndim = 2 if corners.shape[1] == 4 else 3
    groups = np.zeros(nel) if groups is None else np.asarray(groups)
    word = 4 if version == "#v001" else 8
    real = np.dtype(f"{byte_order}f{word}")
    ident = real if word == 8 else np.dtype(f"{byte_order}i4")
    out = bytearray()
    out += f"{version}{nel:9d}{ndim:3d}{nel:9d} this is the hdr".ljust(HEADER_BYTES).encode("ascii")
    out += np.array([ENDIAN_TEST], dtype=f"{byte_order}f4").tobytes()
    element = np.dtype([("group", ident), ("xyz", real, (ndim, 2**ndim))])
    records = np.zeros(nel, dtype=element)
    records["group"] = groups
    records["xyz"] = np.transpose(corners[:, :, :ndim], (0, 2, 1))
    out += records.tobytes()
    side = np.dtype([("element", ident), ("side", ident), ("values", real, (5,)), ("code", f"S{word}")])

    def section(rows, width):
        out.extend(np.array([len(rows)], dtype=ident).tobytes())
        rec = np.zeros(len(rows), dtype=side)
        for i, (e, s, v, code) in enumerate(rows):
            rec[i] = (e, s, v, code.ljust(width).ljust(word).encode("ascii"))
        out.extend(rec.tobytes())

    section(_curve_rows(curves), 1)
    bc_rows = [(int(e), int(f), np.asarray(v, dtype=np.float64).reshape(5), str(c)) for e, f, c, v in bcs]
    section(bc_rows, 3)
    for _ in range(extra_fields):
        section([(e + 1, f + 1, np.zeros(5), "W") for e in range(nel) for f in range(2 * ndim)], 3)
    Path(path).write_bytes(bytes(out))


def _g(value: float, width: int) -> str:
    """A value in a Fortran Gw.d field: ``width`` columns, as many digits as fit."""
    digits = width - 7
    text = f"{value:{width}.{digits}g}"
    assert len(text) == width, text
    return text


def _curve_line(nel: int, e: int, s: int, values, ctype: str) -> str:
    if nel < 1000:
        head = f"{s:3d}{e:3d}"
    elif nel < 1_000_000:
        head = f"{s:2d}{e:6d}"
    else:
        head = f"{s:2d}{e:12d}"
    return head + "".join(_g(v, 14) for v in values) + " " + ctype


def _bc_line(nel: int, e: int, f: int, code: str, values) -> str:
    if nel < 1000:
        return f" {code:<3s}{e:3d}{f:3d}" + "".join(_g(v, 14) for v in values)
    if nel < 100_000:
        return f" {code:<3s}{e:5d}{f:1d}" + "".join(_g(v, 14) for v in values)
    if nel < 1_000_000:
        return f" {code:<3s}{e:6d}" + "".join(_g(v, 14) for v in values)
    return f" {code:<3s}{e:12d}" + "".join(_g(v, 18) for v in values)


def write_rea(path, corners, *, groups=None, curves=(), bcs=(), mesh_in_re2=False,
              thermal=False):
    """A .rea file with the mesh inline (or, with ``mesh_in_re2``, NEL < 0 and no mesh: the mesh
    is in the .re2 of the same name). ``bcs`` may leave faces out; they are written as ``E``.
    ``thermal`` writes the logical switch IFHEAT and a second (thermal) field of ``I`` faces."""
    corners = np.asarray(corners, dtype=np.float64)
    nel = len(corners)
    ndim, nf = (2, 4) if corners.shape[1] == 4 else (3, 6)
    groups = np.zeros(nel, dtype=int) if groups is None else np.asarray(groups, dtype=int)
    lines = [" ****** PARAMETERS *****", "   2.6100000     NEKTON VERSION", f"   {ndim} DIMENSIONAL RUN",
             "   3 PARAMETERS FOLLOW", "   1.00000     p001 DENSITY", "  -1.00000     p002 VISCOS",
             "   0.00000     p003", "      4  Lines of passive scalar data follows2 CONDUCT; 2RHOCP",
             "   1.00000", "   1.00000", "   1.00000", "   1.00000",
             "   2  LOGICAL SWITCHES FOLLOW", "  T     IFFLOW", f"  {'T' if thermal else 'F'}     IFHEAT",
             "   2.00000       2.00000      -1.00000      -1.00000     XFAC,YFAC,XZERO,YZERO",
             " **MESH DATA** 6 lines are X,Y,Z;X,Y,Z. Columns corners 1-4;5-8"]
    if mesh_in_re2:
        lines.append(f"{-nel:12d}  {ndim}{nel:12d}     NELT,NDIM,NELV")
    else:
        lines.append(f"{nel:12d}  {ndim}{nel:12d}           NEL,NDIM,NELV")
        for e in range(nel):
            lines.append(f"            ELEMENT {e + 1:11d} [{e + 1:5d}A]  GROUP {groups[e]:5d}")
            for layer in (0, 4)[:ndim - 1]:
                for axis in range(ndim):
                    lines.append("".join(f"{v:24.16e}" for v in corners[e, layer:layer + 4, axis]))
        rows = _curve_rows(curves)
        lines.append(" ***** CURVED SIDE DATA *****")
        lines.append(f"{len(rows):12d} Curved sides follow IEDGE,IEL,CURVE(I),I=1,5, CCURVE")
        lines += [_curve_line(nel, e, s, v, t) for e, s, v, t in rows]
        given = {(int(e), int(f)): (str(c), np.asarray(v, dtype=np.float64).reshape(5)) for e, f, c, v in bcs}
        lines.append("  ***** BOUNDARY CONDITIONS *****")
        lines.append("  ***** FLUID   BOUNDARY CONDITIONS *****")
        for e in range(1, nel + 1):
            for f in range(1, nf + 1):
                code, values = given.get((e, f), ("E", np.zeros(5)))
                lines.append(_bc_line(nel, e, f, code, values))
        if thermal:
            lines.append("  ***** THERMAL BOUNDARY CONDITIONS *****")
            lines += [_bc_line(nel, e, f, "I", np.zeros(5)) for e in range(1, nel + 1) for f in range(1, nf + 1)]
        else:
            lines.append("  ***** NO THERMAL BOUNDARY CONDITIONS *****")
    lines += ["   0 PRESOLVE/RESTART OPTIONS  *****", "   0         INITIAL CONDITIONS *****",
              "  ***** DRIVE FORCE DATA ***** BODY FORCE, FLOW, Q",
              "   0                 Lines of Drive force data follow",
              "  ***** Variable Property Data ***** Overrrides Parameter data.", "   1 Lines follow.",
              "   0 PACKETS OF DATA FOLLOW", "  ***** HISTORY AND INTEGRAL DATA *****",
              "   0   POINTS.  Hcode, I,J,H,IEL", "  ***** OUTPUT FIELD SPECIFICATION *****",
              "   0 SPECIFICATIONS FOLLOW", "  ***** OBJECT SPECIFICATION *****",
              "       0 Surface Objects", "       0 Volume  Objects", "       0 Edge    Objects",
              "       0 Point   Objects"]
    Path(path).write_text("\n".join(lines) + "\n")


def box_corners2d(nx: int, ny: int, lower=(0.0, 0.0), upper=(1.0, 1.0)):
    """(E, 4, 2) Nek-ordered corners of a 2-D box (counter-clockwise from the lower left),
    elements x fastest, and the (i, j) of each element."""
    corners, index = box_corners(nx, ny, 1, (*lower, 0.0), (*upper, 1.0))
    return corners[:, :4, :2], index[:, :2]


def box_corners(nx: int, ny: int, nz: int, lower=(0.0, 0.0, 0.0), upper=(1.0, 1.0, 1.0)):
    """(E, 8, 3) Nek-ordered corners of a structured box, elements x fastest, and the grid
    index (i, j, k) of each element: corner n of element (i, j, k) is grid point
    (i + di, j + dj, k + dk) with (di, dj) = (0,0), (1,0), (1,1), (0,1) for n = 1..4 (and 5..8
    one layer up): counter-clockwise seen from +z, as Nek5000 numbers them."""
    xs = [np.linspace(lo, hi, n + 1) for lo, hi, n in zip(lower, upper, (nx, ny, nz))]
    ccw = ((0, 0), (1, 0), (1, 1), (0, 1))
    corners, index = [], []
    for k in range(nz):
        for j in range(ny):
            for i in range(nx):
                element = []
                for dk in (0, 1):
                    for di, dj in ccw:
                        element.append((xs[0][i + di], xs[1][j + dj], xs[2][k + dk]))
                corners.append(element)
                index.append((i, j, k))
    return np.array(corners), np.array(index)
