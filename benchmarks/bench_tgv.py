"""Taylor-Green vortex (Re = 1600) throughput: point-steps per second and the time per part.

    PYTHONPATH=src python3 benchmarks/bench_tgv.py --backend cuda --elements 36 --order 7 \
        --steps 20 --json out.json

Sets up examples/tgv.toml's case at the given size (fixed dt from CFL 0.5 at the initial
velocity), takes --warmup steps (kernel compilation, the pressure projection filling up),
then times --steps steps. Prints a table and writes JSON: set-up time, seconds per step,
point-steps/s (points = E (N+1)^3, the local points, as the issue counts them), pressure and
velocity iterations per step and the share of the step per part (advection, pressure,
velocity, diagnostics, other), from the system's part timers (which synchronise the device).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import math
import time

from lobatto.api import Simulation, case_from_dict


def tgv(elements: int, order: int, dt: float, diagnostics_every: int):
    two_pi = 2 * math.pi
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 1 / 1600, "filter_modes": 1, "filter_weight": 10.0,
                    "diagnostics_every": diagnostics_every},
        "mesh": {"elements": [elements] * 3, "upper": [two_pi] * 3, "periodic": [True] * 3},
        "discretization": {"order": order},
        "time": {"integrator": "bdf2", "dt": dt, "t_end": 20.0},
        "solver": {"pressure": {"tolerance": 1e-6, "coarse_tolerance": 0.1}, "velocity": {"tolerance": 1e-8}},
        "initial": {"ux": "sin(x)*cos(y)*cos(z)", "uy": "-cos(x)*sin(y)*cos(z)",
                    "p": "(cos(2*x) + cos(2*y))*(cos(2*z) + 2)/16"},
        "output": {"formats": [], "log_every": 0},
    }, name="tgv_bench")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--elements", type=int, default=16)
    parser.add_argument("--order", type=int, default=7)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--cfl", type=float, default=0.5)
    parser.add_argument("--diagnostics-every", type=int, default=10)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    # dt from the CFL at |u| = 1 and the smallest GLL spacing of the uniform mesh
    from lobatto.discretization import gll_points

    x = gll_points(args.order)
    spacing = (x[1] - x[0]) / 2 * (2 * math.pi / args.elements)
    dt = args.cfl * spacing
    start = time.perf_counter()
    sim = Simulation(tgv(args.elements, args.order, dt, args.diagnostics_every), backend=args.backend,
                     output_dir="/tmp/bench_tgv", comm=None)
    setup = time.perf_counter() - start
    system = sim.system
    with contextlib.redirect_stdout(io.StringIO()):
        sim.advance(args.warmup)
    sim.backend.synchronize()
    system.seconds = dict.fromkeys(system.seconds, 0.0)
    iterations = dict(system.totals)
    start = time.perf_counter()
    reports = []
    for _ in range(args.steps):
        sim.advance(1)
        reports.append({**system.step_report(), "cfl": sim.last_cfl})
    sim.backend.synchronize()
    elapsed = time.perf_counter() - start
    per_step = elapsed / args.steps
    parts_total = sum(system.seconds.values())  # the parts' own timers, over all timed steps
    result = {
        "benchmark": "tgv", "date": datetime.date.today().isoformat(), "backend": sim.backend.describe(),
        "elements": args.elements ** 3, "order": args.order, "points": system.points, "dt": sim.dt,
        "setup_seconds": setup, "steps": args.steps, "seconds_per_step": per_step,
        "point_steps_per_second": system.points / per_step,
        "pressure_iterations_per_step": (system.totals["pressure_iterations"] - iterations["pressure_iterations"])
        / args.steps,
        "velocity_iterations_per_step": (system.totals["velocity_iterations"] - iterations["velocity_iterations"])
        / args.steps,
        "parts": {k: {"seconds": v / args.steps, "share": v / elapsed}
                  for k, v in system.seconds.items()},
        "cfl": max(r["cfl"] for r in reports),
    }
    result["parts"]["untimed"] = {"seconds": per_step - parts_total / args.steps,
                                  "share": 1.0 - parts_total / elapsed}
    print(f"TGV  backend={args.backend}  N={args.order}  elements={args.elements}^3  points={system.points}  "
          f"dt={sim.dt:.3e}")
    print(f"  set-up {setup:.1f} s   {per_step * 1e3:.1f} ms/step   {result['point_steps_per_second']:.3e} point-steps/s"
          f"   P {result['pressure_iterations_per_step']:.1f} it/step   U {result['velocity_iterations_per_step']:.1f}"
          f" it/step   CFL {result['cfl']:.2f}")
    for k, v in result["parts"].items():
        print(f"    {k:12s} {v['seconds'] * 1e3:9.2f} ms  {100 * v['share']:5.1f} %")
    # the pressure solve's parts, from a second set of steps with its part timers on (they
    # synchronise the device, so these steps are slower and not the ones timed above)
    pressure_before = system.seconds["pressure"]
    system.profile.reset()
    system.profile.enabled = True
    sim.advance(args.steps)
    system.profile.enabled = False
    pressure_seconds = system.seconds["pressure"] - pressure_before
    result["pressure_parts"] = system.profile.report(pressure_seconds)
    print(f"  pressure solve, profiled over {args.steps} more steps ({pressure_seconds / args.steps * 1e3:.1f} ms/step):")
    for k, v in result["pressure_parts"].items():
        print(f"    {k:15s} {v['seconds'] / args.steps * 1e3:9.2f} ms  {100 * (v['share'] or 0):5.1f} %")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
