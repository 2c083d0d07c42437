"""VTK XML output for ParaView: unstructured grids of Lagrange hexahedra (or quadrilaterals)
and a time series.

Each element becomes one ``VTK_LAGRANGE_HEXAHEDRON`` (cell type 72) of the run's order N
with its own (N+1)^3 points (DG fields are discontinuous between elements, so points are
not shared). A 2-D mesh (arrays (..., E, 1, n, n), z = 0) gives ``VTK_LAGRANGE_QUADRILATERAL``
cells (type 70) of (N+1)^2 points, and a pair of fields ``Ax, Ay`` without ``Az`` becomes the
3-component point array ``A`` with a zero z component (ParaView's glyphs need 3 components). VTK puts a Lagrange cell's nodes at *equispaced* parametric positions, while
lobatto's nodes are GLL points: coordinates and fields are resampled from the GLL grid to
the equispaced grid of the same order, which is exact for the element's degree-N
polynomial, so ParaView's interpolant inside a cell is lobatto's polynomial (to round-off
amplified by the equispaced Lebesgue constant: 1e-12 at N = 10, 6e-5 at N = 20; docs/output.md).

Files (``NAME`` is ``[output] name``, ``STEP`` the zero-padded step):

* ``NAME_STEP.vtu``: one snapshot (one rank), or with several ranks each rank's piece
  ``NAME_STEP_pRANK.vtu`` and rank 0's ``NAME_STEP.pvtu`` that joins them;
* ``NAME.pvd``: the collection of every snapshot written so far with its time, rewritten
  after each snapshot; the file to open in ParaView.

Binary data is appended raw after the XML header, little-endian, with UInt64 block
headers so that pieces over 4 GiB work. Field data: ``TimeValue`` (ParaView's time),
``step``, ``config`` (TOML text of the effective case) and, for meshes with regions,
``region_names``. Every file is written atomically (io.atomic).
"""

from __future__ import annotations

import os
import struct
from functools import lru_cache
from pathlib import Path
from typing import Sequence
from xml.sax.saxutils import quoteattr

import numpy as np

from lobatto.discretization.gll import interpolation_matrix
from lobatto.io.atomic import atomic_open, atomic_write_text
from lobatto.discretization.tensor import dimension_of

__all__ = [
    "VTK_LAGRANGE_HEXAHEDRON",
    "VTK_LAGRANGE_QUADRILATERAL",
    "VtkSeries",
    "lagrange_hex_index",
    "lagrange_quad_index",
    "to_vtk_nodes",
    "vector_groups",
    "write_collection",
    "write_parallel_index",
    "write_piece",
]

VTK_LAGRANGE_HEXAHEDRON = 72
VTK_LAGRANGE_QUADRILATERAL = 70
# 2.2 is the first XML file version with VTK 9.1's Lagrange hexahedron numbering (the edges
# along k at (i, j) = (1, 1) and (0, 1) were swapped); readers renumber older versions.
FILE_VERSION = "2.2"
_HEADER = "<?xml version=\"1.0\"?>\n"
#: pieces with fewer points store connectivity and offsets as Int32 (files 5 % smaller)
INT32_POINTS = 2 ** 31
_TYPES = {np.dtype("<f8"): "Float64", np.dtype("<f4"): "Float32", np.dtype("<i8"): "Int64",
          np.dtype("<i4"): "Int32", np.dtype("u1"): "UInt8"}


# ------------------------------------------------------------------------ node layout
def lagrange_hex_index(i: int, j: int, k: int, order: int) -> int:
    """VTK's point number of node (i, j, k) of a Lagrange hexahedron of order N (as
    ``vtkHigherOrderHexahedron::PointIndexFromIJK``): corners, then edges, faces, interior."""
    n = order
    on = [a in (0, n) for a in (i, j, k)]
    count = sum(on)
    if count == 3:  # corner, counter-clockwise at k = 0 then at k = N
        return (1 if i and not j else 2 if i else 3 if j else 0) + (4 if k else 0)
    edge = n - 1
    if count == 2:
        if not on[0]:  # along i: edges 0 (j=0) and 2 (j=N), at k = 0 then N
            return 8 + (i - 1) + (2 * edge if j else 0) + (4 * edge if k else 0)
        if not on[1]:  # along j: edges 1 (i=N) and 3 (i=0)
            return 8 + (j - 1) + (edge if i else 3 * edge) + (4 * edge if k else 0)
        corner = 1 if i and not j else 2 if i else 3 if j else 0  # along k: edges 8..11
        return 8 + 8 * edge + corner * edge + (k - 1)
    face = edge * edge
    first = 8 + 12 * edge
    if count == 1:  # faces i=0, i=N, j=0, j=N, k=0, k=N; on each the lower free index fastest
        if on[0]:
            return first + (face if i else 0) + (j - 1) + edge * (k - 1)
        if on[1]:
            return first + 2 * face + (face if j else 0) + (i - 1) + edge * (k - 1)
        return first + 4 * face + (face if k else 0) + (i - 1) + edge * (j - 1)
    return first + 6 * face + (i - 1) + edge * ((j - 1) + edge * (k - 1))


def lagrange_quad_index(i: int, j: int, order: int) -> int:
    """VTK's point number of node (i, j) of a Lagrange quadrilateral of order N (as
    ``vtkHigherOrderQuadrilateral::PointIndexFromIJK``): corners counter-clockwise, then the
    edges j=0, i=N, j=N, i=0 (each along increasing i or j), then the interior, i fastest."""
    n = order
    on_i, on_j = i in (0, n), j in (0, n)
    if on_i and on_j:
        return 1 if i and not j else 2 if i else 3 if j else 0
    edge = n - 1
    if on_j:  # along i: edges 0 (j=0) and 2 (j=N)
        return 4 + (i - 1) + (2 * edge if j else 0)
    if on_i:  # along j: edges 1 (i=N) and 3 (i=0)
        return 4 + (j - 1) + (edge if i else 3 * edge)
    return 4 + 4 * edge + (i - 1) + edge * (j - 1)


@lru_cache(maxsize=None)
def _vtk_order(order: int, dim: int = 3) -> np.ndarray:
    """take[v] = flat [k, j, i] index (C order) of VTK's point v (a quad's: [j, i])."""
    n = order + 1
    take = np.empty(n ** dim, dtype=np.int64)
    for k in range(n if dim == 3 else 1):
        for j in range(n):
            for i in range(n):
                v = lagrange_hex_index(i, j, k, order) if dim == 3 else lagrange_quad_index(i, j, order)
                take[v] = (k * n + j) * n + i
    take.setflags(write=False)
    return take


@lru_cache(maxsize=None)
def _to_equispaced(order: int) -> np.ndarray:
    matrix = interpolation_matrix(order, np.linspace(-1.0, 1.0, order + 1))
    matrix.setflags(write=False)
    return matrix


def to_vtk_nodes(values: np.ndarray, order: int) -> np.ndarray:
    """(..., E, n, n, n) GLL nodal values -> (..., E, n**3) values at the equispaced nodes of
    the same order, in VTK's Lagrange hexahedron point order; a thin (..., E, 1, n, n) array
    (2-D) -> (..., E, n**2) in VTK's Lagrange quadrilateral order."""
    a = _to_equispaced(order)
    n = order + 1
    values = np.asarray(values, dtype=np.float64)
    dim = dimension_of(values.shape)  # N >= 1: a k axis of one point is a 2-D array
    # one axis at a time, as matrix products (a few times faster than one einsum)
    resampled = a @ (values @ a.T)  # along i, then j
    if dim == 3:  # along k (a 2-D array has no k direction to resample)
        resampled = (a @ resampled.reshape(values.shape[:-3] + (n, n * n))).reshape(values.shape)
    return resampled.reshape(values.shape[:-3] + (-1,))[..., _vtk_order(order, dim)]


def vector_groups(field_names: Sequence[str], dim: int = 3) -> list[tuple[str, tuple[str, ...]]]:
    """The point arrays for a system's fields: each run of three names ``Ax, Ay, Az`` becomes
    the 3-component array ``A``; every other field stays a scalar ``(name, (name,))``. With
    ``dim`` 2, a run ``Ax, Ay`` with no ``Az`` among the names is the vector ``A`` too, given
    as its two names (its z component is written as 0)."""
    names = list(field_names)
    groups, c = [], 0
    while c < len(names):
        stem = names[c][:-1]
        if names[c].endswith("x") and stem and names[c + 1:c + 3] == [stem + "y", stem + "z"] \
                and stem not in names:
            groups.append((stem, tuple(names[c:c + 3])))
            c += 3
        elif dim == 2 and names[c].endswith("x") and stem and names[c + 1:c + 2] == [stem + "y"] \
                and stem not in names and stem + "z" not in names:
            groups.append((stem, tuple(names[c:c + 2])))
            c += 2
        else:
            groups.append((names[c], (names[c],)))
            c += 1
    return groups


# ------------------------------------------------------------------------ XML writing
class _Appended:
    """Arrays of the appended-data block and the XML elements that point into it."""

    def __init__(self):
        self.blocks: list[bytes | np.ndarray] = []
        self.offset = 0

    def add(self, array, name: str | None = None, components: int = 1, field_data: bool = False,
            extra: str = "") -> str:
        """Queue ``array`` (or NUL-ended strings as bytes); returns its XML element."""
        if isinstance(array, bytes):  # a string array: the strings, each ended by a NUL
            kind, data, size, tuples = "String", array, len(array), array.count(b"\0")
        else:
            data = np.ascontiguousarray(array, dtype=np.asarray(array).dtype.newbyteorder("<"))
            kind, size, tuples = _TYPES[data.dtype], data.nbytes, data.size // components
        attrs = f'type="{kind}"' + (f" Name={quoteattr(name)}" if name is not None else "")
        if components > 1:
            attrs += f' NumberOfComponents="{components}"'
        if field_data or kind == "String":  # field data has no piece to take its size from
            attrs += f' NumberOfTuples="{tuples}"'
        element = f'<{"Array" if kind == "String" else "DataArray"} {attrs}{extra} format="appended" ' \
                  f'offset="{self.offset}"/>'
        self.blocks.append(data)
        self.offset += 8 + size
        return element

    def write(self, fh) -> None:
        for data in self.blocks:
            size = len(data) if isinstance(data, bytes) else data.nbytes
            fh.write(struct.pack("<Q", size))
            fh.write(data if isinstance(data, bytes) else memoryview(data).cast("B"))


def _strings(values: Sequence[str]) -> bytes:
    return b"".join(str(v).encode("utf-8") + b"\0" for v in values)


def _components(names: Sequence[str]) -> str:
    if len(names) == 1:
        return ""
    return "".join(f" ComponentName{c}={quoteattr(n)}" for c, n in enumerate(names))


def _field_data(block: _Appended, time: float, step: int, config_toml: str,
                region_names: Sequence[str] | None) -> list[str]:
    lines = [block.add(np.array([time], dtype="<f8"), "TimeValue", field_data=True),
             block.add(np.array([step], dtype="<i8"), "step", field_data=True),
             block.add(_strings([config_toml]), "config")]
    if region_names is not None:
        lines.append(block.add(_strings(region_names), "region_names"))
    return lines


def _data_set_attributes(groups) -> str:
    vectors = [name for name, parts in groups if len(parts) > 1]
    scalars = [name for name, parts in groups if len(parts) == 1]
    return (f" Scalars={quoteattr(scalars[0])}" if scalars else "") + \
           (f" Vectors={quoteattr(vectors[0])}" if vectors else "")


def write_piece(path: str | os.PathLike, coords, fields, field_names: Sequence[str], order: int, *,
                time: float, step: int, config_toml: str, element_ids=None, rank: int = 0,
                regions=None, region_names: Sequence[str] | None = None) -> None:
    """One ``.vtu`` file, atomically: coords (3, E, n, n, n), fields (F, E, n, n, n) at the
    GLL nodes (2-D: (3, E, 1, n, n) with z = 0 and (F, E, 1, n, n): quadrilaterals); cell
    data ``element_id`` (global, default 0..E-1), ``rank`` and, given ``regions`` (E,), ``region``."""
    coords = np.asarray(coords)
    n = order + 1
    dim = dimension_of(coords.shape) if coords.ndim == 5 else 3
    if coords.ndim != 5 or coords.shape[0] != 3 or coords.shape[2:] not in ((n, n, n), (1, n, n)):
        raise ValueError(f"coords must have shape (3, E, {n}, {n}, {n}), or (3, E, 1, {n}, {n}) in 2-D, for order "
                         f"{order}, got {coords.shape}")
    num_elements = coords.shape[1]
    if len(fields) != len(field_names):
        raise ValueError(f"{len(fields)} field arrays for {len(field_names)} field names")
    for name, values in zip(field_names, fields):
        if np.shape(values) != coords.shape[1:]:  # a 3-D field on 2-D coords would shift every point
            raise ValueError(f"field {name} has shape {np.shape(values)}, expected {coords.shape[1:]}")
    points_per_cell = n ** dim
    groups = vector_groups(field_names, dim)
    index = {name: c for c, name in enumerate(field_names)}

    block = _Appended()
    field_lines = _field_data(block, time, step, config_toml, region_names)
    point_lines = []
    for name, parts in groups:
        values = to_vtk_nodes(np.stack([fields[index[p]] for p in parts]), order)
        if len(parts) == 2:  # a 2-D vector: z = 0
            values = np.concatenate([values, np.zeros_like(values[:1])])
        components = len(values)
        values = np.moveaxis(values, 0, -1).reshape(-1, components)  # points, components
        point_lines.append(block.add(values, name, components, extra=_components(parts)))
    ids = np.arange(num_elements) if element_ids is None else np.asarray(element_ids)
    cell_lines = [block.add(ids.astype("<i8"), "element_id"),
                  block.add(np.full(num_elements, rank, dtype="<i4"), "rank")]
    if regions is not None:
        cell_lines.append(block.add(np.asarray(regions).astype("<i4"), "region"))
    points = np.moveaxis(to_vtk_nodes(coords, order), 0, -1).reshape(-1, 3)
    point_array = block.add(points, "Points", 3)
    index_type = "<i4" if num_elements * points_per_cell < INT32_POINTS else "<i8"
    cells = [block.add(np.arange(num_elements * points_per_cell, dtype=index_type), "connectivity"),
             block.add(np.arange(1, num_elements + 1, dtype=index_type) * points_per_cell, "offsets"),
             block.add(np.full(num_elements, VTK_LAGRANGE_HEXAHEDRON if dim == 3 else VTK_LAGRANGE_QUADRILATERAL,
                               dtype="u1"), "types")]

    def section(tag, lines, attrs=""):
        return [f"      <{tag}{attrs}>", *(f"        {line}" for line in lines), f"      </{tag}>"]

    xml = [f'<VTKFile type="UnstructuredGrid" version="{FILE_VERSION}" byte_order="LittleEndian" '
           'header_type="UInt64">',
           "  <UnstructuredGrid>",
           "    <FieldData>", *(f"      {line}" for line in field_lines), "    </FieldData>",
           f'    <Piece NumberOfPoints="{num_elements * points_per_cell}" NumberOfCells="{num_elements}">',
           *section("PointData", point_lines, _data_set_attributes(groups)),
           *section("CellData", cell_lines, ' Scalars="element_id"'),
           *section("Points", [point_array]),
           *section("Cells", cells),
           "    </Piece>",
           "  </UnstructuredGrid>",
           '  <AppendedData encoding="raw">',
           "   _"]
    with atomic_open(path, "wb") as fh:
        fh.write((_HEADER + "\n".join(xml)).encode("utf-8"))
        block.write(fh)
        fh.write(b"\n  </AppendedData>\n</VTKFile>\n")


def write_parallel_index(path: str | os.PathLike, pieces: Sequence[str], field_names: Sequence[str],
                         regions: bool = False, dim: int = 3) -> None:
    """Rank 0: the ``.pvtu`` that joins the pieces (file names relative to ``path``; ``dim``
    the mesh's, which groups the point arrays as the pieces do)."""
    groups = vector_groups(field_names, dim)
    point_arrays = [f'<PDataArray type="Float64" Name={quoteattr(name)}'
                    + (' NumberOfComponents="3"' if len(parts) > 1 else "") + _components(parts) + "/>"
                    for name, parts in groups]
    cell_arrays = ['<PDataArray type="Int64" Name="element_id"/>', '<PDataArray type="Int32" Name="rank"/>']
    if regions:
        cell_arrays.append('<PDataArray type="Int32" Name="region"/>')
    xml = [_HEADER.rstrip("\n"),
           f'<VTKFile type="PUnstructuredGrid" version="{FILE_VERSION}" byte_order="LittleEndian" '
           'header_type="UInt64">',
           '  <PUnstructuredGrid GhostLevel="0">',
           f"    <PPointData{_data_set_attributes(groups)}>", *(f"      {a}" for a in point_arrays),
           "    </PPointData>",
           '    <PCellData Scalars="element_id">', *(f"      {a}" for a in cell_arrays), "    </PCellData>",
           '    <PPoints>', '      <PDataArray type="Float64" NumberOfComponents="3"/>', "    </PPoints>",
           *(f"    <Piece Source={quoteattr(piece)}/>" for piece in pieces),
           "  </PUnstructuredGrid>",
           "</VTKFile>", ""]
    atomic_write_text(path, "\n".join(xml))


def write_collection(path: str | os.PathLike, entries: Sequence[tuple[float, str]]) -> None:
    """The ``.pvd`` time series: (time, file name relative to ``path``) per snapshot."""
    xml = [_HEADER.rstrip("\n"),
           '<VTKFile type="Collection" version="1.0" byte_order="LittleEndian">',
           "  <Collection>",
           *(f'    <DataSet timestep="{float(t)!r}" group="" part="0" file={quoteattr(name)}/>'
             for t, name in entries),
           "  </Collection>",
           "</VTKFile>", ""]
    atomic_write_text(path, "\n".join(xml))


# ------------------------------------------------------------------------ a run's series
class VtkSeries:
    """The VTK files of one run: every rank writes its piece, then rank 0 the ``.pvtu`` (with
    several ranks) and the ``.pvd`` listing every snapshot so far."""

    def __init__(self, directory: str | os.PathLike, name: str, rank: int = 0, size: int = 1):
        self.directory, self.name, self.rank, self.size = Path(directory), name, rank, size
        self.entries: list[tuple[float, str]] = []

    def dataset_name(self, step: int) -> str:
        """The file ParaView opens for this snapshot (``.vtu`` on one rank, else ``.pvtu``)."""
        return f"{self.name}_{step:06d}.{'vtu' if self.size == 1 else 'pvtu'}"

    def piece_name(self, step: int, rank: int) -> str:
        return self.dataset_name(step) if self.size == 1 else f"{self.name}_{step:06d}_p{rank}.vtu"

    def write_piece(self, step: int, t: float, coords, fields, field_names, order: int, mesh,
                    config_toml: str) -> None:
        """This rank's elements; region ids and names when the mesh has them."""
        regions = getattr(mesh, "regions", None)
        write_piece(self.directory / self.piece_name(step, self.rank), coords, fields, field_names, order,
                    time=t, step=step, config_toml=config_toml, element_ids=mesh.element_ids, rank=self.rank,
                    regions=regions, region_names=getattr(mesh, "region_names", None) if regions is not None else None)

    def write_index(self, step: int, t: float, field_names, mesh) -> None:
        """Rank 0, once every piece is complete: the ``.pvtu`` and the updated ``.pvd``."""
        if self.size > 1:
            write_parallel_index(self.directory / self.dataset_name(step),
                                 [self.piece_name(step, r) for r in range(self.size)], field_names,
                                 regions=getattr(mesh, "regions", None) is not None, dim=getattr(mesh, "dim", 3))
        name = self.dataset_name(step)  # a step written again replaces its entry
        self.entries = [entry for entry in self.entries if entry[1] != name] + [(t, name)]
        write_collection(self.directory / f"{self.name}.pvd", self.entries)
