"""Kovasznay step time with 1 and 2 threads, on an idle machine and under a load this script
starts, with the old thread behaviour and the new default (lobatto/machine/threads.py; the table
goes into docs/parallel.md, "Threads").

    python3 benchmarks/threads_kovasznay.py                      # 20 steps, load of 2 busy loops
    python3 benchmarks/threads_kovasznay.py --steps 40 --load 2 --json threads_kovasznay.json

Each row is one `lobatto run` of examples/kovasznay.toml (N = 7, 2 x 4 x 1 elements, BDF2,
dt = 5e-3) shortened to --steps steps, no snapshots, in a child process whose environment
gives:

* old: LOBATTO_THREAD_POLICY=off (the libraries' defaults: libgomp spins about 300,000
  iterations and OpenBLAS 2^28 cycles before an idle worker sleeps), OMP_NUM_THREADS = 1 or 2;
* new: the default policy (idle workers sleep at once), OMP_NUM_THREADS = 1 or 2;
* new, auto: the default policy choosing the thread count itself (no OMP_NUM_THREADS).

"loaded" rows run while --load processes spin in a busy loop (started and stopped here).
The time is the run summary's seconds_per_step (the rate window, after the warm-up steps).
"Idle" means no load of this script's: the load average before each run is recorded, since
other work on the machine changes every number. Variables of the parent's environment that
set threads or wait policies are removed from every child's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT / "examples" / "kovasznay.toml"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OPENBLAS_THREAD_TIMEOUT",
                    "GOTO_THREAD_TIMEOUT", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                    "LOBATTO_THREAD_POLICY", "LOBATTO_THREADS_SET_BY", "LOBATTO_THREADS_CHOSEN")


def case_text(steps: int) -> str:
    text = CASE.read_text()
    dt = float(re.search(r"^dt\s*=\s*([0-9.eE+-]+)", text, re.M).group(1))
    text = re.sub(r"^t_end\s*=.*$", f"t_end = {steps * dt!r}", text, flags=re.M)
    return re.sub(r"^formats\s*=.*$", "formats = []", text, flags=re.M)


def child_env(policy: str, threads: int | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if policy == "old":
        env["LOBATTO_THREAD_POLICY"] = "off"
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    return env


def load_average() -> list[float] | None:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return None


def one_run(case: Path, workdir: Path, policy: str, threads: int | None, timeout: float) -> dict:
    out = Path(tempfile.mkdtemp(prefix="run_", dir=workdir))
    before = load_average()
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "lobatto", "run", str(case), "-o", str(out), "--quiet"],
                            env=child_env(policy, threads), capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"threads_kovasznay: the run ({policy}, threads {threads}) failed:\n{result.stderr}")
    summary = json.loads((out / "summary.json").read_text())
    return {"seconds_per_step": summary["seconds_per_step"], "rate_steps": summary["rate_steps"],
            "threads": summary.get("threads"), "wall_seconds": wall, "load_average_before": before}


def start_load(count: int) -> list[subprocess.Popen]:
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    time.sleep(1.0)  # let them take their cores
    return procs


def stop_load(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("--steps", type=int, default=20, help="steps per run (default 20; 2 are warm-up)")
    parser.add_argument("--load", type=int, default=2, help="busy-loop processes of the loaded runs (default 2)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts (default 1 2)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per run (default 900)")
    parser.add_argument("--json", default="threads_kovasznay.json", help="where to write the results")
    args = parser.parse_args(argv)
    if args.steps < 4 or args.load < 0 or any(t < 1 for t in args.threads):
        parser.error("--steps must be at least 4, --load at least 0, --threads at least 1")
    Path(args.json).resolve().parent.mkdir(parents=True, exist_ok=True)

    rows = []
    with tempfile.TemporaryDirectory(prefix="threads_kovasznay_") as tmp:
        workdir = Path(tmp)
        case = workdir / "kovasznay.toml"
        case.write_text(case_text(args.steps))
        one_run(case, workdir, "new", 1, args.timeout)  # compile the kernels once, untimed
        for load in ("idle", "loaded"):
            procs = start_load(args.load) if load == "loaded" else []
            try:
                configs = [(p, t) for p in ("old", "new") for t in args.threads] + [("new", None)]
                for policy, threads in configs:
                    row = {"machine": load, "policy": policy, "threads_asked": threads or "auto",
                           **one_run(case, workdir, policy, threads, args.timeout)}
                    rows.append(row)
                    chosen = (row["threads"] or {}).get("per_rank")
                    print(f"{load:7s} {policy:4s} threads {str(threads or 'auto'):>4s} (ran {chosen}): "
                          f"{row['seconds_per_step'] * 1e3:9.2f} ms/step", flush=True)
            finally:
                stop_load(procs)

    print(f"\nKovasznay step (N = 7, 2 x 4 x 1 elements, BDF2), {os.cpu_count()} CPUs, "
          f"load = {args.load} busy loops, {args.steps} steps per run\n")
    print("| machine | policy | threads | ms per step |")
    print("|---|---|---|---|")
    for row in rows:
        ran = (row["threads"] or {}).get("per_rank")
        asked = row["threads_asked"] if row["threads_asked"] != "auto" else f"auto ({ran})"
        print(f"| {row['machine']} | {row['policy']} | {asked} | {row['seconds_per_step'] * 1e3:.2f} |")
    report = {"benchmark": "threads_kovasznay", "cpus": os.cpu_count(),
              "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
              "platform": platform.platform(), "processor": platform.processor(), "steps": args.steps,
              "load_processes": args.load, "rows": rows}
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nwritten to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
