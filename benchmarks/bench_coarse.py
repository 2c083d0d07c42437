"""The p-multigrid's coarse solve compared: Jacobi-PCG (coarse = "pcg"), algebraic multigrid
cycled on the backend (coarse = "amg", 1 or 2 V-cycles) and the dense Cholesky solve where
it fits, with a float64 and a float32 preconditioner.

    PYTHONPATH=src python3 benchmarks/bench_coarse.py --backend cuda --elements 13 36 --order 7 \
        --json out.json

The problem is ``lobatto bench poisson``'s (lobatto/bench/poisson.py: -lap u = 3 pi^2 u on
a curved unit cube, zero on the sides), solved by MG-FCG to 1e-8 from zero. For each size
and precision the system is built once; the coarse solves are then swapped into its
multigrid (so the large set-up is paid once) and each is timed: the median of ``repeats``
solves with the part timers off, then one profiled solve for the coarse solve's share. The
set-up time of each coarse solve (assembly, hierarchy, upload) is timed on its own. The
JSON is rewritten after every measurement, so a run cut short keeps what it measured.
"""

from __future__ import annotations

import argparse
import time

from lobatto.backends import get_backend
from lobatto.bench.poisson import make_case, solve_timed
from lobatto.bench.report import run_meta, write_json
from lobatto.runner.build import build_system
from lobatto.solvers.amg import AmgCoarseSolve
from lobatto.solvers.coarse import DENSE_LIMIT, DenseCoarseSolve, IterativeCoarseSolve


def coarse_solve(kind: str, level, cycles: int, tolerance: float):
    if kind == "pcg":
        return IterativeCoarseSolve(level.apply, level.jacobi(), level.dot, tolerance, 200)
    if kind == "cholesky":
        return DenseCoarseSolve(level.operator, level.assembly, None, level.dtype)
    return AmgCoarseSolve(level.operator, level.assembly, None, level.dtype, cycles=cycles)


def measure(system, case, backend, kind: str, cycles: int, tolerance: float, repeats: int) -> dict:
    mg = system.solver.multigrid
    system.profile.enabled = False
    backend.synchronize()
    start = time.perf_counter()
    solve = coarse_solve(kind, mg.levels[-1], cycles, tolerance)
    backend.synchronize()
    setup = time.perf_counter() - start
    mg.coarse = system.profile.wrap("coarse_solve", solve)
    system.solve()  # warm-up: kernels compiled, the AMG cycle recorded as a graph on the GPU
    result = solve_timed(system, case, repeats)
    coarse = result["parts"].get("coarse_solve", {})
    entry = {"coarse": kind, "cycles": cycles if kind == "amg" else None, "coarse_setup_seconds": setup,
             "iterations": result["iterations"], "converged": result["converged"], "seconds": result["seconds"],
             "all_seconds": result["all_seconds"], "max_error": result["max_error"],
             "profiled_seconds": result["profiled_seconds"], "coarse_share": coarse.get("share"),
             "coarse_seconds": coarse.get("seconds"), "parts": result["parts"],
             "coarse_iterations_per_cycle": result["coarse_iterations_per_cycle"]}
    if kind == "amg":
        step = solve.step
        entry.update(amg_levels=solve.level_sizes, graph_captured=bool(step.captured),
                     graph_fallback=step.fallback_reason, graph_mismatch=solve.graph_mismatch)
    return entry


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--elements", type=int, nargs="+", default=[13, 36])
    parser.add_argument("--order", type=int, default=7)
    parser.add_argument("--tolerance", type=float, default=1e-8)
    parser.add_argument("--coarse-tolerance", type=float, default=1e-2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--precisions", nargs="+", default=["float64", "float32"])
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    backend = get_backend(args.backend)
    out = {"benchmark": "coarse", "meta": run_meta(), "backend": backend.describe(), "order": args.order,
           "tolerance": args.tolerance, "coarse_tolerance": args.coarse_tolerance, "runs": []}
    for elements in args.elements:
        for precision in args.precisions:
            solver = {"method": "fcg", "preconditioner": "multigrid", "precision": precision,
                      "tolerance": args.tolerance, "coarse": "pcg", "coarse_tolerance": args.coarse_tolerance}
            start = time.perf_counter()
            case = make_case(args.order, (elements,) * 3, solver)
            system = build_system(case, backend)
            backend.synchronize()
            setup = time.perf_counter() - start
            coarse_points = system.solver.multigrid.levels[-1].assembly.num_global_points
            print(f"E={elements}^3 N={args.order} {precision}: points {system.points:,}, coarse points "
                  f"{coarse_points:,}, system set-up {setup:.1f} s", flush=True)
            kinds = [("pcg", 1), ("amg", 1), ("amg", 2)]
            if coarse_points <= DENSE_LIMIT:
                kinds.append(("cholesky", 1))
            for kind, cycles in kinds:
                try:
                    entry = measure(system, case, backend, kind, cycles, args.coarse_tolerance, args.repeats)
                except Exception as exc:  # noqa: BLE001  (report it and go on with the others)
                    entry = {"coarse": kind, "cycles": cycles, "error": f"{type(exc).__name__}: {exc}"}
                    print(f"  {kind} x{cycles}: FAILED {entry['error']}", flush=True)
                else:
                    share = entry["coarse_share"]
                    print(f"  {kind:8s} x{cycles}: {entry['iterations']:3d} it  solve {entry['seconds'] * 1e3:8.1f} ms"
                          f"  coarse {100 * (share or 0):5.1f} %  coarse set-up {entry['coarse_setup_seconds']:.2f} s"
                          f"  err {entry['max_error']:.2e}"
                          + (f"  levels {entry['amg_levels']} graph {entry['graph_captured']}"
                             f" {entry['graph_fallback'] or ''}" if kind == "amg" else ""), flush=True)
                entry.update(elements=elements, precision=precision, points=system.points,
                             coarse_points=coarse_points, system_setup_seconds=setup)
                out["runs"].append(entry)
                write_json(args.json, out, say=None)
            del system
    write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
