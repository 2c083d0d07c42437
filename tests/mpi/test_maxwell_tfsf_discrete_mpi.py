"""TF/SF with the discrete incident wave (incident_field = "discrete", tfsf_discrete.py) under
``mpiexec -n P lobatto run``: the auxiliary wave's operator exchanges faces between ranks
(surface faces and total-field elements split by the partition), and 2 and 3 ranks give the
serial fields, with the scattered-field region at round-off on every rank count."""

from __future__ import annotations

import numpy as np
import pytest

from mpirun import SKIP_REASON, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [6, 5, 5]
upper = [1.5, 1.25, 1.25]
boundary = "absorbing"
[parallel]
partitioner = "rsb"  # 2 ranks: 4 faces inside the box between ranks; 3 ranks: 11 surface faces
[discretization]
order = 3
[time]
t_end = 1.2
cfl = 0.3
[source.incident]
type = "plane_wave"
incident_field = "discrete"
direction = [1.0, 0.4, -0.3]
polarization = [0.0, 0.3, 0.4]
amplitude = 2.0
waveform = "modulated_gaussian"
frequency = 1.2
t0 = 0.4
width = 0.15
origin = [0.25, 0.25, 0.5]
lower = [0.5, 0.25, 0.25]
upper = [1.0, 0.75, 0.75]
"""


def scattered_field_level(ids, fields):
    """max |field| on the elements outside the box (ids of the 6 x 5 x 5 box mesh, x fastest)."""
    i, j, k = ids % 6, (ids // 6) % 5, ids // 30
    inside = (i >= 2) & (i < 4) & (j >= 1) & (j < 3) & (k >= 1) & (k < 3)
    assert np.count_nonzero(inside) == 8
    return np.abs(fields[:, ~inside]).max(), np.abs(fields[:, inside]).max()


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("serial"), CASE, 1)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_reproduce_serial_fields_with_the_discrete_wave(serial, nprocs, tmp_path):
    serial_summary, serial_ids, serial_fields = serial
    summary, ids, fields = run_case(tmp_path, CASE, nprocs)
    assert summary["ranks"] == nprocs and np.array_equal(ids, serial_ids)
    outside, inside = scattered_field_level(serial_ids, serial_fields)
    assert inside > 0.5 and outside < 1e-12 * 2.0  # the wave is in the box; nothing outside
    assert scattered_field_level(ids, fields)[0] < 1e-12 * 2.0
    assert np.max(np.abs(fields - serial_fields)) <= 1e-13 * np.abs(serial_fields).max()
    for key in ("total_field_elements", "surface_faces", "elements", "incident_field"):
        assert summary["plane_wave.incident"][key] == serial_summary["plane_wave.incident"][key]
