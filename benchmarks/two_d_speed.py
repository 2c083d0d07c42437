"""2-D meshes against their extruded one-layer twins: the cost of each system on one backend.

For each system of the registry (CASES) and each ORDER:NX[xNY] size: the 2-D box of NX x NY
quadrilaterals, and its twin mesh.extrude.extrude_quads(box) (one layer of hexahedra, periodic z,
z in [-1, 1]: the same elements with (N+1) times the points), each built through the system's
``from_case`` (the path of ``lobatto run``, the twin's case being the same box with a third,
periodic entry). Measured:

* DG systems (acoustics, Maxwell): whole lsrk45 steps of the same fixed dt (the 2-D run's cfl
  0.3 step; on the GPU a step is replayed from a CUDA graph where it can be, as in ``lobatto
  bench``): ms per step and ns per point-stage; then 5 fresh steps of each from the same
  z-independent data, and the largest |u3 - u2| over the twin's k planes, relative to max|u2|
  (the 2-D = extruded check of the tests, here at the benchmark's size);
* Poisson: the solve from zero (fcg + p-multigrid, tolerance 1e-8, median of --repeats):
  seconds per solve, ns per unknown, iterations (the 3-D smoother sees the twin's t terms, so
  the counts differ), and the difference of the two solutions relative to max|u2|.

Also the set-up time of each run and the whole process's wall clock. Prints a table and writes
JSON (--json). The BLAS of the CPU backend runs at one thread; set OMP_NUM_THREADS for the
compiled kernels' threads (recorded in the JSON).

    PYTHONPATH=src python3 benchmarks/two_d_speed.py --quick            # CPU, small sizes
    PYTHONPATH=src python3 benchmarks/two_d_speed.py --backend cuda --json two_d_speed_cuda.json
    PYTHONPATH=src python3 benchmarks/two_d_speed.py --systems maxwell --sizes 7:64 3:128x64

Sizes (per system, overridden by --sizes): --quick N = 5 on 16 x 16 quads; the CPU's default
N = 7 on 32 x 32 (65 k points in 2-D, 524 k in the twin); CUDA's N = 7 on 128 x 128 (1.0 M and
8.4 M points). On the session's shared 2-core CPU (OMP_NUM_THREADS=1, other jobs running) the
whole process took 4 s with --quick and 26 s with the CPU's sizes. The CUDA sweep was not run
by its author: building the three systems at the CUDA sizes (2-D and twin, on the host) took
45 s on that CPU, so about a minute plus the kernels' compilation is expected. To add a system
(Navier-Stokes, once it runs in 2-D), add a Bench to CASES: its case dict, its sizes and a
measure function (measure_steps, which times Stepper.step, or one of its own).
"""

from __future__ import annotations

import time

START = time.perf_counter()

import argparse  # noqa: E402
import copy  # noqa: E402
import datetime  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
from contextlib import nullcontext  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

from lobatto.api import case_from_dict  # noqa: E402
from lobatto.backends import get_backend  # noqa: E402
from lobatto.backends.blas import single_threaded_blas  # noqa: E402
from lobatto.bench.maxwell import time_steps  # noqa: E402
from lobatto.bench.poisson import solve_timed  # noqa: E402
from lobatto.bench.report import check_output_options, rows_table, write_json  # noqa: E402
from lobatto.integrators import Stepper, get_scheme  # noqa: E402
from lobatto.mesh import compute_geometry  # noqa: E402
from lobatto.mesh.extrude import extrude_quads  # noqa: E402
from lobatto.runner.build import build_mesh  # noqa: E402
from lobatto.systems.registry import get_system  # noqa: E402

#: the twin's z range: depth 2, so dz/dt = 1 and the twin's metrics are the 2-D ones
DEPTH = 2.0
CFL = 0.3  # of the 2-D mesh's spacing; the twin takes the same dt (its own estimate sees z)
CHECK_STEPS = 5
SMOOTH = "sin(2*pi*x)*cos(2*pi*y)"
EXACT = "sin(pi*x)*sin(pi*y)"
DEFORM = {"x": f"0.08*{EXACT}", "y": f"0.06*{EXACT}*cos(pi*x)"}  # --curved: every element curved


# The registry -------------------------------------------------------------------------------------
def dg_case(equations: str, initial: dict):
    def make(order: int, elements, curved: bool) -> dict:
        mesh = {"elements": list(elements), "lower": [0.0, 0.0], "upper": [1.0, 1.0]}
        if curved:
            mesh["deform"] = DEFORM
        return {"physics": {"equations": equations}, "mesh": mesh, "discretization": {"order": order},
                "initial": initial, "time": {"integrator": "lsrk45", "t_end": 1.0, "dt": 1e-3}}
    return make


def poisson_case(order: int, elements, curved: bool) -> dict:
    mesh = {"elements": list(elements), "lower": [0.0, 0.0], "upper": [1.0, 1.0]}
    if curved:
        mesh["deform"] = DEFORM
    # -lap u = 2 pi^2 u, u = 0 on the four sides (the default boundary: Dirichlet zero)
    return {"physics": {"equations": "poisson", "f": f"2*pi**2*{EXACT}"}, "mesh": mesh,
            "discretization": {"order": order}, "exact": {"u": EXACT},
            "solver": {"method": "fcg", "preconditioner": "multigrid", "tolerance": 1e-8}}


@dataclass(frozen=True)
class Bench:
    """One system of the sweep: ``case(order, (nx, ny), curved)`` gives the 2-D box's case as
    a dict; ``measure(built2, built3, backend, repeats)`` gives the two rows' timings and the
    comparison; ``sizes`` maps "quick", "cpu", "cuda" to ORDER:NX[xNY] strings."""

    name: str
    case: Callable[[int, tuple, bool], dict]
    measure: Callable
    sizes: dict = field(default_factory=dict)
    float32: str | None = None  # why the system is not run at --precision float32, or None


@dataclass
class Built:
    case: object
    mesh: object
    system: object
    setup_s: float
    stepper: object = None  # measure_steps's, kept for its check


def twin_case(data: dict) -> dict:
    """The 2-D case's dict as the twin's: a third, periodic entry (one layer, z in [-1, 1])."""
    data = copy.deepcopy(data)
    mesh = data["mesh"]
    mesh["elements"] = list(mesh["elements"]) + [1]
    mesh["lower"] = list(mesh["lower"]) + [-DEPTH / 2]
    mesh["upper"] = list(mesh["upper"]) + [DEPTH / 2]
    mesh["periodic"] = list(mesh.get("periodic", [False, False])) + [True]
    return data


def build(case, make_mesh, backend) -> Built:
    """The case's system on ``make_mesh()`` (runner.build.build_system's last steps, on a given
    mesh); its set-up time counts the mesh, the geometry and the system."""
    start = time.perf_counter()
    mesh = make_mesh()
    geometry = compute_geometry(mesh, case.discretization.order)
    system = get_system(case.physics.equations).from_case(case, mesh, geometry, backend)
    backend.synchronize()
    return Built(case, mesh, system, time.perf_counter() - start)


def relative_difference(backend, u2, u3) -> float:
    """max over the twin's k planes of |u3 - u2| / max|u2|, over the 2-D run's fields (the
    twin's extra ones, acoustics' uz, are not compared)."""
    a, b = backend.to_host(u2), backend.to_host(u3)
    return float(np.abs(b[: a.shape[0]] - a).max() / max(np.abs(a).max(), 1e-300))


def measure_steps(b2: Built, b3: Built, backend, repeats: int) -> tuple:
    """Whole steps of a Stepper (the DG systems): one row each, and the 2-D = twin check."""
    dt = b2.system.stable_time_step(CFL, b2.system.geometry.min_spacing)
    rows = []
    for built in (b2, b3):
        system, case = built.system, built.case
        stepper = Stepper(system, get_scheme(case.time.integrator))
        u = backend.asarray(system.evaluate_fields(case.initial.fields, 0.0))
        timing = time_steps(backend, stepper, u, dt, repeats=repeats)
        seconds, stages = timing["seconds_per_step"], stepper.stages
        rows.append({"points": int(system.points), "path": stepper.path, "graph": timing.get("graph"),
                     "steps_timed": timing["steps_per_repeat"], "ms": 1e3 * seconds, "unit": "point-stage",
                     "ns_per_unit": 1e9 * seconds / (system.points * stages),
                     "finite": bool(backend.xp.all(backend.xp.isfinite(u)))})
        built.stepper = stepper
    states = []
    for built in (b2, b3):  # the same steps from the same data
        u = backend.asarray(built.system.evaluate_fields(built.case.initial.fields, 0.0))
        for step in range(CHECK_STEPS):
            built.stepper.step(u, step * dt, dt)
        states.append(u)
    return rows, {"dt": dt, "check_steps": CHECK_STEPS, "difference": relative_difference(backend, *states)}


def measure_solve(b2: Built, b3: Built, backend, repeats: int) -> tuple:
    """Solves of a steady system from zero (Poisson): one row each, and the solutions compared."""
    rows, solutions = [], []
    for built in (b2, b3):
        system = built.system
        result = solve_timed(system, built.case, repeats)  # its last solve is a profiled one
        rows.append({"points": int(system.points), "unknowns": int(system.unknowns), "ms": 1e3 * result["seconds"],
                     "unit": "unknown", "ns_per_unit": 1e9 * result["seconds"] / system.unknowns,
                     "iterations": result["iterations"], "converged": result["converged"],
                     "ns_per_unknown_iteration": 1e9 * result["seconds"] / (system.unknowns
                                                                           * max(result["iterations"], 1)),
                     "max_error": result["max_error"]})
        solutions.append(system.solve())
    return rows, {"tolerance": b2.case.tables["solver"]["tolerance"],
                  "difference": relative_difference(backend, *solutions)}


CASES = {b.name: b for b in (
    Bench("acoustics", dg_case("acoustics", {"p": SMOOTH, "ux": "cos(2*pi*x)*sin(2*pi*y)"}), measure_steps,
          {"quick": ["5:16"], "cpu": ["7:32"], "cuda": ["7:128"]}),
    Bench("maxwell", dg_case("maxwell", {"Ez": SMOOTH, "Hz": "cos(2*pi*x)*cos(2*pi*y)", "Ex": "sin(2*pi*y)"}),
          measure_steps, {"quick": ["5:16"], "cpu": ["7:32"], "cuda": ["7:128"]}),
    Bench("poisson", poisson_case, measure_solve, {"quick": ["5:16"], "cpu": ["7:32"], "cuda": ["7:128"]},
          float32="its source sin(pi x) sin(pi y) is ~1e-31 on the sides, out of float32's checked range "
                  "(lobatto bench poisson runs in float64 too)"),
)}


# The sweep ----------------------------------------------------------------------------------------
def parse_size(text: str) -> tuple:
    """ORDER:NX or ORDER:NXxNY -> (order, (nx, ny))."""
    try:
        order, counts = text.split(":")
        nx, _, ny = counts.partition("x")
        size = int(order), (int(nx), int(ny or nx))
    except ValueError:
        raise SystemExit(f"--sizes {text!r}: expected ORDER:NX or ORDER:NXxNY (e.g. 7:32 or 5:64x16)") from None
    if size[0] < 1 or min(size[1]) < 1:
        raise SystemExit(f"--sizes {text!r}: the order and the counts must be >= 1")
    return size


def out_of_memory(error: BaseException) -> bool:
    return isinstance(error, MemoryError) or "OutOfMemory" in type(error).__name__


def run_size(bench: Bench, order: int, elements: tuple, curved: bool, backend, repeats: int) -> list:
    """The 2-D row and the twin's row of one size (the twin's row carries the ratios)."""
    start = time.perf_counter()
    data = bench.case(order, elements, curved)
    case2 = case_from_dict(data, name=f"{bench.name}_2d")
    case3 = case_from_dict(twin_case(data), name=f"{bench.name}_3d")
    built2 = build(case2, lambda: build_mesh(case2), backend)
    try:
        built3 = build(case3, lambda: extrude_quads(built2.mesh, DEPTH), backend)
        (row2, row3), check = bench.measure(built2, built3, backend, repeats)
    except Exception as error:  # a twin that does not fit the device: the 2-D row alone
        if not out_of_memory(error):
            raise
        del built2
        return [{"system": bench.name, "order": order, "elements": list(elements), "skipped": repr(error)[:200]}]
    rows = []
    for built, row in ((built2, row2), (built3, row3)):
        rows.append({"system": bench.name, "order": order, "elements": list(elements), "dim": built.mesh.dim,
                     "mesh": f"{elements[0]}x{elements[1]}" + (" quads" if built.mesh.dim == 2 else "x1 extruded"),
                     "curved": curved, "setup_s": built.setup_s, **row})
    rows[1].update(check, time_ratio_3d_over_2d=row3["ms"] / row2["ms"],
                   per_unit_ratio_3d_over_2d=row3["ns_per_unit"] / row2["ns_per_unit"],
                   wall_s=time.perf_counter() - start)
    return rows


def print_table(rows: list) -> None:
    header = ["system", "N", "mesh", "points", "ms/step|solve", "ns/unit", "unit", "setup s", "3-D/2-D time",
              "3-D/2-D per unit", "difference"]
    lines = []
    for r in rows:
        if "skipped" in r:
            lines.append([r["system"], str(r["order"]), "x".join(map(str, r["elements"])) or "-", "-", "", "", "",
                          "", "", "", "skipped: " + r["skipped"][:80]])
            continue
        ratio = r.get("time_ratio_3d_over_2d")
        lines.append([r["system"], str(r["order"]), r["mesh"], str(r["points"]), f"{r['ms']:.3f}",
                      f"{r['ns_per_unit']:.2f}", r["unit"] + (f" ({r['iterations']} it.)" if "iterations" in r else ""),
                      f"{r['setup_s']:.2f}", "" if ratio is None else f"{ratio:.2f}",
                      "" if ratio is None else f"{r['per_unit_ratio_3d_over_2d']:.2f}",
                      "" if "difference" not in r else f"{r['difference']:.1e}"])
    print("\n".join(rows_table(header, lines)))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    parser.add_argument("--backend", default="cpu", choices=("cpu", "cuda", "numpy"),
                        help="cpu: compiled C kernels where a system has them; numpy: the reference kernels")
    parser.add_argument("--systems", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--sizes", nargs="+", default=None, metavar="ORDER:NX[xNY]",
                        help="the same sizes for every system (default: each system's, by backend)")
    parser.add_argument("--quick", action="store_true", help="each system's small sizes")
    parser.add_argument("--curved", action="store_true", help="every element curved (a smooth [mesh.deform])")
    parser.add_argument("--precision", default="float64", choices=("float64", "float32"))
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (median)")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)
    check_output_options(args, ("json",))
    if args.repeats < 1:
        raise SystemExit("--repeats must be >= 1")
    sizes = [parse_size(s) for s in args.sizes] if args.sizes else None
    if args.backend == "numpy":  # not a backend name of get_backend: the reference kernels themselves
        from lobatto.backends.numpy_backend import NumpyBackend

        backend = NumpyBackend(precision=args.precision)
    else:
        backend = get_backend(args.backend, precision=args.precision)
    limit = single_threaded_blas() if backend.name == "cpu" else nullcontext()
    key = "quick" if args.quick else ("cuda" if backend.name == "cuda" else "cpu")
    rows = []
    with limit:
        for name in args.systems:
            bench = CASES[name]
            if backend.precision == "float32" and bench.float32:
                rows.append({"system": name, "order": "-", "elements": [], "skipped": f"float32: {bench.float32}"})
                print(f"{name:10s} skipped in float32: {bench.float32}", flush=True)
                continue
            for order, elements in sizes or [parse_size(s) for s in bench.sizes[key]]:
                new = run_size(bench, order, elements, args.curved, backend, args.repeats)
                if backend.name == "cuda":  # the next size starts from an empty pool
                    backend.xp.get_default_memory_pool().free_all_blocks()
                rows += new
                for r in new:
                    if "skipped" not in r:
                        print(f"{name:10s} N = {order:2d} {r['mesh']:>18s}: {r['ms']:10.3f} ms, "
                              f"{r['ns_per_unit']:9.2f} ns per {r['unit']} (setup {r['setup_s']:.2f} s)", flush=True)
    wall = time.perf_counter() - START
    describe = backend.describe() if hasattr(backend, "describe") else backend.name
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    out = {"benchmark": "two_d_speed", "date": now, "host": platform.node(), "backend_option": args.backend,
           "backend": describe, "precision": args.precision, "curved": args.curved,
           "sizes": key if sizes is None else "given", "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
           "rows": rows, "wall_clock_s": wall}
    print()
    print_table(rows)
    print(f"whole process: {wall:.1f} s")
    write_json(args.json, out, indent=1, default=None)


if __name__ == "__main__":
    main()
