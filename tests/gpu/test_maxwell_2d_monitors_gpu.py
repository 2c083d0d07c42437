"""2-D Maxwell's line sources (the dipole kernel with dim = 2), DFT lines, a rectangle and a
region, and the 2-D far field on the CUDA backend against the CPU's: the same transforms,
fluxes and far field (tests/unit/test_maxwell_2d_monitors.py is the CPU's own check)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.api import case_from_dict, run  # noqa: E402

WAVE = {"waveform": "modulated_gaussian", "frequency": 0.5, "t0": 2.0, "width": 0.6}


def case(magnetic: bool):
    return case_from_dict({
        "mesh": {"elements": [8, 8], "lower": [-2.0, -2.0], "upper": [2.0, 2.0]},
        "discretization": {"order": 5}, "physics": {"equations": "maxwell"}, "time": {"t_end": 6.0, "dt": 0.01},
        "pml": {"sides": "all", "elements": 1},
        "source": {"line": {"type": "magnetic_dipole" if magnetic else "electric_dipole", "position": [0.2, 0.15, 0.0],
                            "direction": [0.0, 0.0, 1.0] if magnetic else [0.3, 0.2, 1.0], **WAVE}},
        "output": {"every": 0, "formats": [], "name": "line",
                   "dft": {"frequencies": [0.4, 0.5], "regions": ["all"], "fields": ["Ez", "Hz"],
                           "planes": ["x = 1", "y = -0.5"], "boxes": [{"lower": [-1.0, -1.0], "upper": [1.0, 1.0]}]},
                   "far_field": {"frequencies": [0.4, 0.5], "lower": [-1.0, -1.0, -1.0], "upper": [1.0, 1.0, 1.0],
                                 "phi": [0.0, 90.0, 200.0]}}}, name="line")


def read(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: out.__setitem__(name, item[()])
                     if isinstance(item, h5py.Dataset) and np.issubdtype(item.dtype, np.number) else None)
    return out


@pytest.mark.parametrize("magnetic", [False, True], ids=["electric", "magnetic"])
def test_cuda_2d_line_source_dft_and_far_field_equal_cpu(tmp_path, magnetic):
    got = {}
    for backend in ("cpu", "cuda"):
        run(case(magnetic), output_dir=tmp_path / backend, backend=backend)
        got[backend] = {**read(tmp_path / backend / "line_dft.h5"),
                        **{f"far/{k}": v for k, v in read(tmp_path / backend / "line_farfield.h5").items()}}
    assert sorted(got["cpu"]) == sorted(got["cuda"])
    assert np.abs(got["cpu"]["far/E_phi" if magnetic else "far/E_theta"]).max() > 0
    for key, value in got["cpu"].items():
        scale = max(float(np.abs(value).max()), 1e-300) if np.size(value) else 1.0
        assert np.abs(got["cuda"][key] - value).max() <= 1e-10 * scale, key
