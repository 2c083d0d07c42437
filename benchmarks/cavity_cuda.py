#!/usr/bin/env python3
"""Cavity (TM110) errors of the CUDA backend, float64 and float32, against the NumPy reference.

    PYTHONPATH=src python3 benchmarks/cavity_cuda.py [--json PATH]

Unit PEC cavity, 2x2x2 elements, lsrk45 at CFL 0.4 to t = 0.5; straight and curved meshes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # analytic.py

import numpy as np

from lobatto.backends import get_backend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.integrators import Stepper, get_scheme, plan_steps
from lobatto.mesh import box_mesh
from lobatto.systems.maxwell.system import MaxwellSystem
from analytic import CAVITY_TM110 as CAVITY, bump

def run(backend, order, deform, t_end=0.5, fused=False):
    system = MaxwellSystem(box_mesh((2, 2, 2), deform=deform), order, backend)
    u = backend.asarray(system.evaluate_fields(CAVITY, 0.0))
    stepper = Stepper(system, get_scheme("lsrk45"))
    if not fused:
        stepper.whole_step = None  # the stage-by-stage path; on one GPU the default is fused
    steps, dt = plan_steps(t_end, system.stable_time_step(0.4, system.geometry.min_spacing))
    for _ in range(steps):
        stepper.step(u, 0.0, dt)
    backend.synchronize()
    squares, maxima = system.error_sums(u, system.evaluate_fields(CAVITY, t_end))
    return float(np.sqrt(squares.sum())), float(maxima.max()), steps


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--json", type=Path)
    p.add_argument("--orders", type=int, nargs="+", default=[5, 7])
    args = p.parse_args()
    rows = []
    for order in args.orders:
        for mesh, deform in (("straight", None), ("curved", bump)):
            for name, make, fused in (
                ("numpy float64", lambda: NumpyBackend(), False),
                ("cuda float64", lambda: get_backend("cuda", "float64"), False),
                ("cuda float64 fused", lambda: get_backend("cuda", "float64"), True),
                ("cuda float32", lambda: get_backend("cuda", "float32"), False),
            ):
                l2, mx, steps = run(make(), order, deform, fused=fused)
                rows.append({"order": order, "mesh": mesh, "backend": name, "l2": l2, "max": mx, "steps": steps})
    print(f"{'N':>2s} {'mesh':8s} {'backend':20s} {'L2 error':>10s} {'max error':>10s} {'steps':>5s}")
    for r in rows:
        print(f"{r['order']:2d} {r['mesh']:8s} {r['backend']:20s} {r['l2']:10.3e} {r['max']:10.3e} {r['steps']:5d}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
