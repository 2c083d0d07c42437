"""Cost of [output] derived beside a Navier-Stokes step (docs/navier-stokes.md, "Derived fields"):
seconds of System.derived_fields (to host arrays) for the vorticity alone, lambda2 alone and
all six, and of one step, on a channel (walls at y = +-1, periodic x and z); a table, and JSON
with --json.

    python benchmarks/derived_cost.py [--backend cpu|cuda] [--elements 4] [--order 7] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from lobatto.api import case_from_dict
from lobatto.runner.simulation import Simulation

ALL = ("vorticity", "vorticity_magnitude", "q_criterion", "lambda2", "divergence", "wall_shear")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--elements", type=int, default=4)
    parser.add_argument("--order", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="write the numbers here")
    args = parser.parse_args()
    e = args.elements
    case = case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.01},
        "mesh": {"elements": [e, e, e], "lower": [0, -1, 0], "upper": [6.28, 1, 3.14], "periodic": [True, False, True]},
        "discretization": {"order": args.order}, "time": {"integrator": "bdf2", "dt": 0.01, "t_end": 1.0},
        "initial": {"ux": "(1 - y**2)*(1 + 0.1*sin(x)*cos(z))", "uy": "0.1*(1 - y**2)**2*sin(x)"},
        "output": {"formats": []}}, name="derived_cost")
    sim = Simulation(case, args.backend, tempfile.mkdtemp(), comm=None)
    sim.advance(2)  # the BDF2 history full

    def timed(work) -> float:
        best = float("inf")
        for _ in range(args.repeat):
            sim.backend.synchronize()
            start = time.perf_counter()
            work()
            sim.backend.synchronize()
            best = min(best, time.perf_counter() - start)
        return best

    step = timed(lambda: sim.advance(1))
    rows = {"step": step}
    for label, names in (("vorticity", ("vorticity",)), ("lambda2", ("lambda2",)), ("all six", ALL)):
        rows[label] = timed(lambda names=names: sim.system.derived_fields(sim.u, names))
    print(f"{e}^3 elements, N = {args.order}, {args.backend} ({sim.backend.name}, best of {args.repeat})")
    print(f"{'what':<12} {'seconds':>9} {'/ step':>8}")
    for label, seconds in rows.items():
        print(f"{label:<12} {seconds:9.4f} {seconds / step:8.3f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"elements": e, "order": args.order, "backend": args.backend, "seconds": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
