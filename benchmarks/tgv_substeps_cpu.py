"""Taylor–Green vortex (Re = 1600) on the CPU with and without sub-stepping: wall time, steps
and the dissipation history to a fixed t (docs/navier-stokes.md, "Sub-stepping").

    OMP_NUM_THREADS=1 PYTHONPATH=src python3 benchmarks/tgv_substeps_cpu.py --elements 6 --order 5 \\
        --t-end 10 --runs 0.5:0 2:1 2:2 4:2 --json out.json

Each run is ``target_cfl:substeps`` or ``target_cfl:substeps:max_cfl`` (BDF2, HPF-RT on the highest mode as examples/tgv.toml,
diagnostics every step). Prints, per run: wall seconds of the step loop (set-up apart), steps,
the peak of -dE/dt and of 2 nu enstrophy with their times, the largest CFL number, the final
||div u||, and the peak dissipation's difference from the first run's. A run that stops (the
instability watch, max_cfl) is listed with its message.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time

import numpy as np

from lobatto.api import Simulation, case_from_dict


def tgv(elements: int, order: int, target_cfl: float, substeps: int, t_end: float, max_cfl: float | None = None):
    two_pi = 2 * math.pi
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 1 / 1600, "filter_modes": 1, "filter_weight": 10.0},
        "mesh": {"elements": [elements] * 3, "upper": [two_pi] * 3, "periodic": [True] * 3},
        "discretization": {"order": order},
        "time": {"integrator": "bdf2", "target_cfl": target_cfl, "t_end": t_end, "substeps": substeps,
                 **({"max_cfl": max_cfl} if max_cfl else {})},
        "solver": {"pressure": {"tolerance": 1e-6, "coarse_tolerance": 0.1}, "velocity": {"tolerance": 1e-8}},
        "initial": {"ux": "sin(x)*cos(y)*cos(z)", "uy": "-cos(x)*sin(y)*cos(z)",
                    "p": "(cos(2*x) + cos(2*y))*(cos(2*z) + 2)/16"},
        "output": {"formats": [], "log_every": 0},
    }, name="tgv_substeps")


def run(elements, order, target_cfl, substeps, t_end, max_cfl=None) -> dict:
    sim = Simulation(tgv(elements, order, target_cfl, substeps, t_end, max_cfl), backend="cpu",
                     output_dir=tempfile.mkdtemp(),
                     comm=None)
    sim.close()
    t, energy, dissipation, divergence = [0.0], [None], [None], [None]
    stopped = None
    start = time.perf_counter()
    try:
        while not sim.finished:
            sim.advance(1)
            r = sim.system.step_report()
            t.append(sim.t)
            energy.append(r["kinetic_energy"])
            dissipation.append(r["dissipation"])
            divergence.append(r["divergence"])
    except Exception as error:  # the instability watch or max_cfl: reported, not raised
        stopped = str(error)
    seconds = time.perf_counter() - start
    t, e, d = np.array(t[1:]), np.array(energy[1:]), np.array(dissipation[1:])
    rate = -np.gradient(e, t) if len(t) > 2 else np.zeros_like(t)
    out = {"target_cfl": target_cfl, "substeps": substeps, "seconds": seconds, "steps": sim.step_count,
           "t": sim.t, "largest_cfl": sim.largest_cfl, "final_divergence": divergence[-1], "stopped": stopped,
           "convective_evaluations": getattr(sim.system.substepper, "evaluations", 0)}
    if len(t) > 4:
        inner = slice(1, -1)
        i = int(np.argmax(rate[inner])) + 1
        j = int(np.argmax(d))
        out.update(peak_rate=float(rate[i]), peak_rate_t=float(t[i]), peak_dissipation=float(d[j]),
                   peak_dissipation_t=float(t[j]), final_energy=float(e[-1]))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=6)
    parser.add_argument("--order", type=int, default=5)
    parser.add_argument("--t-end", type=float, default=10.0)
    parser.add_argument("--runs", nargs="+", default=["0.5:0", "2:1"], help="target_cfl:substeps[:max_cfl]")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    results = []
    for spec in args.runs:
        cfl, substeps, *guard = spec.split(":")
        result = run(args.elements, args.order, float(cfl), int(substeps), args.t_end,
                     float(guard[0]) if guard else None)
        results.append(result)
        base = results[0].get("peak_rate")
        diff = (f"{100 * (result['peak_rate'] / base - 1):+.2f} %" if base and result.get("peak_rate") else "-")
        print(f"target_cfl {cfl:>4} substeps {substeps}: {result['seconds']:8.1f} s  {result['steps']:5d} steps  "
              f"t {result['t']:.3f}  peak -dE/dt {result.get('peak_rate', math.nan):.6f} at "
              f"{result.get('peak_rate_t', math.nan):.2f} ({diff})  peak 2nu*ens "
              f"{result.get('peak_dissipation', math.nan):.6f} at {result.get('peak_dissipation_t', math.nan):.2f}  "
              f"max CFL {result['largest_cfl'] or 0:.2f}  div {result['final_divergence'] or 0:.3g}"
              + (f"  STOPPED: {result['stopped']}" if result["stopped"] else ""), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"elements": args.elements, "order": args.order, "t_end": args.t_end, "runs": results}, fh,
                      indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
