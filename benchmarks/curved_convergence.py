"""Convergence in N on curved gmsh meshes: ``python benchmarks/curved_convergence.py``.

The TEM standing mode of a coaxial resonator (PEC cylinders of radii a < b, PEC ends z = 0, L;
epsilon = mu = 1, k = pi / L):

    E = (x, y, 0) / rho^2 sin(k z) cos(k t),    H = (y, -x, 0) / rho^2 cos(k z) sin(k t)

(E = f(z, t) grad ln rho and H = g(z, t) z x grad ln rho solve Maxwell's equations when
f_t = -g_z and g_t = -f_z.) The resonator is meshed by examples/meshes/gmsh_meshes.py:coaxial
with elements of geometry order q; for each mesh the case runs to t_end at N = 2..8 and the
relative L2 error of all six fields is recorded, for each ``[discretization] volume_form`` of
``--forms`` (default: the default form only). Prints a table; writes JSON to
benchmarks/results/ (``--json`` names the file).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import math
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
try:
    import lobatto  # noqa: F401
except ImportError:  # running from a checkout without install
    sys.path.insert(0, str(HERE.parent / "src"))

from lobatto.api import case_from_dict  # noqa: E402
from lobatto.bench.report import processor, write_json  # noqa: E402
from lobatto.runner.simulation import Simulation  # noqa: E402

_spec = importlib.util.spec_from_file_location("gmsh_meshes", HERE.parent / "examples" / "meshes" / "gmsh_meshes.py")
gmsh_meshes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gmsh_meshes)

A, B, L = 0.5, 1.0, 1.0
RHO2 = "(x*x + y*y)"
EXACT = {
    "Ex": f"x/{RHO2}*sin(pi*z)*cos(pi*t)",
    "Ey": f"y/{RHO2}*sin(pi*z)*cos(pi*t)",
    "Hx": f"y/{RHO2}*cos(pi*z)*sin(pi*t)",
    "Hy": f"-x/{RHO2}*cos(pi*z)*sin(pi*t)",
}


def run(mesh_file: Path, order: int, t_end: float, form: str | None = None) -> dict:
    discretization = {"order": order, "flux": "upwind"} | ({} if form is None else {"volume_form": form})
    case = case_from_dict({
        "mesh": {"generator": "gmsh", "file": str(mesh_file), "boundary": "pec"},
        "discretization": discretization,
        "physics": {"equations": "maxwell"},
        "initial": EXACT, "exact": EXACT,  # the initial fields are the expressions at t = 0
        "time": {"t_end": t_end, "cfl": 0.5},
    }, name="coax")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        sim = Simulation(case, backend="cpu", output_dir=out, comm=None)
        sim.advance(sim.steps)
        errors = sim.errors()["all"]
        exact = sim.system.evaluate_fields(case.exact.fields, sim.t)
        norm = math.sqrt(float((sim.system.geometry.mass * exact**2).sum()))
    return {"order": order, "volume_form": case.discretization.volume_form, "steps": sim.steps, "relative_l2": errors["l2"] / norm, "max": errors["max"],
            "seconds": time.perf_counter() - start}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--geometry-orders", default="2,4", help="gmsh element orders q")
    ap.add_argument("--divisions", default="1,2", help="elements per quarter across the gap and around")
    ap.add_argument("--orders", default="2,3,4,5,6,7,8", help="polynomial orders N")
    ap.add_argument("--t-end", type=float, default=0.5)
    ap.add_argument("--forms", default="", help="volume forms, comma-separated (default: the default form)")
    ap.add_argument("--json", metavar="PATH",
                    default=str(HERE / "results" / f"curved_convergence_cpu_{datetime.date.today()}.json"))
    args = ap.parse_args()
    rows = []
    forms = [f for f in args.forms.split(",") if f] or [None]
    print(f"{'form':>9} {'q':>2} {'div':>3} {'E':>4} {'N':>2} {'steps':>6} {'rel. L2 error':>14} {'rate':>6} {'s':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for q in (int(v) for v in args.geometry_orders.split(",")):
            for n in (int(v) for v in args.divisions.split(",")):
                path = gmsh_meshes.coaxial(Path(tmp) / f"coax_q{q}_n{n}.msh", inner=A, outer=B, length=L,
                                           divisions=n, layers=n, order=q)
                for form in forms:
                    previous = None
                    for order in (int(v) for v in args.orders.split(",")):
                        row = {"geometry_order": q, "divisions": n, "elements": 4 * n**3,
                               **run(path, order, args.t_end, form)}
                        # the error's fall per unit of N (log e_N-1 / e_N): spectral convergence keeps it up
                        rate = None if previous is None else math.log(previous / row["relative_l2"])
                        row["log_drop_per_order"] = rate
                        previous = row["relative_l2"]
                        rows.append(row)
                        print(f"{row['volume_form']:>9} {q:>2} {n:>3} {row['elements']:>4} {order:>2} {row['steps']:>6} {row['relative_l2']:>14.3e} "
                              f"{'' if rate is None else f'{rate:.2f}':>6} {row['seconds']:>6.1f}", flush=True)
    result = {"case": "coaxial TEM standing mode, a = 0.5, b = 1, L = 1, k = pi, upwind flux, lsrk45, cfl 0.5",
              "t_end": args.t_end, "machine": processor(), "python": sys.version.split()[0],
              "date": str(datetime.date.today()), "command": " ".join(["python"] + sys.argv), "rows": rows}
    write_json(args.json, result, indent=1, default=None, end="\n", say="wrote")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
