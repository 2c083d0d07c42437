#!/usr/bin/env python3
"""One launch of each kernel of a stage, for Nsight Compute (profiling range = these launches).

    ncu --profile-from-start off --section SpeedOfLight ... \
        python3 benchmarks/profile_cuda.py --order 7 --elements 16 16 16 --curved
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import cupy

from lobatto.backends import get_backend
from lobatto.bench.maxwell import build
from lobatto.bench.maxwell_models import local_index_arrays
from lobatto.comm import local_cuda as k
from lobatto.systems.maxwell.fused import FusedExchangeStepper


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--order", type=int, default=7)
    p.add_argument("--elements", type=int, nargs=3, default=(16, 16, 16))
    p.add_argument("--curved", action="store_true")
    p.add_argument("--precision", default="float64")
    args = p.parse_args()
    backend = get_backend("cuda", precision=args.precision)
    system, stepper, u, dt, _ = build(backend, args.order, tuple(args.elements), args.curved)
    fused = FusedExchangeStepper(system, stepper)
    g = system.device_geometry
    buf = system.trace_buffer
    u2 = buf.reshape(6, -1)
    idx = local_index_arrays(system.exchange, k)
    a, b = stepper.scheme.A[1], stepper.scheme.B[1]
    args_stage = (system.epsilon, system.mu, system.alpha, a, b, dt)

    def sequence():
        system.traces_kernel(u, g["normals"], buf)
        taken = k.take(u2, idx["perm"])
        compact = k.gather(taken, idx["starts"], "sum")
        k.scatter(compact, u2, idx["dest_local"], idx["src_local"])
        system.stage_kernel(u, stepper.residual, buf, g, *args_stage)
        fused.stage(u, 0, a, b, dt, True)

    sequence()  # compile, build indices
    cupy.cuda.Device().synchronize()
    cupy.cuda.profiler.start()
    sequence()
    cupy.cuda.Device().synchronize()
    cupy.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
