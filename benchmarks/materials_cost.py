"""Cost of Maxwell's heterogeneous-medium path (systems/maxwell/materials.py) against the
uniform path on one backend: time per step, the same mesh and order, a two-material box.

    PYTHONPATH=src python3 benchmarks/materials_cost.py --backend cuda --elements 16 --order 7
"""

from __future__ import annotations

import argparse
import json
import time

from lobatto.api import Simulation, case_from_dict


def seconds_per_step(backend: str, elements: int, order: int, material: bool, steps: int) -> float:
    data = {"mesh": {"elements": [elements] * 3, "periodic": [True, True, True]},
            "discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "initial": {"Ey": "sin(2*pi*x)", "Hz": "sin(2*pi*x)"},
            "time": {"t_end": 1.0}, "output": {"formats": []}}
    if material:
        data["material"] = {"half": {"where": "x - 0.5", "epsilon": 4.0, "sampling": "element"}}
    sim = Simulation(case_from_dict(data), backend=backend, output_dir="/tmp/materials_cost", comm=None)
    sim.advance(3)  # warm-up: compilation, graphs
    sim.backend.synchronize()
    start = time.perf_counter()
    sim.advance(steps)
    sim.backend.synchronize()
    return (time.perf_counter() - start) / steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--elements", type=int, default=4)
    parser.add_argument("--order", type=int, default=7)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    uniform = seconds_per_step(args.backend, args.elements, args.order, False, args.steps)
    material = seconds_per_step(args.backend, args.elements, args.order, True, args.steps)
    points = args.elements**3 * (args.order + 1) ** 3
    print(json.dumps({"backend": args.backend, "elements": args.elements**3, "order": args.order, "points": points,
                      "uniform_ms_per_step": 1e3 * uniform, "material_ms_per_step": 1e3 * material,
                      "ratio": material / uniform}))


if __name__ == "__main__":
    main()
