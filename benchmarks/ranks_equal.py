"""Fields of P ranks against one rank's, field by field (issue 17: equal to 1e-13 at P = 4 and 8).

    python benchmarks/ranks_equal.py [--ranks 4 8] [--backend cpu|cuda] [--partitioner rcb|rsb|metis]
        [--case materials|pml|plain|FILE.toml] [--elements 12 10 8] [--order 5] [--steps 20]
        [--overlap auto|on|off] [--method auto|pairwise|crystal_router|allreduce]
        [--exchange auto|nccl|cuda-aware-mpi|host] [--tolerance 1e-13] [--mpiexec CMD] [--json PATH]

Runs the case on 1 rank and on each P of --ranks (``mpiexec -n P python ranks_equal.py
--worker ...``: ``lobatto.api.Simulation`` with the case's own time steps, no snapshots), each
rank saving its elements' final fields with their global ids; then compares every field of
every element with the 1-rank run: max |u_P - u_1| / max |u_1| per field. Exit 1 when any
exceeds --tolerance (default 1e-13) or a run fails; 0 otherwise.

Built-in cases, on a box of --elements (cube elements, the longest side 1):

- ``materials`` (default): curved elements (a smooth deformation of a quarter element), an
  absorbing side, a background epsilon, an element-wise material, a per-point lens with mu,
  and a conductivity; a Gaussian E and H (the default volume form, "auto", runs the Galerkin
  form on these curved elements: its medium kernels, one exchange before the whole rhs, no
  overlap; --case with volume_form = "split" for the collocated medium kernel's whole step);
- ``pml``: a perfectly matched layer on three sides, a Ricker electric dipole, periodic in z;
- ``plain``: a PEC box, its TM110 mode plus a Gaussian H (the plain whole step);
- or a case file, run as it is apart from --partitioner, --overlap, --method, --exchange and
  no output files.

Prints a table and writes JSON (device, date, commit, command, each run's path through the
step and its exchange).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

CASES = ("materials", "pml", "plain")
OVERLAP = {"on": True, "off": False, "auto": "auto"}
STDERR_TAIL = 2000


def case_text(kind: str, elements, order: int, steps: int) -> str:
    """The built-in case ``kind`` on ``elements``, with t_end of about ``steps`` steps."""
    from lobatto.bench.scaling_plan import time_step

    nx, ny, nz = elements
    m = max(elements)
    lx, ly, lz = nx / m, ny / m, nz / m
    # the solver fits its own dt (from the CFL number); about this long a step at unit speed
    t_end = steps * time_step(order) / m
    head = f"""[mesh]
elements = [{nx}, {ny}, {nz}]
upper = [{lx!r}, {ly!r}, {lz!r}]
boundary = "pec"
"""
    tail = f"""[discretization]
order = {order}
[physics]
equations = "maxwell"
[time]
t_end = {t_end!r}
[output]
formats = []
"""
    if kind == "plain":
        return head + tail + f"""[initial]
Ez = "sin(pi*x/{lx!r})*sin(pi*y/{ly!r})"
Hx = "exp(-30*((x-{0.4 * lx!r})**2 + (y-{0.5 * ly!r})**2 + (z-{0.5 * lz!r})**2))"
"""
    if kind == "pml":
        return head.replace('boundary = "pec"\n', 'boundary = "pec"\nperiodic = [false, false, true]\n') + tail + f"""[pml]
sides = ["xmin", "xmax", "ymax"]
elements = 1
reflection = 1e-4
[source.antenna]
type = "electric_dipole"
position = [{0.45 * lx!r}, {0.4 * ly!r}, {0.5 * lz!r}]
direction = [0, 1, 1]
waveform = "ricker"
frequency = {1.5 * m!r}
t0 = {1.0 / m!r}
[initial]
Ey = "exp(-40*((x-{0.6 * lx!r})**2 + (y-{0.5 * ly!r})**2))"
"""
    if kind == "materials":
        a = 0.25 / m
        return head + f"""[mesh.boundaries]
xmax = "absorbing"
[mesh.deform]
x = "{a!r}*sin(pi*x/{lx!r})*sin(pi*y/{ly!r})*sin(pi*z/{lz!r})"
y = "{a!r}*sin(2*pi*x/{lx!r})*sin(pi*y/{ly!r})*sin(pi*z/{lz!r})"
""" + tail.replace('equations = "maxwell"\n', 'equations = "maxwell"\nepsilon = 2.0\n') + f"""[initial]
Ey = "exp(-20*((x-{0.5 * lx!r})**2 + (z-{0.5 * lz!r})**2))"
Hz = "sin(pi*y/{ly!r})*exp(-20*(x-{0.4 * lx!r})**2)"
Ex = "sin(2*pi*z/{lz!r})*cos(pi*x/{lx!r})"
[material.fast]
where = "{0.3 * lx!r} - x"
epsilon = 1.0
sampling = "element"
[material.lens]
where = "0.04 - (x-{0.6 * lx!r})**2 - (y-{0.5 * ly!r})**2 - (z-{0.5 * lz!r})**2"
epsilon = "3 + x*y"
mu = 1.5
[material.lossy]
where = "y - {0.5 * ly!r}"
sigma = "2*z"
"""
    raise ValueError(f"unknown case {kind!r}")


# Under mpiexec --------------------------------------------------------------------------------
def worker(args) -> int:
    """Run the case on the ranks of this job; each rank saves ids and final fields."""
    from lobatto.api import Simulation, load_case, with_changes
    from lobatto.machine.parallel import rank_and_size, world_comm

    comm = world_comm()
    rank, size = rank_and_size(comm)
    changes = {"output.formats": [], "parallel.partitioner": args.partitioner,
               "parallel.overlap": OVERLAP[args.overlap], "parallel.method": args.method,
               "parallel.exchange": args.exchange}
    case = with_changes(load_case(args.case_path), changes)
    out = Path(args.worker)
    sim = Simulation(case, backend=args.backend, output_dir=out / "run", comm=comm)
    sim.run()
    fields = sim.fields()
    np.savez(out / f"rank{rank:05d}.npz", ids=np.asarray(sim.system.mesh.element_ids, dtype=np.int64),
             names=np.array(list(fields)), values=np.stack(list(fields.values())))
    return 0


# The comparison -------------------------------------------------------------------------------
def read_run(directory: Path, ranks: int) -> tuple[list[str], np.ndarray, dict]:
    """(field names, fields (F, E, n, n, n) in global element order, summary) of one job."""
    parts = [np.load(directory / f"rank{r:05d}.npz") for r in range(ranks)]
    ids = np.concatenate([p["ids"] for p in parts])
    values = np.concatenate([p["values"] for p in parts], axis=1)
    if not np.array_equal(np.sort(ids), np.arange(ids.size)):
        raise RuntimeError(f"{directory}: the ranks' element ids do not cover 0..{ids.size - 1} once")
    summary = json.loads((directory / "run" / "summary.json").read_text())
    return [str(n) for n in parts[0]["names"]], values[:, np.argsort(ids)], summary


def launch(args, ranks: int, directory: Path, case_path: Path) -> dict:
    from lobatto.bench.scaling import child_env, launcher

    directory.mkdir(parents=True, exist_ok=True)
    cmd = [*launcher(args.mpiexec, args.mpiexec_args), "-n", str(ranks), sys.executable, str(Path(__file__).resolve()),
           "--worker", str(directory), "--case-path", str(case_path), "--backend", args.backend,
           "--partitioner", args.partitioner, "--overlap", args.overlap, "--method", args.method,
           "--exchange", args.exchange]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=child_env(None))
    except subprocess.TimeoutExpired:
        return {"ranks": ranks, "command": shlex.join(cmd), "error": f"took over {args.timeout:.0f} s (--timeout)"}
    if result.returncode != 0:
        tail = (result.stderr or result.stdout or "")[-STDERR_TAIL:].strip()
        return {"ranks": ranks, "command": shlex.join(cmd), "error": f"exit code {result.returncode}: {tail}"}
    return {"ranks": ranks, "command": shlex.join(cmd)}


def compare(reference, other) -> dict:
    names, ref, ref_summary = reference
    names_p, fields, summary = other
    if names != names_p:
        raise RuntimeError(f"the runs have different fields: {names} on 1 rank, {names_p} on several")
    diff = {}
    for name, a, b in zip(names, fields, ref):
        scale = float(np.abs(b).max())
        diff[name] = float(np.abs(a - b).max()) / scale if scale > 0 else float(np.abs(a - b).max())
    e1, ep = ref_summary["energy"]["final"], summary["energy"]["final"]
    return {"relative_difference": diff, "worst": max(diff.values()), "steps": summary["steps"],
            "steps_equal": summary["steps"] == ref_summary["steps"],
            "energy_relative_difference": abs(ep - e1) / abs(e1) if e1 else abs(ep - e1),
            "step_path": summary.get("step_path"), "exchange_method": summary.get("exchange_method"),
            "exchange": summary.get("exchange"), "overlap": summary.get("overlap"),
            "volume_form": (summary.get("volume_form") or {}).get("form"),
            "cuda_graph": summary.get("cuda_graph"), "seconds_per_step": summary.get("seconds_per_step")}


def format_table(record: dict) -> str:
    lines = [f"ranks_equal: case {record['case']} ({record['elements_text']}), backend {record['backend']}, "
             f"partitioner {record['partitioner']}, overlap {record['overlap']}, tolerance {record['tolerance']:g}",
             f"reference: 1 rank, {record.get('reference', {}).get('steps')} steps, path "
             f"{record.get('reference', {}).get('step_path')}",
             f"{'P':>3s} {'steps':>5s} {'path':>12s} {'method':>14s} {'exchange':>9s} {'ovl':>4s} {'worst':>9s}  per field"]
    for row in record["rows"]:
        if "error" in row:
            lines.append(f"{row['ranks']:3d}  FAILED: {row['error'][:400]}")
            continue
        ovl = "-" if not row["overlap"] else ("on" if row["overlap"].get("enabled") else "off")
        fields = " ".join(f"{k} {v:.1e}" for k, v in row["relative_difference"].items())
        lines.append(f"{row['ranks']:3d} {row['steps']:5d} {str(row['step_path'])[:12]:>12s} "
                     f"{str(row['exchange_method']):>14s} {str(row['exchange']):>9s} "
                     f"{ovl:>4s} {row['worst']:9.2e}  {fields}  {'ok' if row['passed'] else 'FAIL'}")
    lines.append("PASS" if record["passed"] else "FAIL")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--partitioner", default="rcb", choices=("rcb", "rsb", "metis"))
    ap.add_argument("--case", default="materials", help=f"{', '.join(CASES)} or a case file")
    ap.add_argument("--elements", type=int, nargs=3, default=[12, 10, 8], metavar=("NX", "NY", "NZ"))
    ap.add_argument("--order", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20, help="about this many steps (the solver fits dt)")
    ap.add_argument("--overlap", default="auto", choices=tuple(OVERLAP))
    ap.add_argument("--method", default="auto", choices=("auto", "pairwise", "crystal_router", "allreduce"))
    ap.add_argument("--exchange", default="auto", choices=("auto", "nccl", "cuda-aware-mpi", "host"))
    ap.add_argument("--tolerance", type=float, default=1e-13)
    ap.add_argument("--mpiexec", default=None, metavar="CMD")
    ap.add_argument("--mpiexec-args", default="", metavar="ARGS")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds allowed to each job")
    ap.add_argument("--keep", type=Path, default=None, metavar="DIR", help="keep the jobs' files here")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--case-path", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    from lobatto.bench.report import device_description, write_json
    from lobatto.bench.surroundings import git_commit

    work = args.keep or Path(tempfile.mkdtemp(prefix="lobatto-ranks-equal-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.case in CASES:
        case_path = work / "case.toml"
        case_path.write_text(case_text(args.case, args.elements, args.order, args.steps))
        elements_text = f"{'x'.join(map(str, args.elements))} elements, N = {args.order}"
    else:
        case_path = Path(args.case).resolve()
        if not case_path.is_file():
            print(f"ranks_equal.py: --case {args.case}: expected {', '.join(CASES)} or a case file", file=sys.stderr)
            return 2
        elements_text = f"file {case_path.name}"
    record = {"benchmark": "ranks_equal", "case": args.case, "elements_text": elements_text,
              "elements": args.elements, "order": args.order, "backend": args.backend,
              "partitioner": args.partitioner, "overlap": args.overlap, "method": args.method,
              "exchange": args.exchange, "tolerance": args.tolerance, "device": device_description(args.backend),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "host": platform.node(), "commit": git_commit(),
              "command": shlex.join(["python", "benchmarks/ranks_equal.py", *(argv or sys.argv[1:])]),
              "share_gpus": os.environ.get("LOBATTO_SHARE_GPUS") == "1", "case_text": case_path.read_text(),
              "rows": []}
    one = launch(args, 1, work / "P1", case_path)
    if "error" in one:
        record["rows"].append(one)
        record["passed"] = False
    else:
        reference = read_run(work / "P1", 1)
        record["reference"] = {"steps": reference[2]["steps"], "points": reference[2].get("points"),
                               "step_path": reference[2].get("step_path"), "command": one["command"],
                               "seconds_per_step": reference[2].get("seconds_per_step")}
        for p in sorted(set(args.ranks)):
            row = launch(args, p, work / f"P{p}", case_path)
            if "error" not in row:
                row.update(compare(reference, read_run(work / f"P{p}", p)))
                row["passed"] = row["worst"] <= args.tolerance and row["steps_equal"] and math.isfinite(row["worst"])
            record["rows"].append(row)
        record["passed"] = all(r.get("passed", False) for r in record["rows"])
    print(format_table(record))
    write_json(args.json, record, indent=1, default=None)
    if args.keep is None:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0 if record["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
