"""Drag and lift on the cylinder of the Schäfer–Turek benchmark 2D-1 (Re = 20) by order:
examples/cylinder.toml run to its steady state at each order on the CPU, its
[output.forces.cylinder] coefficients and probes' pressure difference against the reference.

    OMP_NUM_THREADS=1 python benchmarks/cylinder_forces.py                       # orders 4 5 6 7, t = 12
    python benchmarks/cylinder_forces.py --orders 5 --t-end 8 --json results.json

Reference (Schäfer and Turek 1996, "Benchmark computations of laminar flow around a
cylinder"; the digits of John 2004 and Nabh 1998): cD = 5.57953523384, cL = 0.010618948146,
dp = 0.11752016697; the benchmark's accepted ranges 5.57 to 5.59, 0.0104 to 0.0110 and 0.1172
to 0.1176. The case's mesh is periodic in z with depth 0.1, so reference_area = D * 0.1 =
0.01 and reference_velocity = 0.2 (the mean inflow) make Cx and Cy of NAME_forces.csv the
benchmark's cD and cL. "change" is the largest change of cD, cL over the last unit of time
(the run is steady when it is below 1e-6: at t = 12, where the lift's slowly decaying swing,
period about 2, is below 1e-6; t = 8, the example's end, is steady for dp and to 4e-6 for cD
only). The table and the JSON file hold every order.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT / "examples" / "cylinder.toml"
REFERENCE = {"cD": 5.57953523384, "cL": 0.010618948146, "dp": 0.11752016697}
RANGES = {"cD": (5.57, 5.59), "cL": (0.0104, 0.0110), "dp": (0.1172, 0.1176)}


def step_size(order: int, dt: float) -> float:
    """dt at order N: the given one up to N = 5, then shorter as the GLL spacing (1/N^2), for
    a CFL number of about 0.75 (0.47 at N = 4 and dt = 5e-3; the steady state does not
    depend on dt)."""
    return dt * min(1.0, (6.0 / (order + 1)) ** 2)


def run_order(order: int, t_end: float, dt: float, every: int, directory: Path) -> dict:
    import lobatto
    from lobatto.api import with_changes

    dt = step_size(order, dt)
    case = with_changes(lobatto.load_case(CASE), {
        "discretization.order": order, "time.t_end": t_end, "time.dt": dt, "output.probes.every": every,
        "output.forces.cylinder.every": every, "output.name": f"cylinder_n{order}", "output.log_every": 0})
    start = time.perf_counter()
    lobatto.run(case, backend="cpu", output_dir=directory / f"n{order}")
    return measured(directory / f"n{order}", order, dt, time.perf_counter() - start)


def measured(run: Path, order: int, dt: float, seconds: float) -> dict:
    """The row of a finished run's directory (its forces, probes and steps files)."""
    import numpy as np

    from lobatto.io.timeseries import read_csv

    forces = read_csv(run / f"cylinder_n{order}_forces.csv")
    probes = read_csv(run / f"cylinder_n{order}_probes.csv")
    steps = [json.loads(line) for line in (run / "steps.jsonl").read_text().splitlines()]
    t, cd, cl = forces["time"], forces["values"]["Cx@cylinder"], forces["values"]["Cy@cylinder"]
    window = t >= t[-1] - 1.0 - 1e-12  # the last unit of time
    dp = probes["values"]["p@p0"] - probes["values"]["p@p1"]
    scale = 0.5 * 0.2 ** 2 * 0.01  # rho U^2 A / 2
    return {"order": order, "t_end": float(t[-1]), "dt": dt, "steps": len(steps), "seconds": seconds,
            "cD": float(cd[-1]), "cL": float(cl[-1]), "dp": float(dp[-1]),
            "cD_pressure": float(forces["values"]["Fpx@cylinder"][-1] / scale),
            "cD_viscous": float(forces["values"]["Fvx@cylinder"][-1] / scale),
            "change": float(max(np.ptp(cd[window]), np.ptp(cl[window]))),
            "cfl": float(max(step["cfl"] for step in steps))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, nargs="+", default=[4, 5, 6, 7])
    parser.add_argument("--t-end", type=float, default=12.0, help="end time (default 12: the coefficients "
                        "steady to 1e-6)")
    parser.add_argument("--dt", type=float, default=5e-3, help="time step up to N = 5, shorter above (step_size)")
    parser.add_argument("--every", type=int, default=20, help="steps between samples")
    parser.add_argument("--json", type=Path, default=None, help="write the rows to this JSON file")
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs' outputs in this directory")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        directory = args.keep or Path(scratch)
        for order in args.orders:
            rows.append(run_order(order, args.t_end, args.dt, args.every, directory))
            row = rows[-1]
            print(f"N = {order}: cD {row['cD']:.8f}  cL {row['cL']:.8f}  dp {row['dp']:.8f}  change {row['change']:.1e}"
                  f"  {row['seconds']:.0f} s", flush=True)
    print("\n| N | dt | cD | error | cL | error | Δp | error | change over the last unit time | seconds |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        errors = {key: row[key] - REFERENCE[key] for key in REFERENCE}
        print(f"| {row['order']} | {row['dt']:.3g} | {row['cD']:.8f} | {errors['cD']:+.1e} | {row['cL']:.8f} | {errors['cL']:+.1e} | "
              f"{row['dp']:.8f} | {errors['dp']:+.1e} | {row['change']:.1e} | {row['seconds']:.0f} |")
    print(f"| ref | | {REFERENCE['cD']} | | {REFERENCE['cL']} | | {REFERENCE['dp']} | | | |")
    if args.json is not None:
        args.json.write_text(json.dumps({"case": "examples/cylinder.toml", "reference": REFERENCE, "ranges": RANGES,
                                         "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
