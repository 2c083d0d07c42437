"""The Helmholtz operator: symmetry and definiteness of the assembled A, its exact diagonal,
the exact weak form of a polynomial, variable coefficients, and the compiled C kernel against the
reference for N = 1..15 on fresh random data."""

from __future__ import annotations

import numpy as np
import pytest

from test_operators_numbering import rotated_box_mesh

from lobatto.backends import get_backend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.errors import InputError
from lobatto.jit import c as cbuild
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.topology import NUM_FACES, face_slice
from lobatto.operators import Assembly, HelmholtzOperator, dirichlet_faces, gradient, weak_divergence
from lobatto.operators.helmholtz_cpu import helmholtz_spec
from lobatto.discretization import gll_weights


def curved(x, y, z):
    return 0.05 * np.sin(np.pi * y) * np.sin(2 * z), 0.04 * np.sin(np.pi * x * z), 0.03 * np.cos(2 * x * y)


def rotated_curved_mesh(elements=(3, 2, 2), seed=3):
    return rotated_box_mesh(elements, seed=seed, upper=(1.5, 1.0, 1.0), deform=curved)


def assembled(assembly, operator, u):
    return assembly.dssum(operator.apply_local(u))


def global_matrix(assembly, operator) -> np.ndarray:
    """Dense assembled matrix, column g = A applied to the continuous unit vector of point g."""
    ids = assembly.ids
    first = np.zeros(assembly.num_global_points, dtype=np.int64)
    first[ids.ravel()[::-1]] = np.arange(ids.size)[::-1]  # one copy of every point
    columns = [assembled(assembly, operator, (ids == g).astype(float)).ravel()[first]
               for g in range(assembly.num_global_points)]
    return np.stack(columns, axis=1)


@pytest.mark.parametrize("h2", [0.0, 1.7])
def test_assembled_operator_is_symmetric(h2):
    mesh = rotated_curved_mesh()
    order = 4
    geometry = compute_geometry(mesh, order)
    rng = np.random.default_rng(1)
    backend = NumpyBackend()
    assembly = Assembly(mesh, order, backend, dirichlet=dirichlet_faces(mesh, ["wall"]))
    operator = HelmholtzOperator(geometry, backend, h1=1.0 + rng.random(assembly.shape), h2=h2)
    x, y = (rng.standard_normal(assembly.num_global_points)[assembly.ids] for _ in range(2))
    xay = assembly.dot(x, assembled(assembly, operator, y))
    yax = assembly.dot(y, assembled(assembly, operator, x))
    assert abs(xay - yax) <= 1e-13 * abs(xay)
    x, y = x * assembly.mask, y * assembly.mask
    xay = assembly.dot(x, assembly.mask * assembled(assembly, operator, y))
    yax = assembly.dot(y, assembly.mask * assembled(assembly, operator, x))
    assert abs(xay - yax) <= 1e-13 * abs(xay)
    assert assembly.dot(x, assembled(assembly, operator, x)) > 0


def test_positive_definite_on_the_free_points_and_exact_diagonal():
    mesh = rotated_curved_mesh((2, 2, 2), seed=7)
    order = 3
    geometry = compute_geometry(mesh, order)
    backend = NumpyBackend()
    rng = np.random.default_rng(2)
    walls = np.zeros((mesh.num_elements, NUM_FACES), bool)
    walls[0, :] = mesh.face_neighbour[0] < 0  # Dirichlet on element 0's boundary faces only
    assembly = Assembly(mesh, order, backend, dirichlet=walls)
    operator = HelmholtzOperator(geometry, backend, h1=0.5 + rng.random(assembly.shape))
    matrix = global_matrix(assembly, operator)
    assert np.abs(matrix - matrix.T).max() <= 1e-13 * np.abs(matrix).max()
    ids = assembly.ids
    first = np.zeros(assembly.num_global_points, dtype=np.int64)
    first[ids.ravel()[::-1]] = np.arange(ids.size)[::-1]
    free = assembly.mask.ravel()[first] == 1
    assert 0 < (~free).sum() < len(free)
    eigenvalues = np.linalg.eigvalsh(matrix[np.ix_(free, free)])
    assert eigenvalues[0] > 1e-8 * eigenvalues[-1]
    # without Dirichlet points and with h2 = 0 the constants span the null space, nothing else
    everything = np.linalg.eigvalsh(matrix)
    assert abs(everything[0]) <= 1e-12 * everything[-1] and everything[1] > 1e-8 * everything[-1]
    assert np.abs(matrix @ np.ones(len(matrix))).max() <= 1e-12 * np.abs(matrix).max()
    diagonal = assembly.dssum(operator.diagonal_local())
    assert np.allclose(diagonal.ravel()[first], np.diag(matrix), rtol=1e-13, atol=0)


@pytest.mark.parametrize("order", [1, 2, 5])
def test_local_diagonal_equals_element_matrix_diagonal(order):
    mesh = rotated_curved_mesh((2, 1, 2), seed=order)
    geometry = compute_geometry(mesh, order)
    rng = np.random.default_rng(order)
    operator = HelmholtzOperator(geometry, NumpyBackend(), h1=1 + rng.random(geometry.jacobian.shape), h2=0.3)
    n3 = (order + 1) ** 3
    units = np.zeros((mesh.num_elements, n3))
    diagonal = np.empty_like(units)
    for p in range(n3):  # unit vector p in every element at once
        units[:, p] = 1.0
        diagonal[:, p] = operator.apply_local(units.reshape(operator.shape)).reshape(-1, n3)[:, p]
        units[:, p] = 0.0
    assert np.allclose(operator.diagonal_local().reshape(-1, n3), diagonal, rtol=1e-13, atol=0)


@pytest.mark.parametrize("order", [2, 3, 5])
def test_polynomial_gives_the_exact_weak_form(order):
    """u = x^2 + y z on affine, sheared elements: K u = integral(-lap(u) phi) + boundary flux
    = -2 B + sum over boundary faces of (grad u . n) w_a w_b sJ, exactly (GLL quadrature is
    exact for these degrees on affine elements)."""
    mesh = box_mesh((3, 2, 2), upper=(1.5, 1.0, 1.0), deform=lambda x, y, z: (0.3 * y, 0.2 * z - 0.1 * x, 0.1 * x))
    geometry = compute_geometry(mesh, order)
    assert geometry.affine.all()
    backend = NumpyBackend()
    assembly = Assembly(mesh, order, backend)
    x, y, z = geometry.coords
    u = x**2 + y * z
    ku = assembled(assembly, HelmholtzOperator(geometry, backend), u)
    grad = np.stack([2 * x, z, y])
    w = gll_weights(order)
    flux = np.zeros_like(u)
    for face in range(NUM_FACES):
        sl = face_slice(face, order)
        on_boundary = mesh.face_neighbour[:, face] < 0
        normal_derivative = np.sum(grad[sl] * geometry.normals[:, :, face], axis=0)
        term = normal_derivative * geometry.surface_jacobian[:, face] * w[:, None] * w[None, :]
        flux[(np.flatnonzero(on_boundary),) + sl[1:]] += term[on_boundary]
    expected = assembly.dssum(-2.0 * geometry.mass + flux)
    assert np.abs(ku - expected).max() <= 1e-12 * np.abs(expected).max()
    # h2 adds B u pointwise
    both = assembled(assembly, HelmholtzOperator(geometry, backend, h1=1.0, h2=3.0), u)
    assert np.allclose(both, ku + assembly.dssum(3.0 * geometry.mass * u), rtol=1e-13, atol=1e-12)


def test_variable_coefficient_is_weak_divergence_of_the_flux():
    mesh = rotated_curved_mesh((2, 2, 1), seed=9)
    order = 4
    geometry = compute_geometry(mesh, order)
    backend = NumpyBackend()
    rng = np.random.default_rng(4)
    k = 1 + rng.random(geometry.jacobian.shape)
    u = rng.standard_normal(geometry.jacobian.shape)
    expected = weak_divergence(geometry, backend, k * gradient(geometry, backend, u))
    for op_backend in (backend, get_backend("cpu")):
        got = HelmholtzOperator(geometry, op_backend, h1=k).apply_local(u)
        assert np.abs(got - expected).max() <= 1e-12 * np.abs(expected).max()
    operator = HelmholtzOperator(geometry, backend, h1=2.0, h2=0.5)
    operator.set_coefficients(h1=k, h2=0.0)
    assert np.abs(operator.apply_local(u) - expected).max() <= 1e-12 * np.abs(expected).max()
    assert operator.bytes_per_point == 64
    operator.set_coefficients(1.0, 2.0)
    assert operator.bytes_per_point == 72


ORDERS = range(1, 16)


@pytest.fixture(scope="module")
def compiled():
    if not cbuild.available():
        pytest.skip("no C compiler (or LOBATTO_NO_CKERNELS is set)")
    cbuild.prebuild([helmholtz_spec(n, "float64") for n in ORDERS] + [helmholtz_spec(7, "float32")])
    return get_backend("cpu")


@pytest.mark.parametrize("order", ORDERS)
def test_compiled_kernel_equals_reference(compiled, order):
    assert compiled.has_tuned("helmholtz_apply")
    mesh = box_mesh((3, 1, 2), periodic=(True, False, False), deform=curved)
    geometry = compute_geometry(mesh, order)
    rng = np.random.default_rng(1000 + order)
    shape = geometry.jacobian.shape
    precisions = [(np.float64, 1e-13)] + ([(np.float32, 3e-5)] if order == 7 else [])
    for dtype, tolerance in precisions:
        for h1, h2 in ((1.0, 0.0), (0.7, 2.5), (1 + rng.random(shape), rng.random(shape))):
            tuned = HelmholtzOperator(geometry, compiled, h1, h2, dtype=dtype)
            reference = HelmholtzOperator(geometry, NumpyBackend(), h1, h2, dtype=dtype)
            u = rng.standard_normal(shape).astype(dtype)
            out = np.full(shape, np.nan, dtype=dtype)
            got = tuned.apply_local(u, out)
            assert got is out
            expected = reference.apply_local(u)
            scale = np.abs(expected).max()
            assert np.abs(got - expected).max() <= tolerance * scale, (dtype, h1 if np.isscalar(h1) else "array")


def test_bad_input_is_named():
    geometry = compute_geometry(box_mesh((2, 1, 1)), 2)
    operator = HelmholtzOperator(geometry, NumpyBackend())
    with pytest.raises(InputError, match=r"u must be a float64 array of shape \(2, 3, 3, 3\)"):
        operator.apply_local(np.zeros((2, 4, 4, 4)))
    with pytest.raises(InputError, match=r"h1 must be a scalar or an \(E, n, n, n\)"):
        HelmholtzOperator(geometry, NumpyBackend(), h1=np.ones(5))
    with pytest.raises(InputError, match="h2 must be finite"):
        HelmholtzOperator(geometry, NumpyBackend(), h2=float("nan"))
