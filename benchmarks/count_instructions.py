"""Instructions per Maxwell step on the CPU backend, for two source trees, under callgrind.

    python benchmarks/count_instructions.py --old .baseline/src --new src --json out.json

Wall-clock CPU timings on shared virtual machines vary by 10-30 % from run to run; the
instruction count of a step does not. Each tree runs the same script twice under
``valgrind --tool=callgrind`` (one OpenMP thread, PYTHONHASHSEED=0): set-up plus a first step
(compilation, first touch), then K1 and K2 more steps; (count(K2) - count(K1)) / (K2 - K1) is
the instructions of one step, Python overhead and compiled kernels together.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = """
import sys
from lobatto.backends.cpu import CpuBackend
from lobatto.bench.maxwell import INITIAL, curved_deformation
from lobatto.integrators import Stepper, get_scheme
from lobatto.mesh import box_mesh
from lobatto.systems.maxwell.system import MaxwellSystem

order, elements, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
backend = CpuBackend()
backend.set_threads(1)
mesh = box_mesh((elements,) * 3, deform=curved_deformation)
system = MaxwellSystem(mesh, order, backend)
u = backend.asarray(system.evaluate_fields(INITIAL, 0.0))
stepper = Stepper(system, get_scheme("lsrk45"))
stepper.step(u, 0.0, 1e-3)
for _ in range(steps):
    stepper.step(u, 0.0, 1e-3)
print(repr(float(abs(u).sum())))
"""


def count(tree: Path, order: int, elements: int, steps: int) -> tuple[int, str]:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "steps.py"
        script.write_text(SCRIPT)
        env = dict(os.environ, PYTHONPATH=str(tree.resolve()), OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out", sys.executable, str(script),
               str(order), str(elements), str(steps)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
        found = re.search(r"Collected : (\d+)", proc.stderr)
        if proc.returncode != 0 or not found:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-2000:]}")
        return int(found.group(1)), proc.stdout.strip()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True)
    parser.add_argument("--new", type=Path, required=True)
    parser.add_argument("--orders", type=int, nargs="+", default=[7, 14])
    parser.add_argument("--elements", type=int, nargs="+", default=[3, 2], help="per axis, one per order")
    parser.add_argument("--steps", type=int, nargs=2, default=[2, 8], metavar=("K1", "K2"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    k1, k2 = args.steps
    rows = []
    for order, elements in zip(args.orders, args.elements):
        row = {"order": order, "elements": elements, "points": elements**3 * (order + 1) ** 3}
        for which, tree in (("old", args.old), ("new", args.new)):
            c1, s1 = count(tree, order, elements, k1)
            c2, s2 = count(tree, order, elements, k2)
            row[which] = {"count_k1": c1, "count_k2": c2, "per_step": (c2 - c1) / (k2 - k1),
                          "checksum_k2": s2}
            print(f"N={order} {which}: {row[which]['per_step']:.6e} instructions/step (checksum {s2})", flush=True)
        row["ratio_new_over_old"] = row["new"]["per_step"] / row["old"]["per_step"]
        rows.append(row)
    print(f"\n{'N':>3} {'points':>8} {'old instr/step':>15} {'new instr/step':>15} {'new/old':>8}")
    for row in rows:
        print(f"{row['order']:>3} {row['points']:>8} {row['old']['per_step']:>15.6e} {row['new']['per_step']:>15.6e}"
              f" {row['ratio_new_over_old']:>8.5f}")
    if args.json:
        args.json.write_text(json.dumps({"steps": [k1, k2], "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
