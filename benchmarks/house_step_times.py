"""Step times of two source trees side by side, through whole `lobatto run` processes.

    python benchmarks/house_step_times.py --old .baseline/src --new src --backend cuda --rounds 3 \
        --json out.json

For a refactor that must not change speed (the house issue: old and new commits within 1 % on
the GPU, unchanged on the CPU). Each round runs every case once per tree, the trees' order
alternating between rounds so that drifts of clock or temperature fall on both alike. A case
is a Maxwell cavity on a curved box and a Navier-Stokes Taylor-Green vortex (BDF2); each is run
as its own process (`python -m lobatto run`), and the table gives, per tree, the median over
rounds of the summary's seconds_per_step (the steady part of the loop) and of the whole
process's wall-clock seconds, and the ratio new/old.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: backend -> case name -> (TOML text, what it is); sizes give 1-10 s runs on an H100 / 2 cores
CASES = {
    "cuda": {
        "maxwell-N7-32^3-curved": (
            "[mesh]\nelements = [32, 32, 32]\n[mesh.deform]\nx = \"0.05*sin(pi*x)*sin(pi*y)*sin(pi*z)\"\n"
            "[discretization]\norder = 7\n[initial]\nEz = \"sin(pi*x)*sin(pi*y)\"\n"
            "[time]\nt_end = 0.25\n[output]\nformats = []\n[backend]\nname = \"cuda\"\n", "Maxwell, lsrk45"),
        "navier_stokes-TGV-N7-24^3": ("TGV", (24, 7, 0.01, 60)),
    },
    "cpu": {
        "maxwell-N7-6^3-curved": (
            "[mesh]\nelements = [6, 6, 6]\n[mesh.deform]\nx = \"0.05*sin(pi*x)*sin(pi*y)*sin(pi*z)\"\n"
            "[discretization]\norder = 7\n[initial]\nEz = \"sin(pi*x)*sin(pi*y)\"\n"
            "[time]\nt_end = 0.25\n[output]\nformats = []\n[backend]\nname = \"cpu\"\n", "Maxwell, lsrk45"),
        "navier_stokes-TGV-N5-6^3": ("TGV", (6, 5, 0.02, 40)),
    },
}


def tgv_case(backend: str, elements: int, order: int, dt: float, steps: int) -> str:
    """Taylor-Green vortex at Re 1600 (as benchmarks/bench_tgv.py), BDF2 at a fixed dt."""
    two_pi = 2 * math.pi
    return f"""[physics]
equations = "navier_stokes"
viscosity = {1 / 1600!r}
filter_modes = 1
filter_weight = 10.0
[mesh]
elements = [{elements}, {elements}, {elements}]
upper = [{two_pi!r}, {two_pi!r}, {two_pi!r}]
periodic = [true, true, true]
[discretization]
order = {order}
[time]
integrator = "bdf2"
dt = {dt!r}
t_end = {dt * steps!r}
[solver.pressure]
tolerance = 1e-6
coarse_tolerance = 0.1
[solver.velocity]
tolerance = 1e-8
[initial]
ux = "sin(x)*cos(y)*cos(z)"
uy = "-cos(x)*sin(y)*cos(z)"
p = "(cos(2*x) + cos(2*y))*(cos(2*z) + 2)/16"
[output]
formats = []
log_every = 0
[backend]
name = "{backend}"
"""


def case_text(backend: str, name: str) -> str:
    first, second = CASES[backend][name]
    return tgv_case(backend, *second) if first == "TGV" else first


def run_once(tree: Path, case: Path, work: Path) -> dict:
    out = work / "out"
    env = dict(os.environ, PYTHONPATH=str(tree.resolve()))
    cmd = [sys.executable, "-m", "lobatto", "run", str(case), "-o", str(out), "-q"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} (PYTHONPATH={tree}) failed:\n{proc.stdout}\n{proc.stderr}")
    summary = json.loads((out / "summary.json").read_text())
    return {"seconds_per_step": summary["seconds_per_step"], "steps": summary["steps"], "wall_seconds": wall}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="the old tree's src directory")
    parser.add_argument("--new", type=Path, required=True, help="the new tree's src directory")
    parser.add_argument("--backend", choices=sorted(CASES), default="cuda")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    trees = {"old": args.old, "new": args.new}
    names = list(CASES[args.backend])
    runs = {n: {"old": [], "new": []} for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            (Path(tmp) / f"{name}.toml").write_text(case_text(args.backend, name))
        for r in range(args.rounds):
            for name in names:
                for which in (("old", "new") if r % 2 == 0 else ("new", "old")):
                    with tempfile.TemporaryDirectory(dir=tmp) as work:
                        result = run_once(trees[which], Path(tmp) / f"{name}.toml", Path(work))
                    runs[name][which].append(result)
                    print(f"round {r + 1} {name:28s} {which}: {result['seconds_per_step']:.5e} s/step "
                          f"({result['steps']} steps), process {result['wall_seconds']:.2f} s", flush=True)
    rows = []
    for name in names:
        row = {"case": name}
        for which in ("old", "new"):
            row[which] = {key: statistics.median(x[key] for x in runs[name][which])
                          for key in ("seconds_per_step", "wall_seconds")}
            row[which]["runs"] = runs[name][which]
        row["step_ratio"] = row["new"]["seconds_per_step"] / row["old"]["seconds_per_step"]
        row["wall_ratio"] = row["new"]["wall_seconds"] / row["old"]["wall_seconds"]
        rows.append(row)
    print(f"\n{'case':28s} {'old s/step':>12s} {'new s/step':>12s} {'new/old':>8s} {'old wall':>9s} "
          f"{'new wall':>9s} {'new/old':>8s}")
    for row in rows:
        print(f"{row['case']:28s} {row['old']['seconds_per_step']:12.5e} {row['new']['seconds_per_step']:12.5e} "
              f"{row['step_ratio']:8.4f} {row['old']['wall_seconds']:9.2f} {row['new']['wall_seconds']:9.2f} "
              f"{row['wall_ratio']:8.4f}")
    if args.json is not None:
        args.json.write_text(json.dumps({"backend": args.backend, "rounds": args.rounds, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
