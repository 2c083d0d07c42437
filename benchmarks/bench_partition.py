"""Partitioner set-up time and quality on box meshes; ``python benchmarks/bench_partition.py``.

For each box size and rank count: seconds for ``partition_box`` on the slowest rank (each
rank's part is computed independently, as in a run; best of ``--repeats``), the edge cut (faces
between parts, non-periodic graph) and the largest/smallest part. Prints a table; ``--json
PATH`` writes the rows.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time

import numpy as np

try:
    import lobatto  # noqa: F401
except ImportError:  # running from a checkout without install
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from lobatto.bench.report import processor, write_json
from lobatto.mesh import box_mesh
from lobatto.mesh.partition import PARTITIONERS, partition_box


def edge_cut(elements, parts) -> int:
    owner = np.empty(int(np.prod(elements)), dtype=np.int64)
    for p, ids in enumerate(parts):
        owner[ids] = p
    neighbour = box_mesh(elements).face_neighbour
    has = neighbour >= 0
    rows = np.nonzero(has)[0]
    return int(np.count_nonzero(owner[rows] != owner[neighbour[has]]) // 2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="12,27,40", help="box side in elements (cubes)")
    ap.add_argument("--ranks", default="2,3,16", help="rank counts")
    have_metis = importlib.util.find_spec("pymetis") is not None
    ap.add_argument("--methods", default=",".join(m for m in PARTITIONERS if m != "metis" or have_metis),
                    help="partitioners (default: all; metis when pymetis is installed)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    rows = []
    print(f"{'mesh':>6} {'P':>3} {'method':>6} {'slowest rank s':>15} {'edge cut':>9} {'parts min/max':>14}")
    for side in (int(s) for s in args.sizes.split(",")):
        elements = (side, side, side)
        for P in (int(p) for p in args.ranks.split(",")):
            for method in args.methods.split(","):
                seconds, parts = [], []
                for part in range(P):
                    best = float("inf")
                    for _ in range(args.repeats):
                        t0 = time.perf_counter()
                        ids = partition_box(elements, P, part, method)
                        best = min(best, time.perf_counter() - t0)
                    seconds.append(best)
                    parts.append(ids)
                sizes = [len(p) for p in parts]
                row = {"elements": elements, "ranks": P, "method": method, "seconds_slowest_rank": max(seconds),
                       "edge_cut": edge_cut(elements, parts), "part_min": min(sizes), "part_max": max(sizes)}
                rows.append(row)
                print(f"{side:>4}^3 {P:>3} {method:>6} {row['seconds_slowest_rank']:>15.4f} {row['edge_cut']:>9} "
                      f"{row['part_min']:>7}/{row['part_max']}", flush=True)
    if args.json:
        meta = {"machine": processor(), "cpus": os.cpu_count(),
                "numpy": np.__version__, "python": platform.python_version()}
        write_json(args.json, {"meta": meta, "rows": rows}, indent=1, default=None, say=None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
