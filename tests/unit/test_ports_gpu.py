"""The CUDA backend's waveguide ports against the CPU's: the same S-matrix of the two-port
guide of test_ports.py (the mode launched by tfsf_cuda.SurfaceAdd with per-point gains and no
delays, or with volume_form = "galerkin" by tfsf_galerkin.py's sums correction; the DFT on the
port planes on the device), both ports driven."""

from __future__ import annotations

import copy

import h5py
import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

import lobatto  # noqa: E402
from test_ports import GUIDE  # noqa: E402


@pytest.mark.parametrize("volume_form", ["split", "galerkin"])  # galerkin: tfsf_galerkin.py's sums correction
def test_cuda_s_matrix_equals_cpu(tmp_path, volume_form):
    case = copy.deepcopy(GUIDE)
    case["discretization"] = {**case["discretization"], "volume_form": volume_form}
    case["ports"]["drive"] = "all"
    case["time"] = {"t_end": 34.0}  # a fixed end: the decay stop's energy sums may differ in their last bits
    out = {}
    for backend in ("cpu", "cuda"):
        result = lobatto.run(copy.deepcopy(case), backend=backend, output_dir=tmp_path / backend)
        with h5py.File(tmp_path / backend / "guide_sparams.h5", "r") as f:
            out[backend] = (f["S"][()], result.summary["ports"]["runs"])
    s, runs = out["cpu"]
    assert np.all(np.isfinite(s)) and np.abs(s[:, 1, 0] - s[:, 0, 1]).max() < 1e-4
    assert np.abs(out["cuda"][0] - s).max() <= 1e-9, np.abs(out["cuda"][0] - s).max()
    assert {k: v["steps"] for k, v in out["cuda"][1].items()} == {k: v["steps"] for k, v in runs.items()}


def test_cuda_surface_ports_equal_cpu(tmp_path):
    """Ports on the curved O-grid cylinder's end surfaces (test_port_surface.py): the grown
    extension is host-side mesh work, so CUDA's S equals the CPU's on the extended mesh."""
    from test_port_surface import cylinder_surface_case

    case = cylinder_surface_case(tmp_path)
    out = {}
    for backend in ("cpu", "cuda"):
        lobatto.run(copy.deepcopy(case), backend=backend, output_dir=tmp_path / backend)
        with h5py.File(tmp_path / backend / "guide_sparams.h5", "r") as f:
            out[backend] = f["S"][()]
    assert np.all(np.isfinite(out["cpu"])) and np.abs(out["cuda"] - out["cpu"]).max() <= 1e-9
