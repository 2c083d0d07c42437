"""A vortex leaving through an outflow, with and without [physics] backflow_stabilization
(docs/navier-stokes.md, "Boundary conditions"): the kinetic energy every 10 steps, and the
step at which the unstabilised run stops (its CFL number passes max_cfl as backflow at the
outlet feeds the flow).

A uniform stream ux = 1 from x = 0 through [0, 2] x [-0.5, 0.5] (symmetry on y = +-0.5,
periodic z, outflow at x = 2) carries a Gaussian vortex (peak swirl 1.7) from x = 1.5;
nu = 1e-3, 4 x 2 x 1 elements, N = 5, dt = 0.01.

    PYTHONPATH=src python benchmarks/ns_backflow.py [--steps 150] [--json out.json]

Measured on the development CPU (2 cores, shared): with the stabilisation 0.6237 after 10
steps, 0.5005 at 150 (the stream's own energy is 0.5); without it, stopped at step 56 with
CFL 2.55 > max_cfl = 2 (energy 0.5916 at step 50).
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.errors import LobattoError  # noqa: E402

_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("--steps", type=int, default=150, help="steps of each run (default 150)")
_parser.add_argument("--json", type=Path, default=None, help="write the energies here")
_args = _parser.parse_args()
STEPS, OUT = _args.steps, _args.json
VORTEX = "exp(-((x - 1.5)**2 + y**2)/0.04)"


def case(backflow: bool):
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 1e-3, "backflow_stabilization": backflow},
        "mesh": {"elements": [4, 2, 1], "lower": [0.0, -0.5, 0.0], "upper": [2.0, 0.5, 1.0],
                 "periodic": [False, False, True],
                 "boundaries": {"xmax": "outflow", "ymin": "symmetry", "ymax": "symmetry"}},
        "discretization": {"order": 5},
        "time": {"dt": 0.01, "t_end": 100.0},
        "boundary": {"xmin": {"ux": "1"}},
        "initial": {"ux": f"1 - 20*y*{VORTEX}", "uy": f"20*(x - 1.5)*{VORTEX}"},
        "output": {"formats": []},
    }, name=f"backflow_{backflow}")


results = {}
with tempfile.TemporaryDirectory() as tmp:
    for backflow in (True, False):
        sim = Simulation(case(backflow), backend="cpu", output_dir=Path(tmp) / str(backflow), comm=None)
        energies, stopped = [], None
        try:
            for _ in range(STEPS // 10):
                sim.advance(10)
                energies.append(sim.system.step_report()["kinetic_energy"])
        except LobattoError as error:
            stopped = str(error)
        results[str(backflow).lower()] = {"energy_every_10_steps": energies, "stopped": stopped}

print(f"{'steps':>6} {'with':>8} {'without':>8}")
rows = max(len(r["energy_every_10_steps"]) for r in results.values())
for i in range(rows):
    cells = [r["energy_every_10_steps"][i] if i < len(r["energy_every_10_steps"]) else None for r in results.values()]
    print(f"{10 * (i + 1):>6} " + " ".join(f"{c:8.4f}" if c is not None else f"{'-':>8}" for c in cells))
for name, r in results.items():
    if r["stopped"]:
        print(f"backflow_stabilization = {name}: {r['stopped']}")
if OUT is not None:
    OUT.write_text(json.dumps(results, indent=1))
