"""Bloch-periodic boundaries ([physics] bloch_k, systems/maxwell/bloch.py): what they cost per
step against the plain periodic step, and the eigenfrequencies of an empty periodic box at
several k against omega = c |k + G|.

cost:  the box [0, K]^3 periodic in x and y, PEC in z, order N: the plain periodic step (the
       fused/tuned path), the plain step on the stage path with the rhs kernel (what Bloch runs
       twice), and the Bloch pair; "vs plain" is the plain step's time over the row's.
bands: a pulse in the 1 x 0.5 x 0.5 box periodic in all three axes (2 x 1 x 1 elements, central
       flux, dt = 0.01, t_end 24, a probe every 5 steps), its Ez series fitted by
       lobatto.analysis.resonances; each of the three strongest modes against the nearest
       |k + G|, G = 2 pi (l, 2m, 2n).

    PYTHONPATH=src python3 benchmarks/bloch_periodic.py --small           # CPU, about two minutes
    PYTHONPATH=src python3 benchmarks/bloch_periodic.py --backend cuda --elements 16 --order 7 --skip-bands
"""

from __future__ import annotations

import datetime
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_maxwell_physics import case_parser, commit, device_name, seconds_per_step  # noqa: E402

import lobatto  # noqa: E402
from lobatto.analysis import resonances  # noqa: E402
from lobatto.analysis.resonance_table import probe_series, uniform_step  # noqa: E402
from lobatto.bench.report import write_json  # noqa: E402


def cost_case(k: int, order: int, bloch: bool, stages: bool) -> dict:
    data = {"mesh": {"elements": [k] * 3, "upper": [float(k)] * 3, "periodic": [True, True, False],
                     "boundary": "pec"},
            "discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "initial": {"Ey": f"exp(-((x-{k / 2})**2+(y-{k / 2})**2+(z-{k / 2})**2)/4)"},
            "time": {"t_end": 1e3, **({"integrator": "rk4"} if stages else {})}, "output": {"formats": [], "every": 0}}
    if bloch:
        data["physics"]["bloch_k"] = [0.7, -0.4, 0.0]
    return data


def cost(args) -> list:
    k, order = args.elements, args.order
    points = k**3 * (order + 1) ** 3
    rows = []
    for label, bloch, stages in (("plain", False, False), ("plain rk4 (rhs path)", False, True),
                                 ("bloch", True, False), ("bloch rk4", True, True)):
        seconds, info = seconds_per_step(args.backend, cost_case(k, order, bloch, stages), args.steps)
        rows.append({"case": label, "seconds_per_step": seconds, "point_steps_per_second": points / seconds, **info})
    for row in rows:
        row["vs_plain"] = rows[0]["seconds_per_step"] / row["seconds_per_step"]
    return rows


def bands(order: int, k: tuple, backend: str, directory: Path) -> dict:
    kv = np.array(k, dtype=float)
    data = {"mesh": {"elements": [2, 1, 1], "periodic": [True, True, True], "upper": [1.0, 0.5, 0.5]},
            "discretization": {"order": order, "flux": "central"},
            "physics": {"equations": "maxwell", "bloch_k": kv.tolist()},
            "initial": {"Ez": "exp(-30*((x-0.4)**2 + (y-0.25)**2))", "Ey_im": "exp(-30*((x-0.6)**2 + (z-0.2)**2))"},
            "time": {"t_end": 24.0, "dt": 0.01}, "output": {"every": 0, "formats": [], "probes": {
                "every": 5, "points": [[0.31, 0.43, 0.27]], "fields": ["Ez"]}}}
    out = directory / f"bands_{order}_{k[0]}_{k[1]}"
    lobatto.run(lobatto.case_from_dict(data, name="bloch"), output_dir=out, backend=backend)
    got = probe_series(out, "p0", "Ez")
    kept, dt = uniform_step(got["time"], got["path"])
    modes = resonances(got["values"][kept], dt)
    exact = sorted({float(np.linalg.norm(kv + 2 * np.pi * np.array([l, 2 * m, 2 * n])))
                    for l in range(-3, 4) for m in range(-2, 3) for n in range(-2, 3)})
    keep = [i for i, w in enumerate(modes.omega) if w > 0.5][:3]
    strong = [float(modes.omega[i]) for i in keep]
    nearest = [min(exact, key=lambda b: abs(b - w)) for w in strong]
    return {"order": order, "k": list(k), "omega": strong, "exact": nearest,
            "relative_error": [abs(w - b) / b for w, b in zip(strong, nearest)],
            "fit_error_estimate": [float(modes.relative_error[i]) for i in keep]}


def main():
    parser = case_parser(__doc__, 5)
    parser.add_argument("--skip-bands", action="store_true")
    parser.add_argument("--skip-cost", action="store_true")
    args = parser.parse_args()
    if args.small:
        args.elements, args.order, args.steps = 6, 3, 5
    result = {"benchmark": "bloch_periodic", "device": device_name(args.backend), "backend": args.backend,
              "commit": commit(), "date": datetime.date.today().isoformat()}
    if not args.skip_cost:
        result.update(elements=args.elements**3, order=args.order, cost=cost(args))
        print(f"cost: {args.elements}^3 elements, N = {args.order}, {result['device']}")
        print(f"{'case':24s} {'ms/step':>10s} {'vs plain':>9s}  path")
        for row in result["cost"]:
            print(f"{row['case']:24s} {1e3 * row['seconds_per_step']:10.3f} {row['vs_plain']:9.2f}  {row['step_path']}")
    if not args.skip_bands:
        rows = []
        with tempfile.TemporaryDirectory() as scratch:
            for k in ((1.1, 0.0, 0.0), (2.0, 3.0, 0.0), (np.pi, 0.0, 0.0)):
                for order in (5, 7):
                    rows.append(bands(order, k, args.backend, Path(scratch)))
        result["bands"] = rows
        print("\nbands: omega of the three strongest modes against |k + G|")
        print(f"{'k':>16s} {'N':>3s}  " + "  ".join(f"{'omega':>12s} {'rel. error':>10s}" for _ in range(3)))
        for row in rows:
            cells = "  ".join(f"{w:12.8f} {e:10.2e}" for w, e in zip(row["omega"], row["relative_error"]))
            print(f"{str(tuple(round(v, 4) for v in row['k'])):>16s} {row['order']:3d}  {cells}")
    path = Path(args.json) if args.json else HERE / f"bloch_periodic_{args.backend}.json"
    write_json(path, result)


if __name__ == "__main__":
    main()
