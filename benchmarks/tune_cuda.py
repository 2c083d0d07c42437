#!/usr/bin/env python3
"""Tune the CUDA stage kernels' launch: time each alone for several (elements per block,
threads[, maxrregcount]) on one mesh, check each variant's output against the default's, and
print the model bandwidth of each (docs/cuda.md). The mesh geometry is computed once.

    PYTHONPATH=src python3 benchmarks/tune_cuda.py --order 7 --elements 32 32 32 --curved \
        --precisions float64 float32 --kernels stage pairs --variants 1,256 1,128 2,256 1,256,80
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import cupy
import numpy as np

from lobatto.backends import get_backend
from lobatto.bench.maxwell import INITIAL, curved_deformation
from lobatto.bench.report import Timer
from lobatto.integrators import Stepper, get_scheme
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.systems.maxwell import cuda as cm
from lobatto.systems.maxwell.fused import FusedExchangeStepper
from lobatto.systems.maxwell.system import MaxwellSystem


def tune(mesh, geometry, order, precision, kernel, variants, calls):
    backend = get_backend("cuda", precision=precision)
    system = MaxwellSystem(mesh, order, backend, geometry=geometry)
    stepper = Stepper(system, get_scheme("lsrk45"))
    u0 = backend.asarray(system.evaluate_fields(INITIAL, 0.0))
    dt = system.stable_time_step(0.5, geometry.min_spacing)
    g = system.device_geometry
    buf = system.trace_buffer
    system.traces_kernel(u0, g["normals"], buf)
    system.exchange.apply(buf.reshape(6, -1), "sum")
    res0 = cupy.asarray(np.random.default_rng(0).standard_normal(u0.shape).astype(precision))
    fused = FusedExchangeStepper(system, stepper) if kernel == "pairs" else None
    if fused:
        system.traces_kernel(u0, g["normals"], fused.buffers[0])
    item = np.dtype(precision).itemsize
    frac = float(np.mean(geometry.affine))
    n = order + 1
    per_element = frac * cm.stage_bytes(order, item, True) + (1 - frac) * cm.stage_bytes(order, item, False)
    if fused:
        per_element += 6 * n**2 * 4 + 36 * n**2 * item
    nbytes = system.num_elements * per_element
    timer = Timer(backend)
    a, b = stepper.scheme.A[1], stepper.scheme.B[1]
    dtname = np.dtype(precision).name
    rows, reference = [], None
    for v in ["default", *variants]:
        backend.launch_overrides.pop((order, dtname), None)
        if v != "default":
            backend.launch_overrides[(order, dtname)] = tuple(int(x) for x in v.split(","))
        stage = cm.make_stage(backend, order)
        cfg = stage.kernels.config(u0.dtype)
        try:
            stage.kernels.kernels(u0.dtype)
        except Exception as exc:  # noqa: BLE001  (a variant the device cannot launch)
            print(f"{kernel} {precision} {v}: skipped ({exc})")
            continue
        uu, rr = u0.copy(), res0.copy()
        if fused:
            fused.kernels = stage.kernels
            fused.residual = rr

            def run(x=uu):
                fused.stage(x, 0, a, b, dt, True)

            fn = stage.kernels.kernels(u0.dtype)[0]["stage_pairs"]
        else:

            def run(s=stage, x=uu, y=rr):
                s(x, y, buf, g, system.epsilon, system.mu, system.alpha, a, b, dt)

            fn = stage.kernels.kernels(u0.dtype)[0]["stage"]
        run()
        out = cupy.asnumpy(uu)
        if reference is None:
            reference = out
        err = float(np.max(np.abs(out - reference)))
        t = timer(run, calls)
        rows.append(
            {
                "kernel": kernel,
                "precision": precision,
                "variant": v,
                "epb": cfg.elements_per_block,
                "threads": cfg.threads,
                "maxreg": cfg.maxrregcount,
                "face_phase": cfg.face_phase,
                "regs": fn.num_regs,
                "smem": cfg.shared_bytes,
                "us": t * 1e6,
                "GBs": nbytes / t / 1e9,
                "bytes_per_point": nbytes / system.points,
                "max_diff": err,
            }
        )
    return rows


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--order", type=int, default=7)
    p.add_argument("--elements", type=int, nargs=3, default=(32, 32, 32))
    p.add_argument("--curved", action="store_true")
    p.add_argument("--precisions", nargs="+", default=["float64"])
    p.add_argument("--kernels", nargs="+", default=["stage"], choices=("stage", "pairs"))
    p.add_argument("--variants", nargs="+", default=["1,256", "1,128", "1,512", "2,256"])
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--json", type=Path)
    args = p.parse_args()

    mesh = box_mesh(tuple(args.elements), deform=curved_deformation if args.curved else None)
    geometry = compute_geometry(mesh, args.order)
    rows = []
    for precision in args.precisions:
        for kernel in args.kernels:
            rows += tune(mesh, geometry, args.order, precision, kernel, args.variants, args.calls)
    print(f"N={args.order} E={mesh.num_elements} {'curved' if args.curved else 'affine'}")
    print(f"{'kernel':6s} {'prec':8s} {'variant':10s} {'epb':>3s} {'thr':>5s} {'FP':>2s} {'regs':>4s} {'smem':>7s} "
          f"{'us':>8s} {'GB/s':>7s} {'B/pt':>6s} {'maxdiff':>8s}")
    for r in rows:
        print(f"{r['kernel']:6s} {r['precision']:8s} {r['variant']:10s} {r['epb']:3d} {r['threads']:5d} "
              f"{int(r['face_phase']):2d} {r['regs']:4d} "
              f"{r['smem']:7d} {r['us']:8.1f} {r['GBs']:7.1f} {r['bytes_per_point']:6.1f} {r['max_diff']:8.1e}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
