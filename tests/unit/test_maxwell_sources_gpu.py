"""Maxwell sources on the CUDA backend equal the CPU backend: a boxed current and electric and
magnetic dipoles, through the stage path (lsrk45: the fused stage kernel plus the source's
axpy; the whole-step path and graphs are off with sources) and the rhs path (rk4). Skipped,
with the reason, without CuPy and a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.api import Simulation, case_from_dict  # noqa: E402

SOURCES = {
    "sheet": {"type": "current", "Jy": "sin(7*t)*exp(-10*(z-0.5)**2)", "Jz": "x*t",
              "lower": [0.4, 0.0, 0.0], "upper": [0.6, 1.0, 1.0]},
    "everywhere": {"type": "current", "Jx": "cos(3*t)*y"},
    "corner": {"type": "electric_dipole", "position": [0.5, 0.5, 0.5], "direction": [1, 1, 0],
               "waveform": "modulated_gaussian", "frequency": 3.0, "t0": 0.1, "width": 0.05},
    "inside": {"type": "magnetic_dipole", "position": [0.3, 0.2, 0.7], "direction": [0, 0, 1], "amplitude": 2.0,
               "waveform": "continuous", "frequency": 4.0, "ramp": 0.1},
}


@pytest.mark.parametrize("integrator", ["lsrk45", "rk4"])
def test_cuda_equals_cpu_with_sources(integrator, tmp_path):
    results = {}
    for backend in ("cpu", "cuda"):
        case = case_from_dict({
            "mesh": {"elements": [4, 3, 2], "boundary": "pec", "boundaries": {"xmax": "absorbing"},
                     "deform": {"x": "0.02*sin(4*pi*x)*sin(pi*y)*sin(pi*z)"}},
            "discretization": {"order": 5}, "physics": {"equations": "maxwell", "epsilon": 1.5},
            "time": {"t_end": 0.3, "integrator": integrator}, "output": {"formats": []}, "source": SOURCES})
        sim = Simulation(case, backend=backend, output_dir=tmp_path / backend, comm=None)
        assert sim.system.time_dependent and sim.system.whole_step(sim.stepper) is None
        sim.advance(8)
        results[backend] = sim.fields()
    cpu, cuda = results["cpu"], results["cuda"]
    scale = max(float(np.abs(cpu[name]).max()) for name in cpu)
    assert scale > 1e-2
    for name in cpu:
        assert np.abs(cuda[name] - cpu[name]).max() <= 1e-12 * scale, name
