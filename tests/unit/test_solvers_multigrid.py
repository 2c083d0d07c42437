"""p-multigrid on the operators package: a symmetric V-cycle, iteration counts on a Poisson
problem with a manufactured solution on a deformed box (target: <= 20 at N = 7, growing by
<= 3 when the element count grows 8x), transfers, the dense coarse matrix, float32 cycles."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.backends import get_backend
from lobatto.errors import SolverError
from lobatto.mesh.box import box_mesh
from lobatto.mesh.geometry import compute_geometry
from lobatto.solvers import LowPrecision, flexible_cg, pcg
from lobatto.solvers.coarse import DenseCoarseSolve, IterativeCoarseSolve, assembled_matrix
from lobatto.solvers.multigrid import Level, PMultigrid, Transfer, default_orders


def deform(x, y, z):
    """Curves every element but keeps the unit cube (zero on its sides)."""
    s = np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * z)
    return 0.08 * s, 0.06 * s * np.cos(np.pi * x), 0.05 * s


def poisson(elements, order, backend, dtype=None):
    """-lap u = f on the deformed unit cube, u = sin(pi x) sin(pi y) sin(pi z) (zero on the
    sides): (mesh, dirichlet faces, fine Level, assembled right-hand side, exact u)."""
    mesh = box_mesh((elements,) * 3, deform=deform)
    dirichlet = mesh.face_neighbour < 0
    geometry = compute_geometry(mesh, order)
    level = Level.build(mesh, order, backend, dirichlet=dirichlet, geometry=geometry, dtype=dtype)
    x, y, z = geometry.coords
    exact = np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * z)
    b = backend.asarray(geometry.mass * 3 * np.pi**2 * exact, dtype=level.dtype)
    level.assembly.dssum(b)
    b *= level.mask
    return mesh, dirichlet, level, b, exact


def random_continuous(level, rng, backend):
    """A random vector of the level's space: one value per global point, zero where fixed."""
    values = rng.standard_normal(level.assembly.num_global_points)
    return backend.asarray(values[level.assembly.ids], dtype=level.dtype) * level.mask


@pytest.fixture(scope="module")
def backend():
    return get_backend("cpu")


@pytest.fixture(scope="module")
def counts(backend):
    """Iterations of MG-PCG and Jacobi-PCG to 1e-8 at N = 7 on 2^3 and 4^3 elements."""
    found = {}
    for elements in (2, 4):
        mesh, dirichlet, level, b, exact = poisson(elements, 7, backend)
        mg = PMultigrid.build(mesh, backend, default_orders(7), dirichlet=dirichlet, finest=level)
        result = pcg(level.apply, b, M=mg, dot=level.dot, tol=1e-8, maxiter=100)
        jacobi = pcg(level.apply, b, M=level.jacobi(), dot=level.dot, tol=1e-8, maxiter=2000)
        found[elements] = (result, jacobi, exact, mg)
    return found


def test_pmg_pcg_meets_the_iteration_targets(counts):
    (small, small_jacobi, _, mg), (large, large_jacobi, exact, _) = counts[2], counts[4]
    assert [level.order for level in mg.levels] == [7, 3, 1]
    assert isinstance(mg.coarse, DenseCoarseSolve) and mg.symmetric
    for result in (small, large, small_jacobi, large_jacobi):
        assert result.converged, result.reason
        assert result.relative_residual <= 1e-8
    assert large.iterations <= 20
    assert large.iterations - small.iterations <= 3
    # Jacobi-PCG's count roughly doubles with the element count per direction
    assert large_jacobi.iterations > 1.6 * small_jacobi.iterations > 5 * small.iterations
    assert np.abs(np.asarray(large.x) - exact).max() < 1e-7  # and it solved the PDE


def test_v_cycle_is_a_symmetric_positive_definite_preconditioner(counts, backend):
    mg = counts[2][3]
    level = mg.levels[0]
    rng = np.random.default_rng(31)
    for _ in range(3):
        x, y = random_continuous(level, rng, backend), random_continuous(level, rng, backend)
        xmy, ymx = level.dot(x, mg(y)), level.dot(y, mg(x))
        assert abs(xmy - ymx) <= 1e-12 * max(abs(xmy), level.dot(x, mg(x)))
        assert level.dot(x, mg(x)) > 0
    # and a linear map
    np.testing.assert_allclose(mg(2 * x - y), 2 * mg(x) - mg(y), rtol=0, atol=1e-12 * np.abs(mg(x)).max())


def test_restriction_is_the_transpose_of_prolongation_and_prolongation_is_exact(backend):
    mesh, dirichlet, fine, _, _ = poisson(2, 5, backend)
    coarse = Level.build(mesh, 2, backend, dirichlet=dirichlet)
    transfer = Transfer(backend, fine, coarse)
    rng = np.random.default_rng(32)
    r, e = random_continuous(fine, rng, backend), random_continuous(coarse, rng, backend)
    lhs, rhs = fine.dot(r, transfer.prolong(e)), coarse.dot(transfer.restrict(r), e)
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs)
    # a quadratic on the coarse grid is the same quadratic on the fine one
    c = compute_geometry(box_mesh((2, 2, 2)), 2).coords
    f = compute_geometry(box_mesh((2, 2, 2)), 5).coords

    def quadratic(p):
        return 1 + p[0] - 2 * p[1] * p[2] + 3 * p[0] ** 2 - p[2] ** 2

    np.testing.assert_allclose(transfer.prolong(backend.asarray(quadratic(c))), quadratic(f), atol=1e-13)


def test_dense_coarse_matrix_is_the_assembled_operator_and_its_diagonal_is_jacobis(backend):
    mesh, dirichlet, level, _, _ = poisson(3, 2, backend)
    matrix, fixed = assembled_matrix(level.operator, level.assembly)
    assert matrix.shape == (level.assembly.num_global_points,) * 2 == (7**3,) * 2
    assert fixed.sum() == 7**3 - 5**3
    assert np.abs(matrix - matrix.T).max() < 1e-13 * np.abs(matrix).max()
    assert np.linalg.eigvalsh(matrix).min() > 0
    rng = np.random.default_rng(33)
    values = rng.standard_normal(matrix.shape[0]) * ~fixed
    u = backend.asarray(values[level.assembly.ids])
    np.testing.assert_allclose(level.apply(u), (matrix @ values)[level.assembly.ids], atol=1e-12 * np.abs(matrix).max())
    free = ~fixed[level.assembly.ids]
    np.testing.assert_allclose(level.jacobi().diagonal[free], np.diag(matrix)[level.assembly.ids][free], rtol=1e-13)
    solve = DenseCoarseSolve(level.operator, level.assembly)
    rhs = backend.asarray((matrix @ values)[level.assembly.ids])
    np.testing.assert_allclose(solve(rhs), u, atol=1e-12 * np.abs(values).max())


def test_smoother_eigenvalue_estimate_on_the_spectral_element_operator(backend):
    mesh, dirichlet, level, _, _ = poisson(2, 4, backend)
    matrix, fixed = assembled_matrix(level.operator, level.assembly)
    free = np.flatnonzero(~fixed)
    a = matrix[np.ix_(free, free)]
    s = 1 / np.sqrt(np.diag(a))
    largest = np.linalg.eigvalsh(s[:, None] * a * s[None, :])[-1]  # of D^-1 A
    mg = PMultigrid.build(mesh, backend, (4, 2, 1), dirichlet=dirichlet, finest=level)
    estimate = mg.smoothers[0].estimated_max_eigenvalue
    assert 0.97 * largest <= estimate <= largest * (1 + 1e-12)
    assert mg.smoothers[0].lmax == pytest.approx(1.1 * estimate) and mg.smoothers[0].lmin == pytest.approx(0.1 * estimate)


def test_iterative_coarse_solve_with_flexible_cg(backend):
    mesh, dirichlet, level, b, _ = poisson(2, 7, backend)
    mg = PMultigrid.build(mesh, backend, (7, 3, 1), dirichlet=dirichlet, finest=level, coarse="pcg", coarse_tol=1e-2)
    assert isinstance(mg.coarse, IterativeCoarseSolve) and not mg.symmetric
    result = flexible_cg(level.apply, b, M=mg, dot=level.dot, tol=1e-8)
    assert result.converged and result.iterations <= 20
    assert mg.coarse.iterations and max(mg.coarse.iterations) < 200


def test_float32_cycles_inside_a_float64_flexible_cg(backend, counts):
    mesh, dirichlet, level, b, exact = poisson(2, 7, backend)
    mg32 = PMultigrid.build(mesh, backend, (7, 3, 1), dirichlet=dirichlet, dtype=np.float32)
    assert all(lv.operator.geometric_factors.dtype == np.float32 for lv in mg32.levels)
    assert mg32.coarse.inverse_factor.dtype == np.float32
    result = flexible_cg(level.apply, b, M=LowPrecision(mg32, backend), dot=level.dot, tol=1e-11)
    assert result.converged, result.reason
    assert result.relative_residual <= 1e-11  # far below float32's 6e-8: the outer iteration is float64
    assert result.x.dtype == np.float64
    float64_iterations = pcg(level.apply, b, M=counts[2][3], dot=level.dot, tol=1e-11).iterations
    assert result.iterations <= float64_iterations + 2


def test_variable_coefficients_and_a_mass_term(backend):
    mesh = box_mesh((2, 2, 2), deform=deform)
    dirichlet = np.zeros((8, 6), dtype=bool)
    dirichlet[:, 0] = mesh.face_neighbour[:, 0] < 0  # one side fixed, Neumann elsewhere
    geometry = compute_geometry(mesh, 6)
    x, y, z = geometry.coords
    h1 = 1 + 0.5 * np.sin(2 * x) * np.cos(y + z)
    level = Level.build(mesh, 6, backend, dirichlet=dirichlet, h1=h1, h2=2.0, geometry=geometry)
    mg = PMultigrid.build(mesh, backend, default_orders(6), dirichlet=dirichlet, h1=h1, h2=2.0, finest=level)
    assert [lv.order for lv in mg.levels] == [6, 3, 1]
    b = backend.asarray(geometry.mass * np.cos(x + 2 * y))
    level.assembly.dssum(b)
    b *= level.mask
    result = pcg(level.apply, b, M=mg, dot=level.dot, tol=1e-8)
    assert result.converged and result.iterations <= 15


def test_bad_settings_are_refused(backend):
    mesh = box_mesh((2, 2, 2))
    with pytest.raises(ValueError, match="decrease"):
        PMultigrid.build(mesh, backend, (3, 3, 1))
    with pytest.raises(ValueError, match="coarse"):
        PMultigrid.build(mesh, backend, (3, 1), coarse="lu")
    with pytest.raises(SolverError, match="null space"):
        PMultigrid.build(mesh, backend, (3, 1))  # pure Neumann, h2 = 0: singular
    assert default_orders(7) == (7, 3, 1) and default_orders(8) == (8, 4, 2, 1) and default_orders(1) == (1,)


def test_cholesky_above_the_dense_limit_is_an_input_error(backend, monkeypatch):
    """coarse = "cholesky" with a coarse level above DENSE_LIMIT points: an error naming the key
    and the way out (it was a ValueError with a traceback); "auto" takes another solve there."""
    import lobatto.solvers.multigrid as multigrid
    from lobatto.errors import InputError

    monkeypatch.setattr(multigrid, "DENSE_LIMIT", 20)  # the 2^3 box at order 1 has 27 points
    mesh, dirichlet, level, _, _ = poisson(2, 3, backend)
    with pytest.raises(InputError, match=r'\[solver\] coarse = "cholesky": the coarse level has 27 points, above'):
        PMultigrid.build(mesh, backend, (3, 1), dirichlet=dirichlet, finest=level, coarse="cholesky")
    mg = PMultigrid.build(mesh, backend, (3, 1), dirichlet=dirichlet, finest=level, coarse="auto")
    assert not isinstance(mg.coarse, DenseCoarseSolve)
