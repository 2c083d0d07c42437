"""A-conjugate projection onto previous solutions, on matrices built here."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.solvers import SolutionProjection, pcg


def laplacian_2d(n):
    t = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    return np.kron(t, np.eye(n)) + np.kron(np.eye(n), t)


def solve_sequence(a, rhs, projection, tol=1e-10):
    results = []
    for b in rhs:
        x_bar, r = projection.project(b)
        result = pcg(lambda x: a @ x, r, tol=0.0, atol=tol * np.linalg.norm(b))  # relative to b, not to r
        x = projection.update(x_bar, result.x)
        results.append((x, result))
    return results


def a_orthonormality_error(a, projection):
    basis = np.stack(projection.basis)
    return np.abs(basis @ a @ basis.T - np.eye(len(basis))).max()


def test_second_solve_of_a_nearby_rhs_starts_from_a_much_smaller_residual():
    rng = np.random.default_rng(21)
    a = laplacian_2d(20) + 0.05 * np.eye(400)
    b0 = rng.standard_normal(400)
    projection = SolutionProjection(lambda x: a @ x)
    rhs = [b0 + 1e-3 * k * rng.standard_normal(400) for k in range(4)]
    (x0, first), (x1, second), *_ = solve_sequence(a, rhs, projection)
    assert first.residuals[0] == pytest.approx(np.linalg.norm(rhs[0]))
    assert second.residuals[0] < 1e-2 * np.linalg.norm(rhs[1])
    assert second.iterations < first.iterations
    for x, b in ((x0, rhs[0]), (x1, rhs[1])):
        assert np.linalg.norm(b - a @ x) <= 1.01e-10 * np.linalg.norm(b)


def test_projection_is_the_a_norm_best_approximation_in_the_span():
    rng = np.random.default_rng(22)
    a = laplacian_2d(12) + np.diag(rng.uniform(0, 1, 144))
    projection = SolutionProjection(lambda x: a @ x)
    rhs = [rng.standard_normal(144) for _ in range(5)]
    solutions = [x for x, _ in solve_sequence(a, rhs, projection, tol=1e-13)]
    assert len(projection) == 5
    assert a_orthonormality_error(a, projection) < 1e-10
    # a combination of earlier right-hand sides is solved by the projection alone
    weights = rng.standard_normal(5)
    b = sum(w * r for w, r in zip(weights, rhs))
    x_bar, residual = projection.project(b)
    np.testing.assert_allclose(residual, b - a @ x_bar, atol=1e-12 * np.linalg.norm(b))
    assert np.linalg.norm(residual) < 1e-10 * np.linalg.norm(b)
    np.testing.assert_allclose(x_bar, sum(w * x for w, x in zip(weights, solutions)), atol=1e-9)
    # for any other b the projection's error is A-orthogonal to the basis (Galerkin condition)
    b = rng.standard_normal(144)
    x_bar, _ = projection.project(b)
    error = np.linalg.solve(a, b) - x_bar
    assert np.abs(np.stack(projection.basis) @ a @ error).max() < 1e-10 * np.linalg.norm(error)


def test_a_full_basis_restarts_from_the_latest_solution():
    rng = np.random.default_rng(23)
    a = laplacian_2d(10) + np.eye(100)
    projection = SolutionProjection(lambda x: a @ x, capacity=3)
    rhs = [rng.standard_normal(100) for _ in range(5)]
    sizes = []
    for b in rhs:
        solve_sequence(a, [b], projection)
        sizes.append(len(projection))
    assert sizes == [1, 2, 3, 1, 2]
    assert a_orthonormality_error(a, projection) < 1e-10
    # after the restart the basis holds the 4th solution: its right-hand side projects exactly
    _, residual = projection.project(rhs[3])
    assert np.linalg.norm(residual) < 1e-8 * np.linalg.norm(rhs[3])


def test_a_repeated_solution_is_not_added_twice():
    a = laplacian_2d(6)
    b = np.ones(36)
    projection = SolutionProjection(lambda x: a @ x)
    solve_sequence(a, [b, b, 2 * b], projection, tol=1e-14)
    assert len(projection) == 1
    with pytest.raises(ValueError, match="capacity"):
        SolutionProjection(lambda x: x, capacity=0)
