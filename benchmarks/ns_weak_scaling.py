"""Taylor-Green vortex (Re = 1600) on 1 or more GPUs: seconds per step, parts, iterations and
the collectives (global reductions, gather-scatter exchanges) per step; and, with --report,
weak and strong scaling efficiencies from such runs.

One run (under mpiexec, one rank per GPU; benchmarks/ns_weak_scaling.sh runs them all):

    mpiexec -n 2 python3 benchmarks/ns_weak_scaling.py --elements 48 24 24 --base 24 \
        --backend cuda --json out/weak24_P2.json

The box is (2 pi / base) times the element counts on each axis, so every run with the same
--base has the same elements and the same dt (CFL 0.5 at |u| = 1 on them): 48 x 24 x 24 on
2 GPUs is two copies of 24^3 on 1 (the TGV is 2 pi periodic). --warmup steps first (kernel
compilation, the projection filling up), then --steps timed steps between barriers; the
seconds per step are the slowest rank's. The parts are the system's own timers (each ends
with a device synchronisation), the slowest rank's. The collectives are counted by
machine.parallel.collective_counts over the timed steps: the algorithm's, the same on every
rank count but for code that reduces only where there is a communicator (the dense coarse
solve's right-hand side, one per V-cycle); a change of algorithm shows as a change of count.

    python3 benchmarks/ns_weak_scaling.py --report out/*.json

prints, per study (weak: the same --base and elements per rank; strong: the same elements),
the efficiency of each run against the 1-rank run of its study: weak t1 / tP, strong
t1 / (P tP).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import time


def tgv_case(elements, base: int, order: int, dt: float):
    from lobatto.api import case_from_dict

    two_pi = 2 * math.pi
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 1 / 1600, "filter_modes": 1, "filter_weight": 10.0,
                    "diagnostics_every": 0},
        "mesh": {"elements": list(elements), "upper": [two_pi * e / base for e in elements], "periodic": [True] * 3},
        "discretization": {"order": order},
        "time": {"integrator": "bdf2", "dt": dt, "t_end": 20.0},
        "solver": {"pressure": {"tolerance": 1e-6, "coarse_tolerance": 0.1,
                                **({"coarse": os.environ["NS_COARSE"]} if os.environ.get("NS_COARSE") else {})},
                   "velocity": {"tolerance": 1e-8}},
        "initial": {"ux": "sin(x)*cos(y)*cos(z)", "uy": "-cos(x)*sin(y)*cos(z)",
                    "p": "(cos(2*x) + cos(2*y))*(cos(2*z) + 2)/16"},
        "parallel": {"exchange": os.environ.get("NS_EXCHANGE", "auto")},
        "output": {"formats": [], "log_every": 0},
    }, name="tgv_scaling")


def count_by_wrapping():
    """For a tree without machine.parallel.collective_counts: wrap its reductions (the
    host allreduce and exact_sum.totals, wherever imported) and Assembly's dssum and
    dssum_start, counting calls as the counter does; returns the reading function."""
    import lobatto.comm.exact_sum as exact_sum
    import lobatto.machine.parallel as parallel
    import lobatto.operators.assembly as assembly
    import lobatto.runner.simulation  # noqa: F401  (loaded, so its imported names are wrapped too)
    import lobatto.solvers.coarse  # noqa: F401
    import lobatto.systems.navier_stokes.system  # noqa: F401

    counts = {"reductions": 0, "exchanges": 0}

    def counted(fn, kind):
        def wrapper(*a, **k):
            counts[kind] += 1
            return fn(*a, **k)
        return wrapper

    for original in (parallel.allreduce, exact_sum.totals):
        wrapped = counted(original, "reductions")
        for module in list(sys.modules.values()):
            if module is not None and module.__name__.startswith("lobatto") and \
                    getattr(module, original.__name__, None) is original:
                setattr(module, original.__name__, wrapped)
    for name in ("dssum", "dssum_start"):
        if hasattr(assembly.Assembly, name):
            setattr(assembly.Assembly, name, counted(getattr(assembly.Assembly, name), "exchanges"))
    return lambda: dict(counts)


def run(args) -> dict:
    from lobatto.api import Simulation
    from lobatto.discretization import gll_points
    from lobatto.machine.parallel import world_comm

    try:
        from lobatto.machine.parallel import collective_counts
    except ImportError:  # an older tree (a baseline run with SRC=...): count by wrapping
        collective_counts = count_by_wrapping()

    comm = world_comm()
    ranks = 1 if comm is None else comm.Get_size()
    x = gll_points(args.order)
    dt = args.cfl * (x[1] - x[0]) / 2 * (2 * math.pi / args.base)
    start = time.perf_counter()
    sim = Simulation(tgv_case(args.elements, args.base, args.order, dt), backend=args.backend,
                     output_dir=args.output, comm="world" if comm is not None else None)
    setup = time.perf_counter() - start
    system = sim.system
    with contextlib.redirect_stdout(io.StringIO()):
        sim.advance(args.warmup)
    sim.backend.synchronize()

    def slowest(value):
        if comm is None:
            return value
        from mpi4py import MPI

        return comm.allreduce(value, op=MPI.MAX)

    system.seconds = dict.fromkeys(system.seconds, 0.0)
    iterations = dict(system.totals)
    by_part = getattr(system, "collectives", {})
    counts, parts_counts = collective_counts(), {k: dict(v) for k, v in by_part.items()}
    if comm is not None:
        comm.Barrier()
    start = time.perf_counter()
    sim.advance(args.steps)
    sim.backend.synchronize()
    elapsed = time.perf_counter() - start
    per_step = slowest(elapsed) / args.steps
    after = collective_counts()
    pressure = system.pressure_level.assembly
    parts = {k: slowest(v) / args.steps for k, v in system.seconds.items()}  # before any profiled step
    totals = dict(system.totals)
    pressure_parts = None
    if args.profile:  # the pressure solve's own parts over --steps more steps (timers synchronise)
        before = system.seconds["pressure"]
        system.profile.reset()
        system.profile.enabled = True
        sim.advance(args.steps)
        system.profile.enabled = False
        spent = slowest(system.seconds["pressure"] - before)
        pressure_parts = {k: {"ms_per_step": slowest(v["seconds"]) / args.steps * 1e3, "share": v["share"]}
                          for k, v in system.profile.report(spent).items()}
    points = system.points if comm is None else comm.allreduce(system.points)
    return {
        "benchmark": "ns_weak_scaling", "ranks": ranks, "elements": list(args.elements), "base": args.base,
        "order": args.order, "points": points, "points_per_rank": points / ranks, "dt": dt, "steps": args.steps,
        "backend": sim.backend.describe(), "setup_seconds": slowest(setup), "seconds_per_step": per_step,
        "point_steps_per_second": points / per_step,
        "pressure_iterations_per_step": (totals["pressure_iterations"] - iterations["pressure_iterations"])
        / args.steps,
        "velocity_iterations_per_step": (totals["velocity_iterations"] - iterations["velocity_iterations"])
        / args.steps,
        "parts": parts,
        "collectives_per_step": {k: (after[k] - counts[k]) / args.steps for k in after},
        "collectives_per_step_by_part": {
            part: {k: (by_part[part][k] - parts_counts[part][k]) / args.steps for k in after}
            for part in by_part},
        "gather_scatter": pressure.gs.describe(), "overlap": bool(getattr(pressure, "overlap", False)),
        "overlap_env": os.environ.get("LOBATTO_ASSEMBLY_OVERLAP", "auto"),
        "reproducible": bool(pressure.reproducible), "cfl": sim.last_cfl, "label": args.label,
        "coarse": getattr(system.pressure_solver, "coarse_solve", None), "pressure_parts": pressure_parts,
    }


def report(paths) -> int:
    runs = []
    for path in paths:
        try:
            with open(path) as f:
                run = json.load(f)
        except (OSError, ValueError) as error:
            print(f"{path}: not read ({error})")
            continue
        if isinstance(run, dict) and run.get("benchmark") == "ns_weak_scaling":  # other JSON in the folder: skipped
            runs.append(run)
    print(f"{'label':22s} {'P':>2s} {'elements':>12s} {'pts/rank':>9s} {'ms/step':>8s} {'press ms':>8s} "
          f"{'adv ms':>7s} {'P it':>5s} {'red/st':>7s} {'exch/st':>7s} {'eff':>6s}  kind")
    for r in sorted(runs, key=lambda r: (r["label"].split("_P")[0], r["ranks"])):
        study = r["label"].split("_P")[0]
        ones = [o for o in runs if o["ranks"] == 1 and o["label"].split("_P")[0] == study]
        eff, kind = math.nan, ""
        if r["ranks"] == 1:
            eff, kind = 1.0, "reference"
        elif ones:
            one = ones[0]
            if one["points_per_rank"] == r["points_per_rank"]:
                eff, kind = one["seconds_per_step"] / r["seconds_per_step"], "weak"
            elif one["points"] == r["points"]:
                eff, kind = one["seconds_per_step"] / (r["ranks"] * r["seconds_per_step"]), "strong"
        c = r["collectives_per_step"]
        print(f"{r['label']:22s} {r['ranks']:2d} {'x'.join(map(str, r['elements'])):>12s} {r['points_per_rank']:9.2e} "
              f"{r['seconds_per_step'] * 1e3:8.2f} {r['parts']['pressure'] * 1e3:8.2f} "
              f"{r['parts']['advection'] * 1e3:7.2f} {r['pressure_iterations_per_step']:5.1f} "
              f"{c['reductions']:7.1f} {c['exchanges']:7.1f} {eff:6.3f}  {kind}"
              f"{'' if r['ranks'] == 1 else ' overlap ' + str(r['overlap']) + ', ' + r['gather_scatter']}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", nargs="+", default=None, help="JSON files of runs: print the efficiencies")
    parser.add_argument("--elements", type=int, nargs=3, default=(24, 24, 24))
    parser.add_argument("--base", type=int, default=None, help="elements per 2 pi (default: the first count)")
    parser.add_argument("--order", type=int, default=7)
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--cfl", type=float, default=0.5)
    parser.add_argument("--label", default="tgv")
    parser.add_argument("--output", default="/tmp/ns_weak_scaling")
    parser.add_argument("--json", default=None)
    parser.add_argument("--profile", action="store_true", help="then the pressure solve's parts over --steps more steps")
    args = parser.parse_args(argv)
    if args.report:
        return report(args.report)
    args.base = args.base or args.elements[0]
    result = run(args)
    rank = 0
    if "mpi4py.MPI" in sys.modules:
        rank = sys.modules["mpi4py.MPI"].COMM_WORLD.Get_rank()
    if rank == 0:
        c = result["collectives_per_step"]
        print(f"{args.label}: P={result['ranks']} elements={args.elements} points={result['points']:.3e} "
              f"{result['seconds_per_step'] * 1e3:.2f} ms/step  pressure {result['parts']['pressure'] * 1e3:.2f} ms "
              f"({result['pressure_iterations_per_step']:.1f} it)  reductions {c['reductions']:.1f}/step  "
              f"exchanges {c['exchanges']:.1f}/step  overlap {result['overlap']}  {result['gather_scatter']}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
