"""The Galerkin form's Gauss rule against its energy identity: ``python benchmarks/galerkin_energy_rule.py``.

``[discretization] volume_form = "galerkin"`` (systems/maxwell/galerkin.py) integrates its
skew-symmetric volume term with Q = N + 1 Gauss points per direction and the invariant
curl-form cofactors; the skew form's energy identity holds for any rule. This measures it: for
random data, the energy's relative rate B(u, Lu) / (2 sqrt(E(u) E(Lu))) (by polarisation, in
the system's own energy) with the central flux (0 is conservation) at Q = N + 1, with the map's
exact cofactors at the same Q, and for the strong form (volume="strong") at Q = N + 1 and at
strong_points(N) = max(ceil(3N / 2), N + 1) (the rule its degree count needs), and the upwind
rate at Q (< 0 is dissipation), on

- ``box``: the unit PEC cube on 2^3 elements deformed by c g(x, y, z) with one scalar g (the
  energy tests' map; its exact cofactors happen to have degree N along their axis);
- ``general``: the same box deformed by different functions per component;
- ``rough``: the box deformed by high wave numbers that a degree-11 map does not resolve (so
  that the top coefficients, which decide whether a rule too small breaks the identity, stay large);
- ``periodic``: the periodic box deformed by sin(2 pi .) sin(2 pi .) terms;
- ``cylinder``: tests/cylwave.py's O-grid cylinder (.rea with circle sides, periodic z);
- ``gmsh``: examples/meshes/sphere_in_box.msh (104 hexahedra of geometry order 2, PEC walls).

Prints a table; writes JSON to benchmarks/results/ (``--json`` names the file).

    PYTHONPATH=src python benchmarks/galerkin_energy_rule.py                     # N = 1..11, all meshes
    PYTHONPATH=src python benchmarks/galerkin_energy_rule.py --orders 3,4 --meshes general
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
try:
    import lobatto  # noqa: F401
except ImportError:  # running from a checkout without install
    sys.path.insert(0, str(HERE.parent / "src"))

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.bench.report import processor, write_json  # noqa: E402
from lobatto.systems.maxwell import galerkin  # noqa: E402

sys.path.insert(0, str(HERE.parent / "tests"))  # cylwave.py, nek_mesh_writer.py
from cylwave import cylinder_rea  # noqa: E402

BUMP = "sin(pi*x)*sin(pi*y)*sin(pi*z)"
MESHES = {
    "box": {"elements": [2, 2, 2], "boundary": "pec",
            "deform": {"x": f"0.15*{BUMP}", "y": f"0.12*{BUMP}", "z": f"0.1*{BUMP}"}},
    "general": {"elements": [2, 2, 2], "boundary": "pec",
                "deform": {"x": f"0.15*{BUMP}", "y": f"0.12*{BUMP}*(1+x)", "z": f"0.1*{BUMP}*(1+y*y)"}},
    "rough": {"elements": [2, 2, 2], "boundary": "pec",
              "deform": {"x": f"0.01*sin(9*pi*x)*sin(7*pi*y)*sin(8*pi*z)*{BUMP}",
                         "y": f"0.01*sin(7*pi*x)*sin(8*pi*y)*sin(9*pi*z)*{BUMP}",
                         "z": f"0.01*sin(8*pi*x)*sin(9*pi*y)*sin(7*pi*z)*{BUMP}"}},
    "periodic": {"elements": [2, 2, 2], "periodic": [True, True, True],
                 "deform": {"x": "0.1*sin(2*pi*y)*sin(2*pi*z)", "y": "0.08*sin(2*pi*x)*sin(2*pi*z)",
                            "z": "0.06*sin(2*pi*x)*sin(2*pi*y)"}},
    "gmsh": {"generator": "gmsh", "file": str(HERE.parent / "examples" / "meshes" / "sphere_in_box.msh"),
             "boundary": "pec"},
}


def simulation(mesh: dict, order: int, flux: str, workdir: str):
    data = {"mesh": mesh, "discretization": {"order": order, "flux": flux, "volume_form": "galerkin"},
            "physics": {"equations": "maxwell"}, "time": {"t_end": 0.5, "cfl": 0.3}, "output": {"formats": []}}
    return Simulation(case_from_dict(data, name="energy_rule"), backend="cpu", output_dir=workdir, comm=None)


def energy_rate(sim, rng) -> float:
    system = sim.system
    u = rng.standard_normal(sim.u.shape)
    lu = system.rhs(u, 0.0, np.empty_like(u))
    rate = 0.5 * (system.energy(u + lu) - system.energy(u - lu))
    return float(rate / (2 * np.sqrt(system.energy(u) * system.energy(lu))))


def measure(mesh: dict, order: int, rng, workdir: str) -> dict:
    start = time.perf_counter()
    q = galerkin.quadrature_points(order)
    row = {"order": order, "points": q}
    sim = simulation(mesh, order, "upwind", workdir)
    row["elements"], row["curved"] = int(sim.system.num_elements), int((~sim.system.geometry.affine).sum())
    row["upwind"] = energy_rate(sim, rng)
    sim.close()
    sim = simulation(mesh, order, "central", workdir)
    row["central"] = energy_rate(sim, rng)
    galerkin.attach(sim.system, cofactors="exact")
    row["central_exact_cofactors"] = energy_rate(sim, rng)
    galerkin.attach(sim.system, volume="strong")
    row["central_strong"] = energy_rate(sim, rng)
    row["strong_points"] = galerkin.strong_points(order)
    galerkin.attach(sim.system, points=row["strong_points"], volume="strong")
    row["central_strong_at_its_rule"] = energy_rate(sim, rng)
    sim.close()
    row["seconds"] = time.perf_counter() - start
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--orders", default="1,2,3,4,5,6,7,8,9,10,11")
    ap.add_argument("--meshes", default="box,general,rough,periodic,cylinder,gmsh")
    ap.add_argument("--json", metavar="PATH",
                    default=str(HERE / "results" / f"galerkin_energy_rule_cpu_{datetime.date.today()}.json"))
    args = ap.parse_args()
    orders = [int(v) for v in args.orders.split(",")]
    rng = np.random.default_rng(2026)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        rea = Path(tmp) / "cylwave.rea"
        cylinder_rea(rea, m=1, layers=2, length=4.0)
        meshes = dict(MESHES, cylinder={"generator": "nek", "file": str(rea), "boundaries": {"PEC": "pec"}})
        print("energy rate of random data (relative): central at Q = N + 1, with the exact cofactors, the strong "
              "form at Q and at its rule S, upwind at Q")
        print(f"{'mesh':>9} {'N':>2} {'Q':>2} {'central':>9} {'exact cof':>9} {'strong Q':>9} {'S':>2} "
              f"{'strong S':>9} {'upwind':>9} {'s':>5}")
        for name in args.meshes.split(","):
            rows = []
            for order in orders:
                row = measure(meshes[name], order, rng, tmp + "/run")
                rows.append(row)
                print(f"{name:>9} {order:>2} {row['points']:>2} {row['central']:>9.2e} "
                      f"{row['central_exact_cofactors']:>9.2e} {row['central_strong']:>9.2e} {row['strong_points']:>2} "
                      f"{row['central_strong_at_its_rule']:>9.2e} {row['upwind']:>9.2e} {row['seconds']:>5.1f}", flush=True)
            results[name] = {"mesh": meshes[name], "elements": rows[0]["elements"],
                             "curved_elements": rows[0]["curved"], "rows": rows}
    result = {"what": "Galerkin form: energy rate of random data, skew volume term at Q = N + 1 Gauss points "
                      "(invariant curl-form cofactors, and the exact ones), the strong form at Q and at strong_points",
              "machine": processor(), "python": sys.version.split()[0], "date": str(datetime.date.today()),
              "command": " ".join(["python"] + sys.argv), "meshes": results}
    write_json(args.json, result, indent=1, default=None, end="\n", say="wrote")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
