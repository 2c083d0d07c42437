"""How close the enforced cfl bounds come to the operator's stability limit, as the step check
sees it (runner/step_check.py): per system, flux, integrator, order and mesh (the flat 2^3 box
of cubes the bounds were calibrated on, and the strongly deformed one of
split_form_low_order_check.py), the estimated spectral radius rho (40 power iterations), its
direction, and dt rho / reach at dt = bound h_min / c. The check shortens a step where this is
over step_check.THRESHOLD (benchmarks/notes-stability.md). CPU, a few minutes.

    PYTHONPATH=src python benchmarks/step_check_survey.py [--orders 1,2,3,4,6,8,10] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import tempfile
import time

from lobatto.api import Simulation, case_from_dict
from lobatto.integrators.stability import reach
from lobatto.runner.step_check import estimate

DEFORM = {"x": "0.15*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.12*sin(pi*x)*sin(pi*y)*sin(pi*z)",
          "z": "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"}


def survey_one(equations, flux, integrator, order, deformed, out) -> dict:
    mesh = {"elements": [2, 2, 2], **({"deform": DEFORM} if deformed else {})}
    data = {"mesh": mesh, "physics": {"equations": equations}, "discretization": {"order": order, "flux": flux},
            "time": {"t_end": 1.0, "integrator": integrator, "cfl_check": False}, "output": {"formats": []}}
    with contextlib.redirect_stdout(io.StringIO()):
        sim = Simulation(case_from_dict(data, name="survey"), backend="cpu", output_dir=out, comm=None)
    system = sim.system
    bound = system.spec.cfl_bounds[(flux, integrator)]
    dt = bound * sim.min_spacing / system.wave_speed
    start = time.perf_counter()
    rho, cosine = estimate(system, None)
    seconds = time.perf_counter() - start
    angle = math.acos(cosine)
    radius = reach(sim.stepper.scheme, angle)
    return {"equations": equations, "flux": flux, "integrator": integrator, "order": order,
            "mesh": "deformed" if deformed else "box", "bound": bound, "spectral_radius": rho,
            "direction_degrees": round(math.degrees(angle), 1), "reach": radius, "ratio": dt * rho / radius,
            "seconds": seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--orders", default="1,2,3,4,6,8,10")
    ap.add_argument("--integrators", default="lsrk45,rk4,ssprk3")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for deformed in (False, True):
            for equations in ("maxwell", "acoustics"):
                for integrator in args.integrators.split(","):
                    for flux in ("upwind", "central"):
                        for order in (int(o) for o in args.orders.split(",")):
                            row = survey_one(equations, flux, integrator, order, deformed,
                                             f"{scratch}/{len(rows)}")
                            rows.append(row)
                            print(f"{row['mesh']:8s} {equations:9s} {flux:7s} {integrator:6s} N = {order:2d}  "
                                  f"rho {row['spectral_radius']:9.4g}  direction {row['direction_degrees']:5.1f}  "
                                  f"dt rho / reach {row['ratio']:.4f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
