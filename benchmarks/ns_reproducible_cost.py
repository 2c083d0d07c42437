"""Cost of reproducible Navier–Stokes sums: seconds per step with them on and off, side by side.

    PYTHONPATH=src python3 benchmarks/ns_reproducible_cost.py --backend cuda --elements 16 --order 7 \
        --json out.json
    PYTHONPATH=src mpiexec -n 16 python3 benchmarks/ns_reproducible_cost.py --backend cpu --elements 8

The Taylor–Green vortex of benchmarks/bench_tgv.py (Re = 1600, periodic, fixed dt from CFL
0.5 at |u| = 1) is set up with LOBATTO_REPRODUCIBLE=0 (the gather-scatter adds partial sums
per rank, dot products are local BLAS dots and one allreduce) and =1 (each point's copies
added in global order, dot products summed per element and reduced exactly:
docs/parallel.md), alternately --repeats times each. Each set-up takes --warmup steps, then
--steps timed steps (the device synchronised around them); a mode's figure is the median
over its repeats of the mean step. Prints a table and writes JSON (rank 0). Under mpiexec
every rank runs its part (one GPU per rank with --backend cuda, or LOBATTO_SHARE_GPUS=1).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

from lobatto.api import Simulation
from lobatto.bench.surroundings import git_commit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when run from elsewhere
from bench_tgv import tgv  # noqa: E402  (the same case as the TGV benchmark)

ENV = "LOBATTO_REPRODUCIBLE"


def measure(args, reproducible: bool, comm, dt: float) -> dict:
    os.environ[ENV] = "1" if reproducible else "0"
    sim = Simulation(tgv(args.elements, args.order, dt, diagnostics_every=10), backend=args.backend,
                     output_dir=f"/tmp/ns_reproducible_cost_{os.getpid()}", comm=comm)
    system = sim.system
    with contextlib.redirect_stdout(io.StringIO()):
        sim.advance(args.warmup)
    sim.backend.synchronize()
    before = dict(system.totals)
    if comm is not None:
        comm.Barrier()
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        sim.advance(args.steps)
    sim.backend.synchronize()
    if comm is not None:
        comm.Barrier()
    per_step = (time.perf_counter() - start) / args.steps
    field = sim.backend.to_host(sim.u[0]) if hasattr(sim, "u") else None
    gs = system.pressure_level.assembly.gs
    ordered = getattr(gs, "ordered", None)
    return {"seconds_per_step": per_step, "gather_scatter": gs.method,
            "slots_gather_scatter": None if ordered is None else ordered.gs.method,
            "shared_points": int(gs.nshared), "slots": None if ordered is None else int(ordered.slots),
            "pressure_iterations_per_step": (system.totals["pressure_iterations"] - before["pressure_iterations"])
            / args.steps,
            "velocity_iterations_per_step": (system.totals["velocity_iterations"] - before["velocity_iterations"])
            / args.steps,
            "checksum": None if field is None else float(abs(field).sum())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--elements", type=int, default=16, help="elements per side (E = elements^3)")
    parser.add_argument("--order", type=int, default=7)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if min(args.steps, args.warmup + 1, args.repeats, args.elements, args.order) < 1:
        parser.error("--steps, --repeats, --elements and --order must be >= 1, --warmup >= 0")
    comm = None
    try:
        from mpi4py import MPI

        if MPI.COMM_WORLD.Get_size() > 1:
            comm = MPI.COMM_WORLD
    except ImportError:
        pass
    rank = 0 if comm is None else comm.Get_rank()
    ranks = 1 if comm is None else comm.Get_size()
    from lobatto.discretization import gll_points

    x = gll_points(args.order)
    dt = 0.5 * (x[1] - x[0]) / 2 * (2 * math.pi / args.elements)
    runs = {"off": [], "on": []}
    for _ in range(args.repeats):
        for mode in ("off", "on"):
            runs[mode].append(measure(args, mode == "on", comm, dt))
    result = {"benchmark": "ns_reproducible_cost", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
              timespec="seconds"), "backend": args.backend, "ranks": ranks, "elements": args.elements ** 3,
              "order": args.order, "steps": args.steps, "warmup": args.warmup, "repeats": args.repeats,
              "commit": _commit(), "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]), "runs": runs}
    for mode in runs:
        result[mode] = statistics.median(r["seconds_per_step"] for r in runs[mode])
    result["cost"] = result["on"] / result["off"] - 1.0
    if rank == 0:
        print(f"TGV  backend={args.backend}  ranks={ranks}  N={args.order}  elements={args.elements}^3  "
              f"steps={args.steps} (after {args.warmup})  repeats={args.repeats}")
        print(f"  {'mode':14s} {'ms/step':>9s} {'P it/step':>10s} {'U it/step':>10s}")
        for mode, label in (("off", "partial sums"), ("on", "reproducible")):
            r = runs[mode][-1]
            print(f"  {label:14s} {result[mode] * 1e3:9.2f} {r['pressure_iterations_per_step']:10.1f} "
                  f"{r['velocity_iterations_per_step']:10.1f}")
        print(f"  cost of reproducible sums: {100 * result['cost']:+.1f} % per step")
        last = runs["on"][-1]
        print(f"  rank 0's pressure gather-scatter: {runs['off'][-1]['gather_scatter']}, reproducible "
              f"{last['gather_scatter']} with slots by {last['slots_gather_scatter']}; {last['shared_points']} "
              f"shared points, {last['slots']} slots")
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


def _commit() -> str | None:
    # LOBATTO_COMMIT: a copy without .git (the device machine's)
    return os.environ.get("LOBATTO_COMMIT") or git_commit()


if __name__ == "__main__":
    raise SystemExit(main())
