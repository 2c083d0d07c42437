"""Jacobi and Chebyshev on matrices built here: the eigenvalue estimate against a dense
eigensolver, the smoother's error reduction against the Chebyshev polynomial's value."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.errors import SolverError
from lobatto.solvers import Chebyshev, Jacobi, estimate_max_eigenvalue, pcg


def variable_laplacian_2d(n, rng):
    """-div(k grad) on an n x n grid with Dirichlet sides, k random in [1, 100] per link, plus
    a random positive diagonal: SPD with a strongly varying diagonal."""
    index = np.arange(n * n).reshape(n, n)
    pairs = np.concatenate([np.stack([index[:-1].ravel(), index[1:].ravel()], 1),
                            np.stack([index[:, :-1].ravel(), index[:, 1:].ravel()], 1)])
    k = np.exp(rng.uniform(0, np.log(100), len(pairs)))
    a = np.zeros((n * n, n * n))
    np.add.at(a, (pairs[:, 0], pairs[:, 0]), k)
    np.add.at(a, (pairs[:, 1], pairs[:, 1]), k)
    np.add.at(a, (pairs[:, 0], pairs[:, 1]), -k)
    np.add.at(a, (pairs[:, 1], pairs[:, 0]), -k)
    sides = np.concatenate([index[0], index[-1], index[:, 0], index[:, -1]])  # links to the boundary
    np.add.at(a, (sides, sides), np.exp(rng.uniform(0, np.log(100), len(sides))))
    return a + np.diag(rng.uniform(0, 1, n * n))


def jacobi_spectrum(a):
    """Eigenvalues and eigenvectors of D^-1 A (through the symmetric D^-1/2 A D^-1/2)."""
    s = 1 / np.sqrt(np.diag(a))
    lam, w = np.linalg.eigh(s[:, None] * a * s[None, :])
    return lam, s[:, None] * w


@pytest.mark.parametrize("kind", ["laplacian", "random"])
def test_eigenvalue_estimate_is_within_a_few_percent_from_below(kind):
    rng = np.random.default_rng(11)
    if kind == "laplacian":
        a = variable_laplacian_2d(14, rng)
    else:
        q, _ = np.linalg.qr(rng.standard_normal((200, 200)))
        a = (q * np.geomspace(1, 1e4, 200)) @ q.T
    lam, _ = jacobi_spectrum(a)
    inverse_diagonal = 1 / np.diag(a)
    estimate = estimate_max_eigenvalue(lambda x: a @ x, inverse_diagonal, rng.standard_normal(a.shape[0]), steps=20)
    assert lam[-1] * 0.97 <= estimate <= lam[-1] * (1 + 1e-12)  # Ritz values never overshoot


def test_eigenvalue_estimate_stops_early_in_an_invariant_space():
    a = np.diag([1.0, 2.0, 4.0, 8.0])
    estimate = estimate_max_eigenvalue(lambda x: a @ x, np.ones(4), np.array([1.0, 1.0, 0.0, 0.0]), steps=20)
    assert abs(estimate - 2.0) < 1e-12
    with pytest.raises(ValueError, match="nonzero start"):
        estimate_max_eigenvalue(lambda x: a @ x, np.ones(4), np.zeros(4))


def chebyshev_factor(lam, lmin, lmax, degree):
    theta, delta = (lmax + lmin) / 2, (lmax - lmin) / 2
    t = np.polynomial.chebyshev.Chebyshev.basis(degree)
    return t((theta - lam) / delta) / t(theta / delta)


@pytest.mark.parametrize("degree", [1, 2, 3, 5])
def test_chebyshev_multiplies_each_eigenvector_of_the_error_by_the_polynomial(degree):
    rng = np.random.default_rng(12)
    a = variable_laplacian_2d(8, rng)
    lam, vectors = jacobi_spectrum(a)
    lmax = 1.1 * lam[-1]
    smoother = Chebyshev(lambda x: a @ x, 1 / np.diag(a), lmax, 0.1 * lam[-1], degree)
    exact = rng.standard_normal(a.shape[0])
    b = a @ exact
    for index in (0, 10, 40, 63):
        x = smoother(b, exact + vectors[:, index])
        error = x - exact
        expected = chebyshev_factor(lam[index], 0.1 * lam[-1], lmax, degree)
        np.testing.assert_allclose(error, expected * vectors[:, index], atol=1e-11 * np.abs(vectors[:, index]).max())
    # the upper part of the spectrum is damped by at least 1 / T_k(theta / delta)
    theta, delta = 0.6 * lam[-1], 0.5 * lam[-1]
    bound = 1 / np.polynomial.chebyshev.Chebyshev.basis(degree)(theta / delta)
    top = lam >= 0.1 * lam[-1]
    assert np.all(np.abs(chebyshev_factor(lam[top], 0.1 * lam[-1], lmax, degree)) <= bound + 1e-14)


def test_chebyshev_from_zero_is_a_symmetric_linear_map_equal_to_the_explicit_start():
    rng = np.random.default_rng(13)
    a = variable_laplacian_2d(8, rng)
    smoother = Chebyshev.with_estimate(lambda x: a @ x, 1 / np.diag(a), rng.standard_normal(64), degree=3)
    assert smoother.lmax == pytest.approx(1.1 * smoother.estimated_max_eigenvalue)
    x, y = rng.standard_normal(64), rng.standard_normal(64)
    np.testing.assert_allclose(smoother(x), smoother(x, np.zeros(64)), rtol=1e-13, atol=1e-15)
    assert abs(x @ smoother(y) - y @ smoother(x)) < 1e-13 * abs(x @ smoother(y))
    np.testing.assert_allclose(smoother(2 * x + y), 2 * smoother(x) + smoother(y), rtol=1e-12, atol=1e-14)


def test_chebyshev_as_a_cg_preconditioner_beats_jacobi():
    rng = np.random.default_rng(14)
    a = variable_laplacian_2d(20, rng)
    b = rng.standard_normal(400)
    inverse_diagonal = 1 / np.diag(a)
    smoother = Chebyshev.with_estimate(lambda x: a @ x, inverse_diagonal, rng.standard_normal(400), degree=4)
    jacobi = pcg(lambda x: a @ x, b, M=Jacobi(np.diag(a).copy()), tol=1e-10)
    chebyshev = pcg(lambda x: a @ x, b, M=smoother, tol=1e-10)
    assert jacobi.converged and chebyshev.converged
    assert chebyshev.iterations < jacobi.iterations / 2.5  # sqrt of degree 4 and better


def test_jacobi_masks_fixed_points_and_rejects_a_non_positive_diagonal():
    diagonal = np.array([2.0, 4.0, 0.0, 8.0])
    mask = np.array([1.0, 1.0, 0.0, 1.0])
    jacobi = Jacobi(diagonal, mask)
    np.testing.assert_array_equal(jacobi(np.ones(4)), [0.5, 0.25, 0.0, 0.125])
    with pytest.raises(SolverError, match="1 free points"):
        Jacobi(np.array([1.0, -1.0, 2.0]))
    with pytest.raises(SolverError, match="not symmetric positive definite"):
        Jacobi(np.array([1.0, np.nan]), np.ones(2))
    with pytest.raises(ValueError, match="lmin"):
        Chebyshev(lambda x: x, np.ones(2), lmax=1.0, lmin=2.0)
