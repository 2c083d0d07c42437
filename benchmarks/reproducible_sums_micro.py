"""Per-call cost of the reproducible dssum and dot against the partial sums, on the CPU.

    OMP_NUM_THREADS=1 PYTHONPATH=src mpiexec -n 2 python3 benchmarks/reproducible_sums_micro.py

A periodic 8^3 box at N = 7 split by rcb; ``Assembly`` with ``reproducible`` False and True;
dssum of one and of three fields, dot of one and of three fields; the minimum over 60 calls
(less sensitive to a busy machine than a mean), the slowest rank's. Prints a table.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from mpi4py import MPI

from lobatto.backends import get_backend
from lobatto.mesh import box_mesh
from lobatto.mesh.partition import partition_box
from lobatto.operators import Assembly

CALLS = 60


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=8, help="elements per side (default 8)")
    parser.add_argument("--order", type=int, default=7, help="N (default 7)")
    args = parser.parse_args(argv)
    comm = MPI.COMM_WORLD
    elements, order = (args.elements,) * 3, args.order
    mine = partition_box(elements, comm.size, comm.rank, "rcb")
    mesh = box_mesh(elements, periodic=(True, True, True)).subset(mine)
    backend = get_backend("cpu")
    best = {}
    for reproducible in (False, True):
        a = Assembly(mesh, order, backend, comm if comm.size > 1 else None, reproducible=reproducible)
        rng = np.random.default_rng(1)
        u3 = rng.standard_normal((3,) + a.shape)
        u1 = u3[0].copy()
        for name, call in (("dssum 1 field", lambda: a.dssum(u1)), ("dssum 3 fields", lambda: a.dssum(u3)),
                           ("dot 1 field", lambda: a.dot(u1, u1)), ("dot 3 fields", lambda: a.dot(u3, u3))):
            fastest = np.inf
            for _ in range(CALLS):
                comm.Barrier()
                start = time.perf_counter()
                call()
                fastest = min(fastest, time.perf_counter() - start)
            best[(reproducible, name)] = comm.allreduce(fastest, op=MPI.MAX)
        a.free()
    if comm.rank == 0:
        print(f"{comm.size} ranks, {elements} elements, N = {order}, {mesh.num_elements} elements on rank 0; "
              f"min over {CALLS} calls, slowest rank")
        for name in ("dssum 1 field", "dssum 3 fields", "dot 1 field", "dot 3 fields"):
            print(f"  {name:15s} partial sums {best[(False, name)] * 1e6:8.1f} us   "
                  f"reproducible {best[(True, name)] * 1e6:8.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
