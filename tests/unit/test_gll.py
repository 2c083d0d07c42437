import numpy as np
import pytest

from lobatto.discretization import MAX_ORDER, derivative_matrix, gll_points, gll_weights, interpolation_matrix


@pytest.mark.parametrize("order", range(1, MAX_ORDER + 1))
def test_quadrature_exact_to_degree_2n_minus_1(order):
    x, w = gll_points(order), gll_weights(order)
    for degree in range(2 * order):
        exact = 2.0 / (degree + 1) if degree % 2 == 0 else 0.0
        assert abs(np.sum(w * x**degree) - exact) < 1e-14 * max(1, order / 4)


@pytest.mark.parametrize("order", range(1, MAX_ORDER + 1))
def test_points_are_roots_of_legendre_derivative(order):
    from lobatto.discretization import legendre

    x = gll_points(order)
    assert x[0] == -1.0 and x[-1] == 1.0 and np.all(np.diff(x) > 0)
    _, dp = legendre(order, x[1:-1])
    assert np.max(np.abs(dp), initial=0.0) < 1e-12 * order**2


@pytest.mark.parametrize("order", [1, 2, 5, 8, 13, 19, 24])
def test_derivative_exact_for_degree_n_polynomials(order):
    rng = np.random.default_rng(order)
    coeffs = rng.standard_normal(order + 1)
    x = gll_points(order)
    p = np.polynomial.Polynomial(coeffs)
    err = np.max(np.abs(derivative_matrix(order) @ p(x) - p.deriv()(x)))
    assert err < 1e-12 * np.max(np.abs(p.deriv()(x))) * order


@pytest.mark.parametrize("order", [1, 4, 9, 16])
def test_interpolation_reproduces_polynomials(order):
    rng = np.random.default_rng(order)
    p = np.polynomial.Polynomial(rng.standard_normal(order + 1))
    targets = rng.uniform(-1, 1, 37)
    targets[:2] = gll_points(order)[:2]  # coincident targets take the exact branch
    values = interpolation_matrix(order, targets) @ p(gll_points(order))
    assert np.allclose(values, p(targets), rtol=0, atol=1e-12 * np.max(np.abs(p(targets))))


def test_rejects_bad_order():
    with pytest.raises(ValueError):
        gll_points(0)
    with pytest.raises(ValueError):
        gll_points(MAX_ORDER + 1)
