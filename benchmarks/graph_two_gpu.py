"""CUDA graph replay against plain calls of a 2-rank whole step, with and without overlap.

    mpiexec -n 2 python benchmarks/graph_two_gpu.py [--side 27] [--steps 30] [--json PATH]

One GPU per rank, N = 7, periodic box of (2 side) x side x side elements, lsrk45 whole steps
with NCCL ghost exchange. Per overlap setting: ms per step called plainly and replayed from a
graph recorded by ``backend.capture`` (no veto), CUDA events around ``--steps`` steps after 3
warm-up calls, slowest rank, two rounds. This is the measurement behind the whole step's
``graph_veto`` (an overlapped NCCL step is not recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from mpi4py import MPI  # noqa: E402

from bench_exchange_gpu import build  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=27)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    import cupy as cp

    from lobatto.backends import get_backend

    comm = MPI.COMM_WORLD
    me = comm.Get_rank()
    cp.cuda.Device(me).use()
    backend = get_backend("cuda", device_id=me, rank=me)
    _, system, stepper = build(args.side, comm.Get_size(), me, comm, backend)
    u = system.allocate_state()
    u[...] = cp.asarray(1e-3 * np.random.default_rng(2 + me).standard_normal(u.shape))

    def ms_per_step(fn):
        for _ in range(3):
            fn()
        cp.cuda.Device().synchronize()
        comm.Barrier()
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(args.steps):
            fn()
        stop.record()
        stop.synchronize()
        return comm.allreduce(cp.cuda.get_elapsed_time(start, stop) / args.steps, op=MPI.MAX)

    rows = []
    for round_ in range(2):
        for overlap in (True, False):
            system.overlap = overlap
            plain = ms_per_step(lambda: stepper.step(u, 0.0, 1e-4))
            graph = backend.capture(lambda: stepper.step(u, 0.0, 1e-4))
            replay = ms_per_step(graph)
            rows.append({"round": round_, "overlap": overlap, "ms_plain": plain, "ms_graph": replay,
                         "captured": bool(graph.captured)})
    if me == 0:
        print(f"{'round':>5} {'overlap':>8} {'plain ms':>9} {'graph ms':>9} captured")
        for r in rows:
            print(f"{r['round']:>5} {str(r['overlap']):>8} {r['ms_plain']:>9.3f} {r['ms_graph']:>9.3f} {r['captured']}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"side": args.side, "steps": args.steps, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
