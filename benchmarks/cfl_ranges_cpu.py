"""The largest stable target_cfl of BDF2 and BDF3, without and with sub-steps, on a small
Taylor–Green vortex on the CPU (docs/navier-stokes.md, "Stable CFL ranges").

    OMP_NUM_THREADS=1 PYTHONPATH=src python3 benchmarks/cfl_ranges_cpu.py --elements 4 --order 5 \\
        --steps 60 --t-end 10 --json cfl_ranges.json

For each integrator (bdf2, bdf3) and sub-step count (0, 1, 2) the runs go up the ladder of
target_cfl values (--cfls) until one is not stable; the largest stable one is the row's
answer. Every run goes on for --steps steps or to --t-end, whichever comes first (a multistep
scheme's instability grows by a factor per step, so large steps need the step count; the TGV
decays, and far past its t_end the flow is too weak to tell anything: the time bound). A
run is stable when it gets there without being stopped: the system's watch
(kinetic energy gained in a flow that cannot gain any, ||div u|| over half of ||grad u||), a
non-finite state, or the sub-stepped filter's bound. ``max_cfl`` is set to 100 so that the
guard does not decide: what stops a run is the flow going wrong. The TGV is at Re = 1600
(nu = 1/1600) with the case of benchmarks/tgv_substeps_cpu.py, HPF-RT filter off by default
(--filter-weight 10 puts it on the highest mode as examples/tgv.toml). Prints a table (also as
JSON): per row the largest stable target_cfl, the largest CFL number its steps reached, the
first unstable one and what stopped it (the JSON has every run: steps, t reached, largest
CFL, final kinetic energy, seconds).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time

from lobatto.api import Simulation, case_from_dict


def tgv(elements, order, integrator, target_cfl, substeps, t_end, filter_weight):
    two_pi = 2 * math.pi
    physics = {"equations": "navier_stokes", "viscosity": 1 / 1600}
    if filter_weight:
        physics.update(filter_modes=1, filter_weight=filter_weight)
    return case_from_dict({
        "physics": physics,
        "mesh": {"elements": [elements] * 3, "upper": [two_pi] * 3, "periodic": [True] * 3},
        "discretization": {"order": order},
        "time": {"integrator": integrator, "target_cfl": target_cfl, "t_end": t_end, "substeps": substeps,
                 "max_cfl": 100.0},
        "solver": {"pressure": {"tolerance": 1e-6, "coarse_tolerance": 0.1}, "velocity": {"tolerance": 1e-8}},
        "initial": {"ux": "sin(x)*cos(y)*cos(z)", "uy": "-cos(x)*sin(y)*cos(z)",
                    "p": "(cos(2*x) + cos(2*y))*(cos(2*z) + 2)/16"},
        "output": {"formats": [], "log_every": 0},
    }, name="tgv_cfl")


def run(args, integrator, target_cfl, substeps) -> dict:
    case = tgv(args.elements, args.order, integrator, target_cfl, substeps, args.t_end, args.filter_weight)
    start = time.perf_counter()
    stopped = None
    sim = None
    try:
        sim = Simulation(case, backend="cpu", output_dir=tempfile.mkdtemp(), comm=None)
        sim.close()
        while not sim.finished and sim.step_count < args.steps:
            sim.advance(1)
    except Exception as error:  # the watch, a non-finite state, the filter's bound: reported
        stopped = " ".join(str(error).split())[:160]
    energy = None
    if sim is not None and stopped is None:
        energy = float(sim.system.step_report()["kinetic_energy"])
    return {"integrator": integrator, "substeps": substeps, "target_cfl": target_cfl, "stable": stopped is None,
            "stopped": stopped, "steps": None if sim is None else sim.step_count,
            "t": None if sim is None else sim.t, "largest_cfl": None if sim is None else sim.largest_cfl,
            "final_energy": energy, "seconds": time.perf_counter() - start}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=4)
    parser.add_argument("--order", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--t-end", type=float, default=10.0)
    parser.add_argument("--integrators", nargs="+", default=["bdf2", "bdf3"])
    parser.add_argument("--substeps", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--cfls", nargs="+", type=float,
                        default=[0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0])
    parser.add_argument("--filter-weight", type=float, default=0.0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rows = []
    print("| integrator | substeps | largest stable target_cfl | its largest CFL | t reached | first unstable | "
          "stopped by |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for integrator in args.integrators:
        for substeps in args.substeps:
            ladder = []
            for cfl in args.cfls:
                result = run(args, integrator, cfl, substeps)
                ladder.append(result)
                if not result["stable"]:
                    break
            stable = [r for r in ladder if r["stable"]]
            best = stable[-1] if stable else None
            failed = ladder[-1] if not ladder[-1]["stable"] else None
            print(f"| {integrator} | {substeps} | {best['target_cfl']} | {best['largest_cfl']:.2f} | {best['t']:.2f} | "
                  if best else f"| {integrator} | {substeps} | - | - | - | ", end="")
            print(f"{failed['target_cfl'] if failed else '> ' + str(args.cfls[-1])} | "
                  f"{(failed['stopped'] or '')[:90] if failed else '-'} |", flush=True)
            rows.append({"integrator": integrator, "substeps": substeps, "ladder": ladder,
                         "largest_stable": best["target_cfl"] if best else None,
                         "first_unstable": failed["target_cfl"] if failed else None})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"elements": args.elements, "order": args.order, "steps": args.steps, "t_end": args.t_end,
                       "filter_weight": args.filter_weight, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
