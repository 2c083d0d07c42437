"""Acoustics on CUDA (reference kernels on CuPy) gives the CPU fields, float64.

Skipped, with the reason, where CuPy or a CUDA device is missing.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

import lobatto.api as api  # noqa: E402

FIELDS = ("p", "ux", "uy", "uz")


def case(flux, periodic):
    mesh = {"elements": [3, 2, 2], "boundary": "wall"}
    if periodic:
        mesh["periodic"] = [True, True, True]
    else:
        mesh["boundaries"] = {"zmax": "absorbing"}
        mesh["deform"] = {"x": "0.04*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.03*sin(pi*x)*sin(pi*y)*sin(pi*z)"}
    return api.case_from_dict({
        "mesh": mesh,
        "discretization": {"order": 5, "flux": flux},
        "physics": {"equations": "acoustics", "density": 1.3, "sound_speed": 0.7},
        "initial": {
            "p": "sin(2*pi*y)*cos(2*pi*x) + exp(-20*((x-0.3)**2 + (y-0.5)**2 + (z-0.5)**2))",
            "ux": "sin(2*pi*z)*exp(-x)",
            "uz": "cos(2*pi*x) + 0.5",
        },
        "time": {"t_end": 0.2},
        "output": {"formats": []},
    }, name=f"acoustics_{flux}_{'periodic' if periodic else 'wall'}")


@pytest.mark.parametrize("periodic", [True, False], ids=["periodic", "wall"])
@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_cuda_fields_equal_cpu_fields(flux, periodic, tmp_path):
    the_case = case(flux, periodic)
    cpu = api.run(the_case, backend="cpu", output_dir=tmp_path / "cpu")
    gpu = api.run(the_case, backend="cuda", output_dir=tmp_path / "cuda")
    assert cpu.summary["backend"] == "cpu" and gpu.summary["backend"] == "cuda"
    assert gpu.summary["equations"] == "acoustics" and gpu.summary["steps"] == cpu.summary["steps"] > 5
    scale = max(np.abs(cpu.fields[name]).max() for name in FIELDS)
    assert scale > 0.1
    for name in FIELDS:
        assert isinstance(gpu.fields[name], np.ndarray)  # host arrays back from the device
        difference = np.abs(gpu.fields[name] - cpu.fields[name]).max()
        assert difference <= 1e-12 * scale, (name, difference, scale)
    e_cpu, e_gpu = cpu.summary["energy"]["final"], gpu.summary["energy"]["final"]
    assert abs(e_gpu - e_cpu) <= 1e-12 * e_cpu


def case_2d(flux):
    """A 2-D mesh (p, ux, uy on curved quads): the same reference kernels on CuPy."""
    return api.case_from_dict({
        "mesh": {"elements": [4, 3], "boundary": "wall", "boundaries": {"xmax": "absorbing"},
                 "deform": {"x": "0.05*sin(pi*x)*sin(2*pi*y)", "y": "0.04*sin(2*pi*x)*cos(pi*y)"}},
        "discretization": {"order": 5, "flux": flux},
        "physics": {"equations": "acoustics", "density": 1.3, "sound_speed": 0.7},
        "initial": {"p": "exp(-10*((x-0.4)**2 + (y-0.5)**2))", "ux": "sin(pi*y)*exp(-x)", "uy": "cos(2*x) + 0.5"},
        "time": {"t_end": 0.2},
        "output": {"formats": [], "integrals": {"volume": ["energy"], "surfaces": ["xmax"],
                                                "surface": ["intensity_flux"]}},
    }, name=f"acoustics_2d_{flux}")


@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_cuda_2d_fields_equal_cpu_fields(flux, tmp_path):
    the_case = case_2d(flux)
    cpu = api.run(the_case, backend="cpu", output_dir=tmp_path / "cpu")
    gpu = api.run(the_case, backend="cuda", output_dir=tmp_path / "cuda")
    assert gpu.summary["backend"] == "cuda" and gpu.summary["steps"] == cpu.summary["steps"] > 5
    assert set(gpu.fields) == {"p", "ux", "uy"} and gpu.fields["p"].shape == (12, 1, 6, 6)
    scale = max(np.abs(cpu.fields[name]).max() for name in ("p", "ux", "uy"))
    for name in ("p", "ux", "uy"):
        difference = np.abs(gpu.fields[name] - cpu.fields[name]).max()
        assert difference <= 1e-12 * scale, (name, difference, scale)
    e_cpu, e_gpu = cpu.summary["energy"]["final"], gpu.summary["energy"]["final"]
    assert abs(e_gpu - e_cpu) <= 1e-12 * e_cpu
