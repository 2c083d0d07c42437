"""``lobatto bench poisson``: one whole Poisson solve on a curved mesh, timed.

The problem is the solvers' test problem (docs/elliptic.md): -lap u = 3 pi^2 u on the unit
cube, u = sin(pi x) sin(pi y) sin(pi z), zero on every side, every element curved by
(0.08, 0.06 cos(pi x), 0.05) sin(pi x) sin(pi y) sin(pi z); with two elements counts, its 2-D
form on the unit square (-lap u = 2 pi^2 u, u = sin(pi x) sin(pi y), curved in x and y). It is set up as a case (the
steady system of ``lobatto run``), then

* the solve from zero is timed ``repeats`` times with the part timers off (the figure: on the
  GPU, timing parts synchronises the device after each one);
* one more solve is timed with the parts on: operator, assembly (gather-scatter), reductions,
  smoother, transfers, coarse solve, the preconditioner's own vector work, and the rest
  (the Krylov method's vector updates), each as a share of that solve;
* with ``jacobi``, the same case with Jacobi-PCG, for its iteration count beside it.

On the CPU backend the solves run with BLAS at one thread (backends/blas.py).
"""

from __future__ import annotations

import datetime
import platform
import statistics
import time
from contextlib import nullcontext

from lobatto.api import case_from_dict
from lobatto.backends import get_backend
from lobatto.backends.blas import single_threaded_blas
from lobatto.bench.report import write_json
from lobatto.errors import InputError
from lobatto.runner.build import build_system
from lobatto.solvers.profile import PARTS

EXACT = "sin(pi*x)*sin(pi*y)*sin(pi*z)"
DEFORM = {"x": f"0.08*{EXACT}", "y": f"0.06*{EXACT}*cos(pi*x)", "z": f"0.05*{EXACT}"}


#: two elements counts: the same problem on the unit square, -lap u = 2 pi^2 u (a 2-D mesh)
EXACT_2D = "sin(pi*x)*sin(pi*y)"
DEFORM_2D = {"x": f"0.08*{EXACT_2D}", "y": f"0.06*{EXACT_2D}*cos(pi*x)"}


def make_case(order: int, elements, solver: dict):
    planar = len(elements) == 2
    exact, deform = (EXACT_2D, DEFORM_2D) if planar else (EXACT, DEFORM)
    return case_from_dict({
        "physics": {"equations": "poisson", "f": f"{len(elements)}*pi**2*{exact}"},
        "mesh": {"elements": list(elements), "deform": deform},
        "discretization": {"order": order},
        "solver": solver,
        "exact": {"u": exact},
    }, name="bench_poisson")


def solve_timed(system, case, repeats: int) -> dict:
    system.profile.enabled = False
    seconds = []
    for _ in range(repeats):
        system.solve()
        seconds.append(system.solve_seconds)
    system.profile.enabled = True
    coarse = getattr(system.solver.multigrid, "coarse", None)
    coarse = getattr(coarse, "__wrapped__", coarse)
    coarse_counts = getattr(coarse, "iterations", None)
    start = len(coarse_counts) if coarse_counts is not None else 0
    u = system.solve()
    profiled = system.summary()
    cycles = coarse_counts[start:] if coarse_counts is not None else []
    squares, maxima = system.error_sums(u, system.evaluate_fields(case.exact.fields, 0.0))
    return {"seconds": statistics.median(seconds), "all_seconds": seconds, "iterations": system.result.iterations,
            "converged": bool(system.result.converged), "relative_residual": system.result.relative_residual,
            "profiled_seconds": profiled["solve_seconds"], "parts": profiled["parts"],
            "max_error": float(maxima[0]), "l2_error": float(squares[0]) ** 0.5,
            "coarse_iterations_per_cycle": (sum(cycles) / len(cycles)) if cycles else None}


def run(backend_name: str = "cuda", order: int = 7, elements=(32, 32, 32), method: str = "fcg",
        preconditioner: str = "multigrid", precision: str = "float64", tolerance: float = 1e-8, repeats: int = 3,
        jacobi: bool = False, device: int | None = None, coarse_tolerance: float = 1e-2, smoother: str = "jacobi",
        smoother_degree: int = 3) -> dict:
    backend = get_backend(backend_name, device_id=device)
    limit = single_threaded_blas() if backend.name == "cpu" else nullcontext()
    solver = {"method": method, "preconditioner": preconditioner, "precision": precision, "tolerance": tolerance,
              "coarse_tolerance": coarse_tolerance, "smoother": smoother, "smoother_degree": smoother_degree}
    result = {"benchmark": "poisson", "date": datetime.date.today().isoformat(), "backend": backend.describe(),
              "host": platform.processor() or platform.machine(), "order": order, "elements": list(elements),
              "solver": solver, "repeats": repeats}
    with limit:
        start = time.perf_counter()
        case = make_case(order, elements, solver)
        system = build_system(case, backend)
        backend.synchronize()
        result["setup_seconds"] = time.perf_counter() - start
        result["setup_parts"] = dict(system.setup_seconds)
        result.update(points=system.points, unknowns=system.unknowns, levels=system.solver.level_orders,
                      coarse=system.solver.coarse_solve, description=system.solver.describe())
        result.update(solve_timed(system, case, repeats))
        del system
        if jacobi:
            solver = {"method": "cg", "preconditioner": "jacobi", "tolerance": tolerance, "max_iterations": 100000}
            case = make_case(order, elements, solver)
            result["jacobi"] = solve_timed(build_system(case, backend), case, 1)
    result["seconds_per_iteration"] = result["seconds"] / max(result["iterations"], 1)
    return result


def format_result(r: dict) -> str:
    s = r["solver"]
    degree = f", degree {s.get('smoother_degree', 3)}" if r.get("levels", [])[1:] else ""  # a smoothed level
    lines = [f"poisson solve  backend={r['backend']['name']}  N={r['order']}  elements="
             f"{'x'.join(map(str, r['elements']))}  points={r['points']}  unknowns={r['unknowns']}",
             f"  {r.get('description') or s['method'] + ' + ' + s['preconditioner']}  ({s['precision']}"
             f"{degree})  tolerance={s['tolerance']:g}",
             "",
             f"  set-up                {r['setup_seconds']:10.4f} s",
             f"  iterations            {r['iterations']:10d}   ({'converged' if r['converged'] else 'NOT converged'},"
             f" relative residual {r['relative_residual']:.2e})",
             f"  solve (median of {len(r['all_seconds'])})   {r['seconds']:10.4f} s",
             f"  per iteration         {r['seconds_per_iteration'] * 1e3:10.3f} ms",
             f"  max error             {r['max_error']:10.3e}",
             *([f"  coarse iterations     {r['coarse_iterations_per_cycle']:10.1f}   (mean per V-cycle, "
                f"Jacobi-PCG to {s.get('coarse_tolerance', 1e-2):g})"] if r.get("coarse_iterations_per_cycle") else []),
             "",
             f"  parts of a profiled solve ({r['profiled_seconds']:.4f} s):"]
    for part in PARTS:
        entry = r["parts"].get(part)
        if entry:
            lines.append(f"    {part:15s} {entry['seconds']:9.4f} s  {100 * entry['share']:5.1f} %")
    if "jacobi" in r:
        j = r["jacobi"]
        lines += ["", f"  Jacobi-PCG: {j['iterations']} iterations, {j['seconds']:.4f} s"]
    return "\n".join(lines)


def command(args) -> int:
    """``lobatto bench poisson`` (options of bench/cli.py): check, solve, print, write the JSON."""
    if (args.order < 1 or len(args.elements) not in (2, 3) or min(args.elements) < 1 or args.repeats < 1 or args.coarse_tolerance <= 0
            or not 1 <= args.smoother_degree <= 50):
        raise InputError("--order, --elements (2 or 3 counts) and --repeats must be >= 1, --coarse-tolerance > 0 and "
                         "--smoother-degree from 1 to 50")
    result = run(args.backend, args.order, tuple(args.elements), args.method, args.preconditioner,
                 args.precision, args.tolerance, args.repeats, args.jacobi, args.device, args.coarse_tolerance,
                 args.smoother, args.smoother_degree)
    print(format_result(result))
    write_json(args.json, result)
    return 0
