"""Mesh file readers: ``READERS[generator](path, geometry_order) -> ImportedMesh``.

``geometry_order`` is the run's order N: readers of curves that are not polynomials (Nek5000's
circle arcs) evaluate them at the GLL points of that order; gmsh elements keep their own order.
Each reader module is imported only when its format is read, so a missing optional package
(the gmsh SDK) matters only to the runs that use it.
"""

from __future__ import annotations

from pathlib import Path

from lobatto.errors import InputError
from lobatto.mesh.imported import ImportedMesh, hex_mesh_from_imported
from lobatto.mesh.mesh import DEFAULT_BOUNDARY, HexMesh


def _gmsh(path, geometry_order: int) -> ImportedMesh:
    from lobatto.mesh.readers.gmsh import read

    return read(path, geometry_order)


def _nek(path, geometry_order: int) -> ImportedMesh:
    try:
        from lobatto.mesh.readers.nek5000 import read
    except ImportError as error:  # the module is written separately; say so rather than crash
        raise InputError(f"{path}: the Nek5000 mesh reader is not available ({error})") from None
    return read(path, geometry_order)


READERS = {"gmsh": _gmsh, "nek": _nek}


def read_mesh(generator: str, path, geometry_order: int) -> ImportedMesh:
    """The whole mesh of a file, as its reader gives it."""
    if generator not in READERS:
        raise InputError(f"[mesh] generator '{generator}' reads no file (file readers: {', '.join(READERS)})")
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such mesh file")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a mesh file")
    return READERS[generator](path, geometry_order)


def mesh_from_file(generator: str, path, geometry_order: int, boundary_kinds: dict | None = None,
                   default_kind: str = DEFAULT_BOUNDARY) -> HexMesh:
    """The whole :class:`HexMesh` of a mesh file (see imported.hex_mesh_from_imported)."""
    return hex_mesh_from_imported(read_mesh(generator, path, geometry_order), boundary_kinds, default_kind)
