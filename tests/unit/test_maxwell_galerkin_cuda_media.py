"""The Galerkin form's CUDA kernels with a per-point medium (galerkin_cuda.py's media
instantiations) on a GPU: rhs and stage equal to the array code (NumPy on the CPU, float64) on
fresh random data and random media (eps jumping across every element face and varying inside the
elements, isotropic or diagonal; mu varying; sigma > 0 on about half the elements, or none), on
the deformed PEC box (upwind), the O-grid cylinder of tests/cylwave.py (2 of its 10 elements
affine, curved and affine mixed: with a medium all take the block kernel; upwind) and the
periodic box (central), Q = N + 1 at N = 3, 4, 7 (the square kernel, and the general passes beside
it) and Q > N + 1 (the general kernel), float64 (1e-12 of the largest value) and float32; and a
Simulation of a [material] case stepping through the kernels (graph replay included) follows
the CPU. Skipped without CuPy and a GPU (test_maxwell_galerkin_cuda_media_emulated.py runs the
kernels' source on the CPU)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from test_maxwell_galerkin import BOX, PERIODIC, cylinder  # noqa: E402, F401  (cylinder: a fixture)
from test_maxwell_galerkin_cuda_media_emulated import medium_case  # noqa: E402

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.backends import get_backend  # noqa: E402
from lobatto.systems.dg import face_values  # noqa: E402
from lobatto.systems.maxwell.galerkin import WeightAdjustedOperator  # noqa: E402
from lobatto.systems.maxwell.galerkin_cuda import GalerkinCuda, kernel_for  # noqa: E402
from lobatto.systems.maxwell.galerkin_media import GalerkinMedium  # noqa: E402


def on_device(operator, backend):
    """A copy of the host ``operator`` (with its GalerkinMedium) on ``backend``."""
    device = WeightAdjustedOperator.__new__(WeightAdjustedOperator)
    device.__dict__.update(operator.__dict__)
    device.to(backend)  # rebinds the device copy's arrays only
    medium = GalerkinMedium.__new__(GalerkinMedium)
    medium.__dict__.update(operator.medium.__dict__)
    device.medium = medium.to(backend)
    return device


@pytest.mark.parametrize("order,points", [(3, None), (4, None), (7, None), (3, 5), (4, 6)])
def test_media_kernels_equal_the_array_code(tmp_path, cylinder, order, points):
    rng = np.random.default_rng()
    cases = [("box", BOX, "upwind", False, True), ("cylinder", cylinder, "upwind", True, True),
             ("periodic", PERIODIC, "central", True, False), ("cylinder-lossless", cylinder, "central", False, False)]
    for label, mesh, flux, diagonal, conductor in cases:
        host, factors, alpha = medium_case(tmp_path / label, mesh, order, rng, flux, diagonal, conductor, points)
        e, n = host.weighted_cofactors.shape[2], order + 1
        u0, residual0 = rng.standard_normal((6, e, n, n, n)), rng.standard_normal((6, e, n, n, n))
        sums0 = rng.standard_normal((6, e, 6, n, n))
        expected = host.rhs(np, u0, (face_values(np, u0, order), sums0), factors, np.empty_like(u0), 1.0, 1.0, alpha)
        a, b, dt = -0.6, 0.4, 0.01
        expected_residual = a * residual0 + dt * expected
        expected_u = u0 + b * expected_residual
        for precision, tolerance in (("float64", 1e-12), ("float32", 5e-5)):
            backend = get_backend("cuda", precision=precision)
            xp = backend.xp
            operator = on_device(host, backend)
            kernel = kernel_for(backend, operator)
            assert kernel is not None and kernel.fits(backend.dtype) and kernel.affine_elements == 0
            assert kernel.square == (points is None)
            kernels = [kernel] + ([GalerkinCuda(backend, operator, square=False)] if points is None else [])
            u, sums, f = backend.asarray(u0), backend.asarray(sums0), backend.asarray(factors)
            scale = np.abs(expected).max()
            for k in kernels:  # the medium's eps and mu: the scalars passed are not read
                out = backend.to_host(k(u, sums, f, xp.full_like(u, np.nan), 7.0, 0.1, alpha))
                error = np.abs(out - expected).max()
                assert error <= tolerance * scale, (label, precision, k.square, error, scale)
            residual = backend.asarray(residual0)
            kernel.stage(u, residual, sums, f, 7.0, 0.1, alpha, a, b, dt)
            for got, want in ((residual, expected_residual), (u, expected_u)):
                error = np.abs(backend.to_host(got) - want).max()
                assert error <= tolerance * np.abs(want).max(), (label, precision, "stage", error)


MATERIAL = {"ball": {"where": "0.09 - (x-0.5)**2 - (y-0.5)**2 - (z-0.5)**2", "epsilon": [2.5, 1.5, 3.0]},
            "film": {"where": "0.3 - x", "sigma": 0.4, "mu": "1.2 + 0.3*y"},
            "right": {"where": "x - 0.5", "epsilon": 4.0, "sampling": "element"}}


@pytest.mark.parametrize("order", [3, 5])
def test_media_steps_through_the_kernels_follow_the_cpu(tmp_path, order):
    """A [material] case (a diagonal-eps ball sampled per point, a lossy film with mu varying, a
    half-space of eps = 4 ending on element faces) on the deformed PEC box: six steps on the GPU
    (plain, then a recorded graph) equal the CPU's, and the upwind energy does not grow."""
    u0 = np.random.default_rng().standard_normal((6, 8, order + 1, order + 1, order + 1))
    runs = {}
    for backend in ("cpu", "cuda"):
        data = {"mesh": BOX, "discretization": {"order": order, "volume_form": "galerkin"},
                "physics": {"equations": "maxwell"}, "material": MATERIAL,
                "time": {"t_end": 1.0, "cfl": 0.3}, "output": {"formats": []}}
        sim = Simulation(case_from_dict(data, name="galerkin_media"), backend=backend,
                         output_dir=str(tmp_path / backend), comm=None)
        operator = sim.system.galerkin
        assert operator.medium is not None and operator.medium.loss_weights is not None
        assert (operator.cuda is not None) == (backend == "cuda")
        assert (sim.system.stage_kernel is not None) == (backend == "cuda")  # the kernel's stage
        sim.u[...] = sim.backend.asarray(u0)
        sim.energy_initial = sim.system.energy(sim.u)
        energies = [sim.system.energy(sim.u)]
        for _ in range(6):
            sim.advance(1)
            energies.append(sim.system.energy(sim.u))
        assert np.all(np.diff(energies) <= 1e-13 * energies[0])
        if backend == "cuda":
            assert sim.advance_one.captured, sim.advance_one.fallback_reason
        runs[backend] = np.array(sim.backend.to_host(sim.u))
        sim.close()
    scale = np.abs(runs["cpu"]).max()
    assert np.abs(runs["cuda"] - runs["cpu"]).max() < 1e-11 * scale
    assert np.abs(runs["cpu"] - u0).max() > 1e-3 * scale
