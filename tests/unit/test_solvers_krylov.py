"""PCG, flexible CG and flexible GMRES on matrices built here, against theory and dense solves;
the float32 preconditioner inside a float64 iteration."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.solvers import Jacobi, LowPrecision, fgmres, flexible_cg, pcg


def spd_with_spectrum(rng, eigenvalues):
    q, _ = np.linalg.qr(rng.standard_normal((len(eigenvalues), len(eigenvalues))))
    return (q * eigenvalues) @ q.T


def laplacian_2d(n):
    """5-point Laplacian on an n x n interior grid (Dirichlet), h = 1."""
    t = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    return np.kron(t, np.eye(n)) + np.kron(np.eye(n), t)


def matvec(a):
    return lambda x: a @ x


def cg_iteration_bound(kappa, tol):
    """Iterations after which ||r_k|| <= tol ||r_0|| is guaranteed: from
    ||e_k||_A <= 2 q^k ||e_0||_A, q = (sqrt(k)-1)/(sqrt(k)+1), and ||r||_2 / ||e||_A within
    [sqrt(lmin), sqrt(lmax)]."""
    q = (math.sqrt(kappa) - 1) / (math.sqrt(kappa) + 1)
    return math.ceil(math.log(2 * math.sqrt(kappa) / tol) / math.log(1 / q))


def true_relative_residual(a, x, b):
    return np.linalg.norm(b - a @ x) / np.linalg.norm(b)


def test_pcg_converges_within_the_chebyshev_bound_on_random_spd():
    rng = np.random.default_rng(1)
    n, kappa, tol = 300, 1e3, 1e-10
    a = spd_with_spectrum(rng, np.geomspace(1, kappa, n))
    b = rng.standard_normal(n)
    result = pcg(matvec(a), b, tol=tol, maxiter=1000)
    bound = cg_iteration_bound(kappa, tol)
    assert result.converged, result.reason
    assert result.iterations <= bound
    assert result.iterations >= bound // 4  # a spread spectrum: no shortcut through it
    assert true_relative_residual(a, result.x, b) <= 1.01 * tol
    assert np.allclose(result.x, np.linalg.solve(a, b), rtol=0, atol=1e-7 * np.abs(result.x).max())
    assert len(result.residuals) == result.iterations + 1
    assert result.residuals[-1] <= tol * np.linalg.norm(b)


@pytest.mark.parametrize("distinct", [3, 6, 9])
def test_cg_needs_as_many_iterations_as_distinct_eigenvalues(distinct):
    rng = np.random.default_rng(distinct)
    values = np.resize(np.linspace(1.0, 20.0, distinct), 40)  # each value repeated
    a = spd_with_spectrum(rng, values)
    b = rng.standard_normal(40)
    result = pcg(matvec(a), b, tol=1e-10)
    assert result.converged
    assert result.iterations == distinct
    assert true_relative_residual(a, result.x, b) < 1e-10


def test_cg_on_the_1d_laplacian_matches_its_condition_number():
    n, tol = 200, 1e-8
    a = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    lam = 2 - 2 * np.cos(np.arange(1, n + 1) * np.pi / (n + 1))
    b = np.random.default_rng(0).standard_normal(n)
    result = pcg(matvec(a), b, tol=tol)
    assert result.converged
    assert result.iterations <= min(n, cg_iteration_bound(lam[-1] / lam[0], tol))
    assert true_relative_residual(a, result.x, b) <= 1.01 * tol


def test_jacobi_pcg_undoes_a_bad_diagonal_scaling():
    rng = np.random.default_rng(2)
    a0 = laplacian_2d(15) + 0.1 * np.eye(225)
    scale = np.exp(rng.uniform(-4, 4, 225))
    a = scale[:, None] * a0 * scale[None, :]
    b = rng.standard_normal(225)
    jacobi = pcg(matvec(a), b, M=Jacobi(np.diag(a).copy()), tol=1e-8)
    plain = pcg(matvec(a), b, tol=1e-8, maxiter=5 * jacobi.iterations)
    assert jacobi.converged and not plain.converged
    assert true_relative_residual(a, jacobi.x, b) <= 1.01e-8
    exact = pcg(matvec(a), b, M=lambda r: np.linalg.solve(a, r), tol=1e-8)
    assert exact.iterations == 1


def test_flexible_cg_equals_pcg_with_a_fixed_spd_preconditioner():
    rng = np.random.default_rng(3)
    a = laplacian_2d(20) + np.diag(rng.uniform(0, 2, 400))
    m_inv = spd_with_spectrum(rng, rng.uniform(0.5, 2.0, 400))  # a fixed SPD preconditioner
    b = rng.standard_normal(400)
    x0 = rng.standard_normal(400)
    p = pcg(matvec(a), b, x0, M=matvec(m_inv), tol=1e-10)
    f = flexible_cg(matvec(a), b, x0, M=matvec(m_inv), tol=1e-10)
    assert p.converged and f.converged
    assert f.iterations == p.iterations
    np.testing.assert_allclose(f.residuals, p.residuals, rtol=1e-6)
    np.testing.assert_allclose(f.residuals[:20], p.residuals[:20], rtol=1e-11)
    assert np.max(np.abs(f.x - p.x)) <= 1e-10 * np.max(np.abs(p.x))


def test_flexible_cg_converges_with_a_varying_preconditioner():
    """An inner CG to a loose tolerance is a different (nonlinear) map at each application."""
    rng = np.random.default_rng(4)
    a = laplacian_2d(24)
    b = rng.standard_normal(a.shape[0])

    def inner(r):
        return pcg(matvec(a), r, tol=0.3, maxiter=8).x

    result = flexible_cg(matvec(a), b, M=inner, tol=1e-10, maxiter=200)
    assert result.converged, result.reason
    assert true_relative_residual(a, result.x, b) <= 1.01e-10
    assert result.iterations < pcg(matvec(a), b, tol=1e-10).iterations / 2


def convection_diffusion(n, peclet):
    """Central diffusion plus first-order upwind convection on an n x n grid: nonsymmetric."""
    t = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    c = peclet * (np.eye(n) - np.eye(n, k=-1))
    return np.kron(t, np.eye(n)) + np.kron(np.eye(n), t + c)


@pytest.mark.parametrize("restart", [10, 40, 400])
def test_fgmres_solves_a_nonsymmetric_system(restart):
    rng = np.random.default_rng(5)
    a = convection_diffusion(20, peclet=3.0)
    assert np.abs(a - a.T).max() > 1
    b = rng.standard_normal(400)
    result = fgmres(matvec(a), b, M=Jacobi(np.diag(a).copy()), tol=1e-10, restart=restart, maxiter=2000)
    assert result.converged, result.reason
    assert true_relative_residual(a, result.x, b) <= 1.01e-10
    np.testing.assert_allclose(result.x, np.linalg.solve(a, b), rtol=0, atol=1e-8 * np.abs(result.x).max())
    residuals = np.array(result.residuals)
    assert len(residuals) == result.iterations + 1
    assert np.all(np.diff(residuals) <= 1e-12 * residuals[0])  # GMRES minimises the residual: never grows


def test_fgmres_needs_as_many_iterations_as_distinct_eigenvalues():
    rng = np.random.default_rng(6)
    v = rng.standard_normal((30, 30)) + 3 * np.eye(30)
    values = np.repeat([1.0, 2.0, 3.5, -1.5, 5.0], 6)
    a = v @ np.diag(values) @ np.linalg.inv(v)  # nonsymmetric, diagonalisable, 5 distinct eigenvalues
    b = rng.standard_normal(30)
    result = fgmres(matvec(a), b, tol=1e-9, restart=30)
    assert result.converged
    assert result.iterations == 5
    assert true_relative_residual(a, result.x, b) < 1e-9


def test_fgmres_takes_a_varying_preconditioner():
    rng = np.random.default_rng(7)
    a = convection_diffusion(16, peclet=2.0)
    b = rng.standard_normal(256)

    def inner(r):
        return fgmres(matvec(a), r, tol=0.2, restart=5, maxiter=5).x

    result = fgmres(matvec(a), b, M=inner, tol=1e-10, restart=20)
    assert result.converged, result.reason
    assert true_relative_residual(a, result.x, b) <= 1.01e-10


@pytest.mark.parametrize("solver", [pcg, flexible_cg, fgmres])
def test_stopping_reasons(solver):
    a = laplacian_2d(10)
    b = np.ones(100)
    short = solver(matvec(a), b, tol=1e-12, maxiter=3)
    assert not short.converged and short.iterations == 3
    assert "not converged in 3 iterations" in short.reason and "relative residual" in short.reason
    assert f"{short.relative_residual:.3e}" in short.reason
    zero = solver(matvec(a), np.zeros(100))
    assert zero.converged and zero.iterations == 0 and not zero.x.any()
    exact = np.linalg.solve(a, b)
    warm = solver(matvec(a), b, x0=exact, tol=1e-10)
    assert warm.converged and warm.iterations == 0
    nan = solver(matvec(a), b, M=lambda r: r * np.nan)
    assert not nan.converged and ("not finite" in nan.reason or "breakdown" in nan.reason)
    with pytest.raises(ValueError, match="tol"):
        solver(matvec(a), b, tol=-1.0)


def test_cg_reports_an_indefinite_operator():
    a = np.diag(np.concatenate([np.linspace(1, 2, 10), [-1.0]]))
    result = pcg(matvec(a), np.ones(11), tol=1e-12)
    assert not result.converged
    assert "not positive definite" in result.reason


def test_float32_preconditioner_inside_a_float64_iteration_reaches_float64_tolerance():
    rng = np.random.default_rng(8)
    a = laplacian_2d(20) + np.diag(rng.uniform(0, 3, 400))
    b = rng.standard_normal(400)
    diagonal = np.diag(a).copy()
    m32 = Jacobi(diagonal.astype(np.float32))
    calls = []

    def spy(r):
        calls.append(r.dtype)
        return m32(r)

    low = LowPrecision(spy, NumpyBackend())
    result = flexible_cg(matvec(a), b, M=low, tol=1e-13)
    assert result.converged, result.reason
    assert result.x.dtype == np.float64 and set(calls) == {np.dtype(np.float32)}
    assert true_relative_residual(a, result.x, b) < 1.1e-13  # far below float32's 6e-8
    full = flexible_cg(matvec(a), b, M=Jacobi(diagonal), tol=1e-13)
    assert abs(result.iterations - full.iterations) <= 2


def test_float32_preconditioner_is_exact_under_power_of_two_scaling_and_keeps_tiny_residuals():
    rng = np.random.default_rng(9)
    diagonal = rng.uniform(1, 2, 1000)
    low = LowPrecision(Jacobi(diagonal.astype(np.float32)), NumpyBackend())
    r = rng.standard_normal(1000)
    z = low(r)
    assert z.dtype == np.float64
    np.testing.assert_array_equal(low(r * 2.0**100), z * 2.0**100)
    np.testing.assert_array_equal(low(r * 2.0**-140), z * 2.0**-140)
    tiny = r * 1e-47  # below float32's smallest subnormal number (1.4e-45): a plain cast flushes it
    assert np.count_nonzero(tiny.astype(np.float32)) == 0
    np.testing.assert_allclose(low(tiny), tiny / diagonal, rtol=1e-6)
