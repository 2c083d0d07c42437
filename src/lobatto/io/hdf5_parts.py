"""A snapshot from several ranks as one logical HDF5 dataset.

Every rank writes its elements to a part file in the serial snapshot layout, plus
`/mesh/element_ids` (global element numbers). Rank 0 then writes the snapshot file itself,
whose datasets are virtual: the parts' datasets concatenated in rank order. Readers open
the snapshot file as if it were serial; no field data passes through rank 0.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from lobatto.io.atomic import atomic_path, h5_create, output_errors
from lobatto.io.hdf5 import write_snapshot

PART_DIRECTORY = "parts"


def part_path(snapshot_path: Path, rank: int) -> Path:
    snapshot_path = Path(snapshot_path)
    return snapshot_path.parent / PART_DIRECTORY / f"{snapshot_path.stem}.r{rank:05d}.h5"


def write_snapshot_part(snapshot_path, rank, coords, fields, field_names, element_ids, **attrs) -> Path:
    """This rank's part file (with its global element numbers), written atomically; errors
    are OutputErrors naming the part file (or the parts folder when it cannot be made)."""
    path = part_path(snapshot_path, rank)
    with output_errors(path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
    write_snapshot(path, coords, fields, field_names, **attrs,
                   extra_datasets={"mesh/element_ids": np.asarray(element_ids, dtype=np.int64)})
    return path


def write_virtual_snapshot(snapshot_path, part_counts, order, field_names, dtype, attrs: dict) -> None:
    """Rank 0: the snapshot file joining all parts (counts: elements per rank). The shape of
    an element, (n, n, n) or 2-D (1, n, n) with the attribute ``dimension = 2``, is rank 0's
    part's (written before this)."""
    import h5py

    snapshot_path = Path(snapshot_path)
    n = order + 1
    with h5py.File(part_path(snapshot_path, 0), "r") as part:
        element = tuple(part["mesh/x"].shape[1:])
        dimension = part.attrs.get("dimension")
    if element not in ((n, n, n), (1, n, n)):
        raise ValueError(f"{part_path(snapshot_path, 0)}: elements of shape {element}, not those of order {order}")
    if dimension is not None:
        attrs = {**attrs, "dimension": dimension}
    total = int(sum(part_counts))
    datasets = [f"mesh/{c}" for c in "xyz"] + [f"fields/{name}" for name in field_names]
    with atomic_path(snapshot_path) as tmp:
        with h5_create(tmp) as f:
            for name in datasets + ["mesh/element_ids"]:
                shape, kind = ((total,), np.int64) if name == "mesh/element_ids" else ((total, *element), dtype)
                layout = h5py.VirtualLayout(shape=shape, dtype=kind)
                start = 0
                for rank, count in enumerate(part_counts):
                    source_file = os.path.relpath(part_path(snapshot_path, rank), snapshot_path.parent)
                    source = h5py.VirtualSource(source_file, name, shape=(count,) + shape[1:])
                    layout[start:start + count] = source
                    start += count
                f.create_virtual_dataset(name, layout, fillvalue=np.nan if kind != np.int64 else -1)
            for key, value in attrs.items():
                f.attrs[key] = value
