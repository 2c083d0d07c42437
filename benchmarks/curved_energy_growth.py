"""The discrete energy of a Maxwell run from random initial data, flat against curved elements.

With no sources and lossless media the upwind flux must never increase the energy and the
central flux must keep it to the time error. On a flat box that holds; on curved elements
(a smoothly deformed box, the curved gmsh ball) it does not (docs/electromagnetics.md, "An
instability of curved elements"). This prints the ratio final / initial energy per case and
writes JSON, so a fix of the volume term can be checked against it.

    PYTHONPATH=src python3 benchmarks/curved_energy_growth.py            # N = 3 and 5, CPU, about a minute
    PYTHONPATH=src python3 benchmarks/curved_energy_growth.py --gmsh     # also the gmsh ball (needs gmsh)
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples" / "meshes"))

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.bench.report import write_json  # noqa: E402

BOX = {"elements": [3, 3, 3], "boundary": "pec"}
DEFORM = {"x": "0.15*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.12*sin(pi*x)*sin(pi*y)*sin(pi*z)",
          "z": "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"}


def energy_ratio(mesh: dict, order: int, flux: str, t_end: float, backend: str, seed: int = 1) -> dict:
    data = {"mesh": mesh, "discretization": {"order": order, "flux": flux}, "physics": {"equations": "maxwell"},
            "time": {"t_end": t_end, "cfl": 0.4}, "output": {"formats": []}}
    sim = Simulation(case_from_dict(data, name="growth"), backend=backend, output_dir="/tmp/curved_energy_growth",
                     comm=None)
    sim.u[...] = sim.backend.asarray(np.random.default_rng(seed).standard_normal(sim.u.shape))
    start = sim.system.energy(sim.u)
    steps = int(round(t_end / sim.dt))
    began = time.perf_counter()
    for n in range(steps):  # the stepper itself: the driver would stop the run at the first growth
        sim.stepper.step(sim.u, n * sim.dt, sim.dt)
    sim.backend.synchronize()
    return {"ratio": sim.system.energy(sim.u) / start, "steps": steps, "seconds": time.perf_counter() - began}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, nargs="+", default=[3, 5])
    parser.add_argument("--t-end", type=float, default=12.0)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--gmsh", action="store_true", help="also the curved gmsh ball (examples/meshes)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    meshes = {"flat box": BOX, "deformed box": {**BOX, "deform": DEFORM}}
    if args.gmsh:
        import gmsh_meshes

        path = "/tmp/curved_energy_growth_ball.msh"
        gmsh_meshes.ball(path, divisions=1, order=2)
        meshes["gmsh ball (order 2)"] = {"generator": "gmsh", "file": path, "boundary": "pec"}
    rows = []
    for label, mesh in meshes.items():
        for order in args.orders:
            for flux in ("upwind", "central"):
                got = energy_ratio(mesh, order, flux, args.t_end, args.backend)
                rows.append({"mesh": label, "order": order, "flux": flux, **got})
                print(f"{label:>20}  N = {order}  {flux:>7}  energy x {got['ratio']:.4g}  ({got['steps']} steps)",
                      flush=True)
    result = {"benchmark": "curved_energy_growth", "backend": args.backend, "t_end": args.t_end,
              "date": datetime.date.today().isoformat(), "rows": rows}
    out = Path(args.json or HERE / "results" / f"curved_energy_growth_{args.backend}_{result['date']}.json")
    write_json(out, result, indent=1, default=None, say="wrote")


if __name__ == "__main__":
    main()
