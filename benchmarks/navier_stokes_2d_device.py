"""Navier–Stokes on a 2-D mesh on one GPU against the extruded 3-D run of the same mesh (issue 34,
slice D): seconds per step and nanoseconds per point and step of whole BDF2 steps (dealiased
advection, the pressure and velocity solves) on the CUDA backend.

For each ORDER:NX:NY case: a curved channel of NX x NY quads (periodic in x, walls in y, driven
by a body force, a random-free analytic start), and its one-layer periodic-z twin (elements
[NX, NY, 1], z in [-1, 1]: (N+1)x the points), the same fixed dt and solver tolerances. Two
warm-up steps (the kernels' NVRTC compilation, the BDF start), then STEPS timed steps.
Prints a table and writes JSON; also the largest difference between the 2-D fields and plane 0
of the extruded ones, relative to each field's largest value (the plan's 2.1: ~1e-10 is what
projection schemes meet at solver tolerances of 1e-12, not bitwise).

    PYTHONPATH=src python3 benchmarks/navier_stokes_2d_device.py                 # 7:64:32, 5:128:64
    PYTHONPATH=src python3 benchmarks/navier_stokes_2d_device.py --cases 7:32:16 --steps 5

Measured on an H100 and on the CPU (--backend cpu): docs/benchmarks.md, "2-D meshes". About
2 minutes with the defaults on an H100, most of it the extruded runs.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from lobatto.api import Simulation, case_from_dict
from lobatto.bench.report import run_meta, write_json

FLOW = {"ux": "(1 - y*y)", "uy": "0.05*sin(pi*x)*(1 - y*y)**2"}


def channel(order, nx, ny, dim, dt, steps):
    three = dim == 3
    mesh = {"elements": [nx, ny] + ([1] if three else []), "lower": [0.0, -1.0] + ([-1.0] if three else []),
            "upper": [4.0, 1.0] + ([1.0] if three else []),
            "periodic": [True, False] + ([True] if three else []), "boundary": "wall",
            "deform": {"y": "0.05*sin(pi*x/2)*(1 - y*y)"}}
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.01, "force_x": "0.02"},
        "mesh": mesh, "discretization": {"order": order},
        "time": {"integrator": "bdf2", "dt": dt, "t_end": (steps + 2) * dt},
        "solver": {"pressure": {"tolerance": 1e-12}, "velocity": {"tolerance": 1e-12}},
        "initial": dict(FLOW), "output": {"formats": [], "log_every": 0},
    }, name=f"channel_{dim}d")


def run(order, nx, ny, dim, dt, steps, backend="cuda"):
    start = time.perf_counter()
    sim = Simulation(channel(order, nx, ny, dim, dt, steps), backend=backend, output_dir=tempfile.mkdtemp(), comm=None)
    setup_s = time.perf_counter() - start
    sim.advance(2)  # NVRTC, the BDF start
    sim.backend.synchronize()
    start = time.perf_counter()
    sim.advance(steps)
    sim.backend.synchronize()
    seconds = (time.perf_counter() - start) / steps
    n = order + 1
    points = nx * ny * n ** dim
    report = sim.system.step_report() if hasattr(sim.system, "step_report") else {}
    state = sim.backend.to_host(sim.u)
    return {"dim": dim, "order": order, "elements": [nx, ny] + ([1] if dim == 3 else []), "points": points,
            "setup_s": setup_s, "s_per_step": seconds, "ns_per_point_step": seconds * 1e9 / points,
            "pressure_iterations": report.get("pressure_iterations"),
            "velocity_iterations": report.get("velocity_iterations")}, state


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["7:64:32", "5:128:64"], help="ORDER:NX:NY")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--dt", type=float, default=2e-3)
    parser.add_argument("--json", default=None)
    parser.add_argument("--backend", default="cuda", choices=["cuda", "cpu"], help="the backend (cpu: the same comparison on the CPU)")
    args = parser.parse_args(argv)
    results = []
    for spec in args.cases:
        order, nx, ny = (int(x) for x in spec.split(":"))
        two, u2 = run(order, nx, ny, 2, args.dt, args.steps, args.backend)
        try:
            three, u3 = run(order, nx, ny, 3, args.dt, args.steps, args.backend)
        except Exception as error:  # noqa: BLE001  (e.g. the extruded run does not fit the device)
            print(f"{spec}: extruded run skipped: {type(error).__name__}: {error}"[:200])
            results.append({"2d": two})
            continue
        # u2 (ux, uy, p), u3 (ux, uy, uz, p): plane 0 of the twin
        pairs = {"ux": (u2[0], u3[0, :, :1]), "uy": (u2[1], u3[1, :, :1]), "p": (u2[2], u3[3, :, :1])}
        difference = {name: float(np.abs(a - b).max() / np.abs(b).max()) for name, (a, b) in pairs.items()}
        results.append({"2d": two, "3d": three, "relative_difference": difference,
                        "speedup_per_step": three["s_per_step"] / two["s_per_step"]})
    print(f"{'case':>10} {'D':>2} {'points':>10} {'s/step':>9} {'ns/pt/step':>10} {'P it':>5} {'U it':>5} {'setup s':>8}")
    for spec, r in zip(args.cases, results):
        for key in ("2d", "3d"):
            if key in r:
                x = r[key]
                print(f"{spec:>10} {x['dim']:>2} {x['points']:>10} {x['s_per_step']:>9.4f} {x['ns_per_point_step']:>10.2f} "
                      f"{x['pressure_iterations']!s:>5} {x['velocity_iterations']!s:>5} {x['setup_s']:>8.1f}")
        if "relative_difference" in r:
            print(f"{spec:>10} 2-D vs extruded: " + ", ".join(f"{k} {v:.1e}" for k, v in r["relative_difference"].items())
                  + f"; extruded/2-D time per step {r['speedup_per_step']:.1f}")
    write_json(args.json, {"meta": run_meta(), "results": results})


if __name__ == "__main__":
    main()
