"""Bloch-periodic boundaries with volume_form = "galerkin" on the CUDA backend equal the CPU
backend (test_maxwell_bloch_galerkin.py): the pair's operator on random fields on a curved
periodic mesh (the wraps' rotation in CuPy array code around galerkin_cuda's trace and rhs
kernels, one call per part on views of the pair's arrays); runs of a Bloch mode on the stage
path (lsrk45: galerkin_cuda's stage kernel per part) and the rhs path (rk4), their energy the
CPU's; an oblique continuous TF/SF plane wave (the Galerkin sums correction of each part, in
CuPy) with a [pml]. Skipped, with the reason, without CuPy and a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from test_maxwell_bloch_galerkin import cell_system, mode_case, rhs  # noqa: E402
from test_maxwell_bloch_tfsf import oblique_case  # noqa: E402

from lobatto.api import Simulation, case_from_dict  # noqa: E402

GPU = "cuda"


@pytest.mark.parametrize("flux", ["upwind", "central"])
@pytest.mark.parametrize("order", [3, 6])
def test_pair_operator_cuda_equals_cpu(flux, order):
    rng = np.random.default_rng()
    k = (rng.uniform(-4, 4), rng.uniform(-4, 4), 0.0)
    cpu, gpu = cell_system("cpu", flux, k, order=order), cell_system(GPU, flux, k, order=order)
    assert gpu.galerkin.cuda is not None or GPU == "cpu"  # galerkin_cuda's kernel, not the array code
    u = rng.standard_normal(cpu.allocate_state().shape)
    want = rhs(cpu, u)
    assert np.abs(rhs(gpu, u) - want).max() <= 1e-12 * np.abs(want).max()


@pytest.mark.parametrize("integrator", ["lsrk45", "rk4"])
def test_bloch_mode_run_cuda_equals_cpu(integrator, tmp_path):
    results, energies = {}, {}
    for backend in ("cpu", GPU):
        case = mode_case(5, "galerkin", True, integrator=integrator, flux="central")
        sim = Simulation(case, backend=backend, output_dir=tmp_path / f"{backend}{integrator}", comm=None)
        assert sim.stepper.path == "stages" and sim.system.galerkin is not None
        start = sim.system.energy(sim.u)
        sim.advance(10)
        results[backend] = np.array(sim.backend.to_host(sim.u))
        energies[backend] = (start, sim.system.energy(sim.u))
        sim.close()
    scale = np.abs(results["cpu"]).max()
    assert np.abs(results[GPU] - results["cpu"]).max() <= 1e-12 * scale
    assert np.allclose(energies[GPU], energies["cpu"], rtol=1e-12, atol=0)
    start, end = energies[GPU]
    assert end <= start * (1 + 1e-14)  # central flux: only the time step's dissipation


def test_oblique_plane_wave_and_pml_cuda_equals_cpu(tmp_path):
    """Both parts' Galerkin TF/SF corrections and [pml] terms."""
    results = {}
    for backend in ("cpu", GPU):
        data = oblique_case("p")
        data["mesh"].update(elements=[2, 1, 12], upper=[0.25, 0.25, 3.0])
        data["discretization"].update(order=5, volume_form="galerkin")
        data["pml"] = {"sides": ["zmin", "zmax"], "elements": 2}
        data["source"]["inc"].update(ramp=0.1, origin=[0.0, 0.0, 1.0], lower=[0.0, 0.0, 1.0], upper=[0.25, 0.25, 2.0])
        data["time"] = {"t_end": 1.0}
        sim = Simulation(case_from_dict(data), backend=backend, output_dir=tmp_path / backend, comm=None)
        assert {"plane_wave.inc", "plane_wave.inc_im", "pml_im"} <= {t.name for t in sim.system.terms}
        sim.advance(30)
        results[backend] = sim.fields()
        sim.close()
    cpu, gpu = results["cpu"], results[GPU]
    scale = max(float(np.abs(cpu[name]).max()) for name in cpu)
    assert scale > 0.1 and float(np.abs(cpu["Ex_im"]).max()) > 0.05
    for name in cpu:
        assert np.abs(gpu[name] - cpu[name]).max() <= 1e-12 * scale, name
