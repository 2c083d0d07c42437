"""Operators on CUDA equal the NumPy reference: the tuned Helmholtz kernel for N = 1..15 (float64
and float32, with and without the mass, scalar and array coefficients), its diagonal, dssum and
the assembled inner product, interpolation, gradient and weak divergence.

Skipped, with the reason, where CuPy or a CUDA device is missing.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.backends import get_backend  # noqa: E402
from lobatto.backends.numpy_backend import NumpyBackend  # noqa: E402
from lobatto.mesh import box_mesh, compute_geometry  # noqa: E402
from lobatto.operators import (  # noqa: E402
    Assembly,
    HelmholtzOperator,
    dirichlet_faces,
    gll_to_gauss,
    gradient,
    interpolate,
    weak_divergence,
)


def deform(x, y, z):
    return 0.06 * np.sin(np.pi * y) * np.sin(np.pi * z), 0.05 * np.sin(np.pi * x * z), 0.04 * np.cos(x * y)


# 13 elements: not a multiple of any block's element count, so the last block is partly idle
MESH = box_mesh((13, 1, 1), upper=(2.0, 1.0, 1.0), periodic=(True, False, False), deform=deform)


@pytest.fixture(scope="module")
def cuda():
    return get_backend("cuda")


@pytest.mark.parametrize("order", range(1, 16))
def test_tuned_helmholtz_equals_reference(cuda, order):
    rng = np.random.default_rng(100 + order)
    geometry = compute_geometry(MESH, order)
    reference = NumpyBackend()
    shape = geometry.jacobian.shape
    h1_field = 1.0 + rng.random(shape)
    for dtype, tolerance in ((np.float64, 1e-13), (np.float32, 2e-5)):
        for h1, h2 in ((1.0, 0.0), (0.7, 2.5), (h1_field, rng.random(shape))):
            gpu = HelmholtzOperator(geometry, cuda, h1, h2, dtype=dtype)
            cpu = HelmholtzOperator(geometry, reference, h1, h2, dtype=dtype)
            assert cuda.has_tuned("helmholtz_apply")
            u = rng.standard_normal(shape).astype(dtype)
            expected = cpu.apply_local(u)
            got = cuda.to_host(gpu.apply_local(cuda.asarray(u, dtype=dtype)))
            scale = np.abs(expected).max()
            error = np.abs(got - expected).max()
            assert error <= tolerance * scale, (order, dtype, error, scale)
            diagonal = cuda.to_host(gpu.diagonal_local())
            assert np.allclose(diagonal, cpu.diagonal_local(), rtol=tolerance, atol=tolerance * scale)


def test_assembly_and_element_operators_on_cuda(cuda):
    order = 5
    rng = np.random.default_rng(7)
    geometry = compute_geometry(MESH, order)
    faces = dirichlet_faces(MESH, ["ymin", "zmax"])
    reference = NumpyBackend()
    host = Assembly(MESH, order, reference, dirichlet=faces)
    device = Assembly(MESH, order, cuda, dirichlet=faces)
    assert np.array_equal(host.ids, device.ids)
    for name in ("multiplicity", "mask"):
        assert np.array_equal(cuda.to_host(getattr(device, name)), getattr(host, name)), name
    u = rng.standard_normal((2,) + host.shape)
    v = rng.standard_normal(host.shape)
    summed = cuda.to_host(device.dssum(cuda.asarray(u)))
    assert np.allclose(summed, host.dssum(u.copy()), rtol=1e-14, atol=1e-13)
    assert np.isclose(device.dot(cuda.asarray(u[0]), cuda.asarray(v)), host.dot(u[0], v), rtol=1e-12)

    gauss = gll_to_gauss(order, order + 3)
    assert np.allclose(cuda.to_host(interpolate(cuda, cuda.asarray(v), gauss)), interpolate(reference, v, gauss),
                       rtol=1e-13, atol=1e-13)
    grad = gradient(geometry, cuda, cuda.asarray(v))
    assert np.allclose(cuda.to_host(grad), gradient(geometry, reference, v), rtol=1e-12, atol=1e-11)
    div = cuda.to_host(weak_divergence(geometry, cuda, grad))
    assert np.allclose(div, weak_divergence(geometry, reference, gradient(geometry, reference, v)), rtol=1e-12,
                       atol=1e-11)
