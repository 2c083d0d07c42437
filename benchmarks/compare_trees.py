"""Throughput of two source trees side by side: `lobatto bench maxwell` on each, alternating.

    python benchmarks/compare_trees.py --old .baseline/src --new src --rounds 3 --json out.json

Each round runs every configuration once per tree, the trees' order alternating between
rounds (so drifts of clock or temperature fall on both alike); the table gives the median of
the rounds per tree and the ratio new/old. GPU configurations report point-stage updates/s;
CPU ones microseconds per point and step (one OpenMP thread unless --threads), pinned to one
core with taskset where it exists, with longer timed blocks (--cpu-steps, --cpu-repeats) since
a CPU step's time varies more from block to block than a GPU graph replay's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CONFIGS = {
    "cuda-N7-curved": ["--backend", "cuda", "--order", "7", "--elements", "32", "32", "32", "--curved"],
    "cuda-N14-curved": ["--backend", "cuda", "--order", "14", "--elements", "16", "16", "16", "--curved"],
    "cpu-N7-curved": ["--backend", "cpu", "--order", "7", "--elements", "8", "8", "8", "--curved"],
    "cpu-N14-curved": ["--backend", "cpu", "--order", "14", "--elements", "4", "4", "4", "--curved"],
    # one element of order 1: the time per step is the Python and call overhead of a step
    "cpu-overhead": ["--backend", "cpu", "--order", "1", "--elements", "1", "1", "1"],
}


def bench(tree: Path, args: list[str], threads: int, cpu_timing: tuple[int, int]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        env = dict(os.environ, PYTHONPATH=str(tree.resolve()), OMP_NUM_THREADS=str(threads))
        cmd = [sys.executable, "-m", "lobatto", "bench", "maxwell", *args, "--no-kernels", "--copy-bytes", "0",
               "--json", str(out)]
        if "cpu" in args:
            cmd += ["--steps", str(cpu_timing[0]), "--repeats", str(cpu_timing[1])]
            if threads == 1 and shutil.which("taskset"):
                cmd = ["taskset", "-c", "1", *cmd]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} (PYTHONPATH={tree}) failed:\n{proc.stdout}\n{proc.stderr}")
        data = json.loads(out.read_text())
        return data[0] if isinstance(data, list) else data


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True)
    parser.add_argument("--new", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="OpenMP threads of the CPU runs")
    parser.add_argument("--cpu-steps", type=int, default=30, help="steps per timed block of the CPU runs")
    parser.add_argument("--cpu-repeats", type=int, default=7, help="timed blocks of the CPU runs (median)")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    trees = {"old": args.old, "new": args.new}
    runs: dict = {c: {"old": [], "new": []} for c in args.configs}
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for config in args.configs:
            for which in order:
                result = bench(trees[which], CONFIGS[config], args.threads, (args.cpu_steps, args.cpu_repeats))
                runs[config][which].append(result)
                rate = result["point_stage_updates_per_s"]
                print(f"round {r + 1} {config:16s} {which}: {rate:.4e} point-stage/s ({result['step_path']})",
                      flush=True)

    rows = []
    for config in args.configs:
        row = {"config": config, "args": CONFIGS[config]}
        for which in ("old", "new"):
            rates = [x["point_stage_updates_per_s"] for x in runs[config][which]]
            per_point = [1e6 / x["point_steps_per_s"] for x in runs[config][which]]
            row[which] = {"point_stage_updates_per_s": rates, "median": statistics.median(rates),
                          "us_per_point_step": per_point, "median_us_per_point_step": statistics.median(per_point),
                          "step_path": runs[config][which][0]["step_path"]}
        row["ratio_new_over_old"] = row["new"]["median"] / row["old"]["median"]
        rows.append(row)

    print(f"\n{'config':18s} {'old median':>12s} {'new median':>12s} {'new/old':>8s}  unit")
    for row in rows:
        cpu = row["config"].startswith("cpu")
        key, unit = ("median_us_per_point_step", "us/point-step") if cpu else ("median", "point-stage/s")
        print(f"{row['config']:18s} {row['old'][key]:12.4e} {row['new'][key]:12.4e} "
              f"{row['ratio_new_over_old']:8.4f}  {unit} (ratio of rates)")
    if args.json:
        device = runs[args.configs[0]]["new"][0].get("backend")
        args.json.write_text(json.dumps({"rounds": args.rounds, "threads": args.threads, "device": device,
                                         "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
