"""Wall seconds for the Taylor–Green vortex (Re = 1600) to reach a simulated time, as a user
runs it (`python -m lobatto run`, a whole process), for one or more source trees side by side.

    python3 benchmarks/tgv_time_to_solution.py --tree old=.baseline/src --tree new=src \
        --elements 24 --t-end 10 --variant old:target_cfl=0.5 --variant new:target_cfl=0.5 \
        --variant new:target_cfl=2,substeps=2 --json out.json

Each variant is examples/tgv.toml at --elements^3, t_end = --t-end, snapshots off, with the
[time] keys given (key=value, comma-separated), run by the named tree. Prints wall seconds,
steps, seconds per step and the peak of -dE/dt against the 512^3 reference (0.0128575 at
t = 8.97) read by benchmarks/tgv_compare.py from the run's steps.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from tgv_compare import REFERENCE, compare  # noqa: E402


def case_text(elements: int, t_end: float, time_keys: dict) -> str:
    text = (HERE.parent / "examples" / "tgv.toml").read_text()
    text = text.replace("elements = [16, 16, 16]", f"elements = [{elements}, {elements}, {elements}]")
    text = text.replace("t_end = 20.0", f"t_end = {t_end}")
    text = text.replace('formats = ["hdf5", "nek"]', "formats = []")
    lines = []
    for line in text.splitlines():
        if line.strip().startswith("target_cfl") and "target_cfl" in time_keys:
            continue
        lines.append(line)
        if line.strip() == "[time]":
            lines += [f"{k} = {v}" for k, v in time_keys.items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tree", action="append", required=True, help="NAME=PATH of a source tree (its src/)")
    p.add_argument("--variant", action="append", required=True, help="TREE:key=value,key=value")
    p.add_argument("--elements", type=int, default=24)
    p.add_argument("--t-end", type=float, default=10.0)
    p.add_argument("--backend", default="cuda")
    p.add_argument("--reference", default=str(REFERENCE))
    p.add_argument("--work", default="/tmp/tgv_tts")
    p.add_argument("--json")
    p.add_argument("--keep", help="copy each run's steps.jsonl into this folder (as <n>_<tree>_steps.jsonl)")
    a = p.parse_args(argv)
    trees = dict(t.split("=", 1) for t in a.tree)
    rows = []
    for i, variant in enumerate(a.variant):
        tree, _, keys = variant.partition(":")
        time_keys = dict(kv.split("=", 1) for kv in keys.split(",") if kv)
        work = Path(a.work) / f"{i}_{tree}"
        work.mkdir(parents=True, exist_ok=True)
        case = work / "tgv.toml"
        case.write_text(case_text(a.elements, a.t_end, time_keys))
        env = dict(os.environ, PYTHONPATH=trees[tree])  # as given: may be several paths
        start = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "lobatto", "run", str(case), "--backend", a.backend, "--quiet",
                              "--output", str(work / "out"), "--overwrite"], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        (work / "log.txt").write_text(run.stdout + run.stderr)
        row = {"tree": tree, "time": time_keys, "returncode": run.returncode, "wall_seconds": wall}
        steps_file = work / "out" / "steps.jsonl"
        if steps_file.exists() and a.keep:
            Path(a.keep).mkdir(parents=True, exist_ok=True)
            (Path(a.keep) / f"{i}_{tree}_steps.jsonl").write_text(steps_file.read_text())
        if steps_file.exists():
            records = [json.loads(x) for x in steps_file.read_text().splitlines() if x.strip()]
            row["steps"] = len(records)
            row["t_final"] = records[-1]["t"] if records else 0.0
            try:
                row.update(compare(work / "out", Path(a.reference))[0])
            except Exception as error:  # a run stopped early has too few samples
                row["compare_error"] = str(error)
        rows.append(row)
        print(f"{tree:5s} {keys:32s} rc={run.returncode} wall {wall:8.1f} s  steps {row.get('steps', 0):6d}  "
              f"t {row.get('t_final', 0):.3f}  peak -dE/dt {row.get('peak_minus_dEdt', float('nan')):.7f} (2nu ens {row.get('peak_2nu_enstrophy', float('nan')):.7f}) at "
              f"{row.get('peak_time', float('nan')):.2f}", flush=True)
        if run.returncode:
            print(run.stderr[-2000:])
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
