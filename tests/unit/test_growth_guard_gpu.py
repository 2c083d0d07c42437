"""The growth guard (runner/growth_guard.py) on the CUDA backend, against the CPU: an unstable
run (a stiff Drude pole stepped too long) stops at the same step with the same message; a stable
one with a dipole, a current, a TF/SF plane wave and a [pml] layer (the fused whole-step path,
its steps replayed as a CUDA graph) runs through with the same history: energies and the
sources' integrals (the currents' norm sampled on the device) equal the CPU's. Skipped, with
the reason, without CuPy and a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.errors import SolverError  # noqa: E402

LINE = {"mesh": {"elements": [6, 1, 1], "upper": [1.5, 0.25, 0.25], "periodic": [False, True, True],
                 "boundary": "absorbing"},
        "discretization": {"order": 3}, "physics": {"equations": "maxwell"}, "output": {"formats": []},
        "initial": {"Ey": "exp(-((x-0.75)/0.1)**2)", "Hz": "exp(-((x-0.75)/0.1)**2)"}}


def test_an_unstable_pole_stops_at_the_same_step(tmp_path):
    data = dict(LINE, time={"t_end": 4.0, "cfl_check": False},
                material={"slab": {"where": "x - 0.5", "sampling": "element", "model": "drude",
                                   "poles": [{"plasma_frequency": 1.0, "collision_frequency": 22.0}]}})
    stops = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(case_from_dict(data), backend=backend, output_dir=tmp_path / backend, comm=None)
        with pytest.raises(SolverError, match="grew exponentially") as error:
            sim.run()
        stops[backend] = (sim.step_count, str(error.value).split(": the discrete energy")[0])
    assert stops["cuda"] == stops["cpu"] and stops["cpu"][0] == 40


def test_sources_layers_and_a_plane_wave_run_through_alike(tmp_path):
    data = {"mesh": {"elements": [4, 2, 2], "upper": [2.0, 1.0, 1.0], "periodic": [False, True, True],
                     "boundary": "pec"},
            "discretization": {"order": 4}, "physics": {"equations": "maxwell"}, "output": {"formats": []},
            "time": {"t_end": 3.0}, "pml": {"sides": ["xmin", "xmax"], "elements": 1, "reflection": 1e-4},
            "source": {"inc": {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 1, 0],
                               "waveform": "continuous", "frequency": 1.0, "ramp": 0.5,
                               "lower": [0.5, 0.0, 0.0], "upper": [1.0, 1.0, 1.0]},
                       "d": {"type": "electric_dipole", "position": [1.3, 0.4, 0.6], "direction": [0, 0, 1],
                             "waveform": "gaussian", "t0": 1.0, "width": 0.2},
                       "j": {"type": "current", "Jz": "sin(5*t)*exp(-20*((x-1.2)**2+(y-0.5)**2))",
                             "lower": [1.0, 0.0, 0.0], "upper": [1.5, 1.0, 1.0]}}}
    histories = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(case_from_dict(data), backend=backend, output_dir=tmp_path / backend, comm=None)
        sim.run()
        guard = sim.guard
        histories[backend] = (np.array([h[:4] for h in guard.history]), np.array([h[5] for h in guard.history]),
                              guard.closest)
    cpu, cuda = histories["cpu"], histories["cuda"]
    assert cpu[0].shape == cuda[0].shape and cpu[0].shape[0] > 5 and cpu[2] < 10
    np.testing.assert_allclose(cuda[0], cpu[0], rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(cuda[1], cpu[1], rtol=1e-9, atol=1e-14)
    assert abs(cuda[2] - cpu[2]) <= 1e-9 * cpu[2]
