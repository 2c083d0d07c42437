"""Maxwell's physics terms on the CPU: their compiled kernels (systems/maxwell/terms_cpu.py,
kernels/terms.c; the medium's fused stage in kernels/maxwell.c) against their array code
(LOBATTO_ARRAY_TERMS=1), side by side in one run, each against the plain step.

The cases are bench_maxwell_physics.py's (the box [0, K]^3 of unit elements, Silver-Müller
sides, order N; the PML one element deep on all six sides: 19.9 % of the elements at K = 28;
the TF/SF box [4, K-4]^3; Drude on the slab x < 0.2 K; a dielectric ball sampled per point)
and the issue's target case: PML + TF/SF + one electric dipole at the centre. The machine's
load drifts, so for each case three runs are set up at once (the plain step, the case with
the array code, the case compiled) and timed in rounds, one block of steps each per round,
in turn; each keeps its best block. "vs plain" is the plain step's best in the same rounds
("plain_this_round" in the JSON) over the case's; the plain row gives its best over all
rounds. Set OMP_NUM_THREADS (the table
says how many threads the kernels ran on).

    OMP_NUM_THREADS=1 PYTHONPATH=src python3 benchmarks/maxwell_terms_cpu.py            # K = 28, N = 3
    OMP_NUM_THREADS=1 PYTHONPATH=src python3 benchmarks/maxwell_terms_cpu.py --small    # K = 10: seconds
    OMP_NUM_THREADS=1 PYTHONPATH=src python3 benchmarks/maxwell_terms_cpu.py --small --profile pml+tfsf
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_maxwell_physics import case_data, commit  # noqa: E402

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.bench.report import write_json  # noqa: E402
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
    if dipole:  # at the centre (inside the TF/SF box), as the issue's target case
        data.setdefault("source", {})["dipole"] = {
            "type": "electric_dipole", "position": [k / 2 + 0.3, k / 2 + 0.2, k / 2 + 0.1], "direction": [0, 0, 1],
            "waveform": "gaussian", "t0": 8.0, "width": 2.0}
    return data


def build(k: int, order: int, label: str, array_code: bool, tag: str) -> Simulation:
    """The case's Simulation with the terms' array code or their compiled kernels, one step done."""
    os.environ[ARRAY_TERMS_VARIABLE] = "1" if array_code else "0"  # read when the terms are built
    try:
        sim = Simulation(case_from_dict(data_for(k, order, label), name="terms"), backend="cpu",
                         output_dir=f"/tmp/maxwell_terms_cpu_{os.getpid()}_{tag}", comm=None)
    finally:
        os.environ.pop(ARRAY_TERMS_VARIABLE, None)
    sim.advance(1)
    return sim


def describe(sim) -> dict:
    terms = {t.name: t.count for t in sim.system.terms}
    compiled = sorted(t.name for t in sim.system.terms if getattr(t, "compiled", None) is not None)
    if getattr(sim.system.medium, "stage_kernel", None) is not None:
        compiled.append("medium stage")
    return {"term_elements": terms, "compiled": compiled, "dt": sim.dt}


def interleaved(sims: dict, steps: int, repeats: int) -> dict:
    """{key: (wall, cpu)}: the best seconds per step of each simulation over ``repeats`` rounds,
    by the wall clock and by the process's CPU time (with one thread, the CPU time leaves out
    the time other programs held the core); in each round every simulation runs one block of
    ``steps`` steps, in turn (the machine's load drifts alike)."""
    best = {key: (float("inf"), float("inf")) for key in sims}
    for _ in range(repeats):
        for key, sim in sims.items():
            wall, cpu = time.perf_counter(), time.process_time()
            sim.advance(steps)
            wall, cpu = (time.perf_counter() - wall) / steps, (time.process_time() - cpu) / steps
            best[key] = (min(best[key][0], wall), min(best[key][1], cpu))
    return best


def profile(k: int, order: int, label: str, steps: int, top: int = 10) -> dict:
    """cProfile of ``steps`` steps of one case, array code and compiled, one after the other:
    {mode: [(function, calls, seconds of its own)]} for the ``top`` functions by own time."""
    import cProfile
    import pstats

    out = {}
    for mode, array_code in (("array", True), ("compiled", False)):
        sim = build(k, order, label, array_code, f"profile_{mode}")
        profiler = cProfile.Profile()
        profiler.runcall(sim.advance, steps)
        sim.close()
        stats = pstats.Stats(profiler).stats
        rows = sorted(((f"{Path(f).name}:{line}({name})", v[1], v[2]) for (f, line, name), v in stats.items()),
                      key=lambda r: -r[2])
        out[mode] = rows[:top]
        total = sum(v[2] for v in stats.values())
        print(f"{label}, {mode}: {total / steps * 1e3:.1f} ms per step under the profiler; own time per step:")
        for name, calls, seconds in rows[:top]:
            print(f"  {seconds / steps * 1e3:8.2f} ms  {calls // steps:4d} calls  {name}")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elements", type=int, default=28, help="K: K^3 elements")
    parser.add_argument("--order", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1, help="steps per timed block")
    parser.add_argument("--repeats", type=int, default=5, help="rounds of blocks per case (the best counts)")
    parser.add_argument("--small", action="store_true", help="K = 10, N = 3, 5 steps per block (seconds)")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--profile", default=None, choices=list(CASES), help="profile this case (cProfile, "
                        "array code and compiled, --steps steps) instead of the table")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.small:
        args.elements, args.order, args.steps = 10, 3, 5
    if args.profile:
        return profile(args.elements, args.order, args.profile, args.steps)
    k, order = args.elements, args.order
    points = k**3 * (order + 1) ** 3
    labels = ["plain"] + [c for c in args.cases if c != "plain"]
    plain = build(k, order, "plain", False, "plain")
    rows, plain_best = [], [float("inf")] * 2
    for label in labels:
        sims = {"plain": plain}
        if label != "plain":
            sims.update(array=build(k, order, label, True, "array"), compiled=build(k, order, label, False, "compiled"))
        best = interleaved(sims, args.steps, args.repeats)
        plain_best = [min(a, b) for a, b in zip(plain_best, best["plain"])]
        row = {"case": label, "plain_this_round": dict(zip(("wall", "cpu"), best["plain"]))}
        for mode in ("array", "compiled"):
            wall, cpu = best.get(mode, best["plain"])
            row[mode] = {"wall_seconds_per_step": wall, "cpu_seconds_per_step": cpu, **describe(sims.get(mode, plain))}
            if mode in sims:
                sims[mode].close()
        rows.append(row)
    plain.close()
    for row in rows:
        for mode in ("array", "compiled"):
            r = row[mode]
            if row["case"] == "plain":
                r["wall_seconds_per_step"], r["cpu_seconds_per_step"] = plain_best
                row["plain_this_round"] = dict(zip(("wall", "cpu"), plain_best))
            for i, clock in enumerate(("wall", "cpu")):  # against the plain step timed in the same rounds
                r[f"{clock}_vs_plain"] = row["plain_this_round"][clock] / r[f"{clock}_seconds_per_step"]
            r["point_steps_per_second_cpu"] = points / r["cpu_seconds_per_step"]
        row["speedup_cpu"] = row["array"]["cpu_seconds_per_step"] / row["compiled"]["cpu_seconds_per_step"]
    threads = cbuild.get_num_threads()
    result = {"benchmark": "maxwell_terms_cpu", "backend": "cpu", "machine": platform.processor() or platform.machine(),
              "threads": threads, "repeats": args.repeats, "elements": k**3, "order": order, "points": points, "steps": args.steps,
              "commit": commit(), "date": datetime.date.today().isoformat(), "rows": rows}
    print(f"CPU, {threads} thread(s), {k}^3 elements, N = {order}, {points:.3g} points, best of {args.repeats} "
          f"rounds x {args.steps} steps; CPU time (wall clock in brackets)")
    print(f"{'case':>18} {'array ms':>16} {'vs plain':>14} {'C ms':>16} {'vs plain':>14} {'speedup':>8}  "
          "term elements")
    for r in rows:
        a, c = r["array"], r["compiled"]

        def both(x, key, scale=1.0, fmt="8.2f"):
            return f"{scale * x['cpu_' + key]:{fmt}} ({scale * x['wall_' + key]:{fmt.replace('8', '5')}})"

        print(f"{r['case']:>18} {both(a, 'seconds_per_step', 1e3, '8.1f')} {both(a, 'vs_plain', fmt='6.3f')} "
              f"{both(c, 'seconds_per_step', 1e3, '8.1f')} {both(c, 'vs_plain', fmt='6.3f')} {r['speedup_cpu']:8.2f}  "
              f"{c['term_elements']}")
    out = Path(args.json or HERE / "results" / f"maxwell_terms_cpu_{result['date']}.json")
    write_json(out, result, indent=1, default=None, say="wrote")


if __name__ == "__main__":
    main()
