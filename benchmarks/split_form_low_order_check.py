"""The split-form Maxwell operator at low order on a strongly deformed box, stepped at the
enforced cfl bounds (lsrk45: upwind 0.63, central 0.74) and below, from random fields: the
energy after --t-end time units over the initial one, and the step the run took (its check
against the operator's spectral radius, runner/step_check.py, shortens it where needed;
--no-check sets [time] cfl_check = false, the step of cfl alone) (benchmarks/notes-stability.md,
"A bound that does not hold"). CPU, a few minutes.

    PYTHONPATH=src python benchmarks/split_form_low_order_check.py [--orders 1,2,3,4] [--no-check] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import tempfile

import numpy as np

from lobatto.api import Simulation, case_from_dict

DEFORM = {"x": "0.15*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.12*sin(pi*x)*sin(pi*y)*sin(pi*z)",
          "z": "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"}
CASES = (("upwind", 0.63), ("central", 0.74), ("upwind", 0.5))


def energy_ratio(flux: str, cfl: float, order: int, t_end: float, out: str, check: bool = True) -> tuple:
    data = {"mesh": {"elements": [2, 2, 2], "boundary": "pec", "deform": DEFORM},
            "discretization": {"order": order, "flux": flux, "volume_form": "split"},
            "physics": {"equations": "maxwell"},
            "time": {"t_end": t_end, "cfl": cfl, "integrator": "lsrk45", "cfl_check": check},
            "output": {"formats": []}}
    sim = Simulation(case_from_dict(data, name="split_check"), backend="cpu", output_dir=out, comm=None)
    sim.u[...] = np.random.default_rng(1).standard_normal(sim.u.shape)
    start = sim.system.energy(sim.u)
    for n in range(sim.steps):
        sim.stepper.step(sim.u, n * sim.dt, sim.dt)
    return float(sim.system.energy(sim.u) / start), sim.steps, sim.dt * sim.system.wave_speed / sim.min_spacing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--orders", default="1,2,3")
    ap.add_argument("--t-end", type=float, default=40.0)
    ap.add_argument("--no-check", action="store_true", help="[time] cfl_check = false: the step of cfl alone")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for flux, cfl in CASES:
            for order in (int(o) for o in args.orders.split(",")):
                ratio, steps, taken = energy_ratio(flux, cfl, order, args.t_end, f"{scratch}/{flux}_{cfl}_{order}",
                                                   not args.no_check)
                rows.append({"flux": flux, "cfl": cfl, "order": order, "steps": steps, "cfl_taken": taken,
                             "energy_ratio": ratio})
                print(f"{flux:8s} cfl {cfl:.2f}  N = {order}  cfl taken {taken:.4f}  steps {steps:5d}  "
                      f"energy end / start {ratio:.3g}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"t_end": args.t_end, "cfl_check": not args.no_check, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
