"""The Schwarz smoother on the CUDA backend: the tuned fdm_apply and ext_layers kernels equal
the NumPy reference on fresh random data, the whole M r (ext exchange, FDM, weights) equals the CPU's,
and MG-CG with Chebyshev-Schwarz takes the CPU's iterations; float64 and float32. Skipped,
with the reason, without CuPy and a CUDA GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.backends import get_backend  # noqa: E402
from lobatto.backends.numpy_backend import NumpyBackend  # noqa: E402
from lobatto.solvers import pcg  # noqa: E402
from lobatto.solvers.multigrid import Level, PMultigrid  # noqa: E402
from lobatto.solvers.schwarz import AdditiveSchwarz  # noqa: E402
from test_solvers_multigrid import poisson  # noqa: E402

TOLERANCE = {np.float64: 1e-12, np.float32: 2e-5}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", [1, 3, 7, 15, 16, 24])
def test_cuda_fdm_kernel_equals_numpy(order, dtype):
    m, E = order + 3, 37
    cuda = get_backend("cuda")
    assert cuda.has_tuned("fdm_apply")
    rng = np.random.default_rng(order)
    r = rng.standard_normal((E, m, m, m)).astype(dtype)
    sx, sy, sz = (rng.standard_normal((E, m, m)).astype(dtype) for _ in range(3))
    lam = rng.random((E, 3, m)).astype(dtype)
    lam[5, :, 0] = 0  # element 5's constant mode: below its floor, dropped
    coef = np.stack([0.5 + rng.random(E), rng.random(E), np.full(E, 1e-6)], axis=1).astype(dtype)
    coef[5, 1] = 0
    expected = NumpyBackend().kernel("fdm_apply", size=m)(r, np.empty_like(r), sx, sy, sz, lam, coef)
    args = [cuda.asarray(a, dtype=dtype) for a in (r, sx, sy, sz, lam, coef)]
    out = cuda.xp.full(r.shape, np.nan, dtype=dtype)
    got = cuda.to_host(cuda.kernel("fdm_apply", size=m)(args[0], out, *args[1:]))
    assert np.abs(got - expected).max() <= TOLERANCE[dtype] * np.abs(expected).max()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", [2, 7])
def test_cuda_ext_layers_equal_numpy(order, dtype):
    m, E = order + 3, 29
    cuda = get_backend("cuda")
    assert cuda.has_tuned("ext_layers")
    rng = np.random.default_rng(20 + order)
    reference = NumpyBackend().kernel("ext_layers", size=m)
    for mode in range(4):
        z = rng.standard_normal((E, m, m, m)).astype(dtype)
        saved = rng.standard_normal((E, 6, m - 2, m - 2)).astype(dtype)
        z_dev, saved_dev = cuda.asarray(z, dtype=dtype), cuda.asarray(saved, dtype=dtype)
        reference(z, saved, mode)
        cuda.kernel("ext_layers", size=m)(z_dev, saved_dev, mode)
        assert np.array_equal(cuda.to_host(z_dev), z) and np.array_equal(cuda.to_host(saved_dev), saved), mode


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cuda_schwarz_and_mg_equal_the_cpu(dtype):
    rng = np.random.default_rng(11)
    values, applied, counts = None, {}, {}
    for name in ("cpu", "cuda"):
        backend = get_backend(name)
        mesh, dirichlet, level, b, _ = poisson(3, 5, backend)
        low = Level.build(mesh, 5, backend, dirichlet=dirichlet, dtype=dtype)
        schwarz = AdditiveSchwarz(mesh, low)
        if values is None:
            values = rng.standard_normal(low.assembly.num_global_points)
        applied[name] = backend.to_host(schwarz(backend.asarray(values[low.assembly.ids], dtype=dtype) * low.mask))
        if dtype == np.float64:
            mg = PMultigrid.build(mesh, backend, (5, 2, 1), dirichlet=dirichlet, finest=level, smoother="schwarz")
            counts[name] = pcg(level.apply, b, M=mg, dot=level.dot, tol=1e-8, maxiter=100).iterations
    scale = np.abs(applied["cpu"]).max()
    assert np.abs(applied["cuda"] - applied["cpu"]).max() <= 10 * TOLERANCE[dtype] * scale
    if counts:
        assert counts["cuda"] == counts["cpu"]
