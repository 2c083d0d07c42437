"""The CUDA backend's ``[output.dft] taper`` (monitors/dft.py taper_weight, applied to the phases
on the device arrays) against the CPU's: the same tapered transforms and fluxes, which differ
from the untapered ones where the pulse crosses xmax inside the window's fall (t_end = 2, the
window falling from t = 0.8)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.runner.simulation import Simulation  # noqa: E402
from test_dft_planes import pulse  # noqa: E402


def test_cuda_tapered_transforms_equal_cpu(tmp_path):
    out = {}
    for backend, taper in (("cpu", 0.6), ("cuda", 0.6), ("cpu", 0.0)):
        where = tmp_path / f"{backend}{taper}"
        Simulation(pulse(planes=["x = 0.75"], flux=["poynting_flux"], taper=taper), backend, where, comm=None).run()
        with h5py.File(where / "p_dft.h5", "r") as f:
            assert f.attrs["taper"] == taper
            out[backend, taper] = {(name, item): f[f"surfaces/{name}/{item}"][()] for name in ("x = 0.75", "xmax")
                                   for item in ("Ey", "flux/poynting_flux")}
    for key, value in out["cpu", 0.6].items():
        assert np.abs(out["cuda", 0.6][key] - value).max() <= 1e-11 * np.abs(value).max(), key
        if key[0] == "xmax":  # the pulse crosses xmax (t ~ 1.2) as the window falls (from t = 0.8)
            assert np.abs(out["cpu", 0.0][key] - value).max() > 1e-3 * np.abs(value).max(), key
