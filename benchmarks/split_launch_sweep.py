"""Launch configurations of the curved (split-form) Maxwell stage kernel at issue 32's target
sizes, timed side by side in one process: elements per block, threads per block, a register cap
(maxrregcount) and the face phase, against the default (systems/maxwell/cuda_launch.py).
The Nsight profile (benchmarks/notes-curved-maxwell.md section 8) found two resident blocks per
SM at N = 7 (128 registers, 88 KB shared) and one at N = 14 (168 registers, 164 KB): the sweep
asks whether more resident warps buy throughput.

    python benchmarks/split_launch_sweep.py [--json out.json]        (CUDA; about 4 minutes)
"""
from __future__ import annotations

import argparse
import gc
import json

from lobatto.bench import maxwell as bench

# (order, elements per side, [launch overrides: (epb, threads, maxrregcount or 0, face phase)])
CASES = [
    (7, 32, [None, (1, 256, 0, 1), (1, 256, 80, 0), (1, 192, 104, 0), (1, 128, 0, 0), (1, 128, 0, 1),
             (1, 256, 0, 0), (1, 384, 80, 0), (1, 512, 64, 0)]),
    (14, 16, [None, (1, 384, 0, 0), (1, 512, 128, 0), (1, 640, 96, 0), (1, 768, 80, 0), (1, 1024, 64, 0)]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--precision", default="float64")
    args = ap.parse_args()
    rows = []
    for order, e, launches in CASES:
        for launch in launches:
            try:
                r = bench.run("cuda", order, (e, e, e), curved=True, precision=args.precision, repeats=3,
                              launch=launch, copy_bytes=0, kernels=False)
                rate, ms = r["point_stage_updates_per_s"], 1e3 * r["seconds_per_step"]
            except Exception as exc:  # a launch the registers do not allow: say so and go on
                rate, ms = float("nan"), float("nan")
                print(f"N={order} {launch}: {type(exc).__name__}: {str(exc)[:160]}", flush=True)
            rows.append({"order": order, "elements": e, "launch": launch, "point_stage_per_s": rate, "ms_per_step": ms})
            print(f"N={order:2d} {e}^3 launch={str(launch or 'default'):22s} {rate:.4e} pt-st/s {ms:8.3f} ms/step", flush=True)
            gc.collect()
    print("\n| N | launch (epb, threads, maxrreg, face phase) | point-stage/s | ms/step |\n|---|---|---:|---:|")
    for r in rows:
        print(f"| {r['order']} | {r['launch'] or 'default'} | {r['point_stage_per_s']:.4e} | {r['ms_per_step']:.3f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"precision": args.precision, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
