"""The solvers on the CUDA backend equal those on the CPU: p-multigrid PCG (same iteration
count, same solution), float32 cycles in flexible CG, FGMRES, projection, and the Krylov
methods on plain CuPy arrays. Skipped, with the reason, without CuPy and a CUDA GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

import cupy  # noqa: E402

from lobatto.backends import get_backend  # noqa: E402
from lobatto.solvers import LowPrecision, SolutionProjection, fgmres, flexible_cg, pcg  # noqa: E402
from lobatto.solvers.multigrid import PMultigrid, default_orders  # noqa: E402
from test_solvers_multigrid import poisson  # noqa: E402


@pytest.fixture(scope="module")
def solves():
    """MG-PCG at N = 7 on 4^3 curved elements, on the CPU and on the GPU."""
    out = {}
    for name in ("cpu", "cuda"):
        backend = get_backend(name)
        mesh, dirichlet, level, b, exact = poisson(4, 7, backend)
        mg = PMultigrid.build(mesh, backend, default_orders(7), dirichlet=dirichlet, finest=level)
        out[name] = (backend, mesh, dirichlet, level, b, exact, mg,
                     pcg(level.apply, b, M=mg, dot=level.dot, tol=1e-8))
    return out


def test_gpu_mg_pcg_equals_the_cpu(solves):
    *_, exact, _, cpu = solves["cpu"]
    backend, *_, gpu = solves["cuda"]
    assert isinstance(gpu.x, cupy.ndarray)
    assert gpu.converged and gpu.iterations == cpu.iterations <= 20
    np.testing.assert_allclose(gpu.residuals, cpu.residuals, rtol=1e-6)
    x = backend.to_host(gpu.x)
    assert np.abs(x - cpu.x).max() <= 1e-10 * np.abs(cpu.x).max()
    assert np.abs(x - exact).max() < 1e-7


def test_gpu_float32_cycles_fgmres_and_projection(solves):
    backend, mesh, dirichlet, level, b, _, mg, reference = solves["cuda"]
    mg32 = PMultigrid.build(mesh, backend, default_orders(7), dirichlet=dirichlet, dtype=np.float32)
    assert mg32.levels[0].operator.geometric_factors.dtype == np.float32
    low = flexible_cg(level.apply, b, M=LowPrecision(mg32, backend), dot=level.dot, tol=1e-10)
    assert low.converged and low.x.dtype == np.float64 and low.iterations <= reference.iterations + 4
    gm = fgmres(level.apply, b, M=mg, dot=level.dot, tol=1e-8, restart=10)
    assert gm.converged and gm.iterations <= reference.iterations + 2
    projection = SolutionProjection(level.apply, level.dot)
    counts = []
    for scale in (1.0, 1.001):
        x_bar, r = projection.project(b * scale)
        result = pcg(level.apply, r, M=mg, dot=level.dot, tol=0.0, atol=1e-8 * level.assembly.norm(b))
        projection.update(x_bar, result.x)
        counts.append(result.iterations)
    assert counts[1] == 0  # b * 1.001 is in the span: the projection alone solves it


def test_krylov_methods_on_plain_cupy_arrays():
    rng = np.random.default_rng(41)
    n = 200
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    a_host = (q * np.geomspace(1, 100, n)) @ q.T
    a, b = cupy.asarray(a_host), cupy.asarray(rng.standard_normal(n))
    for solver in (pcg, flexible_cg, fgmres):
        result = solver(lambda x: a @ x, b, M=lambda r: r / cupy.diag(a), tol=1e-10)
        assert result.converged and isinstance(result.x, cupy.ndarray)
        assert float(cupy.linalg.norm(b - a @ result.x) / cupy.linalg.norm(b)) <= 1.01e-10
