"""The elliptic path on 2-D meshes on CUDA equals the CPU: the tuned Helmholtz kernel (D = 2)
for several orders, float64 and float32, with and without the mass, scalar and array
coefficients; the FDM solve and ext_layers (D = 2) on fresh random data; a small 2-D Poisson
solve (default multigrid and Chebyshev-Schwarz) equal to the CPU one.

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
from lobatto.operators import HelmholtzOperator  # noqa: E402
from lobatto.operators import fdm  # noqa: E402,F401  (registers fdm_apply and ext_layers)
from planar import kernel_strip  # noqa: E402

REFERENCE = NumpyBackend()


MESH = kernel_strip()


@pytest.fixture(scope="module")
def cuda():
    return get_backend("cuda")


@pytest.mark.parametrize("order", [1, 2, 3, 5, 7, 10, 15])
def test_tuned_helmholtz_2d_equals_reference(cuda, order):
    rng = np.random.default_rng(200 + order)
    geometry = compute_geometry(MESH, order)
    shape = geometry.jacobian.shape
    assert shape == (13, 1, order + 1, order + 1)
    for dtype, tolerance in ((np.float64, 1e-13), (np.float32, 2e-5)):
        for h1, h2 in ((1.0, 0.0), (0.7, 2.5), (1.0 + rng.random(shape), rng.random(shape))):
            gpu = HelmholtzOperator(geometry, cuda, h1, h2, dtype=dtype)
            cpu = HelmholtzOperator(geometry, REFERENCE, h1, h2, dtype=dtype)
            assert cuda.has_tuned("helmholtz_apply") and gpu.dim == 2
            u = rng.standard_normal(shape).astype(dtype)
            expected = cpu.apply_local(u)
            got = cuda.to_host(gpu.apply_local(cuda.asarray(u, dtype=dtype)))
            assert np.abs(got - expected).max() <= tolerance * np.abs(expected).max(), (dtype, h1 is None)
            diagonal = cuda.to_host(gpu.diagonal_local())
            assert np.abs(diagonal - cpu.diagonal_local()).max() <= tolerance * np.abs(diagonal).max()


@pytest.mark.parametrize("m", [4, 6, 10, 18])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cuda_fdm_2d_equals_numpy(cuda, m, dtype):
    rng = np.random.default_rng(m)
    E = 7
    r = rng.standard_normal((E, 1, m, m)).astype(dtype)
    sx, sy = (rng.standard_normal((E, m, m)).astype(dtype) for _ in range(2))
    lam = rng.random((E, 2, m)).astype(dtype)
    lam[2, :, 0] = 0.0
    coef = np.tile(np.array([[1.3, 0.2, 1e-9]]), (E, 1)).astype(dtype)
    coef[2, 1] = 0.0
    expected = REFERENCE.kernel("fdm_apply", size=m, dim=2)(r, np.empty_like(r), sx, sy, None, lam, coef)
    assert cuda.has_tuned("fdm_apply")
    args = [cuda.asarray(a, dtype=dtype) for a in (r, sx, sy)]
    out = cuda.zeros(r.shape, dtype=dtype)
    got = cuda.to_host(cuda.kernel("fdm_apply", size=m, dim=2)(args[0], out, args[1], args[2], None,
                                                                 cuda.asarray(lam, dtype=dtype),
                                                                 cuda.asarray(coef, dtype=dtype)))
    tolerance = 1e-12 if dtype == np.float64 else 2e-4
    assert np.abs(got - expected).max() <= tolerance * np.abs(expected).max()
    reference = REFERENCE.kernel("ext_layers", size=m, dim=2)
    for mode in range(4):
        z = rng.standard_normal((E, 1, m, m)).astype(dtype)
        saved = rng.standard_normal((E, 4, 1, m - 2)).astype(dtype)
        z_dev, saved_dev = cuda.asarray(z, dtype=dtype), cuda.asarray(saved, dtype=dtype)
        reference(z, saved, mode)
        cuda.kernel("ext_layers", size=m, dim=2)(z_dev, saved_dev, mode)
        assert np.array_equal(cuda.to_host(z_dev), z) and np.array_equal(cuda.to_host(saved_dev), saved), mode


def solve_2d(backend_name, solver):
    from lobatto.api import case_from_dict
    from lobatto.runner.build import deformation_from_expressions
    from lobatto.systems.poisson.system import PoissonSystem

    u = "sin(pi*x)*sin(pi*y)"
    data = {"physics": {"equations": "poisson", "f": f"2*pi**2*{u}", "k": "1 + 0.5*x*y"},
            "mesh": {"elements": [4, 3, 1], "deform": {"x": "0.1*sin(pi*x)*sin(pi*y)",
                                                       "y": "0.08*sin(pi*y)*sin(2*pi*x)"}},
            "discretization": {"order": 6}, "solver": {"tolerance": 1e-12, **solver},
            "boundary": {"xmin": {"value": "0"}, "ymin": {"value": u}, "xmax": {"flux": "-pi*sin(pi*y)"},
                         "ymax": {"flux": "-pi*sin(pi*x)"}}}
    case = case_from_dict(data, "p2")
    m = case.mesh
    mesh = box_mesh(tuple(m.elements[:2]), m.lower[:2], m.upper[:2], deform=deformation_from_expressions(m.deform))
    backend = get_backend(backend_name)
    system = PoissonSystem.from_case(case, mesh, compute_geometry(mesh, 6), backend, None)
    return system, backend.to_host(system.solve())[0]


@pytest.mark.parametrize("solver", [{}, {"smoother": "schwarz"}, {"preconditioner": "jacobi", "method": "cg"}])
def test_poisson_2d_on_the_gpu_equals_the_cpu(solver):
    cpu, u_cpu = solve_2d("cpu", solver)
    gpu, u_gpu = solve_2d("cuda", solver)
    assert cpu.result.converged and gpu.result.converged and u_gpu.shape == (12, 1, 7, 7)
    assert abs(gpu.result.iterations - cpu.result.iterations) <= 1
    assert np.abs(u_gpu - u_cpu).max() <= 1e-10 * np.abs(u_cpu).max()
