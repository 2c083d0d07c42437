"""The steady Poisson/Helmholtz system: -div(k grad u) + h u = f with Dirichlet and Neumann
data, run as a case (lobatto.api.run, and `lobatto run` in a subprocess).

Exact and manufactured solutions: a polynomial of total degree <= N is reproduced to
round-off on an affine mesh (GLL quadrature is exact for every term then); a smooth solution
with variable k and h on a curved mesh converges spectrally in N; Neumann data on curved
faces of a gmsh mesh, on every side with h > 0; multigrid iteration counts against the
issue's targets; bad [solver] and [boundary] input; a solve that does not converge.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lobatto.api import case_from_dict, run
from lobatto.errors import InputError
from test_cli_errors import assert_one_line_error, run_cli, write_case

# u = sin(2x) cos(y) exp(z/2), k = 1 + xy/2, h = 1 + z^2: f = -k lap u - grad k . grad u + h u
U = "sin(2*x)*cos(y)*exp(0.5*z)"
UX = "2*cos(2*x)*cos(y)*exp(0.5*z)"
UY = "(-sin(2*x)*sin(y)*exp(0.5*z))"
UZ = "0.5*sin(2*x)*cos(y)*exp(0.5*z)"
K = "(1 + 0.5*x*y)"
H = "(1 + z**2)"
F = f"{K}*4.75*{U} - 0.5*y*{UX} - 0.5*x*{UY} + {H}*{U}"
#: curves every element; each side stays in its plane (the displacement along an axis
#: vanishes on that axis's sides), so the outward normals are the axes
IN_PLANE = {"x": "0.1*sin(pi*x)*cos(pi*y)*cos(pi*z)", "y": "0.1*sin(pi*y)*cos(pi*z)*cos(pi*x)",
            "z": "0.1*sin(pi*z)*cos(pi*x)*cos(pi*y)"}
MIXED = {"xmin": {"value": U}, "ymin": {"value": U}, "zmax": {"value": U},
         "xmax": {"flux": f"{K}*{UX}"}, "ymax": {"flux": f"{K}*{UY}"}, "zmin": {"flux": f"-{K}*{UZ}"}}


def case(physics, mesh, order, boundary=None, solver=None, exact=None, name="poisson", **more):
    data = {"physics": {"equations": "poisson", **physics}, "mesh": mesh, "discretization": {"order": order},
            "boundary": boundary or {}, "solver": solver or {}, **more}
    if exact is not None:
        data["exact"] = {"u": exact}
    return case_from_dict(data, name)


def solve(tmp_path, *args, **kwargs):
    c = case(*args, **kwargs)
    return run(c, backend="cpu", output_dir=tmp_path / c.name)


def test_polynomial_of_degree_n_is_reproduced_to_round_off(tmp_path):
    # total degree 4 = N: the stiffness, source and face integrals are exact on affine elements
    u = "1 + 2*x - y + 0.5*z + x*y - 3*y*z + x**2*z - 2*x*y*z + 0.25*y**4 - x**3*z"
    uy, uz = "(-1 + x - 3*z - 2*x*z + y**3)", "(0.5 - 3*y + x**2 - 2*x*y - x**3)"
    boundary = {"xmin": {"value": u}, "xmax": {"value": u}, "ymin": {"value": u},
                "ymax": {"flux": f"2.5*{uy}"}, "zmin": {"flux": f"-2.5*{uz}"}, "zmax": {"flux": f"2.5*{uz}"}}
    mesh = {"elements": [3, 2, 2], "lower": [-0.5, 0, 0.25], "upper": [1, 0.8, 1.25]}
    result = solve(tmp_path, {"f": "-2.5*(2*z - 6*x*z + 3*y**2)", "k": 2.5}, mesh, 4, boundary,
                   {"tolerance": 1e-14}, exact=u)
    s = result.summary
    assert s["converged"] and s["relative_residual"] <= 1e-14
    assert s["errors"]["u"]["max"] < 1e-12 * np.abs(result.fields["u"]).max()
    # the same polynomial on curved elements (rational metric terms) is only approximated:
    # the comparison can fail
    curved = {**mesh, "deform": {"z": "0.05*sin(pi*(x + 0.5)/1.5)*sin(pi*y/0.8)*sin(pi*(z - 0.25))"}}
    result = solve(tmp_path, {"f": "-2.5*(2*z - 6*x*z + 3*y**2)", "k": 2.5}, curved, 4, boundary,
                   {"tolerance": 1e-14}, exact=u, name="curved")
    assert result.summary["errors"]["u"]["max"] > 1e-6


def test_spectral_convergence_in_n_on_a_curved_mesh_with_variable_k_and_h(tmp_path):
    errors = []
    for order in range(2, 9):
        result = solve(tmp_path, {"f": F, "k": K, "h": H}, {"elements": [2, 2, 2], "deform": IN_PLANE}, order, MIXED,
                       {"tolerance": 1e-13}, exact=U, name=f"n{order}")
        assert result.summary["converged"]
        errors.append(result.summary["errors"]["u"]["l2"])
    rates = -np.diff(np.log(errors))  # measured: 1.94 2.06 1.91 2.16 2.09 2.09 (error / e^2 per order)
    assert rates.min() > 1.7, (errors, rates)
    assert errors[-1] < 3e-8
    slope = -np.polyfit(range(2, 9), np.log(errors), 1)[0]
    assert slope > 1.9, slope


def test_neumann_on_every_side_with_h(tmp_path):
    # no Dirichlet side: h > 0 makes the problem well posed
    flux = {"xmin": f"-{K}*{UX}", "xmax": f"{K}*{UX}", "ymin": f"-{K}*{UY}", "ymax": f"{K}*{UY}",
            "zmin": f"-{K}*{UZ}", "zmax": f"{K}*{UZ}"}
    result = solve(tmp_path, {"f": F, "k": K, "h": H}, {"elements": [2, 2, 2], "deform": IN_PLANE}, 8,
                   {side: {"flux": g} for side, g in flux.items()}, {"tolerance": 1e-12}, exact=U)
    assert result.summary["converged"]
    assert result.summary["errors"]["u"]["l2"] < 3e-8
    # a wrong sign on one side is not absorbed anywhere
    flux["zmax"] = f"-{K}*{UZ}"
    wrong = solve(tmp_path, {"f": F, "k": K, "h": H}, {"elements": [2, 2, 2], "deform": IN_PLANE}, 8,
                  {side: {"flux": g} for side, g in flux.items()}, {"tolerance": 1e-12}, exact=U, name="wrong")
    assert wrong.summary["errors"]["u"]["l2"] > 1e-2


def test_named_surfaces_of_a_gmsh_mesh_with_curved_neumann_faces(tmp_path):
    pytest.importorskip("gmsh")
    from test_numbering_imported import MESHES

    # u = log r between cylinders r = 0.5 and 1: harmonic; du/dn = -1/r on the inner one
    r = "sqrt(x**2 + y**2)"
    errors = {}
    for inner in ({"value": f"log({r})"}, {"flux": f"-1/{r}"}):
        result = solve(tmp_path, {}, {"generator": "gmsh", "file": str(MESHES / "coax_order2.msh")}, 4,
                       {"outer": {"value": "0"}, "ends": {"flux": "0"}, "inner": inner}, exact=f"log({r})",
                       name="coax_" + next(iter(inner)))
        errors[next(iter(inner))] = result.summary["errors"]["u"]["max"]
    # measured 7.1e-4 for both: the floor of the order-2 geometry (docs/benchmarks.md)
    assert errors["value"] < 2e-3 and errors["flux"] < 2e-3
    with pytest.raises(InputError, match=r"\[boundary.iner\].*did you mean 'inner'"):
        solve(tmp_path, {}, {"generator": "gmsh", "file": str(MESHES / "coax_order2.msh")}, 2,
              {"outer": {"value": "0"}, "iner": {"value": "1"}}, name="typo")


def sine_case(elements, preconditioner, method="cg", order=7):
    """-lap u = 3 pi^2 u, u = sin(pi x) sin(pi y) sin(pi z) on the curved unit cube (the
    solvers' test problem, tests/unit/test_solvers_multigrid.py)."""
    s = "sin(pi*x)*sin(pi*y)*sin(pi*z)"
    deform = {"x": f"0.08*{s}", "y": f"0.06*{s}*cos(pi*x)", "z": f"0.05*{s}"}
    return case({"f": f"3*pi**2*{s}"}, {"elements": [elements] * 3, "deform": deform}, order,
                solver={"method": method, "preconditioner": preconditioner, "tolerance": 1e-8}, exact=s,
                name=f"sine{elements}_{preconditioner}_{method}")


def test_multigrid_iteration_counts_meet_the_targets(tmp_path):
    counts = {}
    for elements in (2, 4):
        for preconditioner in ("multigrid", "jacobi"):
            c = sine_case(elements, preconditioner)
            s = run(c, backend="cpu", output_dir=tmp_path / c.name).summary
            assert s["converged"] and s["relative_residual"] <= 1e-8
            counts[elements, preconditioner] = s["iterations"]
            if preconditioner == "multigrid":
                assert s["solver"]["levels"] == [7, 3, 1] and s["solver"]["coarse"] == "cholesky"
                assert s["errors"]["u"]["max"] < 1e-5  # measured 4.6e-6 (2^3) and 1.6e-8 (4^3)
    # targets: at most 20 at N = 7, at most 3 more for 8x the elements (measured 9 and 9)
    assert counts[4, "multigrid"] <= 20
    assert counts[4, "multigrid"] - counts[2, "multigrid"] <= 3
    # Jacobi beside it (measured 84 and 172): about twice per halving of h
    assert counts[4, "jacobi"] > 1.6 * counts[2, "jacobi"] > 5 * counts[2, "multigrid"]


@pytest.mark.parametrize("solver", [
    {"method": "fcg", "precision": "float32"},
    {"method": "gmres", "restart": 10},
    {"method": "fcg", "coarse": "pcg", "levels": [5, 2]},
    {"method": "cg", "preconditioner": "none", "max_iterations": 400},
    {"method": "fcg", "preconditioner": "jacobi", "precision": "float32", "max_iterations": 400},
])
def test_every_method_and_preconditioner_solves_the_same_problem(tmp_path, solver):
    s = "sin(pi*x)*sin(pi*y)*sin(pi*z)"
    result = solve(tmp_path, {"f": f"3*pi**2*{s} + 2*{s}", "h": 2}, {"elements": [2, 2, 2], "deform": IN_PLANE}, 5,
                   solver={"tolerance": 1e-10, **solver}, exact=s)
    summary = result.summary
    assert summary["converged"], summary["reason"]
    assert summary["relative_residual"] <= 1e-10
    assert summary["errors"]["u"]["max"] < 2e-4  # the discretisation error at N = 5
    assert summary["solver"]["method"] == solver["method"]


def test_initial_guess_projection_and_parts(tmp_path):
    s = "sin(pi*x)*sin(pi*y)*sin(pi*z)"
    base = dict(physics={"f": f"3*pi**2*{s}"}, mesh={"elements": [2, 2, 2], "deform": IN_PLANE}, order=6, exact=s)
    cold = solve(tmp_path, **base, name="cold", solver={"tolerance": 1e-10}).summary
    warm = solve(tmp_path, **base, name="warm", solver={"tolerance": 1e-10}, initial={"u": s}).summary
    assert warm["residuals"][0] < 1e-3 * cold["residuals"][0]
    assert warm["iterations"] < cold["iterations"]
    # the parts add up to the solve and the operator is called 13 times per iteration
    parts = cold["parts"]
    assert math.isclose(sum(p["seconds"] for p in parts.values()), cold["solve_seconds"], rel_tol=1e-6)
    assert parts["operator"]["calls"] == 13 * cold["iterations"]  # 1 + smoothing (2 + 3) + residual, on 2 levels
    # projection: the same system solved again with a nearby right-hand side (Python API)
    result = solve(tmp_path, **base, name="projected", solver={"tolerance": 1e-10, "projection": 4})
    system = result.simulation.system
    first = system.result.iterations
    rhs = system.rhs * 1.001
    again = system.solver.solve(rhs)
    assert again.converged and again.iterations <= first // 3, (first, again.iterations)


def test_outputs_read_back_by_independent_readers(tmp_path):
    h5py = pytest.importorskip("h5py")
    pymech = pytest.importorskip("pymech")
    s = "sin(pi*x)*sin(pi*y)*sin(pi*z)"
    result = solve(tmp_path, {"f": f"3*pi**2*{s}"}, {"elements": [2, 2, 2], "deform": IN_PLANE}, 4, exact=s,
                   output={"formats": ["hdf5", "nek", "vtk"]})
    out, u = result.output_dir, result.fields["u"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steady"] and summary["equations"] == "poisson" and summary["converged"]
    with h5py.File(out / summary["outputs"][0]["files"][0], "r") as f:
        assert np.array_equal(f["fields/u"][:], u)
    field = pymech.readnek(str(out / summary["outputs"][0]["files"][1]))
    scalar = np.stack([el.scal[0] for el in field.elem])  # (E, nz, ny, nx): pymech's element arrays
    np.testing.assert_allclose(scalar, u, rtol=0, atol=1e-6 * np.abs(u).max())  # single-precision file


def test_bad_solver_and_boundary_input_is_named():
    def error(**tables):
        data = {"physics": {"equations": "poisson"}, "mesh": {"elements": [2, 2, 2]}, **tables}
        with pytest.raises(InputError) as info:
            case_from_dict(data, "bad")
        return str(info.value)

    assert "did you mean 'solver.tolerance'" in error(solver={"tolerence": 1e-8})
    assert "[solver] method must be one of" in error(solver={"method": "gmers"}) and "gmres" in error(
        solver={"method": "gmers"})
    assert "[solver] preconditioner" in error(solver={"preconditioner": "ilu"})
    assert "[solver] max_iterations must be an integer >= 1" in error(solver={"max_iterations": 0})
    assert "[solver] levels must be a list of decreasing orders" in error(solver={"levels": [3, 5, 1]})
    assert "[solver] tolerance must be a positive number" in error(solver={"tolerance": -1})
    assert "[time] does not apply: poisson is steady" in error(time={"t_end": 1.0})
    assert "[boundary.xmni]" in error(boundary={"xmni": {"value": "1"}}) and "did you mean 'xmin'" in error(
        boundary={"xmni": {"value": "1"}})
    assert "exactly one of value, flux" in error(boundary={"xmin": {"value": "1", "flux": "0"}})
    assert "did you mean 'boundary.xmin.value'" in error(boundary={"xmin": {"valeu": "1"}})
    assert "[physics] f" in error(physics={"equations": "poisson", "f": "sin(pi*q)"})
    assert "[physics] f" in error(physics={"equations": "poisson", "f": "x + t"})  # steady: no t
    assert "periodic" in error(mesh={"elements": [2, 2, 2], "periodic": [True, False, False]},
                               boundary={"xmin": {"value": "1"}})


def test_bad_values_found_when_the_system_is_built(tmp_path):
    s = "sin(pi*x)"

    def fails(match, physics=None, mesh=None, **kwargs):
        with pytest.raises(InputError, match=match):
            solve(tmp_path, physics or {"f": s}, mesh or {"elements": [2, 2, 2]}, 3, **kwargs)

    fails(r"\[physics\] k = \"1 - 2\*x\" is 0 at \(x, y, z\) = \(0.5, 0, 0\); its values must be from 1e-100",
          physics={"k": "1 - 2*x"})
    fails(r"\[physics\] h = \"-1\" is -1", physics={"h": -1})
    fails(r"\[solver\] levels = \[2, 1\] must start at the \[discretization\] order 3", solver={"levels": [2, 1]})
    fails(r"method = \"cg\" needs a fixed preconditioner.*float32", solver={"method": "cg", "precision": "float32"})
    fails(r"method = \"cg\" needs a fixed preconditioner.*coarse", solver={"method": "cg", "coarse": "pcg"})
    fails(r"\[solver\] tolerance must be a number >= 1e-100 and < 1 \(a relative residual", solver={"tolerance": 2})
    fails(r"up to a constant", boundary={side: {"flux": "0"} for side in
                                          ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")})
    fails(r"up to a constant", mesh={"elements": [2, 2, 2], "boundary": "neumann"})
    fails(r"\[boundary.xmin\] flux makes xmin a neumann boundary, but \[mesh.boundaries\] xmin = \"dirichlet\"",
          mesh={"elements": [2, 2, 2], "boundaries": {"xmin": "dirichlet"}}, boundary={"xmin": {"flux": "0"}})


def test_cli_errors_and_a_solve_that_does_not_converge(tmp_path):
    good = ('[physics]\nequations = "poisson"\nf = "1"\n\n[mesh]\nelements = [3, 3, 3]\n\n'
            '[discretization]\norder = 5\n')
    path = write_case(tmp_path, good + '\n[solver]\nmetod = "cg"\n', "bad.toml")
    assert_one_line_error(run_cli("run", str(path), "-o", str(tmp_path / "o1")), "bad.toml", "'solver.metod'",
                          "did you mean 'solver.method'?")
    path = write_case(tmp_path, good + '\n[solver]\npreconditioner = "jacobi"\nmax_iterations = 3\n', "slow.toml")
    proc = run_cli("run", str(path), "-o", str(tmp_path / "o2"), "-q")
    line = assert_one_line_error(proc, "slow.toml", "did not converge", "not converged in 3 iterations",
                                 "relative residual", "raise [solver] max_iterations (now 3)",
                                 "preconditioner = \"multigrid\"", code=1)
    assert "summary.json" in line
    summary = json.loads((tmp_path / "o2" / "summary.json").read_text())
    assert summary["converged"] is False and summary["iterations"] == 3 and len(summary["residuals"]) == 4
    assert not list((tmp_path / "o2").glob("*.h5"))  # no snapshot of an unconverged solution
    # the same case converges with the defaults, printing its iterations and the result
    path = write_case(tmp_path, good, "ok.toml")
    proc = run_cli("run", str(path), "-o", str(tmp_path / "o3"))
    assert proc.returncode == 0, proc.stderr
    assert "fcg iteration     0" in proc.stdout
    assert "poisson: fcg + multigrid [5, 2, 1] (jacobi smoother, cholesky coarse): converged in" in proc.stdout


def test_case_round_trips_through_toml():
    from lobatto.api import parse_case
    from lobatto.config.schema import tomllib

    c = case({"f": F, "k": K, "h": 2}, {"elements": [2, 2, 2], "deform": IN_PLANE}, 5, MIXED,
             {"method": "gmres", "levels": [5, 2, 1], "projection": 3}, exact=U)
    again = parse_case(tomllib.loads(c.to_toml()), source="<again>", name=c.name)
    assert again.to_dict() == c.to_dict()
    assert again.tables["solver"]["levels"] == (5, 2, 1) and again.time is None
    assert again.tables["boundary"]["xmax"][0] == "flux"
    from lobatto.api import Simulation

    with pytest.raises(InputError, match="poisson is steady"):  # no stepping of a steady case
        Simulation(c, backend="cpu", comm=None)


def test_blas_threads_are_held_at_one_during_a_solve():
    from lobatto.backends.blas import blas_threads, single_threaded_blas

    before = blas_threads()
    if before is None:
        pytest.skip("no BLAS library with a thread setter is loaded")
    with single_threaded_blas():
        assert blas_threads() == 1
    assert blas_threads() == before


def test_benchmarks_write_consistent_records(tmp_path):
    import os
    import subprocess
    import sys

    from test_cli_errors import SRC

    env = dict(os.environ, PYTHONPATH=str(SRC))

    def bench(*args):
        out = tmp_path / f"{args[0]}.json"
        proc = subprocess.run([sys.executable, "-m", "lobatto", "bench", *args, "--backend", "cpu", "--json", str(out)],
                              capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(out.read_text()), proc.stdout

    record, text = bench("helmholtz", "--orders", "2", "5", "--max-points", "3000", "--min-seconds", "0.01",
                         "--repeats", "2", "--copy-bytes", "8e6")
    rows = record["rows"]
    assert [(r["order"], r["elements"]) for r in rows] == [(2, 2 ** k) for k in range(7)] + [(5, 1), (5, 2), (5, 4),
                                                                                        (5, 8)]
    for r in rows:
        assert r["points"] == r["elements"] * (r["order"] + 1) ** 3 and r["bytes_per_point"] == 72
        assert r["points_per_second"] == pytest.approx(r["points"] / r["seconds"], rel=1e-12)
        assert r["gdof_per_second"] == pytest.approx(r["elements"] * r["order"] ** 3 / r["seconds"] / 1e9, rel=1e-12)
        assert r["percent_of_copy"] == pytest.approx(100 * 72 * r["points"] / r["seconds"]
                                                     / record["copy_bandwidth"]["peak"], rel=1e-12)
    table = [line.split() for line in text.splitlines() if line[:4].strip().isdigit() and "E=" not in line]
    assert [(int(row[0]), int(row[1])) for row in table] == [(2, 64), (5, 8)]  # each order's largest size
    record, text = bench("poisson", "--order", "3", "--elements", "2", "2", "2", "--repeats", "2", "--jacobi")
    assert record["converged"] and record["iterations"] <= 10 and record["jacobi"]["iterations"] > record["iterations"]
    assert record["points"] == 8 * 64 and record["levels"] == [3, 1]
    shares = [p["share"] for p in record["parts"].values()]
    assert sum(shares) == pytest.approx(1.0, rel=1e-9) and min(shares) >= 0
    assert "per iteration" in text and "Jacobi-PCG" in text
    assert "fcg + multigrid [3, 1] (jacobi smoother, cholesky coarse)  (float64, degree 3)" in text
    schwarz, text = bench("poisson", "--order", "3", "--elements", "2", "2", "2", "--repeats", "1", "--smoother",
                          "schwarz", "--smoother-degree", "2")
    assert schwarz["solver"]["smoother"] == "schwarz" and schwarz["converged"]
    assert "fcg + multigrid [3, 1] (schwarz smoother, cholesky coarse)  (float64, degree 2)" in text


def test_the_example_case_solves_to_its_exact_solution(tmp_path):
    from pathlib import Path

    from lobatto.api import load_case

    case = load_case(Path(__file__).resolve().parents[2] / "examples" / "poisson.toml")
    summary = run(case, backend="cpu", output_dir=tmp_path / "example").summary
    assert summary["converged"] and summary["relative_residual"] <= 1e-10
    assert summary["errors"]["u"]["max"] < 1e-7  # measured 1.0e-8 at N = 6
    assert summary["mesh"]["surfaces"] == ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"]
