"""Accuracy of the curved-element volume curl: ``python benchmarks/curved_accuracy.py``.

A cylinder waveguide in the spirit of NekCEM's ``tests/cylwave``: radius 1, PEC wall, periodic
in z (length L), an O-grid of m x m straight elements in the middle and 4m elements with circle
(``C``) sides at the wall, written as a Nek5000 ``.rea`` (tests/nek_mesh_writer.py) and read by
lobatto's reader. The TM01 mode travelling along z (kc = j01, beta = 2 pi / L,
omega^2 = kc^2 + beta^2, theta = beta z - omega t):

    Ez = J0(kc r) cos theta,  E_r = (beta / kc) J1(kc r) sin theta,  H_phi = (omega / kc) J1(kc r) sin theta.

Also a deformed PEC box cavity (the unit cube with the interior moved by sin(pi x) sin(pi y)
sin(pi z) terms, its walls flat) and its TM110 mode. For each mesh and N it measures, for
``[discretization] volume_form`` = "chain", "split" (the default) and "galerkin"
(systems/maxwell/galerkin.py):

- ``residual``: the semi-discrete residual rhs(u_exact) - du_exact/dt (the system's own
  kernels), relative L2 (mass-weighted) and max: the spatial truncation error;
- the volume curls alone against the exact curl: the chain rule with the cofactor metrics
  (``chain_cof``) and with the curl-form metrics (``chain_curl``), the conservative form
  (1/J) d_b (J a^b x f) with either (``cons_cof``, ``cons_curl``); split = their mean;
- ``error``: relative L2 and max error after time stepping the exact mode to t_end (upwind);
- ``rate``: the energy's relative rate B(u, Lu) / (2 sqrt(E(u) E(Lu))) for random data with
  the central flux (0 is conservation) and the upwind flux (<= 0 is stability).

Prints a table; writes JSON to benchmarks/results/ (``--json`` names the file).

    PYTHONPATH=src python benchmarks/curved_accuracy.py                  # N = 3..11, t_end = 0.2: about 10 minutes on 1 core
    PYTHONPATH=src python benchmarks/curved_accuracy.py --orders 4,6 --meshes box
"""

from __future__ import annotations

import argparse
import datetime
import math
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
from lobatto.discretization import derivative_matrix  # noqa: E402
from lobatto.discretization.tensor import chain_rule_curl, derivative_r, derivative_s, derivative_t  # noqa: E402
from lobatto.mesh.geometry import curl_form_factors  # noqa: E402
from lobatto.systems.maxwell import galerkin  # noqa: E402

sys.path.insert(0, str(HERE.parent / "tests"))  # cylwave.py, nek_mesh_writer.py
from cylwave import cylinder_rea, tm01  # noqa: E402  (the test's own cylinder waveguide)

FORMS = ("chain", "split", "galerkin")
DEFORM = {"x": "0.15*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.12*sin(pi*x)*sin(pi*y)*sin(pi*z)",
          "z": "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"}


def tm110(coords, t: float):
    """(fields, d fields / dt) of the unit PEC cube's TM110 mode (the deformed box keeps its walls)."""
    x, y, _ = coords
    w = math.pi * math.sqrt(2.0)
    sx, cx, sy, cy = np.sin(math.pi * x), np.cos(math.pi * x), np.sin(math.pi * y), np.cos(math.pi * y)
    zero = 0 * x
    u = np.stack([zero, zero, sx * sy * math.cos(w * t), -math.pi / w * sx * cy * math.sin(w * t),
                  math.pi / w * cx * sy * math.sin(w * t), zero])
    du = np.stack([zero, zero, -w * sx * sy * math.sin(w * t), -math.pi * sx * cy * math.cos(w * t),
                   math.pi * cx * sy * math.cos(w * t), zero])
    return u, du


def simulation(mesh: dict, order: int, form: str, flux: str, t_end: float, workdir: str):
    """``form``: a volume_form, or "galerkin:COFACTORS[:Q[:VOLUME]]" for a variant of the Galerkin operator
    (galerkin.variant_options: cofactors "invariant", "curl" or "exact", Q a number, "2N" or "S",
    VOLUME "skew" or "strong"; no case key chooses them)."""
    volume_form, *variant = form.split(":")
    data = {"mesh": mesh, "discretization": {"order": order, "flux": flux, "volume_form": volume_form},
            "physics": {"equations": "maxwell"}, "time": {"t_end": t_end, "cfl": 0.3}, "output": {"formats": []}}
    sim = Simulation(case_from_dict(data, name="accuracy"), backend="cpu", output_dir=workdir, comm=None)
    if variant:
        galerkin.attach(sim.system, **galerkin.variant_options(":".join(variant), order))
    return sim


def norms(geometry, error, scale) -> dict:
    mass = geometry.mass
    return {"l2": float(np.sqrt((mass * error**2).sum() / (mass * scale**2).sum())), "max": float(np.abs(error).max())}


def conservative_curl(f, d, metrics, jacobian):
    """(1/J) sum_b d_b (J a^b x f): the split form's conservative half alone."""
    from lobatto.discretization.tensor import _cross  # noqa: PLC2701 (a benchmark's diagnostic)

    out = 0
    for b, derivative in enumerate((derivative_r, derivative_s, derivative_t)):
        out = out + derivative(np, _cross(np, jacobian * metrics[b], f), d) / jacobian
    return out


def volume_errors(geometry, u, du) -> dict:
    """Each volume curl of u against the exact one (curl H = dE/dt, curl E = -dH/dt)."""
    d = derivative_matrix(geometry.order)
    exact = np.concatenate([-du[3:6], du[0:3]])
    curl_metrics, _, _ = curl_form_factors(geometry)
    forms = {"chain_cof": lambda f: chain_rule_curl(np, f, d, geometry.metrics),
             "chain_curl": lambda f: chain_rule_curl(np, f, d, curl_metrics),
             "cons_cof": lambda f: conservative_curl(f, d, geometry.metrics, geometry.jacobian),
             "cons_curl": lambda f: conservative_curl(f, d, curl_metrics, geometry.jacobian)}
    errors = {k: np.concatenate([fn(u[0:3]), fn(u[3:6])]) - exact for k, fn in forms.items()}
    errors["split_curl"] = 0.5 * (errors["chain_curl"] + errors["cons_curl"])
    return {k: norms(geometry, v, exact) for k, v in errors.items()}


def energy_rate(sim, rng) -> float:
    system = sim.system
    u = rng.standard_normal(sim.u.shape)
    lu = system.rhs(u, 0.0, np.empty_like(u))
    rate = 0.5 * (system.energy(u + lu) - system.energy(u - lu))
    return float(rate / (2 * np.sqrt(system.energy(u) * system.energy(lu))))


def measure(mesh: dict, exact, order: int, t_end: float, workdir: str, forms=FORMS) -> dict:
    row = {"order": order}
    rng = np.random.default_rng(order)
    for form in forms:
        start = time.perf_counter()
        sim = simulation(mesh, order, form, "upwind", t_end, workdir)
        g = sim.system.geometry
        u, du = exact(g.coords, 0.3)
        residual = sim.system.rhs(u, 0.3, np.empty_like(u)) - du
        row[f"{form}_residual"] = norms(g, residual, du)
        row["elements"] = int(g.jacobian.shape[0])
        row["curved"] = int((~g.affine).sum())
        if form == "chain":
            row["volume"] = volume_errors(g, u, du)
        if sim.system.galerkin is not None:
            row[f"{form}_points"] = sim.system.galerkin.points
        row[f"{form}_rate_upwind"] = energy_rate(sim, rng)
        sim.u[...] = exact(g.coords, 0.0)[0]
        sim.energy_initial = sim.system.energy(sim.u)  # the initial state was set after setup
        sim.advance(sim.steps)
        row[f"{form}_error"] = norms(g, sim.u - exact(g.coords, sim.t)[0], exact(g.coords, sim.t)[0])
        row["steps"], row["t_end"] = sim.steps, float(sim.t)
        sim.close()
        central = simulation(mesh, order, form, "central", t_end, workdir)
        row[f"{form}_rate_central"] = energy_rate(central, rng)
        central.close()
        row[f"{form}_seconds"] = time.perf_counter() - start
    return row


def short_table(name, mesh, exact, orders, forms, args, tmp) -> dict:
    """Only ``forms``: each one's time-stepped error (relative L2), its ratio to the chain rule's
    (from --chain-from's JSON where given, with that run's "galerkin" error) and its energy rates."""
    chain, before = {}, {}
    if args.chain_from:
        import json

        rows = json.loads(Path(args.chain_from).read_text())["meshes"][name]["rows"]
        chain = {r["order"]: r["chain_error"]["l2"] for r in rows}
        before = {r["order"]: r["galerkin_error"]["l2"] for r in rows if "galerkin_error" in r}
    print(f"\n{name}: relative L2 error at t = {args.t_end} (upwind), its ratio to the chain rule's, "
          "energy rate of random data (central, upwind)")
    print(f"{'N':>2} {'chain':>9} {'galerkin':>9} | " + " | ".join(f"{f:>22}: Q  error  /chain  central  upwind" for f in forms))
    rows = []
    for order in orders:
        row = measure(mesh, exact, order, args.t_end, tmp + "/run", forms)
        rows.append(row)
        c = chain.get(order, float("nan"))
        print(f"{order:>2} {c:>9.2e} {before.get(order, float('nan')):>9.2e} | " + " | ".join(
            f"{row.get(f + '_points', 0):>25} {row[f + '_error']['l2']:>9.3e} {row[f + '_error']['l2'] / c:>5.2f} "
            f"{row[f + '_rate_central']:>8.1e} {row[f + '_rate_upwind']:>8.2e}" for f in forms), flush=True)
    return {"elements": rows[0]["elements"], "curved_elements": rows[0]["curved"], "rows": rows,
            "chain_error_from": args.chain_from, "chain_error": {str(k): v for k, v in chain.items()},
            "galerkin_error_before": {str(k): v for k, v in before.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--orders", default="3,4,5,6,7,8,9,10,11")
    ap.add_argument("--meshes", default="cylinder,box", help="cylinder and/or box")
    ap.add_argument("--t-end", type=float, default=0.2)
    ap.add_argument("--forms", default=",".join(FORMS),
                    help="volume forms to measure, and Galerkin variants galerkin:COFACTORS[:Q[:VOLUME]] (a short table "
                         "then: error and energy rates, the chain rule's and the earlier galerkin error read from "
                         "--chain-from)")
    ap.add_argument("--chain-from", metavar="JSON", help="a full run's JSON: the chain rule's errors for the ratios")
    ap.add_argument("--rings", type=int, default=1, help="m: the cylinder's O-grid has m x m + 4m elements per layer")
    ap.add_argument("--json", metavar="PATH",
                    default=str(HERE / "results" / f"curved_accuracy_cpu_{datetime.date.today()}.json"))
    args = ap.parse_args()
    orders = [int(v) for v in args.orders.split(",")]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        rea = Path(tmp) / "cylwave.rea"
        cylinder_rea(rea, m=args.rings)
        cases = {"cylinder": ({"generator": "nek", "file": str(rea), "boundaries": {"PEC": "pec"}}, tm01),
                 "box": ({"elements": [2, 2, 2], "boundary": "pec", "deform": DEFORM}, tm110)}
        forms = tuple(args.forms.split(","))
        for name in args.meshes.split(","):
            mesh, exact = cases[name]
            if forms != FORMS:
                results[name] = short_table(name, mesh, exact, orders, forms, args, tmp)
                continue
            print(f"\n{name}: relative L2 (max) of the residual rhs(u) - du/dt, of the volume curls alone, "
                  f"and of the solution at t = {args.t_end} (upwind); energy rate of random data")
            print(f"{'N':>2} | " + " ".join(f"{'residual ' + f:>19}" for f in FORMS)
                  + f" | {'chain_cof':>9} {'chain_curl':>10} {'cons_cof':>9} {'cons_curl':>9} {'split':>9} | "
                  + " ".join(f"{'error ' + f:>19}" for f in FORMS) + " | ratios s/c g/c | "
                  + " ".join(f"{'central ' + f[0]:>9} {'upwind ' + f[0]:>9}" for f in FORMS))
            rows = []
            for order in orders:
                row = measure(mesh, exact, order, args.t_end, tmp + "/run")
                rows.append(row)
                v = row["volume"]
                pair = lambda e: f"{e['l2']:.2e} ({e['max']:.1e})"  # noqa: E731
                chain = row["chain_error"]["l2"]
                print(f"{order:>2} | " + " ".join(f"{pair(row[f + '_residual']):>19}" for f in FORMS) + " | "
                      + " ".join(f"{v[k]['l2']:>9.2e}" for k in ("chain_cof", "chain_curl", "cons_cof", "cons_curl",
                                                                  "split_curl"))
                      + " | " + " ".join(f"{pair(row[f + '_error']):>19}" for f in FORMS)
                      + f" | {row['split_error']['l2'] / chain:>5.2f} {row['galerkin_error']['l2'] / chain:>5.2f} | "
                      + " ".join(f"{row[f + '_rate_central']:>9.1e} {row[f + '_rate_upwind']:>9.2e}" for f in FORMS),
                      flush=True)
            results[name] = {"elements": rows[0]["elements"], "curved_elements": rows[0]["curved"], "rows": rows}
    result = {"what": "curved-element volume curl: chain rule, split form and the Galerkin form (truncation, "
                      "time-stepped error, energy rate)",
              "cylinder": f"radius 1, length 4, O-grid m = {args.rings}, 2 layers, TM01 (beta = pi/2), PEC wall, periodic z",
              "box": "unit PEC cube, 2^3 elements, deformed inside (DEFORM), TM110", "t_end": args.t_end,
              "cfl": 0.3, "machine": processor(), "python": sys.version.split()[0],
              "forms": list(forms), "date": str(datetime.date.today()), "command": " ".join(["python"] + sys.argv), "meshes": results}
    write_json(args.json, result, indent=1, default=None, end="\n", say="wrote")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
