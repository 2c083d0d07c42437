"""solvers.elliptic: singular problems (null_space=True) on a pure-Neumann curved box and a
triply periodic curved box against manufactured solutions, the absolute tolerance, a zero
right-hand side, and VectorHelmholtzSolver (k components in one Jacobi-PCG) against separate
scalar solves, a polynomial solution and a freshly built solver after set_coefficients."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lobatto.backends import get_backend
from lobatto.errors import InputError, SolverError
from lobatto.mesh.box import box_mesh
from lobatto.mesh.geometry import compute_geometry
from lobatto.solvers import Jacobi, pcg
from lobatto.solvers.elliptic import EllipticSolver, VectorHelmholtzSolver
from lobatto.solvers.multigrid import Level
from lobatto.solvers.profile import Profile

TWO_PI = 2 * np.pi


def cube_deform(x, y, z):
    """Curves every element, keeps the unit cube (zero on its sides)."""
    s = np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * z)
    return 0.08 * s, 0.06 * s * np.cos(np.pi * x), 0.05 * s


def periodic_deform(x, y, z):
    """Curves every element, periodic over the unit cube (wrapped points still coincide)."""
    a, b, c = TWO_PI * x, TWO_PI * y, TWO_PI * z
    return 0.02 * np.sin(b) * np.sin(c), 0.015 * np.sin(a + c), 0.02 * np.cos(a) * np.sin(b)


@pytest.fixture(scope="module")
def backend():
    return get_backend("cpu")


def singular_problem(backend, periodic: bool):
    """-lap u = f with zero-mean u: cos(pi x) cos(pi y) cos(pi z) on the curved unit cube with
    du/dn = 0 on every side (2^3 elements, N = 7), or sin(2 pi x) cos(2 pi y) + cos(2 pi z) / 2
    on the curved triply periodic unit cube (3^3 elements, N = 6). Both integrate to zero over
    the domain (the periodic deformation maps the torus onto itself)."""
    if periodic:
        mesh = box_mesh((3, 3, 3), periodic=(True, True, True), deform=periodic_deform)
        order = 6
    else:
        mesh = box_mesh((2, 2, 2), boundary="neumann", deform=cube_deform)
        order = 7
    geometry = compute_geometry(mesh, order)
    level = Level.build(mesh, order, backend, geometry=geometry)
    x, y, z = geometry.coords
    if periodic:
        exact = np.sin(TWO_PI * x) * np.cos(TWO_PI * y) + 0.5 * np.cos(TWO_PI * z)
        f = 2 * TWO_PI**2 * np.sin(TWO_PI * x) * np.cos(TWO_PI * y) + 0.5 * TWO_PI**2 * np.cos(TWO_PI * z)
    else:
        exact = np.cos(np.pi * x) * np.cos(np.pi * y) * np.cos(np.pi * z)
        f = 3 * np.pi**2 * exact
    b = level.assembly.dssum(backend.asarray(geometry.mass * f))
    return mesh, level, b, exact, geometry


@pytest.fixture(scope="module")
def neumann(backend):
    return singular_problem(backend, periodic=False)


@pytest.fixture(scope="module")
def periodic(backend):
    return singular_problem(backend, periodic=True)


def solver_for(mesh, level, backend, null_space=True, **settings):
    settings = {"tolerance": 1e-10, "max_iterations": 1000, **settings}
    return EllipticSolver(mesh, level, settings, backend, None, None, 1.0, 0.0, Profile(backend),
                          null_space=null_space)


# measured iteration counts to 1e-10 (docs/elliptic.md, "Singular problems"), with a little room
NEUMANN_ITERATIONS = {("fcg", "multigrid"): 12, ("fcg", "jacobi"): 220}
PERIODIC_ITERATIONS = {("fcg", "multigrid"): 10, ("cg", "multigrid"): 10, ("fcg", "jacobi"): 140}


@pytest.mark.parametrize("method,preconditioner", list(NEUMANN_ITERATIONS))
def test_pure_neumann_curved_box(backend, neumann, method, preconditioner):
    mesh, level, b, exact, geometry = neumann
    # an inconsistent part: the Galerkin b of a constant source, which no u can balance
    constant_source = level.assembly.dssum(backend.asarray(0.7 * geometry.mass))
    solver = solver_for(mesh, level, backend, method=method, preconditioner=preconditioner)
    result = solver.solve(b + constant_source)
    assert result.converged, result.reason
    assert result.iterations <= NEUMANN_ITERATIONS[method, preconditioner]
    x = np.asarray(result.x)
    # spectrally small: 2.8e-6 at N = 7 on 2^3 curved elements (a constant shift would be O(1))
    assert np.abs(x - exact).max() < 5e-6
    assert abs(solver.null_space.mean(x)) < 1e-14
    # A x = consistent b: the constant source went entirely into the removed part
    residual = level.apply(result.x) - b
    assert level.assembly.norm(residual) <= 2e-10 * level.assembly.norm(b)
    # and the sum over distinct points of the raw b was spectrally small already
    assert abs(solver.null_space.total(b)) < 1e-9 * level.assembly.norm(b)


@pytest.mark.parametrize("method,preconditioner", list(PERIODIC_ITERATIONS))
def test_triply_periodic_curved_box(backend, periodic, method, preconditioner):
    mesh, level, b, exact, _ = periodic
    solver = solver_for(mesh, level, backend, method=method, preconditioner=preconditioner)
    if preconditioner == "multigrid":
        assert solver.coarse_solve == "cholesky" and solver.level_orders == [6, 3, 1]
    result = solver.solve(b)
    assert result.converged, result.reason
    assert result.iterations <= PERIODIC_ITERATIONS[method, preconditioner]
    x = np.asarray(result.x)
    assert np.abs(x - exact).max() < 3e-5  # 1.8e-5 at N = 6 on 3^3 curved periodic elements
    assert abs(solver.null_space.mean(x)) < 1e-14


def test_singular_variants_agree(backend, periodic):
    """An iterative coarse solve on the singular coarse matrix, float32 cycles and GMRES give
    the same zero-mean solution."""
    mesh, level, b, _, _ = periodic
    reference = np.asarray(solver_for(mesh, level, backend, tolerance=1e-12).solve(b).x)
    for settings in ({"coarse": "pcg", "coarse_tolerance": 1e-3}, {"precision": "float32"}, {"method": "gmres"}):
        solver = solver_for(mesh, level, backend, tolerance=1e-12, **settings)
        result = solver.solve(b)
        assert result.converged and result.iterations <= 14, (settings, result.reason)
        assert np.abs(np.asarray(result.x) - reference).max() < 1e-10, settings


def test_singular_problem_errors(backend, periodic):
    mesh, level, b, _, _ = periodic
    with pytest.raises(SolverError, match="not positive definite"):
        solver_for(mesh, level, backend, null_space=False)
    walls = box_mesh((2, 2, 2))
    fixed = Level.build(walls, 3, backend, dirichlet=walls.face_neighbour < 0)
    with pytest.raises(InputError, match="Dirichlet points"):
        EllipticSolver(walls, fixed, {}, backend, None, walls.face_neighbour < 0, 1.0, 0.0, null_space=True)
    screened = Level.build(mesh, 2, backend, h2=0.5)
    with pytest.raises(InputError, match="h2 is not zero"):
        EllipticSolver(mesh, screened, {}, backend, None, None, 1.0, 0.5, null_space=True)
    with pytest.raises(InputError, match="absolute_tolerance"):
        solver_for(mesh, level, backend, absolute_tolerance=-1.0)


def test_absolute_tolerance(backend, periodic):
    mesh, level, b, _, _ = periodic
    bnorm = level.assembly.norm(b)
    relative = solver_for(mesh, level, backend, tolerance=1e-10).solve(b)
    # below tolerance * ||b||: the relative target decides, the same iterations
    same = solver_for(mesh, level, backend, tolerance=1e-10, absolute_tolerance=1e-12 * bnorm).solve(b)
    assert same.iterations == relative.iterations
    # above: it decides, and the solve stops at the first residual below it
    atol = 1e-4 * bnorm
    loose = solver_for(mesh, level, backend, tolerance=1e-10, absolute_tolerance=atol).solve(b)
    assert loose.converged and loose.iterations < relative.iterations
    assert loose.residuals[-1] <= atol < loose.residuals[-2]
    # a start within the absolute tolerance is the answer: 0 iterations
    again = solver_for(mesh, level, backend, tolerance=1e-10, absolute_tolerance=atol).solve(b, relative.x)
    assert again.iterations == 0 and again.converged
    np.testing.assert_allclose(np.asarray(again.x), np.asarray(relative.x), rtol=0, atol=1e-15)


@pytest.mark.parametrize("null_space", [True, False])
def test_zero_right_hand_side(backend, periodic, null_space):
    mesh, level, _, _, _ = periodic
    if null_space:
        solver = solver_for(mesh, level, backend, projection=4)
    else:
        solver = EllipticSolver(mesh, Level.build(mesh, 6, backend, h2=1.0), {"projection": 4}, backend, None, None,
                                1.0, 1.0)
    zero = backend.zeros(level.assembly.shape)
    start = backend.asarray(np.random.default_rng(3).standard_normal(level.assembly.shape))
    for x0 in (None, start):
        result = solver.solve(zero, x0)
        assert result.converged and result.iterations == 0, result.reason
        assert not np.any(np.asarray(result.x)), "x must be 0"
        assert result.relative_residual == 0.0 and result.reference_norm == 0.0
    assert len(solver.projection) == 0  # nothing learned from a zero solve


# ---- VectorHelmholtzSolver ------------------------------------------------------------------

def velocity_level(backend, elements=(2, 2, 2), order=5, h1=0.05, h2=30.0, deform=cube_deform, upper=(1, 1, 1)):
    """A Level with Dirichlet points on xmin, xmax, ymin and zmax (the rest natural)."""
    mesh = box_mesh(elements, upper=upper, deform=deform)
    if deform is cube_deform:
        dirichlet = (mesh.face_neighbour < 0) & np.isin(np.arange(6), [0, 1, 2, 5])[None, :]
    else:
        dirichlet = mesh.face_neighbour < 0
    geometry = compute_geometry(mesh, order)
    return Level.build(mesh, order, backend, dirichlet=dirichlet, h1=h1, h2=h2, geometry=geometry), geometry


def random_rhs(level, backend, components, seed):
    rng = np.random.default_rng(seed)
    b = backend.asarray(rng.standard_normal((components,) + level.assembly.shape))
    level.assembly.dssum(b)
    return b * level.mask


def test_vector_solve_equals_separate_scalar_solves(backend):
    level, _ = velocity_level(backend)
    b = random_rhs(level, backend, 3, seed=1)
    b[1] *= 1e-3  # components of different sizes share one CG
    profile = Profile(backend)
    solver = VectorHelmholtzSolver(level, tolerance=1e-12, max_iterations=500, profile=profile)
    result = solver.solve(b)
    assert result.converged, result.reason
    assert result.x.shape == b.shape
    # one gather-scatter per application for the three components, one element operator each;
    # M once at the start and after every iteration (fused pcg: r.r and r.Mr in one reduction)
    assert profile.calls["assembly"] == result.iterations
    assert profile.calls["operator"] == 3 * result.iterations
    assert profile.calls["preconditioner"] == result.iterations + 1
    jacobi = Jacobi(level.assembly.dssum(level.operator.diagonal_local()), level.mask)
    for c in range(3):
        alone = pcg(level.apply, b[c], M=jacobi, dot=level.dot, tol=1e-13, maxiter=500)
        assert alone.converged
        scale = np.abs(np.asarray(alone.x)).max()
        # the joint CG's tolerance is relative to all of b: the small component gets 1e-12 of
        # the largest, measured 1e-15 relative for the large ones
        assert np.abs(np.asarray(result.x[c] - alone.x)).max() <= 1e-9 * np.abs(np.asarray(result.x)).max(), c
        if c != 1:
            assert np.abs(np.asarray(result.x[c] - alone.x)).max() <= 1e-11 * scale, c


def test_vector_solve_reproduces_a_polynomial(backend):
    """On an axis-aligned box, per-variable degree <= N - 1 is integrated exactly: x = u - u_D
    to round-off, with the Dirichlet data lifted (u_D on every side)."""
    order, h1, h2 = 5, 0.3, 7.0
    level, geometry = velocity_level(backend, elements=(2, 3, 2), order=order, h1=h1, h2=h2, deform=None,
                                     upper=(1.0, 1.5, 0.8))
    x, y, z = geometry.coords
    exact = np.stack([x**2 * y - z**3 + 1, x * y * z + y**4, (1 + x) ** 2 * (y - z) ** 2])
    laplacian = np.stack([2 * y - 6 * z, 12 * y**2, 2 * (y - z) ** 2 + 4 * (1 + x) ** 2])
    f = h2 * exact - h1 * laplacian
    mask = np.asarray(level.mask)
    lifting = backend.asarray(exact * (1 - mask))
    b = backend.asarray(geometry.mass * f)
    for c in range(3):
        b[c] -= level.operator.apply_local(lifting[c])
    level.assembly.dssum(b)
    b *= level.mask
    start = backend.asarray(exact + 0.1)  # masked by the solver: Dirichlet points stay at u_D
    result = VectorHelmholtzSolver(level, tolerance=1e-14, max_iterations=500).solve(b, start)
    assert result.converged, result.reason
    assert np.abs(np.asarray(result.x + lifting) - exact).max() < 1e-12 * np.abs(exact).max()


def test_set_coefficients_is_a_new_solver(backend):
    level, _ = velocity_level(backend, h1=0.5, h2=3.0)
    b = random_rhs(level, backend, 3, seed=2)
    old = VectorHelmholtzSolver(level, tolerance=1e-10, max_iterations=500)
    before = old.solve(b)
    old.set_coefficients(0.02, 40.0)  # a new dt and viscosity
    np.testing.assert_allclose(np.asarray(old.jacobi.diagonal),
                               np.asarray(level.assembly.dssum(level.operator.diagonal_local())), rtol=1e-13)
    after = old.solve(b)
    fresh = VectorHelmholtzSolver(level, tolerance=1e-10, max_iterations=500).solve(b)
    assert level.operator.h1 == 0.02 and level.operator.h2 == 40.0
    assert after.converged and after.iterations == fresh.iterations
    np.testing.assert_array_equal(np.asarray(after.x), np.asarray(fresh.x))
    assert after.iterations < before.iterations  # mass-dominated: better conditioned
    assert np.abs(np.asarray(after.x - before.x)).max() > 0.1 * np.abs(np.asarray(before.x)).max()
    zero = VectorHelmholtzSolver(level).solve(b * 0, b)
    assert zero.converged and zero.iterations == 0 and not np.any(np.asarray(zero.x))


def test_vector_solver_errors(backend):
    level, _ = velocity_level(backend, order=2)
    solver = VectorHelmholtzSolver(level)
    with pytest.raises(InputError, match=r"\(k, E, n, n, n\)"):
        solver.solve(backend.zeros(level.assembly.shape))
    with pytest.raises(InputError, match="x0"):
        solver.solve(backend.zeros((3,) + level.assembly.shape), backend.zeros((2,) + level.assembly.shape))
    with pytest.raises(InputError, match="h1 > 0"):
        solver.set_coefficients(0.0, 1.0)
    with pytest.raises(InputError, match="h2 >= 0"):
        solver.set_coefficients(1.0, -math.inf)
    variable = Level.build(box_mesh((1, 1, 1)), 2, backend, h1=np.ones((1, 3, 3, 3)), h2=1.0)
    with pytest.raises(InputError, match="scalars"):
        VectorHelmholtzSolver(variable)
