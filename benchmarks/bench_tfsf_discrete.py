"""What the discrete incident wave of TF/SF (incident_field = "discrete", tfsf_discrete.py)
costs per step against the analytic variant and the plain step, side by side in one run.

The case is bench_maxwell_physics.py's: the box [0, K]^3 of unit elements, order N, the TF/SF
box [4, K-4]^3. "vs plain" is the plain step's time over the case's; "vs analytic" the analytic
variant's time over the case's.

    PYTHONPATH=src python3 benchmarks/bench_tfsf_discrete.py --backend cuda --elements 28 --order 7
    PYTHONPATH=src python3 benchmarks/bench_tfsf_discrete.py --small        # CPU, seconds
"""

from __future__ import annotations

import datetime
from pathlib import Path

from bench_maxwell_physics import HERE, case_data, case_parser, commit, device_name, seconds_per_step

from lobatto.bench.report import write_json


def main():
    args = case_parser(__doc__, 5).parse_args()
    if args.small:
        args.elements, args.order, args.steps = 10, 3, 5
    k, order = args.elements, args.order
    points = k**3 * (order + 1) ** 3
    rows = []
    for label in ("plain", "analytic", "discrete"):
        data = case_data(k, order, False, label != "plain", 0.0)
        if label != "plain":
            data["source"]["wave"]["incident_field"] = label
        seconds, info = seconds_per_step(args.backend, data, args.steps)
        rows.append({"case": label, "seconds_per_step": seconds, "point_steps_per_second": points / seconds, **info})
    plain, analytic = rows[0]["seconds_per_step"], rows[1]["seconds_per_step"]
    for row in rows:
        row["vs_plain"] = plain / row["seconds_per_step"]
        row["vs_analytic"] = analytic / row["seconds_per_step"]
    device = device_name(args.backend)
    result = {"benchmark": "tfsf_discrete", "device": device, "backend": args.backend, "elements": k**3,
              "order": order, "points": points, "steps": args.steps, "commit": commit(),
              "date": datetime.date.today().isoformat(), "rows": rows}
    print(f"{device}, {k}^3 elements, N = {order}, {points:.3g} points, TF/SF box [4, {k - 4}]^3, "
          f"best of 3 x {args.steps} steps")
    print(f"{'case':>9} {'ms/step':>9} {'vs plain':>9} {'vs analytic':>12} {'path':>11}  term elements")
    for r in rows:
        print(f"{r['case']:>9} {1e3 * r['seconds_per_step']:9.3f} {r['vs_plain']:9.3f} {r['vs_analytic']:12.3f} "
              f"{r['step_path']:>11}  {r['term_elements']}")
    size = "small" if args.small else f"{k}x{order}"
    out = Path(args.json or HERE / "results" / f"tfsf_discrete_{args.backend}_{size}_{result['date']}.json")
    write_json(out, result, indent=1, default=None, say="wrote")


if __name__ == "__main__":
    main()
