"""HDF5 snapshots.

One file per snapshot::

    /mesh/x, /mesh/y, /mesh/z     (E, N+1, N+1, N+1)  node coordinates
    /fields/Ex ... /fields/Hz     (E, N+1, N+1, N+1)  field values

Array index order is ``[element, k, j, i]``: the last axis runs along the
reference coordinate r, the one before along s, then t (root attribute
``layout = "E,t,s,r"``). Root attributes: ``time``, ``step``, ``order``,
``config`` (TOML text of the effective case), ``lobatto_version``, ``layout``
and ``field_names`` (list of strings), plus any ``extra_attrs`` given to the writer.

A 2-D mesh keeps the same layout with a t axis of one point: datasets
(E, 1, N+1, N+1), /mesh/z all 0, and the root attribute ``dimension = 2`` (absent
in 3-D files, which are as they were).
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import numpy as np

from lobatto.discretization.tensor import dimension_of
from lobatto.io.atomic import atomic_path, h5_create
from lobatto.io.compression import dataset_options, register_filters

__all__ = ["write_snapshot", "read_snapshot", "LAYOUT"]

LAYOUT = "E,t,s,r"
_COORD_NAMES = ("x", "y", "z")


def _h5py():
    import h5py

    return h5py


def _version() -> str:
    try:
        from lobatto import __version__

        return str(__version__)
    except Exception:  # pragma: no cover
        return "unknown"


def _host(a) -> np.ndarray:
    """A numpy array from numpy or cupy input."""
    if hasattr(a, "get") and not isinstance(a, np.ndarray):
        a = a.get()
    return np.asarray(a)


def _attr_value(v: Any):
    if isinstance(v, (str, bytes, bool, int, float, np.generic, np.ndarray)):
        return v
    if v is None:
        return "none"
    if isinstance(v, (list, tuple)):
        try:
            return np.asarray(v)
        except Exception:
            return str(v)
    return str(v)


def write_snapshot(
    path: str | os.PathLike,
    coords,
    fields,
    field_names: Sequence[str],
    time: float,
    step: int,
    order: int,
    config_toml: str,
    extra_attrs: Mapping[str, Any] | None = None,
    extra_datasets: Mapping[str, Any] | None = None,
    compression: str = "none",
) -> None:
    """Write one snapshot atomically.

    ``coords``: array (3, E, N+1, N+1, N+1) of x, y, z (2-D: (3, E, 1, N+1, N+1),
    z = 0, and the file gets ``dimension = 2``); ``fields``: array
    (F, E, N+1, N+1, N+1) (or a sequence of F arrays) in the order of
    ``field_names``. Arrays are stored in their own dtype. ``extra_datasets`` maps
    further dataset paths (``"mesh/element_ids"``) to arrays, written in the same
    atomic step. ``compression`` (io/compression.py: "none", "gzip", "lz4", "zstd") applies to
    the coordinates and fields. A failed write raises :class:`lobatto.errors.OutputError` naming
    ``path`` and leaves any previous file at ``path`` as it was.
    """
    coords = _host(coords)
    names = list(field_names)
    if isinstance(fields, Mapping):
        arrays = [_host(fields[n]) for n in names]
    else:
        arrays = [_host(f) for f in fields]
    n = int(order) + 1
    if coords.ndim != 5 or coords.shape[0] != 3 or coords.shape[2:] not in ((n, n, n), (1, n, n)):
        raise ValueError(
            f"coords must have shape (3, E, {n}, {n}, {n}), or (3, E, 1, {n}, {n}) in 2-D, for order {order}, "
            f"got {coords.shape}"
        )
    shape = coords.shape[1:]
    if len(arrays) != len(names):
        raise ValueError(f"{len(arrays)} field arrays for {len(names)} field names")
    for name, a in zip(names, arrays):
        if a.shape != shape:
            raise ValueError(f"field {name} has shape {a.shape}, expected {shape}")

    def options(a):
        return dataset_options(compression, a.shape, a.dtype.itemsize)

    with atomic_path(path) as tmp:
        with h5_create(tmp) as f:
            mesh = f.create_group("mesh")
            for i, c in enumerate(_COORD_NAMES):
                mesh.create_dataset(c, data=np.ascontiguousarray(coords[i]), **options(coords[i]))
            grp = f.create_group("fields")
            for name, a in zip(names, arrays):
                grp.create_dataset(name, data=np.ascontiguousarray(a), **options(a))
            f.attrs["time"] = float(time)
            f.attrs["step"] = int(step)
            f.attrs["order"] = int(order)
            f.attrs["config"] = str(config_toml)
            f.attrs["lobatto_version"] = _version()
            f.attrs["layout"] = LAYOUT
            f.attrs["field_names"] = names
            if dimension_of(coords.shape) == 2:  # the thin t axis of a 2-D mesh
                f.attrs["dimension"] = 2
            for k, v in (extra_attrs or {}).items():
                f.attrs[str(k)] = _attr_value(v)
            for k, v in (extra_datasets or {}).items():
                f.create_dataset(str(k), data=np.ascontiguousarray(_host(v)))


def _plain(v: Any):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray) and v.dtype.kind in "OSU":
        return [_plain(x) for x in v.tolist()]
    return v


def read_snapshot(path: str | os.PathLike) -> dict:
    """Read a snapshot written by :func:`write_snapshot`.

    Returns ``{"coords": (3, E, n, n, n) array, "fields": {name: array},
    "attrs": {...}, "time", "step", "order", "config", "element_ids", "dimension"}``
    (2-D files: (3, E, 1, n, n) and (E, 1, n, n) arrays, dimension 2)
    (``element_ids``: the global element numbers stored by multi-rank runs,
    else None). Works on the virtual snapshot files of multi-rank runs too.
    """
    h5py = _h5py()
    register_filters()  # snapshots written with lz4 or zstd need hdf5plugin's filters
    with h5py.File(path, "r") as f:
        attrs = {k: _plain(v) for k, v in f.attrs.items()}
        coords = np.stack([f["mesh"][c][...] for c in _COORD_NAMES])
        names = attrs.get("field_names")
        if isinstance(names, str):
            names = names.split(",")
        if not names:
            names = list(f["fields"].keys())
        fields = {name: f["fields"][name][...] for name in names}
        element_ids = f["mesh"]["element_ids"][...] if "element_ids" in f["mesh"] else None
    return {
        "element_ids": element_ids,
        "coords": coords,
        "fields": fields,
        "attrs": attrs,
        "time": attrs.get("time"),
        "step": attrs.get("step"),
        "order": attrs.get("order"),
        "config": attrs.get("config"),
        "dimension": int(attrs.get("dimension", 3)),
    }
