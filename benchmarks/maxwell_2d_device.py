"""Maxwell on a 2-D mesh on one GPU against the extruded 3-D run of the same mesh (issue 34, B3).

For each ORDER:NX case: box_mesh((NX, NX)) of quads, and its one-layer periodic-z twin
(mesh.extrude.extrude_quads: (N+1)x the points), whole lsrk45 steps on the CUDA backend (the
fused face exchange and CUDA-graph replay, the default path on one GPU), the same fixed dt.
Prints a table and writes JSON: seconds per step, nanoseconds per point and stage, the
bandwidth the byte model (cuda_launch.stage_bytes with dim) implies, the set-up time, and the
whole process's wall clock; checks that the 2-D run stayed finite and equal to the extruded
run after the same number of steps (one plane, relative).

    PYTHONPATH=src python3 benchmarks/maxwell_2d_device.py                  # 7:256 and 14:128, float64
    PYTHONPATH=src python3 benchmarks/maxwell_2d_device.py --cases 7:128 --precision float32

Expected 2-3 minutes with the defaults (not yet run on a GPU): most of it the host's set-up of
the extruded meshes (MaxwellSystem on 64x64x1 hexes at N = 7, 2.1 M points, took 2.9 s on the
session's shared CPU; the defaults' extruded meshes have 34 M and 55 M points). A case whose
extruded run does not fit the device's free memory is reported and skipped.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

START = time.perf_counter()

import numpy as np  # noqa: E402

from lobatto.backends import get_backend  # noqa: E402
from lobatto.bench.maxwell import time_steps  # noqa: E402
from lobatto.bench.report import write_json  # noqa: E402
from lobatto.integrators import Stepper, get_scheme  # noqa: E402
from lobatto.mesh import box_mesh  # noqa: E402
from lobatto.mesh.extrude import extrude_quads  # noqa: E402
from lobatto.mesh.topology import element_shape  # noqa: E402
from lobatto.systems.maxwell.cuda_launch import stage_bytes  # noqa: E402
from lobatto.systems.maxwell.system import MaxwellSystem  # noqa: E402

PI = np.pi


class Fn:
    def __init__(self, f):
        self.f = f

    def evaluate(self, xp, x, y, z, t):
        return self.f(x, y) + 0 * z


#: z-independent data in TE and TM at once (a cavity mode each, Lx = Ly = 1)
INITIAL = {"Ez": Fn(lambda x, y: np.sin(PI * x) * np.sin(PI * y)),
           "Hz": Fn(lambda x, y: np.cos(PI * x) * np.cos(2 * PI * y))}


def dimension_kernels(system):
    """A 2-D system's kernels and state for its dimension where system.py and systems/base.py do
    not pick them by the mesh's yet (a no-op once they do)."""
    mesh, backend, order = system.mesh, system.backend, system.order
    if mesh.dim == 3:
        return system
    if getattr(getattr(system.rhs_kernel, "kernels", None), "dim", 2) != 2:
        system.traces_kernel = backend.kernel("maxwell_traces", order=order, dim=2)
        system.rhs_kernel = backend.kernel("maxwell_rhs", order=order, dim=2)
        if system.stage_kernel is not None:
            system.stage_kernel = backend.kernel("maxwell_stage", order=order, dim=2)
    shape = (6, system.num_elements) + element_shape(2, order)
    if tuple(system.allocate_state().shape) != shape:
        system.allocate_state = lambda: backend.zeros(shape)
    return system


def one(backend, mesh, order, dt):
    t0 = time.perf_counter()
    system = dimension_kernels(MaxwellSystem(mesh, order, backend, flux="upwind"))
    stepper = Stepper(system, get_scheme("lsrk45"))
    u = backend.asarray(system.evaluate_fields(INITIAL, 0.0))
    setup = time.perf_counter() - t0
    if dt is None:
        dt = system.stable_time_step(0.5, system.geometry.min_spacing)
    timing = time_steps(backend, stepper, u, dt)
    return system, stepper, u, dt, setup, timing


def row(label, system, stepper, u, setup, timing, order, itemsize):
    t = timing["seconds_per_step"]
    stages = stepper.stages
    dim = system.mesh.dim
    model = stage_bytes(order, itemsize, affine=True, dim=dim) * system.num_elements * stages
    return {"mesh": label, "dim": dim, "elements": system.num_elements, "points": system.points,
            "path": stepper.path, "graph": timing.get("graph"), "ms_per_step": 1e3 * t,
            "ns_per_point_stage": 1e9 * t / (system.points * stages),
            "model_GB_per_s": model / t / 1e9, "setup_s": setup, "steps_timed": timing["steps_per_repeat"],
            "finite": bool(system.backend.xp.all(system.backend.xp.isfinite(u)))}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=["7:256", "14:128"], help="ORDER:NX (NX x NX quads)")
    parser.add_argument("--precision", default="float64")
    parser.add_argument("--json", default="maxwell_2d_device.json")
    parser.add_argument("--backend", default="cuda", choices=("cuda", "numpy"),
                        help="numpy: the reference backend, a smoke test of this script where there is no GPU")
    args = parser.parse_args()
    if args.backend == "numpy":
        from lobatto.backends.numpy_backend import NumpyBackend

        backend = NumpyBackend()
    else:
        backend = get_backend("cuda", precision=args.precision)
    pool = backend.xp.get_default_memory_pool() if backend.name == "cuda" else None
    itemsize = np.dtype(args.precision).itemsize
    rows, skipped = [], []
    for case in args.cases:
        order, nx = (int(x) for x in case.split(":"))
        mesh2 = box_mesh((nx, nx), lower=(0.0, 0.0), upper=(1.0, 1.0))
        s2, st2, u2, dt, setup2, timing2 = one(backend, mesh2, order, None)
        r2 = row(f"{nx}x{nx} quads", s2, st2, u2, setup2, timing2, order, itemsize)
        r2["order"] = order
        rows.append(r2)
        print(f"N = {order:2d}  2-D {nx}x{nx}: {r2['ms_per_step']:.3f} ms/step, {r2['ns_per_point_stage']:.3f} "
              f"ns/point-stage (setup {setup2:.1f} s)", flush=True)
        # the extruded run needs about (N+1) times the 2-D run's memory
        free = backend.memory_available()
        need = (order + 1) * pool.used_bytes() if pool is not None else 0
        if free is not None and need > free:
            skipped.append({"case": case, "reason": f"the extruded run needs about {need / 1e9:.1f} GB, "
                                                    f"{free / 1e9:.1f} GB free"})
            print(f"N = {order:2d}  extruded: skipped ({skipped[-1]['reason']})", flush=True)
            continue
        s3, st3, u3, _, setup3, timing3 = one(backend, extrude_quads(mesh2), order, dt)
        r3 = row(f"{nx}x{nx}x1 extruded", s3, st3, u3, setup3, timing3, order, itemsize)
        r3["order"] = order
        # the same number of steps from the same data: one plane of the 3-D state is the 2-D one
        a = backend.asarray(s2.evaluate_fields(INITIAL, 0.0))
        b = backend.asarray(s3.evaluate_fields(INITIAL, 0.0))
        for _ in range(10):
            st2.step(a, 0.0, dt)
            st3.step(b, 0.0, dt)
        a, b = backend.to_host(a), backend.to_host(b)
        r3["relative_difference_10_steps"] = float(np.abs(b[:, :, 0] - a[:, :, 0]).max() / np.abs(a).max())
        r3["time_ratio_3d_over_2d"] = r3["ms_per_step"] / r2["ms_per_step"]
        rows.append(r3)
        print(f"N = {order:2d}  extruded:  {r3['ms_per_step']:.3f} ms/step, {r3['ns_per_point_stage']:.3f} "
              f"ns/point-stage (setup {setup3:.1f} s); 3-D/2-D step time {r3['time_ratio_3d_over_2d']:.2f}, "
              f"difference after 10 steps {r3['relative_difference_10_steps']:.2e}", flush=True)
        del s2, st2, u2, s3, st3, u3, a, b
        if pool is not None:
            pool.free_all_blocks()
    wall = time.perf_counter() - START
    describe = backend.describe() if hasattr(backend, "describe") else backend.name
    out = {"benchmark": "maxwell_2d_device", "date": datetime.date.today().isoformat(), "host": platform.node(),
           "backend": describe, "precision": args.precision, "rows": rows, "skipped": skipped,
           "wall_clock_s": wall}
    write_json(args.json, out, indent=1, default=None, say=None)
    print("\n| N | mesh | points | ms/step | ns/point-stage | model GB/s | setup s | 3-D/2-D time | diff 10 steps |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['order']} | {r['mesh']} | {r['points']} | {r['ms_per_step']:.3f} | {r['ns_per_point_stage']:.3f} | "
              f"{r['model_GB_per_s']:.0f} | {r['setup_s']:.1f} | {r.get('time_ratio_3d_over_2d', float('nan')):.2f} | "
              f"{r.get('relative_difference_10_steps', float('nan')):.1e} |")
    print(f"whole process: {wall:.1f} s; wrote {args.json}")


if __name__ == "__main__":
    main()
