"""Step times of two source trees side by side, through whole `lobatto run` processes.

    python benchmarks/house_step_times.py --old .baseline/src --new src --backend cuda --rounds 3 \
        --json out.json

For a refactor that must not change speed (the house issue: old and new commits within 1 % on
the GPU, unchanged on the CPU). Each round runs every case once per tree, the trees' order
alternating between rounds so that drifts of clock or temperature fall on both alike. A case
is a Maxwell cavity on a curved box and a Navier-Stokes Taylor-Green vortex (BDF2); each is run
as its own process (`python -m lobatto run`), and the table gives, per tree, the median over
rounds of the summary's seconds_per_step (the steady part of the loop) and of the whole
process's wall-clock seconds, and the ratio new/old. With --callgrind K1 K2 it counts instead
the instructions of a whole run of K1 and of K2 steps under valgrind's callgrind and reports
their difference per step (CPU; steadier than a timing on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: backend -> case name -> (system, elements per axis, order, dt, steps); 1-10 s runs on an
#: H100 / on 2 cores
CASES = {
    "cuda": {"maxwell-N7-32^3-curved": ("maxwell", 32, 7, 1e-3, 300),
             "navier_stokes-TGV-N7-24^3": ("navier_stokes", 24, 7, 0.004, 100)},
    "cpu": {"maxwell-N7-6^3-curved": ("maxwell", 6, 7, 5e-3, 60),
            "navier_stokes-TGV-N5-6^3": ("navier_stokes", 6, 5, 0.02, 40)},
}


def maxwell_case(backend: str, elements: int, order: int, dt: float, steps: int) -> str:
    """A cavity mode on a curved box (as `lobatto bench maxwell --curved`), lsrk45 at a fixed dt."""
    return f"""[mesh]
elements = [{elements}, {elements}, {elements}]
[mesh.deform]
x = "0.05*sin(pi*x)*sin(pi*y)*sin(pi*z)"
[discretization]
order = {order}
[initial]
Ez = "sin(pi*x)*sin(pi*y)"
[time]
dt = {dt!r}
t_end = {dt * steps!r}
[output]
formats = []
log_every = 0
[backend]
name = "{backend}"
"""


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


def case_text(backend: str, name: str, steps: int | None = None) -> str:
    system, elements, order, dt, default_steps = CASES[backend][name]
    build = maxwell_case if system == "maxwell" else tgv_case
    return build(backend, elements, order, dt, steps or default_steps)


def instructions(tree: Path, case: Path, work: Path) -> int:
    """Instructions of a whole `lobatto run` process under callgrind (one thread, fixed hash seed)."""
    # valgrind does not decode AVX-512: the C kernels are built for x86-64-v3 (AVX2) here
    env = dict(os.environ, PYTHONPATH=str(tree.resolve()), OMP_NUM_THREADS="1", PYTHONHASHSEED="0",
               LOBATTO_CFLAGS="-O3 -march=x86-64-v3 -fno-math-errno -ffp-contract=fast -std=gnu99")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={work}/cg.out", sys.executable, "-m", "lobatto",
           "run", str(case), "-o", str(work / "out"), "-q"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or not found:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-2000:]}")
    return int(found.group(1))


def count_per_step(args, names) -> list:
    """(instructions(K2 steps) - instructions(K1 steps)) / (K2 - K1) per tree and case."""
    k1, k2 = args.callgrind
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            row = {"case": name, "steps": [k1, k2]}
            for which, tree in (("old", args.old), ("new", args.new)):
                counts = []
                for k in (k1, k2):
                    case = Path(tmp) / f"{name}-{k}.toml"
                    case.write_text(case_text(args.backend, name, k))
                    with tempfile.TemporaryDirectory(dir=tmp) as work:
                        counts.append(instructions(tree, case, Path(work)))
                row[which] = {"counts": counts, "per_step": (counts[1] - counts[0]) / (k2 - k1)}
                print(f"{name:28s} {which}: {row[which]['per_step']:.6e} instructions/step", flush=True)
            row["ratio"] = row["new"]["per_step"] / row["old"]["per_step"]
            rows.append(row)
    print(f"\n{'case':28s} {'old instr/step':>15s} {'new instr/step':>15s} {'new/old':>8s}")
    for row in rows:
        print(f"{row['case']:28s} {row['old']['per_step']:15.6e} {row['new']['per_step']:15.6e} {row['ratio']:8.5f}")
    return rows


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
    parser.add_argument("--cases", nargs="+", default=None, help="a subset of the backend's cases (default: all)")
    parser.add_argument("--steps", type=int, default=None, help="steps of every case (default: each case's own)")
    parser.add_argument("--callgrind", type=int, nargs=2, metavar=("K1", "K2"), default=None,
                        help="count instructions per step under callgrind (runs of K1 and K2 steps) instead of timing")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.callgrind is not None:
        rows = count_per_step(args, args.cases or list(CASES[args.backend]))
        if args.json is not None:
            args.json.write_text(json.dumps({"backend": args.backend, "callgrind": rows}, indent=1))
        return 0

    trees = {"old": args.old, "new": args.new}
    names = args.cases or list(CASES[args.backend])
    unknown = sorted(set(names) - set(CASES[args.backend]))
    if unknown:
        parser.error(f"unknown cases {unknown}; the {args.backend} cases are {list(CASES[args.backend])}")
    runs = {n: {"old": [], "new": []} for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            (Path(tmp) / f"{name}.toml").write_text(case_text(args.backend, name, args.steps))
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
