"""Maxwell's physics terms on the CPU: their compiled kernels (systems/maxwell/terms_cpu.py,
kernels/terms.c; the medium's fused stage in kernels/maxwell.c) against their array code
(LOBATTO_ARRAY_TERMS=1), side by side in one run, each against the plain step.

The cases are bench_maxwell_physics.py's (the box [0, K]^3 of unit elements, Silver-Müller
sides, order N; the PML one element deep on all six sides: 19.9 % of the elements at K = 28;
the TF/SF box [4, K-4]^3; Drude on the slab x < 0.2 K; a dielectric ball sampled per point)
and the issue's target case: PML + TF/SF + one electric dipole at the centre. For each case
the array code and the compiled kernels run one after the other (the plain step, which no
switch changes, is timed both ways: a check of the machine's noise). Throughput is
points x steps / second; "vs plain" is the plain step's time over the case's. Set
OMP_NUM_THREADS (the table says how many threads the kernels ran on).

    OMP_NUM_THREADS=1 PYTHONPATH=src python3 benchmarks/maxwell_terms_cpu.py            # K = 28, N = 3
    OMP_NUM_THREADS=1 PYTHONPATH=src python3 benchmarks/maxwell_terms_cpu.py --small    # K = 10: seconds
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_maxwell_physics import case_data, commit  # noqa: E402

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.bench.report import best_seconds, write_json  # noqa: E402
from lobatto.jit import c as cbuild  # noqa: E402
from lobatto.systems.maxwell.terms_cpu import ARRAY_TERMS_VARIABLE  # noqa: E402

#: label: (pml, tfsf, drude share, dielectric ball, dipole)
CASES = {"plain": (False, False, 0.0, False, False), "pml": (True, False, 0.0, False, False),
         "tfsf": (False, True, 0.0, False, False), "pml+tfsf": (True, True, 0.0, False, False),
         "pml+tfsf+dipole": (True, True, 0.0, False, True), "drude 20%": (False, False, 0.2, False, False),
         "eps ball": (False, False, 0.0, True, False), "eps ball+pml+tfsf": (True, True, 0.0, True, False)}


def data_for(k: int, order: int, label: str) -> dict:
    pml, tfsf, share, ball, dipole = CASES[label]
    data = case_data(k, order, pml, tfsf, share, dielectric=ball)
    if dipole:  # at the centre (inside the TF/SF box), as the target case
        data.setdefault("source", {})["dipole"] = {
            "type": "electric_dipole", "position": [k / 2 + 0.3, k / 2 + 0.2, k / 2 + 0.1], "direction": [0, 0, 1],
            "waveform": "gaussian", "t0": 8.0, "width": 2.0}
    return data


def timed(k: int, order: int, label: str, array_code: bool, steps: int, repeats: int) -> tuple[float, dict]:
    """Best seconds per step of ``repeats`` blocks of ``steps`` steps, after one step."""
    os.environ[ARRAY_TERMS_VARIABLE] = "1" if array_code else "0"  # read when the terms are built
    try:
        sim = Simulation(case_from_dict(data_for(k, order, label), name="terms"), backend="cpu",
                         output_dir=f"/tmp/maxwell_terms_cpu_{os.getpid()}", comm=None)
    finally:
        os.environ.pop(ARRAY_TERMS_VARIABLE, None)
    sim.advance(1)
    best = best_seconds(lambda: sim.advance(steps), repeats) / steps
    terms = {t.name: t.count for t in sim.system.terms}
    compiled = sorted(t.name for t in sim.system.terms if getattr(t, "compiled", None) is not None)
    if getattr(sim.system.medium, "stage_kernel", None) is not None:
        compiled.append("medium stage")
    sim.close()
    return best, {"term_elements": terms, "compiled": compiled, "dt": sim.dt}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elements", type=int, default=28, help="K: K^3 elements")
    parser.add_argument("--order", type=int, default=3)
    parser.add_argument("--steps", type=int, default=2, help="steps per timed block (best of 3 blocks)")
    parser.add_argument("--repeats", type=int, default=3, help="timed blocks per case and mode (the best counts)")
    parser.add_argument("--small", action="store_true", help="K = 10, N = 3, 3 steps (seconds)")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.small:
        args.elements, args.order, args.steps = 10, 3, 3
    k, order = args.elements, args.order
    points = k**3 * (order + 1) ** 3
    labels = ["plain"] + [c for c in args.cases if c != "plain"]
    rows = []
    for label in labels:
        row = {"case": label}
        for mode, array_code in (("array", True), ("compiled", False)):
            seconds, info = timed(k, order, label, array_code, args.steps, args.repeats)
            row[mode] = {"seconds_per_step": seconds, "point_steps_per_second": points / seconds, **info}
        rows.append(row)
    for row in rows:
        for mode in ("array", "compiled"):
            row[mode]["vs_plain"] = rows[0][mode]["seconds_per_step"] / row[mode]["seconds_per_step"]
        row["speedup"] = row["array"]["seconds_per_step"] / row["compiled"]["seconds_per_step"]
    threads = cbuild.get_num_threads()
    result = {"benchmark": "maxwell_terms_cpu", "backend": "cpu", "machine": platform.processor() or platform.machine(),
              "threads": threads, "repeats": args.repeats, "elements": k**3, "order": order, "points": points, "steps": args.steps,
              "commit": commit(), "date": datetime.date.today().isoformat(), "rows": rows}
    print(f"CPU, {threads} thread(s), {k}^3 elements, N = {order}, {points:.3g} points, best of {args.repeats} x "
          f"{args.steps} steps")
    print(f"{'case':>18} {'array ms':>9} {'vs plain':>9} {'C ms':>9} {'vs plain':>9} {'speedup':>8}  term elements")
    for r in rows:
        a, c = r["array"], r["compiled"]
        print(f"{r['case']:>18} {1e3 * a['seconds_per_step']:9.2f} {a['vs_plain']:9.3f} "
              f"{1e3 * c['seconds_per_step']:9.2f} {c['vs_plain']:9.3f} {r['speedup']:8.2f}  {c['term_elements']}")
    out = Path(args.json or HERE / "results" / f"maxwell_terms_cpu_{result['date']}.json")
    write_json(out, result, indent=1, default=None, say="wrote")


if __name__ == "__main__":
    main()
