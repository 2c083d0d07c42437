"""Write the 2-D outputs of a curved quad mesh (HDF5, Nek5000 in float64 and float32, VTK) from
every rank of an mpiexec job.

    python output_2d_ranks.py OUT_DIR

The partitions are uneven (OWNED: 3 and 9 elements on 2 ranks, 2, 4 and 6 on 3), each rank's
elements scattered through the global numbering and listed in no particular order. Without a
communicator (main(out) in a plain process, or one rank) the serial writers write the files.
test_output_2d_ranks.py compares them.
"""

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from lobatto.io import hdf5, hdf5_parts, nek5000
from lobatto.io.vtk import VtkSeries
from lobatto.machine.parallel import rank_and_size, world_comm
from lobatto.mesh import box_mesh, compute_geometry

ELEMENTS = (4, 3)
ORDER = 3
NAMES = ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz")
LAYOUT = {"velocity": ("Ex", "Ey"), "scalars": ("Ez", "Hx", "Hy", "Hz")}  # Maxwell in 2-D (TE: Ex, Ey, Hz)
TIME, STEP = 0.375, 5
CONFIG = "[mesh]\nelements = [4, 3]\n"
OWNED = {1: [12], 2: [3, 9], 3: [2, 4, 6]}


def global_data():
    """(coords (3, E, 1, n, n), fields (6, E, 1, n, n)) of the whole mesh, the same on every rank."""
    mesh = box_mesh(ELEMENTS, lower=(0.0, 0.0), upper=(2.0, 1.0),
                    deform=lambda x, y, z: (0.07 * np.sin(np.pi * x) * np.sin(np.pi * y),
                                            0.05 * np.sin(np.pi * x) * np.sin(2 * np.pi * y), 0 * z))
    coords = compute_geometry(mesh, ORDER).coords
    x, y, _ = coords
    fields = np.stack([np.sin(np.pi * x) * y, np.cos(x + 2 * y), x * y ** 2, np.exp(-x) - y, x - 3 * y, np.sin(x * y)])
    return coords, fields


def owned(size: int, rank: int) -> np.ndarray:
    """The global ids of a rank's elements (one rank: all, in order, as a serial run has them)."""
    total = int(np.prod(ELEMENTS))
    if size == 1:
        return np.arange(total)
    ids = np.split(np.random.default_rng(11).permutation(total), np.cumsum(OWNED[size])[:-1])[rank]
    return np.random.default_rng(rank).permutation(ids)


def main(out: Path, comm=None) -> None:
    rank, size = rank_and_size(comm)
    coords, fields = global_data()
    ids = owned(size, rank)
    c, f = coords[:, ids], fields[:, ids]
    attrs = dict(time=TIME, step=STEP, order=ORDER, config_toml=CONFIG)
    h5 = out / f"te_{STEP:06d}.h5"
    if size == 1:
        hdf5.write_snapshot(h5, c, f, NAMES, **attrs)
    else:
        hdf5_parts.write_snapshot_part(h5, rank, c, f, NAMES, ids, **attrs)
    for wdsz in (8, 4):
        nek5000.write_field_file(out / nek5000.field_file_name(f"te{wdsz}_", 1), c, dict(zip(NAMES, f)), TIME, STEP,
                                 ORDER, wdsz=wdsz, element_ids=ids + 1, comm=comm, **LAYOUT)
    series = VtkSeries(out, "te", rank, size)
    series.write_piece(STEP, TIME, c, f, NAMES, ORDER, SimpleNamespace(element_ids=ids, dim=2), CONFIG)
    if comm is not None:
        comm.Barrier()  # every part and piece is complete
    if rank == 0:
        if size > 1:
            hdf5_parts.write_virtual_snapshot(h5, OWNED[size], ORDER, NAMES, np.float64,
                                              {"time": TIME, "step": STEP, "order": ORDER, "config": CONFIG,
                                               "layout": hdf5.LAYOUT, "field_names": list(NAMES)})
        for wdsz in (8, 4):
            nek5000.write_index(out / f"te{wdsz}_.nek5000", f"te{wdsz}_", 1, 1)
        series.write_index(STEP, TIME, NAMES, SimpleNamespace(element_ids=None, dim=2))


if __name__ == "__main__":
    main(Path(sys.argv[1]), world_comm())
