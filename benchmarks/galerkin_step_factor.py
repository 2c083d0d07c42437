"""The Galerkin form's spectral radius against the split form's: ``python benchmarks/galerkin_step_factor.py``.

galerkin.STEP_FACTORS / STEP_FACTOR scale the collocated forms' stable dt for
``volume_form = "galerkin"``; each must stay below split_rho / galerkin_rho with a margin. For
each mesh and N this estimates the upwind operators' spectral radius (runner/step_check.py's
power iteration in each form's own energy norm, ``--iterations`` steps) of the split form, of
the Galerkin form as built (skew volume term, invariant curl-form cofactors, Q = N + 1) and of
the strong form of notes section 9 (Q = strong_points(N)), and prints the ratios and
1 / ratio against the step factor. Meshes: the deformed PEC box (2^3), tests/cylwave.py's
O-grid cylinder, a flat 2^3 PEC box, and (``--meshes gmsh``) examples/meshes/sphere_in_box.msh
(104 hexahedra of geometry order 2, PEC walls).

    PYTHONPATH=src python benchmarks/galerkin_step_factor.py                 # N = 1, 2, 3, 6, 9
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
try:
    import lobatto  # noqa: F401
except ImportError:  # running from a checkout without install
    sys.path.insert(0, str(HERE.parent / "src"))

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.bench.report import processor, write_json  # noqa: E402
from lobatto.runner.step_check import estimate  # noqa: E402
from lobatto.systems.maxwell import galerkin  # noqa: E402

sys.path.insert(0, str(HERE.parent / "tests"))
from cylwave import cylinder_rea  # noqa: E402

BUMP = "sin(pi*x)*sin(pi*y)*sin(pi*z)"
MESHES = {"box": {"elements": [2, 2, 2], "boundary": "pec",
                  "deform": {"x": f"0.15*{BUMP}", "y": f"0.12*{BUMP}", "z": f"0.1*{BUMP}"}},
          "flat": {"elements": [2, 2, 2], "boundary": "pec"},
          "gmsh": {"generator": "gmsh", "file": str(HERE.parent / "examples" / "meshes" / "sphere_in_box.msh"),
                   "boundary": "pec"}}


def radius(mesh, order, form, iterations, workdir, variant=None) -> float:
    data = {"mesh": mesh, "discretization": {"order": order, "flux": "upwind", "volume_form": form},
            "physics": {"equations": "maxwell"}, "time": {"t_end": 0.5, "cfl": 0.3}, "output": {"formats": []}}
    sim = Simulation(case_from_dict(data, name="rho"), backend="cpu", output_dir=workdir, comm=None)
    if variant is not None:
        galerkin.attach(sim.system, **variant)
    rho, _ = estimate(sim.system, None, iterations)
    sim.close()
    return float(rho)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--orders", default="1,2,3,6,9")
    ap.add_argument("--meshes", default="box,cylinder,flat")
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--json", metavar="PATH",
                    default=str(HERE / "results" / f"galerkin_step_factor_cpu_{datetime.date.today()}.json"))
    args = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        rea = Path(tmp) / "cylwave.rea"
        cylinder_rea(rea, m=1, layers=2, length=4.0)
        meshes = dict(MESHES, cylinder={"generator": "nek", "file": str(rea), "boundaries": {"PEC": "pec"}})
        print(f"{'mesh':>9} {'N':>2} {'split':>9} {'galerkin':>9} {'earlier':>9} {'ratio':>6} {'earlier':>7} "
              f"{'1/ratio':>7} {'factor':>6}")
        for name in args.meshes.split(","):
            rows = []
            for order in (int(v) for v in args.orders.split(",")):
                run = tmp + "/run"
                split = radius(meshes[name], order, "split", args.iterations, run)
                new = radius(meshes[name], order, "galerkin", args.iterations, run)
                old = radius(meshes[name], order, "galerkin", args.iterations, run,
                             {"points": galerkin.strong_points(order), "volume": "strong"})
                row = {"order": order, "split": split, "galerkin": new, "earlier": old,
                       "ratio": new / split, "earlier_ratio": old / split, "step_factor": galerkin.step_factor(order)}
                rows.append(row)
                print(f"{name:>9} {order:>2} {split:>9.4g} {new:>9.4g} {old:>9.4g} {row['ratio']:>6.3f} "
                      f"{row['earlier_ratio']:>7.3f} {1 / row['ratio']:>7.3f} {row['step_factor']:>6.2f}", flush=True)
            results[name] = rows
    write_json(args.json, {"what": "upwind spectral radius (power iteration, runner/step_check.estimate): split, "
                                   "galerkin (skew, Q = N + 1), strong galerkin (Q = strong_points)",
                           "iterations": args.iterations, "machine": processor(), "date": str(datetime.date.today()),
                           "command": " ".join(["python"] + sys.argv), "meshes": results},
               indent=1, default=None, end="\n", say="wrote")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
