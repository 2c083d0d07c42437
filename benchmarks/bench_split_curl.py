"""Cost of the split-form volume curl on curved elements, side by side with the chain-rule form.

The curved box of `lobatto bench maxwell --curved` (per-point metrics everywhere), whole lsrk45
steps on one GPU (fused face exchange, graph replay), for each kernel variant of
kernels/maxwell.cu's SPLIT: 0 the chain rule alone (the form before the split curl, which gains
energy on curved elements), 1 the split curl with J a^b staged in shared memory, 2 the split
curl reading J a^b at the line points from device memory. The default for a curved mesh is 1
where the shared memory holds it and 2 beyond. The affine box (the same element count, no
deformation) is the reference row.

    PYTHONPATH=src python3 benchmarks/bench_split_curl.py                       # N = 7 (32^3) and 14 (16^3)
    PYTHONPATH=src python3 benchmarks/bench_split_curl.py --cases 7:32 --precision float32
"""

from __future__ import annotations

import argparse
import datetime
import platform

import numpy as np

from lobatto.backends import get_backend
from lobatto.bench.maxwell import build, time_steps
from lobatto.bench.report import write_json
from lobatto.systems.maxwell import cuda as maxwell_cuda


def variants(order: int, itemsize: int, max_shared: int) -> list:
    """(label, curved, SPLIT override, launch override or None) rows for this order."""
    rows = [("affine box", False, None, None), ("curved, chain rule (SPLIT 0)", True, 0, None)]
    if maxwell_cuda.split_mode(order, itemsize, max_shared, True) == 1:
        cfg = maxwell_cuda.default_launch(order, np.dtype(f"f{itemsize}"), max_shared, 1)
        rows.append(("curved, split, shared J a^b (SPLIT 1, default)", True, 1, None))
        if cfg.face_phase:  # the face phase's shared memory costs resident blocks
            rows.append(("curved, split, SPLIT 1 without face phase", True, 1,
                         (cfg.elements_per_block, cfg.threads, 0, 0)))
        rows.append(("curved, split, J a^b from memory (SPLIT 2)", True, 2, None))
    else:
        rows.append(("curved, split, J a^b from memory (SPLIT 2, default)", True, 2, None))
    return rows


#: launch overrides (elements per block, threads, maxrregcount, face phase) tried by --tune
TUNE = {7: [(1, 256, 0, 1), (1, 320, 96, 1), (1, 384, 80, 1)],
        14: [(1, 256, 0, 0), (1, 512, 128, 0)]}


def tuning_variants(order: int, itemsize: int, max_shared: int) -> list:
    split = maxwell_cuda.split_mode(order, itemsize, max_shared, True)
    rows = [(f"curved, split (SPLIT {split}, default launch)", True, split, None)]
    rows += [(f"curved, split (SPLIT {split}), launch {launch}", True, split, launch) for launch in TUNE.get(order, [])]
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=["7:32", "14:16"], help="ORDER:ELEMENTS_PER_SIDE")
    parser.add_argument("--precision", default="float64")
    parser.add_argument("--json", default="split_curl.json")
    parser.add_argument("--tune", action="store_true", help="the split kernels' default launch against TUNE's")
    args = parser.parse_args()
    backend = get_backend("cuda", precision=args.precision)
    itemsize = np.dtype(args.precision).itemsize
    rows = []
    for case in args.cases:
        order, side = (int(x) for x in case.split(":"))
        rows_of = tuning_variants if args.tune else variants
        for label, curved, split, launch in rows_of(order, itemsize, backend.max_shared_per_block):
            backend.launch_overrides.pop((order, args.precision), None)
            if launch is not None:
                backend.launch_overrides[(order, args.precision)] = launch
            system, stepper, u, dt, _ = build(backend, order, (side,) * 3, curved)
            fused = stepper.whole_step
            fused.kernels.split_override = split
            timing = time_steps(backend, stepper, u, dt)
            t = timing["seconds_per_step"]
            cfg = fused.kernels.config(u.dtype, curved)
            threads = fused.kernels.threads(u.dtype, "stage_pairs", curved)
            row = {"order": order, "elements": side**3, "points": system.points, "variant": label,
                   "split": cfg.split, "threads": threads, "shared_bytes": cfg.shared_bytes,
                   "face_phase": cfg.face_phase, "ms_per_step": 1e3 * t,
                   "point_stage_updates_per_s": system.points * stepper.stages / t,
                   "finite": bool(backend.xp.all(backend.xp.isfinite(u)))}
            rows.append(row)
            print(f"N = {order:2d}  {label:<52s} {1e3 * t:8.3f} ms/step  {row['point_stage_updates_per_s']:.3e} "
                  f"point-stage/s  (threads {threads}, shared {cfg.shared_bytes} B)", flush=True)
            del system, stepper, u, fused
            backend.xp.get_default_memory_pool().free_all_blocks()
    out = {"benchmark": "split_curl", "date": datetime.date.today().isoformat(), "host": platform.node(),
           "backend": backend.describe(), "precision": args.precision, "rows": rows}
    write_json(args.json, out, indent=1, default=None, say=None)
    print("\n| N | variant | ms/step | point-stage updates/s | vs chain rule |")
    print("|---:|---|---:|---:|---:|")
    for r in rows:
        chain = next((c for c in rows if c["order"] == r["order"] and "chain" in c["variant"]), None)
        ratio = f"{chain['ms_per_step'] / r['ms_per_step']:.3f}" if chain else ""
        print(f"| {r['order']} | {r['variant']} | {r['ms_per_step']:.3f} | {r['point_stage_updates_per_s']:.3e} | "
              f"{ratio} |")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
