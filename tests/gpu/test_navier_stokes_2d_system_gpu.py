"""Navier–Stokes on a 2-D mesh on the CUDA backend equals the CPU run: the system's 2-D code
(boundaries, open faces, slip projections, scalars, force, sub-steps, forces, flow rate) on
CuPy arrays. The five operators with tuned CUDA D = 2 kernels (curl,
weak_divergence_minus_curl, mass_minus_gradient, advection_contravariant, advection_apply) run
first as the NumPy reference on CuPy (the system's code alone), then the whole tuned run.
Skipped, with the reason, without CuPy and a GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from lobatto.api import Simulation  # noqa: E402
from lobatto.backends.base import TUNED_KERNELS  # noqa: E402
from lobatto.operators import advection, differential  # noqa: E402,F401  (register the kernels)
from test_navier_stokes_2d import CHANNEL_2D, flow_case  # noqa: E402

OPERATORS = ("curl", "weak_divergence_minus_curl", "mass_minus_gradient", "advection_contravariant",
             "advection_apply")
FORCES = {"output": {"formats": [], "forces": {"bottom": {"surfaces": ["ymin"], "center": [0.7, 0.4, 0.0]}}}}
VARIANTS = {
    "plain": FORCES,
    "substeps": {**FORCES, "time": {"substeps": 2}, "physics": {"filter_modes": 1}},
    "traction": {"mesh": {"boundaries": {"xmax": "traction", "ymax": "outflow_normal"}},
                 "boundary": {"xmax": {"tx": "-0.3*y", "ty": "0.05*t"}}},
}


def run(case, backend, tmp_path):
    sim = Simulation(case, backend=backend, output_dir=tmp_path / backend)
    sim.run()
    forces = [m for m in (sim.series.monitors if sim.series is not None else ()) if m.section == "forces"]
    return np.asarray(sim.backend.to_host(sim.u)), (forces[0].last if forces else {})


def compare(case, tmp_path):
    cpu, cpu_forces = run(case, "cpu", tmp_path)
    gpu, gpu_forces = run(case, "cuda", tmp_path)
    scale = np.abs(cpu).max()
    assert np.abs(gpu - cpu).max() <= 1e-10 * scale, np.abs(gpu - cpu).max() / scale
    for group, values in cpu_forces.items():
        for column, value in values.items():
            assert gpu_forces[group][column] == pytest.approx(value, rel=1e-9, abs=1e-12), (group, column)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_2d_system_on_cupy_with_reference_operators_equals_the_cpu(tmp_path, monkeypatch, variant):
    for name in OPERATORS:
        monkeypatch.delitem(TUNED_KERNELS, ("cuda", name), raising=False)
    compare(flow_case(2, more=VARIANTS[variant]), tmp_path)


def test_2d_flow_rate_channel_on_cupy_equals_the_cpu(tmp_path, monkeypatch):
    from lobatto.api import case_from_dict

    for name in OPERATORS:
        monkeypatch.delitem(TUNED_KERNELS, ("cuda", name), raising=False)
    mesh = {"elements": [3, 2], "lower": [0.0, -1.0], "upper": [2.0, 1.0], "periodic": [True, False]}
    physics = dict(CHANNEL_2D["physics"], flow_rate=0.5, force_x="0")
    compare(case_from_dict(dict(CHANNEL_2D, physics=physics, mesh=mesh), name="rate"), tmp_path)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_2d_run_with_the_tuned_cuda_kernels_equals_the_cpu(tmp_path, variant):
    compare(flow_case(2, more=VARIANTS[variant]), tmp_path)
