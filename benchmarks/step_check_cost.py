"""What the step check (runner/step_check.py) costs at set-up against a step: a box of E^3
elements at order N, gently deformed so that it is checked (a box of cubes is not), for
Maxwell and acoustics; prints the check's seconds, the seconds of one step (after a warm-up
step) and their ratio (benchmarks/notes-stability.md).

    PYTHONPATH=src python benchmarks/step_check_cost.py [--backend cpu|cuda] [--elements 8] [--order 7]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time

from lobatto.api import Simulation, case_from_dict


def measure(equations: str, backend: str, elements: int, order: int, out: str) -> dict:
    data = {"mesh": {"elements": [elements] * 3, "deform": {"x": "0.05*sin(pi*x)*sin(pi*y)*sin(pi*z)"}},
            "discretization": {"order": order}, "physics": {"equations": equations},
            "time": {"t_end": 1.0}, "output": {"formats": []}}
    with contextlib.redirect_stdout(io.StringIO()):
        sim = Simulation(case_from_dict(data, name="cost"), backend=backend, output_dir=out, comm=None)
    sim.advance(1)  # compile, record
    sim.backend.synchronize()
    start = time.perf_counter()
    sim.advance(3)
    sim.backend.synchronize()
    step = (time.perf_counter() - start) / 3
    check = sim.step_check["seconds"]
    return {"equations": equations, "backend": backend, "elements": elements ** 3, "order": order,
            "check_seconds": check, "step_seconds": step, "steps_worth": check / step}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--elements", type=int, default=8)
    ap.add_argument("--order", type=int, default=7)
    ap.add_argument("--systems", default="maxwell,acoustics")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for equations in args.systems.split(","):
            row = measure(equations, args.backend, args.elements, args.order, f"{scratch}/{equations}")
            rows.append(row)
            print(f"{equations:9s} {args.backend} {args.elements}^3 N = {args.order}: "
                  f"check {row['check_seconds']:.3f} s, step {row['step_seconds']:.4f} s ({row['steps_worth']:.1f} steps)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
