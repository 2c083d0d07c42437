"""The p-multigrid's smoother compared: Chebyshev-Jacobi (smoother = "jacobi") against
Chebyshev with overlapping additive Schwarz (smoother = "schwarz", solvers/schwarz.py), at
Chebyshev degrees 2 and 3, with a float64 and a float32 preconditioner.

    PYTHONPATH=src python3 benchmarks/bench_smoother.py --backend cuda --elements 36 --order 7 \
        --json out.json

The problem is ``lobatto bench poisson``'s (lobatto/bench/poisson.py: -lap u = 3 pi^2 u on a
curved unit cube, zero on the sides), solved by MG-FCG to 1e-8 from zero. For each size and
precision the system is built once; the smoothers of every level but the coarsest are then
rebuilt and swapped into its multigrid (the large set-up is paid once), and each choice is
timed: the median of ``repeats`` solves with the part timers off (each solve synchronises the
device before and after), then one profiled solve for the parts' shares. "smoother" is the
Chebyshev smoothers' own time: their operator applications and the order-N gather-scatter at
the end of each Schwarz application are charged to "operator" and "assembly" (nested timers),
the Schwarz exchanges of the (N+3)^3 subdomains to "smoother". The smoothers' set-up (the
eigenvalue estimate; for Schwarz the order-(N+2) numbering, element lengths and the 1-D
eigenproblems; built once per level and reused for the second degree, whose set-up is then
the estimate alone) is timed on its own. The JSON is rewritten after every measurement, so a run
cut short keeps what it measured.
"""

from __future__ import annotations

import argparse
import time

from lobatto.backends import get_backend
from lobatto.bench.poisson import make_case, solve_timed
from lobatto.bench.report import run_meta, write_json
from lobatto.runner.build import build_system
from lobatto.solvers.chebyshev import Chebyshev
from lobatto.solvers.multigrid import start_vector
from lobatto.solvers.schwarz import AdditiveSchwarz


def preconditioner(system, level, smoother: str, built: dict):
    """The level's inverse diagonal or its AdditiveSchwarz (built once per level and kept in
    ``built``: its set-up, the order-(N+2) numbering above all, is the same for every degree)."""
    if smoother == "jacobi":
        return level.jacobi().inverse_diagonal
    if id(level) not in built:
        built[id(level)] = AdditiveSchwarz(system.mesh, level)
    return built[id(level)]


def measure(system, case, backend, smoother: str, degree: int, repeats: int, built: dict) -> dict:
    mg = system.solver.multigrid
    system.profile.enabled = False
    backend.synchronize()
    start = time.perf_counter()
    smoothers = [Chebyshev.with_estimate(level.apply, preconditioner(system, level, smoother, built),
                                         start_vector(level, system.mesh.element_ids), level.dot, degree)
                 for level in mg.levels[:-1]]
    backend.synchronize()
    setup = time.perf_counter() - start
    mg.smoothers = [system.profile.wrap("smoother", s) for s in smoothers]
    system.solve()  # warm-up: kernels compiled
    result = solve_timed(system, case, repeats)
    parts = result["parts"]
    iterations = result["iterations"]
    return {"smoother": smoother, "degree": degree, "smoother_setup_seconds": setup, "iterations": iterations,
            "converged": result["converged"], "seconds": result["seconds"], "all_seconds": result["all_seconds"],
            "seconds_per_iteration": result["seconds"] / iterations if iterations else None,
            "max_error": result["max_error"], "profiled_seconds": result["profiled_seconds"],
            "smoother_share": parts.get("smoother", {}).get("share"),
            "coarse_share": parts.get("coarse_solve", {}).get("share"), "parts": parts,
            "estimated_max_eigenvalues": [s.estimated_max_eigenvalue for s in smoothers]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--elements", type=int, nargs="+", default=[36])
    parser.add_argument("--order", type=int, default=7)
    parser.add_argument("--tolerance", type=float, default=1e-8)
    parser.add_argument("--coarse", default="auto", help="[solver] coarse of the multigrid (default auto)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--precisions", nargs="+", default=["float64", "float32"])
    parser.add_argument("--smoothers", nargs="+", default=["jacobi", "schwarz"])
    parser.add_argument("--degrees", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    backend = get_backend(args.backend)
    out = {"benchmark": "smoother", "meta": run_meta(), "backend": backend.describe(), "order": args.order,
           "tolerance": args.tolerance, "coarse": args.coarse, "runs": []}
    rows = []
    for elements in args.elements:
        for precision in args.precisions:
            solver = {"method": "fcg", "preconditioner": "multigrid", "precision": precision,
                      "tolerance": args.tolerance, "coarse": args.coarse}
            start = time.perf_counter()
            case = make_case(args.order, (elements,) * 3, solver)
            system = build_system(case, backend)
            backend.synchronize()
            setup = time.perf_counter() - start
            print(f"E={elements}^3 N={args.order} {precision}: points {system.points:,}, levels "
                  f"{system.solver.level_orders}, coarse {system.solver.coarse_solve}, system set-up {setup:.1f} s",
                  flush=True)
            built: dict = {}
            for smoother in args.smoothers:
                for degree in args.degrees:
                    try:
                        entry = measure(system, case, backend, smoother, degree, args.repeats, built)
                    except Exception as exc:  # noqa: BLE001  (report it and go on with the others)
                        entry = {"smoother": smoother, "degree": degree, "error": f"{type(exc).__name__}: {exc}"}
                        print(f"  {smoother} {degree}: FAILED {entry['error']}", flush=True)
                    else:
                        rows.append((elements, precision, entry))
                        print(f"  {smoother:8s} deg {degree}: {entry['iterations']:3d} it  solve "
                              f"{entry['seconds'] * 1e3:9.1f} ms  {entry['seconds_per_iteration'] * 1e3:8.2f} ms/it  "
                              f"smoother {100 * (entry['smoother_share'] or 0):5.1f} %  coarse "
                              f"{100 * (entry['coarse_share'] or 0):5.1f} %  set-up "
                              f"{entry['smoother_setup_seconds']:.2f} s  err {entry['max_error']:.2e}", flush=True)
                    entry.update(elements=elements, precision=precision, points=system.points,
                                 system_setup_seconds=setup)
                    out["runs"].append(entry)
                    write_json(args.json, out, say=None)
            del system, built
    print("\n| elements | precision | smoother | degree | set-up s | iterations | solve s | s/iteration | smoother share |")
    print("|---|---|---|---|---|---|---|---|---|")
    for elements, precision, e in rows:
        print(f"| {elements}^3 | {precision} | {e['smoother']} | {e['degree']} | {e['smoother_setup_seconds']:.2f} | "
              f"{e['iterations']} | {e['seconds']:.4f} | {e['seconds_per_iteration']:.5f} | "
              f"{100 * (e['smoother_share'] or 0):.1f} % |")
    write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
