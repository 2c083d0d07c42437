"""Interpolation and the differential operators are exact on polynomials: GLL -> GLL / Gauss in
1-D and on (E, n, n, n) arrays, restriction the transpose of prolongation, the gradient on
curved elements whose map is a polynomial, and the weak divergence of a gradient is K."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.discretization import gll_points
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.operators import (
    GridTransfer,
    HelmholtzOperator,
    gauss_points,
    gll_to_gauss,
    gll_to_gll,
    gradient,
    interpolate,
    interpolation_matrix,
    mass,
    prolong,
    restrict,
    weak_divergence,
)

BACKEND = NumpyBackend()


def test_interpolation_matrix_is_exact_for_polynomials():
    rng = np.random.default_rng(0)
    nodes = np.sort(rng.uniform(-1, 1, 7))
    targets = np.concatenate([rng.uniform(-1.2, 1.2, 20), nodes[:2]])
    coefficients = rng.standard_normal(7)  # degree 6 = number of nodes - 1
    matrix = interpolation_matrix(nodes, targets)
    assert np.allclose(matrix @ np.polyval(coefficients, nodes), np.polyval(coefficients, targets), atol=1e-10)
    assert np.array_equal(matrix[-2:], np.eye(7)[:2])  # rows at nodes are exact unit rows
    with pytest.raises(ValueError, match="distinct"):
        interpolation_matrix([0.0, 0.0, 1.0], targets)


def test_gauss_points_are_legendre_roots():
    for order in (0, 3, 8):
        x = gauss_points(order)
        assert len(x) == order + 1
        assert np.allclose(np.polynomial.legendre.legval(x, [0] * (order + 1) + [1]), 0, atol=1e-13)


def reference_polynomial(rng, degree, elements):
    """(E, d+1, d+1, d+1) coefficients and an evaluator p(r, s, t) per element (degree per variable)."""
    c = rng.standard_normal((elements, degree + 1, degree + 1, degree + 1))

    def evaluate(points):
        v = np.polynomial.polynomial.polyvander(points, degree)  # (m, d+1)
        return np.einsum("ecba,kc,jb,ia->ekji", c, v, v, v)

    return evaluate


@pytest.mark.parametrize("order,target", [(3, 3), (3, 7), (5, 9), (7, 3)])
def test_interpolate_exact_on_element_polynomials(order, target):
    rng = np.random.default_rng(order * 10 + target)
    degree = min(order, target)  # going down, only degree <= target survives exactly
    p = reference_polynomial(rng, degree, 4)
    u = np.stack([p(gll_points(order)), 2 * p(gll_points(order))])  # a leading field axis too
    to_gll = interpolate(BACKEND, u, gll_to_gll(order, target))
    assert to_gll.shape == (2, 4) + (target + 1,) * 3
    assert np.allclose(to_gll[1], 2 * p(gll_points(target)), atol=1e-11)
    to_gauss = interpolate(BACKEND, u[0], gll_to_gauss(order, target))
    assert np.allclose(to_gauss, p(gauss_points(target)), atol=1e-11)


def test_restrict_is_the_transpose_of_prolong():
    rng = np.random.default_rng(5)
    coarse, fine = 3, 7
    x = rng.standard_normal((6, coarse + 1, coarse + 1, coarse + 1))
    y = rng.standard_normal((6, fine + 1, fine + 1, fine + 1))
    px, ry = prolong(BACKEND, x, fine), restrict(BACKEND, y, coarse)
    assert np.isclose(np.vdot(px, y), np.vdot(x, ry), rtol=1e-13)
    transfer = GridTransfer(BACKEND, coarse, fine)
    assert np.allclose(transfer.prolong(x), px, atol=1e-14) and np.allclose(transfer.restrict(y), ry, atol=1e-14)
    # prolongation then restriction of a coarse polynomial: the coarse GLL nodes are kept exactly
    assert np.allclose(prolong(BACKEND, prolong(BACKEND, x, fine), coarse), x, atol=1e-12)


def quadratic_map(x, y, z):
    """A curved map of degree 2 (elements' coordinates are degree-2 polynomials of r, s, t)."""
    return 0.08 * y * (1 - y) + 0.05 * z * z, 0.06 * x * z, 0.07 * x * (1 - x) - 0.04 * y * y


@pytest.mark.parametrize("order", [4, 6])
def test_gradient_exact_on_curved_elements(order):
    """u of degree 2 on a map of degree 2 is of degree 4 in r, s, t: exact from N = 4."""
    mesh = box_mesh((3, 2, 2), deform=quadratic_map)
    geometry = compute_geometry(mesh, order)
    assert not geometry.affine.any()
    x, y, z = geometry.coords
    u = x * x + 3 * y * z - x * z + 2 * y
    exact = np.stack([2 * x - z, 3 * z + 2, 3 * y - x])
    got = gradient(geometry, BACKEND, u)
    assert got.shape == (3,) + u.shape
    assert np.abs(got - exact).max() <= 1e-11 * np.abs(exact).max()


def test_gradient_misses_a_degree_above_the_order():
    """The same test can fail: with N = 3 the composed degree 4 is not represented."""
    geometry = compute_geometry(box_mesh((3, 2, 2), deform=quadratic_map), 3)
    x, y, z = geometry.coords
    got = gradient(geometry, BACKEND, x * x + 3 * y * z - x * z + 2 * y)
    assert np.abs(got - np.stack([2 * x - z, 3 * z + 2, 3 * y - x])).max() > 1e-6


def test_weak_divergence_of_gradient_is_the_stiffness_and_mass_is_wj():
    mesh = box_mesh((2, 2, 2), deform=lambda x, y, z: (0.05 * np.sin(3 * y), 0.04 * np.sin(2 * z + x), 0.0 * z))
    order = 5
    geometry = compute_geometry(mesh, order)
    u = np.random.default_rng(3).standard_normal(geometry.jacobian.shape)
    ku = HelmholtzOperator(geometry, BACKEND).apply_local(u)
    wd = weak_divergence(geometry, BACKEND, gradient(geometry, BACKEND, u))
    assert np.abs(wd - ku).max() <= 1e-12 * np.abs(ku).max()
    assert np.array_equal(mass(geometry, BACKEND, u), geometry.mass * u)
    box = compute_geometry(box_mesh((2, 3, 1), upper=(2.0, 1.0, 1.5)), order)
    assert np.isclose(mass(box, BACKEND, np.ones_like(box.jacobian)).sum(), 3.0, rtol=1e-13)  # the box's volume
