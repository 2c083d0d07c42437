"""Advection, curl, divergence and the HPF-RT filter on CUDA equal the NumPy reference to 1e-12 on
fresh random data (curved elements, several orders, dealiased and collocated, k = 3 and k = 1).

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
from lobatto.operators import Advection, HighPassFilter, curl, divergence  # noqa: E402


def deform(x, y, z):
    return 0.06 * np.sin(np.pi * y) * np.sin(np.pi * z), 0.05 * np.sin(np.pi * x * z), 0.04 * np.cos(x * y)


MESH = box_mesh((13, 1, 1), upper=(2.0, 1.0, 1.0), periodic=(True, False, False), deform=deform)


@pytest.fixture(scope="module")
def cuda():
    return get_backend("cuda")


def close(got, expected, tolerance=1e-12):
    error, scale = np.abs(got - expected).max(), np.abs(expected).max()
    assert error <= tolerance * scale, (error, scale)


@pytest.mark.parametrize("order", [2, 5, 7])
def test_advection_cuda_equals_cpu(cuda, order):
    rng = np.random.default_rng(300 + order)
    geometry = compute_geometry(MESH, order)
    reference = NumpyBackend()
    shape = geometry.jacobian.shape
    u = rng.standard_normal((3,) + shape)
    fields = rng.standard_normal((3,) + shape)
    for dealias in (True, False):
        gpu, cpu = Advection(geometry, cuda, dealias=dealias), Advection(geometry, reference, dealias=dealias)
        expected = cpu.convective(u, fields)
        close(cuda.to_host(gpu.convective(cuda.asarray(u), cuda.asarray(fields))), expected)
        out = cuda.zeros((1,) + shape)
        assert gpu.convective(cuda.asarray(u), cuda.asarray(fields[2:]), out=out) is out
        close(cuda.to_host(out)[0], expected[2])
        assert np.isclose(gpu.courant(cuda.asarray(u), 0.01), cpu.courant(u, 0.01), rtol=1e-12)
    close(cuda.to_host(curl(geometry, cuda, cuda.asarray(u))), curl(geometry, reference, u))
    close(cuda.to_host(divergence(geometry, cuda, cuda.asarray(u))), divergence(geometry, reference, u))
    for modes in range(1, order):
        expected = HighPassFilter(order, reference, modes=modes).relaxation(u)
        close(cuda.to_host(HighPassFilter(order, cuda, modes=modes).relaxation(cuda.asarray(u))), expected)
