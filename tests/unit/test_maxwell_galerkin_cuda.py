"""The Galerkin form's CUDA kernel (galerkin_cuda.py, kernels/galerkin.cu) on a GPU: equal to the
array code (WeightAdjustedOperator.rhs through CuPy, the skew volume term) on fresh random data,
on the deformed PEC and periodic boxes, the O-grid cylinder of tests/cylwave.py (2 of its 10
elements affine) and a sheared box (every element affine: the closed-form kernel alone),
N = 1, 2, 3, 5, 7, 11 at the default rule Q = N + 1 (the square kernel, and the general passes
beside it) and some rules of more points (odd and even Q), upwind and central fluxes, float64 (1e-12 of the largest value) and float32; an operator with
the strong volume term gets no kernel; and a Simulation stepping through it (graph replay
included) follows the CPU. Skipped without CuPy and a GPU
(test_maxwell_galerkin_cuda_emulated.py runs the kernel's source on the CPU)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from cylwave import cylinder_rea  # noqa: E402
from test_maxwell_galerkin import BOX, PERIODIC  # noqa: E402
from test_maxwell_galerkin_cuda_emulated import SHEARED  # noqa: E402

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.discretization import gll_points  # noqa: E402
from lobatto.backends import get_backend  # noqa: E402
from lobatto.systems.dg import face_values  # noqa: E402
from lobatto.systems.maxwell.galerkin import WeightAdjustedOperator  # noqa: E402
from lobatto.systems.maxwell.galerkin_cuda import GalerkinCuda, kernel_for  # noqa: E402


@pytest.fixture(scope="module")
def cylinder(tmp_path_factory):
    path = tmp_path_factory.mktemp("cylwave") / "cylwave.rea"
    assert cylinder_rea(path, m=1, layers=2, length=4.0) == 10
    return {"generator": "nek", "file": str(path), "boundaries": {"PEC": "pec"}}


def simulation(tmp_path, mesh, order, backend, precision="float64", flux="upwind"):
    data = {"mesh": mesh, "discretization": {"order": order, "flux": flux, "volume_form": "galerkin"},
            "physics": {"equations": "maxwell"}, "time": {"t_end": 1.0, "cfl": 0.3},
            "backend": {"precision": precision}, "output": {"formats": []}}
    return Simulation(case_from_dict(data, name="galerkin"), backend=backend, output_dir=str(tmp_path / backend),
                      comm=None)


def affine_count(coords) -> int:
    """Elements whose GLL points are an affine image of the reference cube (from the points
    alone: x = x0 + sum_a (r_a + 1)/2 (corner_a - x0)); at N = 1 the deformed boxes' sine
    deformation vanishes at every node, so they are affine there."""
    order = coords.shape[-1] - 1
    r = (gll_points(order) + 1) / 2
    x0 = coords[:, :, :1, :1, :1]
    edges = [coords[:, :, -1:, :1, :1] - x0, coords[:, :, :1, -1:, :1] - x0, coords[:, :, :1, :1, -1:] - x0]
    affine = (x0 + edges[0] * r[:, None, None] + edges[1] * r[None, :, None] + edges[2] * r[None, None, :])
    size = np.abs(coords).max()
    return int(np.count_nonzero(np.abs(affine - coords).max(axis=(0, 2, 3, 4)) < 1e-12 * size))


@pytest.mark.parametrize("order,points", [(n, None) for n in (1, 2, 3, 5, 7, 11)] + [(2, 5), (3, 6), (7, 11)])
def test_kernel_equals_the_array_code(tmp_path, cylinder, order, points):
    """At Q = N + 1 (points None) and rules of more points (Q = 5, 6, 11: odd and even)."""
    rng = np.random.default_rng()
    meshes = {"box": BOX, "periodic": PERIODIC, "cylinder": cylinder, "sheared": SHEARED}
    for label, mesh in meshes.items():
        host = simulation(tmp_path / label, mesh, order, "cpu")
        geometry, factors = host.system.geometry, np.asarray(host.system.device_geometry["face_factors"])
        host.close()
        e, n = geometry.coords.shape[1], order + 1
        u0 = rng.standard_normal((6, e, n, n, n))
        sums0 = rng.standard_normal((6, e, 6, n, n))
        epsilon, mu = rng.uniform(0.5, 2.0), rng.uniform(0.5, 2.0)
        alpha = 0.0 if label in ("periodic", "sheared") else rng.uniform(0.2, 1.0)  # central or upwind
        for precision, tolerance in (("float64", 1e-12), ("float32", 5e-5)):
            backend = get_backend("cuda", precision=precision)
            xp = backend.xp
            operator = WeightAdjustedOperator(geometry, points=points).to(backend)
            assert operator.volume == "skew" and operator.points == (points or order + 1)
            kernel = kernel_for(backend, operator)
            assert kernel is not None and kernel.fits(backend.dtype)
            assert kernel.affine_elements == affine_count(geometry.coords)  # the closed form's
            u, sums, f = backend.asarray(u0), backend.asarray(sums0), backend.asarray(factors)
            expected = operator.rhs(xp, u, (face_values(xp, u, order), sums), f, xp.empty_like(u), epsilon, mu, alpha)
            traces = kernel.face_values(u, xp.full((6, e, 6, n, n), np.nan, dtype=u.dtype))  # attach's traces
            assert bool(xp.all(traces == face_values(xp, u, order)))
            assert kernel.square == (points is None)  # Q = N + 1: galerkin_square_kernel
            kernels = [kernel] + ([GalerkinCuda(backend, operator, square=False)] if points is None else [])
            expected = backend.to_host(expected)
            scale = np.abs(expected).max()
            for k in kernels:  # at Q = N + 1 the general passes too
                out = backend.to_host(k(u, sums, f, xp.full_like(u, np.nan), epsilon, mu, alpha))
                error = np.abs(out - expected).max()
                assert error <= tolerance * scale, (label, precision, k.square, error, scale)
    strong = WeightAdjustedOperator(geometry, volume="strong").to(get_backend("cuda"))
    assert kernel_for(get_backend("cuda"), strong) is None  # the strong form: the array code's alone


@pytest.mark.parametrize("order", [3, 7])
@pytest.mark.parametrize("mesh", ["box", "periodic"])
def test_steps_through_the_kernel_follow_the_cpu(tmp_path, mesh, order):
    mesh = {"box": BOX, "periodic": PERIODIC}[mesh]
    u0 = np.random.default_rng().standard_normal((6, 8, order + 1, order + 1, order + 1))
    runs = {}
    for backend in ("cpu", "cuda"):
        sim = simulation(tmp_path, mesh, order, backend)
        assert (sim.system.galerkin.cuda is not None) == (backend == "cuda")
        assert (sim.system.stage_kernel is not None) == (backend == "cuda")  # the kernel's stage
        sim.u[...] = sim.backend.asarray(u0)
        sim.energy_initial = sim.system.energy(sim.u)  # the state was set after set-up
        energies = [sim.system.energy(sim.u)]
        for _ in range(6):  # the run's own stepping: plain, then recorded and replayed as a graph
            sim.advance(1)
            energies.append(sim.system.energy(sim.u))
        assert np.all(np.diff(energies) <= 1e-13 * energies[0])
        if backend == "cuda":
            assert sim.advance_one.captured, sim.advance_one.fallback_reason  # the steps replay a CUDA graph
        runs[backend] = np.array(sim.backend.to_host(sim.u))
        sim.close()
    scale = np.abs(runs["cpu"]).max()
    assert np.abs(runs["cuda"] - runs["cpu"]).max() < 1e-11 * scale
    assert np.abs(runs["cpu"] - u0).max() > 1e-3 * scale  # the steps changed the state
