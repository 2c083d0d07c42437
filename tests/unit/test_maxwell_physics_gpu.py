"""Maxwell's physics terms on the CUDA backend equal the CPU backend (the NumPy oracle): a PML
on all sides, a TF/SF plane wave, a Drude region, and all three together, on the fused
whole-step path (where the terms' kernels fold into the residual before the stage kernel or
finish after it, and rewrite the traces they change), and a region of Drude, Lorentz and
Debye poles sampled per point (with its own eps_inf, a medium given per point, and with the
background's), and those poles reaching into the layer, where they are driven by Lambda E
(dispersive.py's stretch_with). The auxiliary fields agree too. Skipped, with the reason,
without CuPy and a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.api import Simulation, case_from_dict  # noqa: E402

PML = {"sides": "all", "elements": 1}
WAVE = {"wave": {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 0, 1], "lower": [1.0, 1.0, 1.0],
                 "upper": [5.0, 5.0, 5.0], "waveform": "modulated_gaussian", "frequency": 0.4, "t0": 3.0,
                 "width": 1.0}}
DRUDE = {"metal": {"where": "2.5 - x", "sampling": "element", "model": "drude",
                   "poles": [{"plasma_frequency": 0.5, "collision_frequency": 0.1}]}}

MIXED = {"glass": {"where": "0.8 - ((x-3)**2+(y-3)**2+(z-3)**2)/4", "epsilon": 2.0,
                   "poles": [{"model": "drude", "plasma_frequency": 0.5, "collision_frequency": 0.1},
                             {"model": "lorentz", "resonance_frequency": 0.7, "delta_epsilon": 1.5, "damping_frequency": 0.05},
                             {"model": "debye", "delta_epsilon": 0.8, "relaxation_time": 0.6}]}}


def case(pml, wave, drude):
    data = {"mesh": {"elements": [6, 6, 6], "upper": [6.0, 6.0, 6.0], "boundary": "absorbing"},
            "discretization": {"order": 4}, "physics": {"equations": "maxwell"},
            "initial": {"Ey": "exp(-((x-3)**2+(y-3.2)**2+(z-2.9)**2))", "Hz": "x*exp(-((x-3)**2+(y-3)**2+(z-3)**2))"},
            "time": {"t_end": 100.0}, "output": {"formats": []}}
    if pml:
        data["pml"] = PML
    if wave:
        data["source"] = {"wave": dict(WAVE["wave"])}
        if drude is True:  # the metal fills x < 2.5: the total-field box starts beyond it (a TF/SF surface
            data["source"]["wave"]["lower"] = [3.0, 1.0, 1.0]  # must lie in the background medium)
    if drude:
        data["material"] = DRUDE if drude is True else MIXED
        if drude == "poles":  # the same poles, eps_inf that of the background: the fused path
            data["material"] = {"glass": {k: v for k, v in MIXED["glass"].items() if k != "epsilon"}}
        if drude == "layer":  # the poles from the interior into the layer at xmin, cutting elements
            data["material"] = {"glass": dict(MIXED["glass"], where="1.7 - x + 0.3*sin(2*y)")}
    return case_from_dict(data, name="physics")


@pytest.mark.parametrize("pml, wave, drude", [(True, False, False), (False, True, False), (False, False, True),
                                              (True, True, True), (False, False, "mixed"), (True, True, "mixed"),
                                              (True, True, "poles"), (True, False, "layer")])
def test_cuda_equals_cpu_with_physics_terms(pml, wave, drude, tmp_path):
    results, aux = {}, {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(case(pml, wave, drude), backend=backend, output_dir=tmp_path / backend, comm=None)
        sim.advance(12)
        results[backend] = sim.fields()
        aux[backend] = {name: np.asarray(value) for name, value in sim.system.history().items()}
        if backend == "cuda":
            assert sim.stepper.path == "whole-step"
        if pml and drude in (True, "layer"):  # the poles reach into the layer: driven by Lambda E there
            assert all(t.stretch is not None for t in sim.system.terms if t.name.startswith("dispersion."))
    cpu, cuda = results["cpu"], results["cuda"]
    scale = max(float(np.abs(cpu[name]).max()) for name in cpu)
    for name in cpu:
        assert np.abs(cuda[name] - cpu[name]).max() <= 1e-11 * scale, name
    for name, value in aux["cpu"].items():
        assert np.abs(aux["cuda"][name] - value).max() <= 1e-11 * max(1.0, float(np.abs(value).max())), name
