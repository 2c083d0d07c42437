"""``[time] until_decayed`` under ``mpiexec -n P lobatto run``: 1, 2 and 3 ranks stop at the same
step with the same ratio and the same transforms (to 1e-12), also where a rank owns no watched
probe (the one probe at x = 1.3 lies in the last of 6 elements along x: on 2 and 3 ranks the
others hold none)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from mpirun import SKIP_REASON, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [6, 1, 1]
upper = [1.5, 0.25, 0.25]
periodic = [false, true, true]
boundary = "absorbing"
[discretization]
order = 4
[initial]
Ey = "exp(-((x-0.5)/0.1)**2)"
Hz = "exp(-((x-0.5)/0.1)**2)"
[time]
t_end = 10.0
dt = 0.01
until_decayed = 1e-6
decay_interval = 0.5
[output]
formats = ["hdf5"]
[output.probes]
points = [[1.3, 0.1, 0.1]]
fields = ["Ey", "Hz"]
[output.dft]
frequencies = [0.5, 1.5]
surfaces = ["xmax"]
fields = ["Ey"]
"""


def test_same_stop_on_1_2_3_ranks(tmp_path):
    runs = {}
    for nprocs in (1, 2, 3):
        summary, _, _ = run_case(tmp_path / f"n{nprocs}", CASE, nprocs)
        with h5py.File(tmp_path / f"n{nprocs}" / "out" / "case_dft.h5", "r") as f:
            dft = {name: f[f"surfaces/xmax/{name}"][()] for name in ("Ey", "flux/poynting_flux")}
        runs[nprocs] = summary, dft
    one, dft_one = runs[1]
    assert one["stopped"] == "decayed" and one["steps"] < 1000
    for nprocs in (2, 3):
        many, dft_many = runs[nprocs]
        assert many["ranks"] == nprocs and many["stopped"] == "decayed" and many["steps"] == one["steps"]
        assert many["decay"]["ratio"] == pytest.approx(one["decay"]["ratio"], rel=1e-12)
        for name, value in dft_one.items():
            assert np.allclose(dft_many[name], value, rtol=1e-12, atol=1e-14 * np.abs(value).max()), (nprocs, name)
