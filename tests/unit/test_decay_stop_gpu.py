"""The CUDA backend's decay stop (runner/decay_stop.py) against the CPU's: the probes' squares
and their running maximum on the device, the energy watched: the same stop step, ratio and
transforms."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.runner.simulation import Simulation  # noqa: E402
from test_decay_stop import pulse  # noqa: E402


@pytest.mark.parametrize("probes", [True, False])
def test_cuda_stops_where_the_cpu_does(tmp_path, probes):
    runs = {}
    for backend in ("cpu", "cuda"):
        case = pulse(10.0, probes=probes, until_decayed=1e-6, decay_interval=0.5)
        summary = Simulation(case, backend, tmp_path / backend, comm=None).run()
        with h5py.File(tmp_path / backend / "pulse_dft.h5", "r") as f:
            runs[backend] = summary, f["surfaces/xmax/Ey"][()]
    (cpu, cpu_dft), (cuda, cuda_dft) = runs["cpu"], runs["cuda"]
    assert cuda["stopped"] == cpu["stopped"] == "decayed" and cuda["steps"] == cpu["steps"]
    assert cuda["decay"]["watch"] == ("probes" if probes else "energy")
    assert cuda["decay"]["ratio"] == pytest.approx(cpu["decay"]["ratio"], rel=1e-6)
    assert cuda["decay"]["maximum"] == pytest.approx(cpu["decay"]["maximum"], rel=1e-10)
    assert np.abs(cuda_dft - cpu_dft).max() <= 1e-10 * np.abs(cpu_dft).max()
