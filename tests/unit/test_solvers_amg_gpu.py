"""The AMG coarse solve on the CUDA backend (cuSPARSE products, the cycle recorded as a CUDA
graph and replayed) equals the CPU one on the same coarse level, and a whole MG-CG solve with
it takes the CPU's iterations. Skipped, with the reason, without CuPy and a CUDA GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")
pytest.importorskip("pyamg")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.backends import get_backend  # noqa: E402
from lobatto.solvers import pcg  # noqa: E402
from lobatto.solvers.amg import AmgCoarseSolve  # noqa: E402
from lobatto.solvers.multigrid import Level, PMultigrid  # noqa: E402
from test_solvers_multigrid import poisson  # noqa: E402


@pytest.mark.parametrize("dtype,tolerance", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_cuda_amg_coarse_solve_equals_the_cpu(dtype, tolerance):
    rng = np.random.default_rng(7)
    solves, values = {}, None
    for name in ("cpu", "cuda"):
        backend = get_backend(name)
        mesh, dirichlet, *_ = poisson(6, 1, backend)
        level = Level.build(mesh, 1, backend, dirichlet=dirichlet, dtype=dtype)
        solve = AmgCoarseSolve(level.operator, level.assembly, dtype=dtype, max_coarse=20)
        assert len(solve.level_sizes) >= 2  # a real hierarchy, not just the dense inverse
        if values is None:
            values = [rng.standard_normal(level.assembly.num_global_points) for _ in range(4)]
        # four calls: plain, recorded, replayed twice (on the GPU)
        out = [backend.to_host(solve(backend.asarray(v[level.assembly.ids], dtype=dtype) * level.mask))
               for v in values]
        solves[name] = (out, solve)
    for cpu, gpu in zip(solves["cpu"][0], solves["cuda"][0]):
        assert np.abs(gpu - cpu).max() <= tolerance * np.abs(cpu).max()
    gpu = solves["cuda"][1]
    print(f"cuda graph: captured={gpu.step.captured} fallback={gpu.step.fallback_reason}")
    assert gpu.graph_mismatch is not True, gpu.step.fallback_reason  # the replay matched a plain cycle


def test_cuda_mg_cg_with_amg_takes_the_cpus_iterations(monkeypatch):
    results = {}
    for name in ("cpu", "cuda"):
        backend = get_backend(name)
        mesh, dirichlet, level, b, exact = poisson(4, 3, backend)
        monkeypatch.setattr("lobatto.solvers.amg.MAX_COARSE", 20)
        mg = PMultigrid.build(mesh, backend, (3, 1), dirichlet=dirichlet, finest=level, coarse="amg")
        assert mg.symmetric
        results[name] = pcg(level.apply, b, M=mg, dot=level.dot, tol=1e-10)
    assert results["cpu"].iterations == results["cuda"].iterations
    cpu, gpu = results["cpu"].x, get_backend("cuda").to_host(results["cuda"].x)
    assert np.abs(gpu - cpu).max() <= 1e-9 * np.abs(cpu).max()
