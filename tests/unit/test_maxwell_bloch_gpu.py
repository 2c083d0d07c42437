"""Bloch-periodic boundaries on the CUDA backend equal the CPU backend: the pair's operator on
random fields (the wraps' rotation in CuPy array code around the CUDA trace and rhs kernels) and
a run with a [material] slab on the stage path (lsrk45; the fused whole step is not taken with
Bloch) and the rhs path (rk4); its energy the CPU's, not growing; an oblique continuous TF/SF plane
wave (both parts' surface terms) with a [pml] and a slab. Skipped, with the
reason, without CuPy and a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.backends import get_backend  # noqa: E402
from lobatto.mesh import box_mesh  # noqa: E402
from lobatto.systems.maxwell.system import MaxwellSystem  # noqa: E402


@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_pair_operator_cuda_equals_cpu(flux):
    rng = np.random.default_rng()
    k = (rng.uniform(-4, 4), rng.uniform(-4, 4), 0.0)
    mesh = box_mesh((3, 2, 2), periodic=(True, True, False), boundary="pec")
    out = {}
    u = None
    for name in ("cpu", "cuda"):
        backend = get_backend(name)
        system = MaxwellSystem(mesh, 5, backend, epsilon=2.0, mu=1.5, flux=flux, bloch_k=k)
        if u is None:
            u = rng.standard_normal(system.allocate_state().shape)
        out[name] = backend.to_host(system.core_rhs(backend.asarray(u), 0.0, backend.asarray(np.zeros_like(u))))
    scale = np.abs(out["cpu"]).max()
    assert np.abs(out["cuda"] - out["cpu"]).max() <= 1e-12 * scale


@pytest.mark.parametrize("integrator", ["lsrk45", "rk4"])
def test_run_cuda_equals_cpu(integrator, tmp_path):
    results, energies = {}, {}
    for backend in ("cpu", "cuda"):
        case = case_from_dict({
            "mesh": {"elements": [3, 3, 2], "periodic": [True, True, False], "boundary": "pec",
                     "deform": {"x": "0.02*sin(2*pi*x)*sin(pi*y)*sin(pi*z)"}},
            "discretization": {"volume_form": "split", "order": 5, "flux": "central"},
            "physics": {"equations": "maxwell", "bloch_k": [2.1, -1.2, 0.0]},
            "material": {"slab": {"where": "0.2 - abs(z - 0.5)", "epsilon": 3.0}},
            "initial": {"Ey": "exp(-20*((x-0.5)**2 + (z-0.5)**2))", "Hz_im": "sin(pi*y)*exp(-20*(x-0.4)**2)"},
            "time": {"t_end": 0.3, "integrator": integrator}, "output": {"formats": []}})
        sim = Simulation(case, backend=backend, output_dir=tmp_path / backend, comm=None)
        assert sim.stepper.path == "stages"
        start = sim.system.energy(sim.u)
        sim.advance(8)
        results[backend] = sim.fields()
        energies[backend] = (start, sim.system.energy(sim.u))
    cpu, cuda = results["cpu"], results["cuda"]
    assert set(cpu) >= {"Ex_im", "Hz_im"}
    scale = max(float(np.abs(cpu[name]).max()) for name in cpu)
    for name in cpu:
        assert np.abs(cuda[name] - cpu[name]).max() <= 1e-12 * scale, name
    assert np.allclose(energies["cuda"], energies["cpu"], rtol=1e-12, atol=0)
    start, end = energies["cuda"]
    assert end <= start  # central flux: only the time step's dissipation (3.5e-6 of it on the CPU)


def test_phased_sheet_and_pml_cuda_equals_cpu(tmp_path):
    """Sources times cos / sin(k . x) and one [pml] per part (the CUDA PML kernel on each part)."""
    results = {}
    for backend in ("cpu", "cuda"):
        case = case_from_dict({
            "mesh": {"elements": [2, 1, 12], "periodic": [True, True, False], "upper": [0.5, 0.25, 3.0],
                     "boundary": "pec"},
            "discretization": {"volume_form": "split", "order": 5}, "physics": {"equations": "maxwell", "bloch_k": [3.1, 0.0, 0.0]},
            "pml": {"sides": ["zmin", "zmax"], "elements": 2},
            "source": {"sheet": {"type": "current", "Jy": "exp(-((t-0.6)/0.3)**2)*exp(-200*(z-1.1)**2)"},
                       "dip": {"type": "electric_dipole", "position": [0.2, 0.1, 1.7], "direction": [1, 0, 1],
                               "waveform": "ricker", "frequency": 1.5, "t0": 0.5}},
            "time": {"t_end": 1.0}, "output": {"formats": []}})
        sim = Simulation(case, backend=backend, output_dir=tmp_path / backend, comm=None)
        sim.advance(30)
        results[backend] = sim.fields()
    cpu, cuda = results["cpu"], results["cuda"]
    scale = max(float(np.abs(cpu[name]).max()) for name in cpu)
    assert scale > 1e-3
    for name in cpu:
        assert np.abs(cuda[name] - cpu[name]).max() <= 1e-12 * scale, name


def test_oblique_plane_wave_cuda_equals_cpu(tmp_path):
    """A continuous TF/SF plane wave at 30 degrees with bloch_k (plane_waves.py): the real part's
    and the imaginary part's surface terms (the CUDA SurfaceAdd kernel on each part) and a [pml]."""
    results = {}
    for backend in ("cpu", "cuda"):
        case = case_from_dict({
            "mesh": {"elements": [1, 1, 12], "periodic": [True, True, False], "upper": [0.25, 0.25, 3.0],
                     "boundary": "pec"},
            "discretization": {"volume_form": "split", "order": 5}, "physics": {"equations": "maxwell", "bloch_k": [3.141592653589793, 0, 0]},
            "pml": {"sides": ["zmin", "zmax"], "elements": 2},
            "material": {"slab": {"where": "0.25 - abs(z - 1.5)", "epsilon": 2.25, "sampling": "element"}},
            "source": {"inc": {"type": "plane_wave", "direction": [0.5, 0.0, 0.75**0.5],
                               "polarization": [0.75**0.5, 0.0, -0.5], "waveform": "continuous", "frequency": 1.0,
                               "ramp": 0.1, "origin": [0.0, 0.0, 1.0], "lower": [0.0, 0.0, 1.0],
                               "upper": [0.25, 0.25, 2.25]}},
            "time": {"t_end": 1.0}, "output": {"formats": []}})
        sim = Simulation(case, backend=backend, output_dir=tmp_path / backend, comm=None)
        assert {"plane_wave.inc", "plane_wave.inc_im", "pml_im"} <= {t.name for t in sim.system.terms}
        sim.advance(30)
        results[backend] = sim.fields()
    cpu, cuda = results["cpu"], results["cuda"]
    scale = max(float(np.abs(cpu[name]).max()) for name in cpu)
    assert scale > 0.1 and float(np.abs(cpu["Ex_im"]).max()) > 0.05
    for name in cpu:
        assert np.abs(cuda[name] - cpu[name]).max() <= 1e-12 * scale, name
