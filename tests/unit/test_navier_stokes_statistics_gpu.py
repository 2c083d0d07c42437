"""``[output.statistics]`` on the CUDA backend equals the CPU backend: the profiles (a
bincount of the mass-weighted partial sums on the device) and the 3-D sums (kept on the
device, carried through a checkpoint), on the unsteady channel of
test_navier_stokes_statistics.py. Skipped, with the reason, without CuPy and a GPU."""

from __future__ import annotations

import copy

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.io.checkpoint_dir import checkpoint_path  # noqa: E402
from test_navier_stokes_statistics import CHANNEL, means  # noqa: E402


@pytest.mark.parametrize("average", [["x", "z"], []], ids=["profiles", "3d"])
def test_cuda_equals_cpu(tmp_path, average):
    data = copy.deepcopy(CHANNEL)
    data["output"]["statistics"].update(average=average, start=0.03)
    data["checkpoint"] = {"every": 2, "keep": 5}
    results = {}
    for backend in ("cpu", "cuda"):
        Simulation(case_from_dict(copy.deepcopy(data), name="ch"), backend, tmp_path / backend, comm=None).run()
        results[backend] = means(tmp_path / backend / "ch_statistics.h5")[0]
    continued = Simulation(case_from_dict(copy.deepcopy(data), name="ch"), "cuda", tmp_path / "continued", comm=None)
    continued.restart(checkpoint_path(tmp_path / "cpu", "ch", 4)).run()  # CPU checkpoint, continued on CUDA
    again = means(tmp_path / "continued" / "ch_statistics.h5")[0]
    for key, value in results["cpu"].items():
        scale = max(float(np.abs(value).max()), 1e-3)
        assert np.abs(results["cuda"][key] - value).max() <= 1e-9 * scale, key
        assert np.abs(again[key] - value).max() <= 1e-9 * scale, key
