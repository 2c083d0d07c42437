"""volume_form = "galerkin" on the GPU: the same array code through CuPy equals the CPU's over
steps from random data, and keeps the energy (test_maxwell_galerkin.py); with sources, the
[pml] and a TF/SF plane wave CUDA equals the CPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from test_maxwell_galerkin import BOX, PERIODIC  # noqa: E402

from lobatto.api import Simulation, case_from_dict  # noqa: E402


def simulation(tmp_path, mesh, order, flux, backend):
    data = {"mesh": mesh, "discretization": {"order": order, "flux": flux, "volume_form": "galerkin"},
            "physics": {"equations": "maxwell"}, "time": {"t_end": 1.0, "cfl": 0.3}, "output": {"formats": []}}
    return Simulation(case_from_dict(data, name="galerkin"), backend=backend, output_dir=str(tmp_path / backend),
                      comm=None)


@pytest.mark.parametrize("order", [3, 6])
@pytest.mark.parametrize("mesh", [BOX, PERIODIC], ids=["deformed box", "deformed periodic box"])
def test_cuda_equals_cpu_over_steps(tmp_path, mesh, order):
    u0 = np.random.default_rng().standard_normal((6, 8, order + 1, order + 1, order + 1))
    runs = {}
    for backend in ("cpu", "cuda"):
        sim = simulation(tmp_path, mesh, order, "upwind", backend)
        sim.u[...] = sim.backend.asarray(u0)
        energies = [sim.system.energy(sim.u)]
        for n in range(10):
            sim.stepper.step(sim.u, n * sim.dt, sim.dt)
            energies.append(sim.system.energy(sim.u))
        assert np.all(np.diff(energies) <= 1e-13 * energies[0])
        runs[backend] = np.array(sim.backend.to_host(sim.u))
        sim.close()
    scale = np.abs(runs["cpu"]).max()
    assert np.abs(runs["cuda"] - runs["cpu"]).max() < 1e-11 * scale
    assert np.abs(runs["cpu"] - u0).max() > 1e-3 * scale  # the steps changed the state


def final_states(tmp_path, data, name):
    """The state at t_end of ``data`` run on the CPU and on CUDA, as host arrays."""
    runs = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(case_from_dict(data, name=name), backend=backend, output_dir=str(tmp_path / f"{name}{backend}"),
                         comm=None)
        sim.advance(sim.steps)
        runs[backend] = np.array(sim.backend.to_host(sim.u))
        sim.close()
    scale = np.abs(runs["cpu"]).max()
    return runs, scale


def test_sources_cuda_equals_cpu(tmp_path):
    """A dipole (its delta M_W^-1 phi(x0), through the dipole kernel) and a current with the
    Galerkin form: whole steps on CUDA (the source folded into the stage) equal the CPU's."""
    source = {"d": {"type": "electric_dipole", "position": [0.43, 0.58, 0.37], "direction": [0.3, -0.5, 0.8],
                    "amplitude": 1.7, "waveform": "gaussian", "t0": 0.05, "width": 0.03},
              "j": {"type": "current", "Jz": "sin(pi*y)*sin(3*t)"}}
    data = {"mesh": BOX, "discretization": {"order": 4, "volume_form": "galerkin"}, "physics": {"equations": "maxwell"},
            "time": {"t_end": 0.2, "cfl": 0.3}, "output": {"formats": []}, "source": source}
    runs, scale = final_states(tmp_path, data, "sources")
    assert scale > 1e-3 and np.abs(runs["cuda"] - runs["cpu"]).max() < 1e-11 * scale


def test_pml_cuda_equals_cpu(tmp_path):
    """A dipole in a box lined with the [pml] (the layer's kernels fold into the Galerkin stage):
    CUDA equals the CPU over whole steps."""
    data = {"mesh": {"elements": [4, 4, 4], "lower": [-1, -1, -1], "upper": [1, 1, 1], "boundary": "pec"},
            "discretization": {"order": 3, "volume_form": "galerkin"}, "physics": {"equations": "maxwell"},
            "pml": {"sides": "all", "elements": 1}, "time": {"t_end": 0.6, "cfl": 0.5}, "output": {"formats": []},
            "source": {"d": {"type": "electric_dipole", "position": [0.05, -0.03, 0.02], "direction": [0, 0, 1],
                             "waveform": "ricker", "frequency": 2.0, "t0": 0.5}}}
    runs, scale = final_states(tmp_path, data, "lined")
    assert scale > 1e-3 and np.abs(runs["cuda"] - runs["cpu"]).max() < 1e-11 * scale


def test_plane_wave_cuda_equals_cpu(tmp_path):
    """An oblique TF/SF plane wave through a box with the Galerkin form (tfsf_galerkin.py: the
    exchanged sums corrected at the surface's face nodes, CuPy here, before the Galerkin stage
    kernel reads them): CUDA equals the CPU over whole steps."""
    wave = {"type": "plane_wave", "direction": [1.0, 0.5, 0.3], "polarization": [-0.5, 1.0, 0.0],
            "waveform": "modulated_gaussian", "frequency": 1.0, "t0": 0.6, "width": 0.2,
            "origin": [0.5, 0.5, 0.5], "lower": [0.5, 0.5, 0.25], "upper": [1.0, 1.25, 1.0]}
    for integrator in ("lsrk45", "rk4"):  # the stage path and the rhs path
        data = {"mesh": {"elements": [6, 6, 6], "upper": [1.5, 1.5, 1.5], "boundary": "absorbing"},
                "discretization": {"order": 3, "volume_form": "galerkin"}, "physics": {"equations": "maxwell"},
                "time": {"t_end": 1.2, "cfl": 0.3, "integrator": integrator}, "output": {"formats": []},
                "source": {"inc": wave}}
        runs, scale = final_states(tmp_path, data, f"plane{integrator}")
        assert scale > 0.3 and np.abs(runs["cuda"] - runs["cpu"]).max() < 1e-11 * scale
