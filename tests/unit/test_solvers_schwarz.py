"""solvers.schwarz: the overlapping additive Schwarz smoother (FDM local solves).

The ext exchange against the neighbours found by coordinates (rotated elements, a deformed
mesh, periodic faces); the local solve exact where the separable operator is (a box element);
the FDM kernel against a naive loop; M symmetric and positive; Chebyshev-Schwarz in the
V-cycle: fewer MG-FCG iterations than Chebyshev-Jacobi on a deformed periodic/Dirichlet box,
float32 levels, and a pure-Neumann (singular) problem."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from lobatto.backends import get_backend
from lobatto.discretization import gll_weights
from lobatto.mesh.box import box_mesh
from lobatto.mesh.geometry import compute_geometry
from lobatto.mesh.imported import hex_mesh_from_imported
from lobatto.mesh.topology import FACE_AXIS, FACE_SIDE, NUM_FACES
from lobatto.solvers import flexible_cg, pcg
from lobatto.solvers.elliptic import EllipticSolver
from lobatto.solvers.multigrid import Level, PMultigrid, default_orders
from lobatto.solvers.schwarz import AdditiveSchwarz

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from mesh_checks import imported_box  # noqa: E402


@pytest.fixture(scope="module")
def backend():
    return get_backend("cpu")


def random_continuous(level, rng, backend):
    values = rng.standard_normal(level.assembly.num_global_points)
    return backend.asarray(values[level.assembly.ids], dtype=level.dtype) * level.mask


def wave(x, y, z):
    """Deforms the inside, keeps the box's sides (x periodic: the x sides move together)."""
    s = np.sin(np.pi * y) * np.sin(np.pi * z)
    return 0.05 * s * np.sin(2 * np.pi * x), 0.04 * s * np.cos(2 * np.pi * x), 0.03 * s


def test_extension_holds_the_neighbours_points(backend):
    """Each ext face layer holds, point by point, the face neighbour's GLL point one inside
    it (by coordinates, modulo the x period), 0 on boundary faces; rotated elements in a
    random order, a deformed mesh, periodic x faces."""
    order, m = 3, 6
    mapping = lambda x, y, z: (x + 0.04 * np.sin(np.pi * y) * np.sin(2 * np.pi * z), y + 0.03 * np.sin(2 * np.pi * x), z)  # noqa: E731
    mesh = hex_mesh_from_imported(imported_box((3, 2, 2), q=3, seed=5, mapping=mapping, periodic_x=True))
    coords = compute_geometry(mesh, order).coords
    level = Level.build(mesh, order, backend)
    schwarz = AdditiveSchwarz(mesh, level)
    E = mesh.num_elements
    ext = np.stack([schwarz.extend(np.ascontiguousarray(coords[c]), np.zeros((E, m, m, m))) for c in range(3)])

    def wrapped(a, b):  # distance with x taken modulo 1
        d = a - b
        d[0] -= np.round(d[0])
        return np.sqrt((d ** 2).sum(axis=0))

    inner = [(lambda a, f=f: np.take(a, 1 if FACE_SIDE[f] == 0 else order - 1, axis=FACE_AXIS[f] + 1)) for f in range(6)]
    checked = 0
    for e in range(E):
        for f in range(NUM_FACES):
            layer = [slice(None), e, slice(1, -1), slice(1, -1), slice(1, -1)]
            layer[FACE_AXIS[f] + 2] = 0 if FACE_SIDE[f] == 0 else m - 1
            got = ext[tuple(layer)]  # (3, n, n) on this face's [a, b] grid
            nb = mesh.face_neighbour[e, f]
            if nb < 0:
                assert np.all(got == 0)
                continue
            candidates = inner[mesh.neighbour_face[e, f]](coords[:, nb]).reshape(3, -1)
            own_face = np.take(coords[:, e], 0 if FACE_SIDE[f] == 0 else order, axis=FACE_AXIS[f] + 1)
            for a in range(order + 1):
                for b in range(order + 1):
                    distances = wrapped(got[:, a, b, None], candidates)
                    assert distances.min() < 1e-12  # one of the neighbour's points one inside
                    # the right one: the closest of our face points to it is ours at [a, b]
                    to_face = wrapped(got[:, a, b, None, None], own_face)
                    assert np.unravel_index(np.argmin(to_face), to_face.shape) == (a, b)
                    checked += 1
    assert checked > 100


@pytest.mark.parametrize("neumann", [(), (1, 3)])
def test_local_solve_is_exact_on_a_box_element(backend, neumann):
    """One undeformed box element (1 x 2 x 0.5), h1 = 1.3, h2 = 0.7, Dirichlet faces (and two
    Neumann ones): the separable operator is the element's, so M = A^-1 on the free points."""
    order, n = 4, 5
    mesh = box_mesh((1, 1, 1), upper=(1.0, 2.0, 0.5))
    dirichlet = mesh.face_neighbour < 0
    dirichlet[0, list(neumann)] = False
    level = Level.build(mesh, order, backend, dirichlet=dirichlet, h1=1.3, h2=0.7)
    schwarz = AdditiveSchwarz(mesh, level)
    free = np.flatnonzero(level.mask.ravel())
    a = np.column_stack([level.apply(np.eye(n ** 3)[p].reshape(1, n, n, n)).ravel() for p in free])[free]
    b = np.random.default_rng(0).standard_normal((1, n, n, n)) * level.mask
    x = np.zeros(n ** 3)
    x[free] = np.linalg.solve(a, b.ravel()[free])
    assert np.abs(schwarz(b).ravel() - x).max() < 1e-12 * np.abs(x).max()


def test_fdm_kernel_against_a_loop(backend):
    """The reference fdm_apply against the sums written out, on fresh random data (one
    element's diagonal sum below its floor: that mode is dropped)."""
    rng = np.random.default_rng(3)
    E, m = 3, 5
    r = rng.standard_normal((E, m, m, m))
    sx, sy, sz = (rng.standard_normal((E, m, m)) for _ in range(3))
    lam = rng.random((E, 3, m))
    lam[1, :, 0] = 0.0
    coefficients = np.array([[1.3, 0.2, 1e-9], [0.7, 0.0, 1e-9], [2.0, 5.0, 1e-9]])
    got = backend.kernel("fdm_apply", size=m)(r, np.empty_like(r), sx, sy, sz, lam, coefficients)
    expected = np.zeros_like(r)
    for e in range(E):
        h1, h2, floor = coefficients[e]
        u = np.zeros((m, m, m))
        for c in range(m):
            for b in range(m):
                for a in range(m):
                    total = h1 * (lam[e, 0, a] + lam[e, 1, b] + lam[e, 2, c]) + h2
                    u[c, b, a] = 0.0 if total <= floor else sum(
                        sz[e, k, c] * sy[e, j, b] * sx[e, i, a] * r[e, k, j, i]
                        for k in range(m) for j in range(m) for i in range(m)) / total
        for k in range(m):
            for j in range(m):
                for i in range(m):
                    expected[e, k, j, i] = np.einsum("c,b,a,cba->", sz[e, k], sy[e, j], sx[e, i], u)
    assert np.abs(got - expected).max() < 1e-12 * np.abs(expected).max()


def periodic_case(elements, order, backend, dtype=None, periodic=(True, False, False)):
    """-lap u = f on a deformed box, x periodic, Dirichlet on the other sides."""
    mesh = box_mesh((elements,) * 3, periodic=periodic, deform=wave)
    dirichlet = mesh.face_neighbour < 0
    geometry = compute_geometry(mesh, order)
    level = Level.build(mesh, order, backend, dirichlet=dirichlet, geometry=geometry, dtype=dtype)
    x, y, z = geometry.coords
    f = np.cos(2 * np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * z) + y * z
    b = backend.asarray(geometry.mass * f, dtype=level.dtype)
    level.assembly.dssum(b)
    b *= level.mask
    return mesh, dirichlet, level, b


def test_symmetric_and_positive(backend):
    """<M x, y> = <x, M y> and <M x, x> > 0 in the assembled inner product."""
    mesh, _, level, _ = periodic_case(3, 4, backend)
    schwarz = AdditiveSchwarz(mesh, level)
    rng = np.random.default_rng(7)
    for _ in range(3):
        x, y = random_continuous(level, rng, backend), random_continuous(level, rng, backend)
        mx, my = schwarz(x), schwarz(y)
        assert abs(level.dot(mx, y) - level.dot(x, my)) < 1e-12 * np.sqrt(level.dot(mx, mx) * level.dot(y, y))
        assert level.dot(mx, x) > 0
    assert np.all(schwarz(x)[level.mask == 0] == 0)


def test_fewer_iterations_than_jacobi(backend):
    """MG-PCG to 1e-8 with Chebyshev-Schwarz against Chebyshev-Jacobi at the same degree
    (deformed 3^3 box, x periodic, N = 5; measured 6 and 9 at degree 3 on a similar case)."""
    mesh, dirichlet, level, b = periodic_case(3, 5, backend)
    counts = {}
    for smoother in ("jacobi", "schwarz"):
        mg = PMultigrid.build(mesh, backend, default_orders(5), dirichlet=dirichlet, finest=level, smoother=smoother)
        assert mg.symmetric
        result = pcg(level.apply, b, M=mg, dot=level.dot, tol=1e-8, maxiter=100)
        assert result.converged
        counts[smoother] = result.iterations
        solution = result.x if smoother == "jacobi" else solution
    print("iterations (degree 3):", counts)
    assert counts["schwarz"] < counts["jacobi"]
    assert np.abs(result.x - solution).max() < 1e-6 * np.abs(solution).max()


def test_float32_levels(backend):
    """The float32 preconditioner with Schwarz smoothing: FCG reaches 1e-10 in float64."""
    mesh, dirichlet, level, b = periodic_case(2, 4, backend)
    solver = EllipticSolver(mesh, level, {"precision": "float32", "smoother": "schwarz", "tolerance": 1e-10},
                            backend, None, dirichlet, 1.0, 0.0)
    smoother = solver.multigrid.smoothers[0].__wrapped__  # under the profile's timer
    assert isinstance(smoother.preconditioner, AdditiveSchwarz) and smoother.preconditioner.dtype == np.float32
    result = solver.solve(b)
    assert result.converged and result.iterations < 20


def test_pure_neumann(backend):
    """A singular problem (fully periodic, h2 = 0): EllipticSolver with null_space converges
    with Schwarz smoothing; a single all-Neumann element's constant mode is not inverted."""
    mesh, dirichlet, level, _ = periodic_case(2, 4, backend, periodic=(True, True, True))
    rng = np.random.default_rng(2)
    b = random_continuous(level, rng, backend)
    solver = EllipticSolver(mesh, level, {"smoother": "schwarz", "tolerance": 1e-9}, backend, None, dirichlet,
                            1.0, 0.0, null_space=True)
    result = solver.solve(b)
    assert result.converged and result.iterations < 20
    single = box_mesh((1, 1, 1))
    one = Level.build(single, 3, backend, h1=1.0, h2=0.0)
    out = AdditiveSchwarz(single, one)(np.ones(one.assembly.shape))
    w = gll_weights(3)
    mass = w[:, None, None] * w[None, :, None] * w[None, None, :]  # the element's, up to a factor
    # finite, and nothing along the constant (B-orthogonal to it): that mode's inverse is 0
    assert np.all(np.isfinite(out)) and abs((mass * out).sum()) < 1e-12 * (mass * abs(out)).sum()


def test_memory_estimate_counts_the_subdomains():
    """smoother = "schwarz" adds its (N+3)^3 arrays on every smoothed level (N = 3 and 1 of
    3 -> 1: the finest and none below but the coarsest)."""
    import lobatto
    from lobatto.machine.memory_items import RunLayout
    from lobatto.solvers.settings import SCHWARZ_EXT_ARRAYS, elliptic_memory

    case = lobatto.case_from_dict({"physics": {"equations": "poisson"}, "mesh": {"elements": [10, 10, 10]},
                                   "solver": {"smoother": "schwarz"}})
    layout = RunLayout(elements=1000, total_elements=1000, order=3, fields=1, box=(10, 10, 10))
    items = elliptic_memory(case.tables["solver"], layout, "solver")
    schwarz = [i for i in items if "schwarz" in i.what]
    assert len(schwarz) == 1 and "[3]" in schwarz[0].what
    assert schwarz[0].host + schwarz[0].device == pytest.approx(1000 * (SCHWARZ_EXT_ARRAYS * 216 + 3 * 36 + 64) * 8)


def test_memory_estimate_of_a_single_level_has_no_smoother():
    """levels = [N]: the coarse solve alone; neither coarser levels nor subdomains are counted
    (it was counted as the default halving)."""
    import lobatto
    from lobatto.machine.memory_items import RunLayout
    from lobatto.solvers.settings import elliptic_memory

    case = lobatto.case_from_dict({"physics": {"equations": "poisson"}, "mesh": {"elements": [10, 10, 10]},
                                   "discretization": {"order": 3}, "solver": {"smoother": "schwarz", "levels": [3]}})
    layout = RunLayout(elements=1000, total_elements=1000, order=3, fields=1, box=(10, 10, 10))
    assert elliptic_memory(case.tables["solver"], layout, "solver") == []


@pytest.mark.parametrize("solver, smoother, shown", [
    ({}, "schwarz", "fcg + multigrid [4, 2, 1] (schwarz smoother, cholesky coarse)"),
    ({"preconditioner": "jacobi"}, None, "fcg + jacobi"),
    ({"levels": [4]}, None, "fcg + multigrid [4] (no smoother: one level, cholesky coarse)"),
])
def test_a_run_names_the_smoother_that_ran(tmp_path, solver, smoother, shown):
    """summary.json's solver.smoother is the one that ran (null where the key has nothing to
    smooth), and the printed summary names it with the iterations (also under --quiet)."""
    import lobatto
    from lobatto.io.summary import format_summary_table

    s = "sin(pi*x)*sin(pi*y)*sin(pi*z)"
    case = lobatto.case_from_dict({"physics": {"equations": "poisson", "f": f"3*pi**2*{s}"},
                                   "mesh": {"elements": [2, 2, 2]}, "discretization": {"order": 4},
                                   "solver": {"smoother": "schwarz", "max_iterations": 400, **solver}}, "p")
    summary = lobatto.run(case, backend="cpu", output_dir=tmp_path / "p").summary
    assert summary["solver"]["smoother"] == smoother
    assert summary["solver"]["description"] == shown
    row = [line.split(None, 1) for line in format_summary_table(summary).splitlines() if line.startswith("  solver")]
    assert row == [["solver", f"{shown}: {summary['iterations']} iterations, relative residual "
                              f"{summary['relative_residual']:.3e}"]]


def test_a_flow_run_names_its_pressure_smoother(tmp_path):
    import lobatto
    from lobatto.io.summary import format_summary_table

    case = lobatto.case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.05},
        "mesh": {"elements": [2, 2, 2], "upper": [6.283185307179586] * 3, "periodic": [True] * 3},
        "discretization": {"order": 3}, "time": {"dt": 0.05, "t_end": 0.1},
        "solver": {"pressure": {"smoother": "schwarz"}},
        "initial": {"ux": "sin(x)*cos(y)*cos(z)", "uy": "-cos(x)*sin(y)*cos(z)"}}, "tgv")
    summary = lobatto.run(case, backend="cpu", output_dir=tmp_path / "tgv").summary
    flow = summary["navier_stokes"]
    assert (flow["pressure_smoother"], flow["pressure_coarse"]) == ("schwarz", "cholesky")
    assert ("pressure solve: fcg + multigrid [3, 1] (schwarz smoother, cholesky coarse)"
            in format_summary_table(summary))
