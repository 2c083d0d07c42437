"""Gather-scatter exchange benchmark; run as ``mpiexec -n P python benchmarks/bench_gather_scatter.py``.

Problem: the ranks form a ring; each pair of ring neighbours shares ``m`` ids
(one point each side), so every message carries ``m * vn`` values of 8 bytes.
For each ``m`` (1 .. 8192 by default) and each method, ``apply(u, "sum")`` is
warmed up, then timed ``--repeats`` times with a barrier before each call; the
reported time is the maximum over ranks of each rank's median.  The method that
``auto`` picks for the same problem is reported too.

Options: ``--json PATH`` writes all rows and metadata; ``--vn`` fields per call;
``--sizes 1,8,64`` overrides the list of m.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

try:
    import lobatto  # noqa: F401
except ImportError:  # running from a checkout without install
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from mpi4py import MPI

from lobatto.comm import GatherScatter

METHODS = ["pairwise", "crystal_router", "allreduce"]


def ring_ids(me: int, P: int, m: int) -> np.ndarray:
    """Ids of rank ``me``: ``m`` ids shared with each ring neighbour (one link when P == 2)."""
    edges = sorted({(min(r, (r + 1) % P), max(r, (r + 1) % P)) for r in range(P)} - {(0, 0)})
    mine = [e for e, (a, b) in enumerate(edges) if me in (a, b)]
    if not mine:
        return np.arange(1, m + 1, dtype=np.int64)  # P == 1: local duplicates only
    return np.concatenate([e * m + 1 + np.arange(m, dtype=np.int64) for e in mine])


def time_interleaved(objs, u, repeats: int, warmup: int, comm) -> list[float]:
    """Median seconds per object (max over ranks); the objects take turns in every
    round, so a burst of background load hits all methods alike."""
    for _ in range(warmup):
        for gs in objs:
            gs.apply(u)
    times = np.empty((len(objs), repeats))
    for i in range(repeats):
        for j, gs in enumerate(objs):
            comm.Barrier()
            t0 = MPI.Wtime()
            gs.apply(u)
            times[j, i] = MPI.Wtime() - t0
    med = np.median(times, axis=1)
    worst = np.empty_like(med)
    comm.Allreduce(med, worst, op=MPI.MAX)
    return worst.tolist()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="PATH", help="write the results as JSON")
    ap.add_argument("--vn", type=int, default=1, help="fields per apply (default 1)")
    ap.add_argument("--sizes", default=",".join(str(2**k) for k in range(14)), help="points shared per neighbour")
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    me, P = comm.Get_rank(), comm.Get_size()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    rows = []
    if me == 0:
        print(
            f"# gather-scatter apply(sum), vn={args.vn}, P={P}, MPI: {MPI.Get_library_version().splitlines()[0].strip()}"
        )
        print(f"{'P':>3} {'method':<15} {'points':>7} {'bytes/msg':>10} {'median_us':>11}  {'neighbours':>10}  auto")
    for m in sizes:
        ids = ring_ids(me, P, m)
        auto = GatherScatter(ids, comm, method="auto", vn_hint=args.vn)
        chosen, auto_timings = auto.method, auto.timings
        auto.free()
        objs = [GatherScatter(ids, comm, method=method) for method in METHODS]
        u = np.ones((args.vn, len(ids))) if args.vn > 1 else np.ones(len(ids))
        reps = args.repeats if m <= 1024 else max(20, args.repeats // 4)
        ts = time_interleaved(objs, u, reps, args.warmup, comm)
        for gs, t in zip(objs, ts):
            info = gs.setup_info()
            row = {
                "P": P,
                "method": gs.method,
                "points": m,
                "vn": args.vn,
                "bytes_per_message": m * args.vn * 8,
                "median_us": t * 1e6,
                "neighbours": info["neighbours"],
                "bytes_per_exchange": info["bytes_per_exchange"] * args.vn,
                "repeats": reps,
                "auto_choice": chosen,
                "auto_timings_us": {k: v * 1e6 for k, v in auto_timings.items()},
            }
            rows.append(row)
            if me == 0:
                mark = "*" if chosen == gs.method else ""
                print(
                    f"{P:>3} {gs.method:<15} {m:>7} {m * args.vn * 8:>10} {t * 1e6:>11.1f}  {info['neighbours']:>10}  {mark}",
                    flush=True,
                )
        for gs in objs:
            gs.free()
    if me == 0 and args.json:
        meta = {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "host": platform.node(),
            "machine": platform.machine(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "mpi": MPI.Get_library_version().splitlines()[0].strip(),
            "cpus": os.cpu_count(),
            "command": " ".join(sys.argv),
        }
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
