"""CPU backend benchmark: microseconds per lsrk45 step per grid point on a periodic box.

    python3 benchmarks/bench_cpu.py                       # N = 7, 14 on 5x5x5, 1 thread and all cores
    python3 benchmarks/bench_cpu.py --orders 7 --threads 1 --json out.json

Each case builds the periodic box, sets smooth (non-zero) initial fields, warms up, then times
blocks of whole 5-stage lsrk45 steps (median over --repeats blocks). Threads are those of the
compiled kernels (OpenMP, set through CpuBackend.set_threads, i.e. lobatto.jit.c); BLAS
used by the NumPy reference is pinned to one thread (set before NumPy is imported). Work
model: W = [180(N+1) + 420] n flops per step (seed paper). Also prints the split of one
stage into traces / gather-scatter / fused stage kernel.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import datetime
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np

from lobatto.backends.cpu import CpuBackend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.integrators import Stepper, get_scheme
from lobatto.mesh import box_mesh
from lobatto.bench.maxwell import INITIAL  # smooth non-zero fields, shared with lobatto bench
from lobatto.bench.report import cpu_model, host_seconds, write_json
from lobatto.systems.maxwell.system import MaxwellSystem, flops_per_step


def make_case(order, elements, backend):
    mesh = box_mesh(elements, periodic=(True, True, True))
    system = MaxwellSystem(mesh, order, backend)
    u = backend.asarray(system.evaluate_fields(INITIAL, 0.0))
    stepper = Stepper(system, get_scheme("lsrk45"))
    dt = system.stable_time_step(0.5, system.geometry.min_spacing)
    return system, stepper, u, dt


def time_steps(stepper, u, dt, repeats, min_block_s=0.3):
    """(median, best) seconds per step over `repeats` blocks of steps (block sized to ~min_block_s)."""
    stepper.step(u, 0.0, dt)  # warm-up (first-touch, caches)
    t0 = time.perf_counter()
    stepper.step(u, 0.0, dt)
    one = max(time.perf_counter() - t0, 1e-6)
    block = max(1, int(min_block_s / one))

    def steps():
        for _ in range(block):
            stepper.step(u, 0.0, dt)

    samples = [seconds / block for seconds in host_seconds(steps, repeats)]
    return statistics.median(samples), min(samples), block


def stage_split(system, stepper, u, dt, repeats=5):
    """Seconds per stage in traces, gather-scatter, and the stage kernel (1 stage, median)."""
    res = stepper.residual
    g = system.device_geometry
    buf = system.trace_buffer
    parts = {"traces": [], "gather_scatter": [], "stage_kernel": []}
    stage = system.stage_kernel  # None: no fused stage kernel, the rhs kernel is timed instead
    out = None if stage is not None else system.backend.xp.empty_like(u)
    for _ in range(repeats):
        t0 = time.perf_counter()
        system.traces_kernel(u, g["normals"], buf)
        t1 = time.perf_counter()
        system.exchange.apply(buf.reshape(6, -1), "sum")
        t2 = time.perf_counter()
        if stage is not None:
            stage(u, res, buf, g, system.epsilon, system.mu, system.alpha, 0.5, 0.0, 0.0)
        else:
            system.rhs_kernel(u, buf, g, out, system.epsilon, system.mu, system.alpha)
        t3 = time.perf_counter()
        parts["traces"].append(t1 - t0)
        parts["gather_scatter"].append(t2 - t1)
        parts["stage_kernel"].append(t3 - t2)
    return {k: statistics.median(v) for k, v in parts.items()}


def measure(label, threads, system, stepper, u, dt, repeats):
    sec, best, block = time_steps(stepper, u, dt, repeats)
    split = stage_split(system, stepper, u, dt)
    points, work = system.points, flops_per_step(system.order, system.points)
    return {
        "path": label, "order": system.order, "elements": system.num_elements, "points": points,
        "threads": threads, "us_per_step_point": sec / points * 1e6, "best_us_per_step_point": best / points * 1e6,
        "point_steps_per_s": points / sec, "gflops": work / sec / 1e9, "seconds_per_step": sec,
        "steps_per_block": block, "repeats": repeats, "stage_split_s": split,
        "gather_scatter_share": split["gather_scatter"] / sum(split.values()),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--orders", type=int, nargs="+", default=[7, 14])
    p.add_argument("--elements", type=int, nargs="+", default=[5], help="per direction (1 or 3 numbers)")
    p.add_argument("--threads", nargs="+", default=["1", "all"], help="thread counts; 'all' = os.cpu_count()")
    p.add_argument("--precision", default="float64", choices=["float64", "float32"])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--no-reference", action="store_true", help="skip the NumPy reference path")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    elements = args.elements * 3 if len(args.elements) == 1 else args.elements
    ncpu = os.cpu_count() or 1
    threads = [ncpu if t == "all" else int(t) for t in args.threads]
    threads = list(dict.fromkeys(threads))

    rows = []
    backend = CpuBackend(precision=args.precision)
    info = backend.describe()
    compiled = "compiled" if info.get("compiled_kernels") else "numpy (fallback)"
    for order in args.orders:
        system, stepper, u, dt = make_case(order, elements, backend)
        for t in threads:
            backend.set_threads(t)
            rows.append(measure(f"{compiled} kernels", t, system, stepper, u, dt, args.repeats))
            if not np.all(np.isfinite(backend.to_host(u))):
                raise SystemExit("non-finite fields: the benchmark run is unstable")
        if not args.no_reference:
            ref = NumpyBackend(precision=args.precision)
            rows.append(measure("numpy reference kernels", 1, *make_case(order, elements, ref), max(3, args.repeats // 2)))

    model = cpu_model()

    print(f"# {model}, {ncpu} cores, {info}")
    head = (f"{'path':<22} {'N':>3} {'E':>5} {'points':>9} {'thr':>4} {'us/step/pt':>11} {'pt-steps/s':>11}"
            f" {'GFLOP/s':>8} {'gs share':>9} {'best us':>8}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['path']:<22} {r['order']:>3} {r['elements']:>5} {r['points']:>9} {r['threads']:>4}"
              f" {r['us_per_step_point']:>11.3f} {r['point_steps_per_s']:>11.3e} {r['gflops']:>8.2f}"
              f" {100 * r['gather_scatter_share']:>8.1f}% {r['best_us_per_step_point']:>8.3f}")
    print("stage split (ms per stage: traces / gather-scatter / stage kernel):")
    for r in rows:
        s = r["stage_split_s"]
        print(f"  {r['path']:<22} N={r['order']:<3} threads={r['threads']}: "
              f"{1e3 * s['traces']:.3f} / {1e3 * s['gather_scatter']:.3f} / {1e3 * s['stage_kernel']:.3f}")
    if args.json:
        payload = {
            "benchmark": "bench_cpu", "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "machine": model, "cores": ncpu, "backend": info, "precision": args.precision,
            "command": " ".join([Path(sys.argv[0]).name] + (argv if argv is not None else sys.argv[1:])),
            "rows": rows,
        }
        write_json(args.json, payload, default=None, say="wrote")


if __name__ == "__main__":
    main()
