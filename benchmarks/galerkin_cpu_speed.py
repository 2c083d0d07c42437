"""CPU step time of the curved Maxwell forms, one thread: ``python benchmarks/galerkin_cpu_speed.py``.

Per mesh and order, ms per ``sim.stepper.step`` (lsrk45, upwind, cfl 0.3, random data; one
warm-up step, then the fewest seconds of ``--repeats`` runs of ``--steps`` steps, the least over
``--rounds`` whole sweeps of all cases; the process's
CPU time in the table, which others' processes on a shared machine do not inflate, and the
wall-clock time as well in the JSON) of

- ``split``, ``chain``: the collocated forms' C kernels (kernels/maxwell.c, the fused stage);
- ``galerkin_array``: volume_form = "galerkin" as array code (WeightAdjustedOperator.rhs,
  NumPy, the reference);
- ``galerkin_c``: the same operator through the compiled kernel (kernels/galerkin.c): the skew
  volume term, the invariant curl-form cofactors and Q = N + 1 Gauss points (galerkin.py);
- ``galerkin_c_s``: the compiled kernel at the rule the strong form needed,
  Q = strong_points(N) = max(ceil(3N / 2), N + 1) (the kernel computes the skew form only, so
  this is what the smaller rule saves per step, not the strong form's own time);

and ``energy_c``, ``energy_array``: one call of the Galerkin energy (conjugate gradients on
M_{1/J}; galerkin_energy in C, which attach() installs, and the array code), which a run makes
every runner.simulation.FINITE_CHECK_STEPS steps and at outputs.

Meshes: ``cylinder``, the 10-element O-grid cylinder of tests/cylwave.py (8 elements with circle
sides); ``box``, the unit PEC cube on 4^3 elements deformed inside (the energy tests' map).
Threads: OMP_NUM_THREADS=1 (and BLAS at one thread) is set before NumPy is imported, and the
compiled kernels are held to one thread.

    PYTHONPATH=src python benchmarks/galerkin_cpu_speed.py                       # N = 3, 5, 7, 9: ~10 min
    PYTHONPATH=src python benchmarks/galerkin_cpu_speed.py --orders 3 --meshes box --steps 5

Prints a table; writes JSON to benchmarks/results/ (``--json`` names the file).
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"  # before NumPy loads its BLAS

import argparse  # noqa: E402
import datetime  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
try:
    import lobatto  # noqa: F401
except ImportError:  # running from a checkout without install
    sys.path.insert(0, str(HERE.parent / "src"))

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.bench.report import cpu_model, rows_table, run_meta, write_json  # noqa: E402
from lobatto.jit import c as cbuild  # noqa: E402
from lobatto.systems.dg import face_values  # noqa: E402
from lobatto.systems.maxwell import galerkin_cpu  # noqa: E402
from lobatto.systems.maxwell.galerkin import WeightAdjustedOperator, quadrature_points, strong_points  # noqa: E402

sys.path.insert(0, str(HERE.parent / "tests"))  # cylwave.py, nek_mesh_writer.py
from cylwave import cylinder_rea  # noqa: E402

DEFORM = {"x": "0.15*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.12*sin(pi*x)*sin(pi*y)*sin(pi*z)",
          "z": "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"}
VARIANTS = ("split", "chain", "galerkin_array", "galerkin_c", "galerkin_c_s")


def simulation(mesh: dict, order: int, form: str, workdir: str):
    data = {"mesh": mesh, "discretization": {"order": order, "flux": "upwind", "volume_form": form},
            "physics": {"equations": "maxwell"}, "time": {"t_end": 1.0, "cfl": 0.3}, "output": {"formats": []}}
    return Simulation(case_from_dict(data, name="speed"), backend="cpu", output_dir=workdir, comm=None)


def use_operator(system, operator, compiled: bool) -> None:
    """Make a Galerkin system step with ``operator``: its C kernel or its array rhs."""
    operator.to(system.backend)
    system.galerkin = operator
    if compiled:
        kernel = galerkin_cpu.rhs_kernel(system.backend, operator)
        if kernel is None:
            raise SystemExit("the compiled Galerkin kernel is not available here (no C compiler?)")
        system.rhs_kernel = kernel
        return
    xp, order = system.backend.xp, system.order

    def rhs(u, sums, geometry, out, epsilon, mu, alpha, elements=None):
        own = face_values(xp, u, order)
        return operator.rhs(xp, u, (own, sums), geometry["face_factors"], out, epsilon, mu, alpha)

    system.rhs_kernel = rhs


def best_of(function, repeats: int, calls: int = 1) -> tuple[float, float]:
    """(wall, cpu) seconds per call, each the fewest of ``repeats`` runs of ``calls`` calls. The
    process's CPU time is what the measure needs on a shared machine: others' processes take
    wall time from a run, not CPU time (it runs on one thread)."""
    wall = cpu = math.inf
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        for n in range(calls):
            function(n)
        wall = min(wall, (time.perf_counter() - start) / calls)
        cpu = min(cpu, (time.process_time() - start_cpu) / calls)
    return wall, cpu


def time_steps(sim, steps: int, repeats: int) -> tuple[float, float]:
    """(wall, cpu) seconds per step after one warm-up step (best_of ``repeats`` runs of ``steps``)."""
    rng = np.random.default_rng(7)
    sim.u[...] = rng.standard_normal(sim.u.shape)
    sim.stepper.step(sim.u, 0.0, sim.dt)
    return best_of(lambda n: sim.stepper.step(sim.u, n * sim.dt, sim.dt), repeats, steps)


def measure(mesh: dict, order: int, steps: int, repeats: int, workdir: str, variants=VARIANTS) -> dict:
    row = {}
    for variant in variants:
        form = variant.split("_")[0]
        sim = simulation(mesh, order, form, workdir)
        if variant == "galerkin_array":
            use_operator(sim.system, WeightAdjustedOperator(sim.system.geometry), compiled=False)
        elif variant == "galerkin_c_s":
            use_operator(sim.system, WeightAdjustedOperator(sim.system.geometry, points=strong_points(order)),
                         compiled=True)
        elif variant == "galerkin_c":
            assert sim.system.rhs_kernel.__module__ == galerkin_cpu.__name__  # attach() chose the C kernel
        wall, cpu = time_steps(sim, steps, repeats)
        row[variant], row[f"{variant}_wall"] = cpu * 1e3, wall * 1e3
        if variant == "galerkin_c":
            u, operator = sim.u.copy(), sim.system.galerkin
            array_products = WeightAdjustedOperator.energy_products.__get__(operator)  # the method, not C
            for key, products in (("energy_c", operator.energy_products), ("energy_array", array_products)):
                wall, cpu = best_of(lambda n: products(np, u), repeats)
                row[key], row[f"{key}_wall"] = cpu * 1e3, wall * 1e3
        row.setdefault("elements", sim.system.num_elements)
        sim.close()
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", default="3,5,7,9")
    parser.add_argument("--meshes", default="cylinder,box")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="whole sweeps; each number is the least over them")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="a subset of " + ", ".join(VARIANTS))
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    cbuild.set_num_threads(1)
    orders = [int(x) for x in args.orders.split(",")]
    variants = tuple(v for v in VARIANTS if v in args.variants.split(","))
    command = " ".join(["python", "benchmarks/galerkin_cpu_speed.py", *sys.argv[1:]])
    results = {"meta": {**run_meta(), "command": command, "cpu": cpu_model(), "threads": 1, "steps": args.steps,
                        "repeats": args.repeats, "rounds": args.rounds, "integrator": "lsrk45", "flux": "upwind", "cfl": 0.3},
               "rows": []}
    header = (["mesh", "N", "E"] + list(variants)
              + [h for h, need in (("array / C", ("galerkin_array", "galerkin_c")), ("C / split", ("split", "galerkin_c")),
                                   ("C / C S", ("galerkin_c", "galerkin_c_s")), ("energy C", ("galerkin_c",)),
                                   ("energy array", ("galerkin_c",))) if all(v in variants for v in need)])
    lines = []
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "cylwave.rea"
        cylinder_rea(path, m=1, layers=2, length=4.0)
        meshes = {"cylinder": {"generator": "nek", "file": str(path), "boundaries": {"PEC": "pec"}},
                  "box": {"elements": [4, 4, 4], "boundary": "pec", "deform": DEFORM}}
        cases = [(name, order) for name in args.meshes.split(",") for order in orders]
        rows = {}
        for sweep in range(args.rounds):  # whole sweeps: a slow spell of the machine spoils one only
            for name, order in cases:
                row = measure(meshes[name], order, args.steps, args.repeats, workdir, variants)
                best = rows.setdefault((name, order), row)
                for key, value in row.items():
                    best[key] = min(best[key], value)
                print(f"  round {sweep + 1}, {name} N={order}: " + ", ".join(f"{v} {row[v]:.2f}" for v in variants),
                      flush=True)
        for (name, order), row in rows.items():
            row.update(mesh=name, order=order, q=quadrature_points(order), q_s=strong_points(order))
            results["rows"].append(row)
            ratios = {"array / C": ("galerkin_array", "galerkin_c", "{:.1f}"), "C / split": ("galerkin_c", "split", "{:.2f}"),
                      "C / C S": ("galerkin_c", "galerkin_c_s", "{:.2f}"), "energy C": ("energy_c", None, "{:.2f}"),
                      "energy array": ("energy_array", None, "{:.2f}")}
            lines.append([name, order, row["elements"]] + [f"{row[v]:.2f}" for v in variants]
                         + [f.format(row[a] / row[b] if b else row[a])
                            for h, (a, b, f) in ratios.items() if h in header])
    print("CPU ms per step (one thread; energy: ms per call); wall-clock times in the JSON (*_wall)")
    print("\n".join(rows_table(header, lines)))
    default = HERE / "results" / f"galerkin_cpu_speed_{datetime.date.today().isoformat()}.json"
    write_json(args.json or default, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
