"""The step check (runner/step_check.py) on the GPU: the power iteration through CuPy (tuned
CUDA kernels for Maxwell, array code for acoustics) gives the CPU's estimate and step."""

from __future__ import annotations

import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from test_step_check import DEFORM  # noqa: E402

from lobatto.api import Simulation, case_from_dict  # noqa: E402


@pytest.mark.parametrize("equations, flux, cfl, form", [("maxwell", "upwind", 0.63, "split"),
                                                        ("maxwell", "central", 0.74, "split"),
                                                        ("maxwell", "upwind", 0.63, "galerkin"),
                                                        ("acoustics", "central", 0.74, "split")])
def test_cuda_estimate_equals_cpu(tmp_path, equations, flux, cfl, form):
    records = {}
    for backend in ("cpu", "cuda"):
        data = {"mesh": {"elements": [2, 2, 2], "deform": DEFORM}, "physics": {"equations": equations},
                "discretization": {"order": 2, "flux": flux, "volume_form": form},
                "time": {"t_end": 1.0, "cfl": cfl}, "output": {"formats": []}}
        sim = Simulation(case_from_dict(data, name="check"), backend=backend, output_dir=str(tmp_path / backend),
                         comm=None)
        records[backend] = sim.step_check, sim.dt
    (cpu, cpu_dt), (cuda, cuda_dt) = records["cpu"], records["cuda"]
    assert cuda["spectral_radius"] == pytest.approx(cpu["spectral_radius"], rel=2e-4)
    assert cuda["shortened"] == cpu["shortened"] and cuda_dt == pytest.approx(cpu_dt, rel=2e-3)
