"""What Maxwell's physics terms cost per step against the plain step, side by side in one run:
PML layers, a TF/SF plane wave, both, Drude media on a share of the elements, and a point
dipole alone and with the PML and the TF/SF wave (the sources' stage term, source_term.py).

The mesh is the box [0, K]^3 of unit elements (Silver-Müller outer sides), order N. The PML
is one element thick on all six sides, which is 1 - ((K-2)/K)^3 of the elements (19.9 % at
K = 28); the TF/SF box is [4, K-4]^3 (its surface lies on element faces); the dielectric
ball (eps = 4, radius 0.8 (K/2 - 4), inside the TF/SF box, sampled per point) takes the stage path with the medium's kernel.
The electric dipole sits near the centre (a modulated Gaussian, as the wave's). Throughput is
points x steps / second; "vs plain" is the plain step's time over the case's; "graph" whether
the steps replayed a CUDA graph.

    PYTHONPATH=src python3 benchmarks/bench_maxwell_physics.py --backend cuda --elements 28 --order 7
    PYTHONPATH=src python3 benchmarks/bench_maxwell_physics.py --small        # CPU, seconds
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

from lobatto.api import Simulation, case_from_dict
from lobatto.bench.report import best_seconds, gpu_name, write_json
from lobatto.bench.surroundings import git_commit

HERE = Path(__file__).resolve().parent


def case_data(k: int, order: int, pml: bool, tfsf: bool, drude_share: float, dielectric: bool = False,
              dipole: bool = False) -> dict:
    data = {"mesh": {"elements": [k] * 3, "upper": [float(k)] * 3, "boundary": "absorbing"},
            "discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "initial": {"Ey": f"exp(-((x-{k / 2})**2+(y-{k / 2})**2+(z-{k / 2})**2)/4)"},
            "time": {"t_end": 1e3}, "output": {"formats": [], "every": 0}}
    if pml:
        data["pml"] = {"sides": "all", "elements": 1}
    if tfsf:
        data["source"] = {"wave": {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 1, 0],
                                   "lower": [4.0] * 3, "upper": [k - 4.0] * 3, "waveform": "modulated_gaussian",
                                   "frequency": 0.3, "t0": 8.0, "width": 2.0}}
    if dipole:
        data.setdefault("source", {})["antenna"] = {
            "type": "electric_dipole", "position": [k / 2 + 0.3, k / 2 - 0.2, k / 2 + 0.1], "direction": [0, 0, 1],
            "waveform": "modulated_gaussian", "frequency": 0.3, "t0": 8.0, "width": 2.0}
    if drude_share:
        # the slab x < share * K: whole element layers, so the share is exact
        data["material"] = {"metal": {"where": f"{drude_share * k} - x", "sampling": "element", "model": "drude",
                                      "poles": [{"plasma_frequency": 0.5, "collision_frequency": 0.05}]}}
    if dielectric:  # a ball of eps = 4 sampled per point: the medium's (stage-path) kernel
        radius = 0.8 * (k / 2 - 4)  # inside the TF/SF box
        data["material"] = {"ball": {"where": f"{radius ** 2} - (x-{k / 2})**2 - (y-{k / 2})**2 - (z-{k / 2})**2",
                                     "epsilon": 4.0}}
    return data


def seconds_per_step(backend: str, data: dict, steps: int, repeats: int = 3) -> tuple[float, dict]:
    sim = Simulation(case_from_dict(data, name="physics"), backend=backend, output_dir="/tmp/bench_maxwell_physics",
                     comm=None)
    sim.advance(3)  # compilation, graphs
    sim.backend.synchronize()

    def block():
        sim.advance(steps)
        sim.backend.synchronize()

    best = best_seconds(block, repeats) / steps
    path = sim.stepper.describe().get("step_path")
    terms = {t.name: t.count for t in getattr(sim.system, "terms", [])}
    graph = bool(sim.advance_one is not None and sim.advance_one.captured)
    return best, {"step_path": path, "cuda_graph": graph, "term_elements": terms, "dt": sim.dt}


def commit() -> str:
    """The source tree's short commit for the JSON, "unknown" outside a checkout."""
    return git_commit() or "unknown"


def device_name(backend: str) -> str:
    """The GPU's name on cuda, else the backend's name."""
    return gpu_name() if backend == "cuda" else backend


def case_parser(description: str, small_steps: int) -> argparse.ArgumentParser:
    """The options of the box-case cost scripts (this one, bench_tfsf_discrete.py): backend, K, N,
    steps, --small (K = 10, N = 3, ``small_steps`` steps) and --json."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--elements", type=int, default=28, help="K: K^3 elements")
    parser.add_argument("--order", type=int, default=7)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--small", action="store_true", help=f"K = 10, N = 3, {small_steps} steps (a CPU check)")
    parser.add_argument("--json", default=None)
    return parser


def main():
    args = case_parser(__doc__, 3).parse_args()
    if args.small:
        args.elements, args.order, args.steps = 10, 3, 3
    k, order = args.elements, args.order
    points = k**3 * (order + 1) ** 3
    cases = {"plain": (False, False, 0.0), "pml": (True, False, 0.0), "tfsf": (False, True, 0.0),
             "pml+tfsf": (True, True, 0.0), "drude 10%": (False, False, 0.1), "drude 20%": (False, False, 0.2),
             "eps ball": (False, False, 0.0), "eps ball+pml+tfsf": (True, True, 0.0),
             "dipole": (False, False, 0.0), "pml+tfsf+dipole": (True, True, 0.0)}
    rows = []
    for label, (pml, tfsf, share) in cases.items():
        data = case_data(k, order, pml, tfsf, share, dielectric=label.startswith("eps ball"),
                         dipole=label.endswith("dipole"))
        seconds, info = seconds_per_step(args.backend, data, args.steps)
        rows.append({"case": label, "seconds_per_step": seconds, "point_steps_per_second": points / seconds, **info})
    plain = rows[0]["seconds_per_step"]
    for row in rows:
        row["vs_plain"] = plain / row["seconds_per_step"]
    device = device_name(args.backend)
    result = {"benchmark": "maxwell_physics", "device": device, "backend": args.backend, "elements": k**3,
              "order": order, "points": points, "steps": args.steps, "commit": commit(),
              "date": datetime.date.today().isoformat(), "rows": rows}
    print(f"{device}, {k}^3 elements, N = {order}, {points:.3g} points, best of 3 x {args.steps} steps")
    print(f"{'case':>17} {'ms/step':>9} {'Gpt-steps/s':>12} {'vs plain':>9} {'path':>11} {'graph':>6}  term elements")
    for r in rows:
        print(f"{r['case']:>17} {1e3 * r['seconds_per_step']:9.3f} {r['point_steps_per_second'] / 1e9:12.4f} "
              f"{r['vs_plain']:9.3f} {r['step_path']:>11} {str(r['cuda_graph']):>6}  {r['term_elements']}")
    out = Path(args.json or HERE / "results" / f"maxwell_physics_{args.backend}_{result['date']}.json")
    write_json(out, result, indent=1, default=None, say="wrote")


if __name__ == "__main__":
    main()
