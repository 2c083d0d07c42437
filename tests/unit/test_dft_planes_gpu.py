"""The CUDA backend's ``[output.dft]`` planes and boxes (monitors/planes.py) against the CPU's:
the same transforms and fluxes on interior surfaces."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.runner.simulation import Simulation  # noqa: E402
from test_dft_planes import BOX, pulse  # noqa: E402


def test_cuda_interior_surfaces_equal_cpu(tmp_path):
    dft = {"planes": ["x = 0.75", "x = 1.25"], "boxes": [{"lower": [0.75, 0, 0], "upper": [1.25, 0.25, 0.25]}]}
    out = {}
    for backend in ("cpu", "cuda"):
        Simulation(pulse(**dft), backend, tmp_path / backend, comm=None).run()
        with h5py.File(tmp_path / backend / "p_dft.h5", "r") as f:
            out[backend] = {(name, item): f[f"surfaces/{name}/{item}"][()] for name in ("x = 0.75", "x = 1.25", BOX)
                            for item in ("Ey", "flux/poynting_flux")}
    for key, value in out["cpu"].items():
        assert np.abs(out["cuda"][key] - value).max() <= 1e-11 * np.abs(value).max(), key
