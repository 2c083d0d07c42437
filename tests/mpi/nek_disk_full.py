"""A collective Nek5000 write into a full disk, for test_nek5000_ranks.py.

    python nek_disk_full.py OUT_DIR

Every rank writes its part of c0.f00001; then rank 0 makes the temporary that the next
write of that file uses (``<file>.tmp-<rank 0's pid>``) a link to /dev/full, where every
write fails with ENOSPC inside ROMIO, and the ranks write again. Rank 0 prints a line for
each rank: ``rank R: <error or "no error">; file unchanged: True|False``.
"""

import os
import sys
from pathlib import Path

import numpy as np

from lobatto.errors import OutputError
from lobatto.io import nek5000
from lobatto.io.atomic import temp_path_for
from lobatto.machine.parallel import world_comm


def main(out: Path) -> None:
    comm = world_comm()
    rank, size = comm.Get_rank(), comm.Get_size()
    path = out / "c0.f00001"
    ids = np.arange(rank, 12, size)  # every size-th element: ranks interleave in the file
    coords = np.random.default_rng(rank).standard_normal((3, ids.size, 3, 3, 3))
    nek5000.write_field_file(path, coords, coords, 0.1, 1, 2, element_ids=ids + 1, comm=comm)
    before = path.read_bytes()
    if rank == 0:
        os.symlink("/dev/full", temp_path_for(path))
    comm.Barrier()
    try:
        nek5000.write_field_file(path, coords * 2, coords, 0.2, 2, 2, element_ids=ids + 1, comm=comm)
        outcome = "no error"
    except OutputError as error:
        outcome = f"OutputError: {error}"
    lines = comm.gather(f"rank {rank}: {outcome}; file unchanged: {path.read_bytes() == before}")
    if rank == 0:  # one printer: the launcher may interleave several ranks' output
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
