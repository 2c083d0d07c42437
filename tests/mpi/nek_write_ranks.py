"""Write Nek5000 field files of seeded random data from every rank of an mpiexec job.

    python nek_write_ranks.py OUT_DIR SEED

For each partitioner (rcb, rsb) and word size (8, 4), each rank writes its part (the
elements partition_box gives it) of the same global arrays into
OUT_DIR/<partitioner>_<wdsz>/ (two snapshots and the .nek5000 index); without a
communicator (main(out, seed) in a plain process) the serial writer writes them.
test_nek5000_ranks.py compares the results.
"""

import sys
from pathlib import Path

import numpy as np

from lobatto.io import nek5000, nek5000_content, nek5000_mpi
from lobatto.mesh.partition import partition_box
from lobatto.machine.parallel import rank_and_size, world_comm

ELEMENTS = (4, 3, 3)
ORDER = 3
LAYOUT = {"velocity": ("ux", "uy", "uz"), "pressure": "p", "scalars": ("s1", "s2")}
NAMES = ("ux", "uy", "uz", "p", "s1", "s2")
TIMES = (0.25, 0.5)


def global_data(seed: int):
    """(coords (3, E, n, n, n), fields (6, E, n, n, n)) for the whole mesh, the same on every rank."""
    rng = np.random.default_rng(seed)
    n, nel = ORDER + 1, int(np.prod(ELEMENTS))
    return rng.uniform(-2, 2, (3, nel, n, n, n)), rng.standard_normal((len(NAMES), nel, n, n, n))


def main(out: Path, seed: int, comm=None) -> None:
    rank, size = rank_and_size(comm)
    coords, fields = global_data(seed)
    chunk, run = nek5000_content._CHUNK_BYTES, nek5000_mpi._MAX_RUN_BYTES
    for partitioner in ("rcb", "rsb"):
        # rsb: writes of one element at a time and file-view ranges of at most 3 elements, so
        # that the ranks make different numbers of writes and long ranges are split
        nek5000_content._CHUNK_BYTES, nek5000_mpi._MAX_RUN_BYTES = (chunk, run) if partitioner == "rcb" else (3000, 5000)
        ids = np.arange(coords.shape[1]) if size == 1 else partition_box(ELEMENTS, size, rank, partitioner)
        ids = np.random.default_rng(rank).permutation(ids)  # a rank's elements in no particular order
        for wdsz in (8, 4):
            directory = out / f"{partitioner}_{wdsz}"
            if rank == 0:
                directory.mkdir(parents=True, exist_ok=True)
            if comm is not None:
                comm.Barrier()
            for k, t in enumerate(TIMES):
                nek5000.write_field_file(directory / nek5000.field_file_name("case", k + 1), coords[:, ids],
                                         dict(zip(NAMES, fields[:, ids] * (k + 1))), t, 10 * (k + 1), ORDER,
                                         wdsz=wdsz, element_ids=ids + 1, comm=comm, **LAYOUT)
            if rank == 0:
                nek5000.write_index(directory / "case.nek5000", "case", 1, len(TIMES))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), world_comm())
