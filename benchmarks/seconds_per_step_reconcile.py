"""Does the run summary's seconds per step match what a user's wall clock sees over a long run?

For each order, runs ``lobatto run`` (a separate process each time) on the same Maxwell box for
several step counts, timing each process from outside, and compares
  * the summary's seconds_per_step (the rate window after the warm-up steps), with
  * the difference of whole-process times, (T(S2) - T(S1)) / (S2 - S1), where set-up,
    compilation and the final write cancel.
While each run steps, ``nvidia-smi`` (when present) samples the SM clock, power and temperature,
so a clock that drops under sustained load shows in the table.

    PYTHONPATH=src python3 benchmarks/seconds_per_step_reconcile.py --backend cuda
    PYTHONPATH=src python3 benchmarks/seconds_per_step_reconcile.py --small     # CPU, seconds
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_maxwell_physics import commit, device_name

from lobatto.bench.report import write_json

CASE = """
[mesh]
elements = [{k}, {k}, {k}]
upper = [{k}.0, {k}.0, {k}.0]
boundary = "pec"
[discretization]
order = {order}
[physics]
equations = "maxwell"
[initial]
Ez = "sin(0.3*x)*sin(0.2*y)*cos(0.1*z)"
Hx = "exp(-((x-{c})**2+(y-{c})**2+(z-{c})**2)/8)"
[time]
dt = {dt}
t_end = {t_end}
[output]
formats = []
every = 0
"""


def sampler():
    """A background nvidia-smi writing clocks, power and temperature every 100 ms, or None."""
    if shutil.which("nvidia-smi") is None:
        return None, None
    log = tempfile.NamedTemporaryFile("w+", suffix=".csv", delete=False)
    proc = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu",
                             "--format=csv,noheader,nounits", "-lms", "100"], stdout=log, stderr=subprocess.DEVNULL)
    return proc, log


def read_samples(proc, log) -> dict:
    if proc is None:
        return {}
    proc.terminate()
    proc.wait()
    rows = []
    for line in Path(log.name).read_text().splitlines():
        try:
            rows.append([float(v) for v in line.split(",")])
        except ValueError:
            continue
    os.unlink(log.name)
    busy = [r for r in rows if r[1] > 150.0] or rows  # samples while the GPU works (above idle power)
    if not busy:
        return {}
    clocks = [r[0] for r in busy]
    return {"sm_clock_mhz_median": sorted(clocks)[len(clocks) // 2], "sm_clock_mhz_min": min(clocks),
            "sm_clock_mhz_max": max(clocks), "power_w_max": max(r[1] for r in busy),
            "temperature_c_max": max(r[2] for r in busy), "samples": len(busy)}


def one_run(backend: str, k: int, order: int, dt: float, steps: int, directory: Path) -> dict:
    case = directory / f"k{k}_n{order}_s{steps}.toml"
    case.write_text(CASE.format(k=k, order=order, c=k / 2, dt=dt, t_end=dt * steps))
    out = directory / case.stem
    env = dict(os.environ)
    proc, log = sampler()
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "lobatto", "run", str(case), "--backend", backend, "-q",
                             "--output", str(out), "--overwrite"], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    clocks = read_samples(proc, log)
    if result.returncode != 0:
        raise SystemExit(f"lobatto run failed ({case}):\n{result.stderr[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    return {"steps": summary["steps"], "process_seconds": wall, "summary_seconds_per_step": summary["seconds_per_step"],
            "rate_steps": summary["rate_steps"], "wall_seconds": summary["wall_seconds"],
            "points": summary.get("points"), "time_accounting": summary.get("time_accounting"),
            **{f"gpu_{key}": value for key, value in clocks.items()}}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--cases", nargs="+", default=["28:7", "16:14"], help="K:N pairs (K^3 elements, order N)")
    parser.add_argument("--steps", type=int, nargs="+", default=[300, 3000])
    parser.add_argument("--repeats", type=int, default=3, help="runs per step count; the median process time")
    parser.add_argument("--small", action="store_true", help="K = 6, N = 3, steps 20 60 (a CPU check)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.small:
        args.cases, args.steps, args.repeats = ["6:3"], [20, 60], 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in args.cases:
            k, order = (int(v) for v in pair.split(":"))
            dt = 0.2 / order**2  # well under the stable step for unit elements
            # a first run fills the kernel caches, so that no later run compiles
            warm = one_run(args.backend, k, order, dt, args.steps[0], Path(tmp))
            runs = []
            for s in args.steps:
                repeats = [one_run(args.backend, k, order, dt, s, Path(tmp)) for _ in range(args.repeats)]
                repeats.sort(key=lambda r: r["process_seconds"])
                runs.append({**repeats[len(repeats) // 2], "process_seconds_all": [r["process_seconds"] for r in repeats],
                             "setup_seconds_all": [r["process_seconds"] - r["wall_seconds"] for r in repeats]})
            points = k**3 * (order + 1) ** 3
            for first, later in zip(runs[:-1], runs[1:]):
                difference = (later["process_seconds"] - first["process_seconds"]) / (later["steps"] - first["steps"])
                rows.append({"elements": k**3, "order": order, "points": points, "steps": [first["steps"], later["steps"]],
                             "difference_seconds_per_step": difference,
                             "summary_seconds_per_step": [first["summary_seconds_per_step"],
                                                          later["summary_seconds_per_step"]],
                             "runs": [first, later], "cold_cache_run": warm})
    device = device_name(args.backend)
    result = {"benchmark": "seconds_per_step_reconcile", "device": device, "backend": args.backend,
              "commit": commit(), "date": datetime.date.today().isoformat(), "rows": rows}
    print(f"{device}: point-stage updates/s (5 stages) from the summary and from whole-process differences")
    print(f"{'K^3':>6} {'N':>3} {'steps':>10} {'difference':>11} {'summary S1':>11} {'summary S2':>11} "
          f"{'diff/sum S2':>11} {'SM MHz S1':>10} {'SM MHz S2':>10}")
    for r in rows:
        rate = 5 * r["points"]
        s1, s2 = r["summary_seconds_per_step"]
        c1 = r["runs"][0].get("gpu_sm_clock_mhz_median", float("nan"))
        c2 = r["runs"][1].get("gpu_sm_clock_mhz_median", float("nan"))
        print(f"{r['elements']:>6} {r['order']:>3} {r['steps'][0]:>4}-{r['steps'][1]:<5} "
              f"{rate / r['difference_seconds_per_step']:11.3e} {rate / s1:11.3e} {rate / s2:11.3e} "
              f"{s2 / r['difference_seconds_per_step']:11.3f} {c1:10.0f} {c2:10.0f}")
    if args.json:
        write_json(args.json, result, indent=1, default=None, say="wrote")


if __name__ == "__main__":
    main()
