"""Checkpoint and restart with the CUDA backend (docs/restart.md).

CUDA -> CUDA continues bitwise (Maxwell's fused whole-step path, replayed as a CUDA graph,
with and without the discrete incident wave of TF/SF, and acoustics' reference kernels on
CuPy); CUDA <-> CPU continue each other to 1e-13.
Skipped, with the reason, where CuPy or a CUDA device is missing.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.api import Simulation, case_from_dict  # noqa: E402

CASES = {
    "maxwell": {
        "mesh": {"elements": [4, 3, 3], "deform": {"x": "0.04*sin(pi*x)*sin(pi*y)*sin(pi*z)"}},
        "discretization": {"volume_form": "split", "order": 5},
        "initial": {"Ez": "sin(pi*x)*sin(pi*y)", "Hx": "0.3*cos(pi*z)*x",
                    "Ey": "exp(-20*((x-0.4)**2+(y-0.5)**2+(z-0.6)**2))"},
        "time": {"t_end": 0.3},
        "output": {"formats": ["hdf5"], "every": 5},
    },
    "maxwell_discrete_tfsf": {  # the discrete incident wave's auxiliary state on its kernel path
        "mesh": {"elements": [6, 6, 6], "upper": [1.5, 1.5, 1.5], "boundary": "absorbing"},
        "discretization": {"volume_form": "split", "order": 4},
        "source": {"inc": {"type": "plane_wave", "incident_field": "discrete", "direction": [1.0, 0.5, 0.3],
                           "polarization": [-0.5, 1.0, 0.0], "waveform": "modulated_gaussian", "frequency": 1.0,
                           "t0": 0.15, "width": 0.1, "origin": [0.25, 0.25, 0.25], "lower": [0.25] * 3,
                           "upper": [1.25] * 3}},
        "time": {"t_end": 0.4},
        "output": {"formats": ["hdf5"], "every": 10},
    },
    "acoustics": {
        "physics": {"equations": "acoustics"},
        "mesh": {"elements": [3, 2, 3], "boundary": "wall"},
        "discretization": {"volume_form": "split", "order": 4},
        "initial": {"p": "cos(pi*x)*cos(pi*y)*cos(pi*z)", "ux": "0.2*sin(pi*z)"},
        "time": {"t_end": 0.3},
        "output": {"formats": ["hdf5"]},
    },
}


def host(sim):
    return sim.backend.to_host(sim.u).copy()


def full_run(case, backend, directory):
    sim = Simulation(case, backend=backend, output_dir=directory, comm=None)
    sim.run()
    return sim


def continued(case, backend, directory, path):
    sim = Simulation(case, backend=backend, output_dir=directory, comm=None).restart(path)
    sim.run()
    return sim


@pytest.mark.parametrize("system", sorted(CASES))
def test_cuda_continues_cuda_bitwise_and_cpu_to_1e13(tmp_path, system):
    case = case_from_dict(CASES[system], name="run")
    on_gpu = full_run(case, "cuda", tmp_path / "gpu")
    on_cpu = full_run(case, "cpu", tmp_path / "cpu")
    first = Simulation(case, backend="cuda", output_dir=tmp_path / "a", comm=None)
    first.advance(7)
    path = first.checkpoint()
    first.close()  # one live run per directory: the continued run writes there
    again = continued(case, "cuda", tmp_path / "a", path)
    assert again.step_count == on_gpu.step_count and again.t == on_gpu.t
    assert np.array_equal(host(again), host(on_gpu))
    assert again.summary["cuda_graph"] == on_gpu.summary["cuda_graph"]
    scale = np.abs(host(on_cpu)).max()
    to_cpu = continued(case, "cpu", tmp_path / "b", path)
    assert np.abs(host(to_cpu) - host(on_cpu)).max() <= 1e-13 * scale
    cpu_first = Simulation(case, backend="cpu", output_dir=tmp_path / "c", comm=None)
    cpu_first.advance(7)
    path = cpu_first.checkpoint()
    cpu_first.close()
    to_gpu = continued(case, "cuda", tmp_path / "c", path)
    assert np.abs(host(to_gpu) - host(on_cpu)).max() <= 1e-13 * scale
    assert to_gpu.summary["restarts"][0]["to"]["backend"] == "cuda"
