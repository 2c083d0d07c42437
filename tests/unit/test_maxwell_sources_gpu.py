"""Maxwell sources on the CUDA backend equal the CPU backend: a boxed current and electric and
magnetic dipoles, on the fused whole-step path (lsrk45: the sources are a stage term folded into
the residual before the stage kernel or added after it, source_term.py), whose steps are
recorded as a CUDA graph and replayed with the stage times read from a device clock, and on the
rhs path (rk4); dipoles alone, currents alone, a dipole with a PML and a TF/SF plane wave
(the issue's case), and dipoles and a current in a diagonal medium with Drude poles. Skipped, with the reason, without CuPy and a GPU."""

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
            "discretization": {"volume_form": "split", "order": 5}, "physics": {"equations": "maxwell", "epsilon": 1.5},
            "time": {"t_end": 0.3, "integrator": integrator}, "output": {"formats": []}, "source": SOURCES})
        sim = Simulation(case, backend=backend, output_dir=tmp_path / backend, comm=None)
        assert sim.system.time_dependent and not sim.system.energy_bounded
        sim.advance(8)
        if backend == "cuda":
            assert sim.stepper.path == ("whole-step" if integrator == "lsrk45" else "stages")
            if integrator == "lsrk45":
                assert sim.advance_one is not None and sim.advance_one.captured, sim.advance_one.fallback_reason
        results[backend] = sim.fields()
    cpu, cuda = results["cpu"], results["cuda"]
    scale = max(float(np.abs(cpu[name]).max()) for name in cpu)
    assert scale > 1e-2
    for name in cpu:
        assert np.abs(cuda[name] - cpu[name]).max() <= 1e-12 * scale, name


PML = {"sides": "all", "elements": 1}
WAVE = {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 0, 1], "lower": [1.0, 1.0, 1.0],
        "upper": [5.0, 5.0, 5.0], "waveform": "modulated_gaussian", "frequency": 0.4, "t0": 1.0, "width": 0.5}
DIPOLE = {"type": "electric_dipole", "position": [3.1, 2.9, 3.05], "direction": [0, 1, 1],
          "waveform": "modulated_gaussian", "frequency": 0.5, "t0": 0.8, "width": 0.4}
MAGNETIC = {"type": "magnetic_dipole", "position": [2.0, 3.0, 3.0], "direction": [1, 0, 0], "amplitude": 0.5,
            "waveform": "ricker", "frequency": 0.6, "t0": 0.9}
CURRENT = {"type": "current", "Jz": "sin(3*t)*exp(-((x-3)**2+(y-3)**2))", "lower": [2.0, 2.0, 2.0],
           "upper": [4.0, 4.0, 4.0]}


#: a diagonal medium with poles around the sources (sources.py: each component over its own
#: eps_c or mu_c; dispersive.py: eps_inf per component)
CRYSTAL = {"crystal": {"where": "x - 2.5", "epsilon": [2.0, 3.0, 1.5], "mu": [1.0, 1.2, 0.9], "model": "drude",
                       "poles": [{"plasma_frequency": 0.5, "collision_frequency": 0.1}]}}


@pytest.mark.parametrize("label, sources, pml", [
    ("dipoles", {"antenna": DIPOLE, "loop": MAGNETIC}, False),
    ("current", {"sheet": CURRENT}, False),
    ("pml+tfsf+dipole", {"wave": WAVE, "antenna": DIPOLE}, True),
    ("diagonal+poles", {"antenna": DIPOLE, "loop": MAGNETIC, "sheet": CURRENT}, False)])
def test_fused_graph_step_with_sources_equals_cpu(label, sources, pml, tmp_path):
    """Each step replays the recorded graph (from the third on) at its own stage times: 10
    steps through the pulses' rise against the CPU's stage-by-stage steps."""
    results = {}
    for backend in ("cpu", "cuda"):
        data = {"mesh": {"elements": [6, 6, 6], "upper": [6.0, 6.0, 6.0], "boundary": "absorbing"},
                "discretization": {"volume_form": "split", "order": 3}, "physics": {"equations": "maxwell"},
                "initial": {"Ey": "exp(-((x-3)**2+(y-3.2)**2+(z-2.9)**2))"},
                "time": {"t_end": 100.0}, "output": {"formats": []}, "source": sources}
        if pml:
            data["pml"] = PML
        if label == "diagonal+poles":
            data["material"] = CRYSTAL
        sim = Simulation(case_from_dict(data, name=label), backend=backend, output_dir=tmp_path / backend, comm=None)
        sim.advance(10)
        if backend == "cuda":
            assert sim.stepper.path == "whole-step"
            assert sim.advance_one is not None and sim.advance_one.captured, sim.advance_one.fallback_reason
            assert sim.system.summary(sim.stepper)["sources"]["whole_step"].startswith("on")
        results[backend] = sim.fields()
    cpu, cuda = results["cpu"], results["cuda"]
    scale = max(float(np.abs(cpu[name]).max()) for name in cpu)
    for name in cpu:
        assert np.abs(cuda[name] - cpu[name]).max() <= 1e-12 * scale, name
