"""TF/SF plane waves under ``mpiexec -n P lobatto run``: a total-field box whose sides the
partitions cut (faces of the surface shared between ranks, the sign of each side found by the
gather–scatter) gives the serial fields on 2 and 3 ranks, on the stage path (lsrk45) and the
rhs path (rk4), with the same far field and cross sections ([output.far_field], nearfar.py:
the surface's transforms gathered from every rank); a box that cuts an element is one line, exit 2, on 3 ranks."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [6, 5, 5]
upper = [1.5, 1.25, 1.25]
boundary = "absorbing"
[mesh.boundaries]
zmin = "pec"
[parallel]
partitioner = "rsb"  # puts surface faces between ranks (rcb here does not: 0 of them; rsb 2 and 8)
[discretization]
order = 3
[time]
t_end = 0.9
cfl = 0.3
integrator = "INTEGRATOR"
[source.incident]
type = "plane_wave"
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
[output.far_field]
frequencies = [0.9, 1.2]
lower = [0.25, 0.0, 0.0]
upper = [1.25, 1.0, 1.0]
theta = [0, 45, 90, 180]
phi = [0, 90, 270]
absorption_lower = [0.5, 0.25, 0.25]
absorption_upper = [0.75, 0.5, 0.5]
"""


@pytest.fixture(scope="module", params=["lsrk45", "rk4"])
def serial(request, tmp_path_factory):
    text = CASE.replace("INTEGRATOR", request.param)
    directory = tmp_path_factory.mktemp("serial")
    return text, directory, run_case(directory, text, 1)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_reproduce_serial_fields_with_a_plane_wave(serial, nprocs, tmp_path):
    text, serial_dir, (serial_summary, serial_ids, serial_fields) = serial
    summary, ids, fields = run_case(tmp_path, text, nprocs)
    assert summary["ranks"] == nprocs and np.array_equal(ids, serial_ids)
    assert np.abs(serial_fields).max() > 0.5  # the wave came in
    assert np.max(np.abs(fields - serial_fields)) <= 1e-13 * np.abs(serial_fields).max()
    for key in ("total_field_elements", "surface_faces", "elements"):
        assert summary["plane_wave.incident"][key] == serial_summary["plane_wave.incident"][key]
    assert serial_summary["plane_wave.incident"]["total_field_elements"] == 2 * 2 * 2
    serial_far, far = (read_far_field(path) for path in (serial_dir, tmp_path))
    assert set(far) == set(serial_far) and np.abs(serial_far["rcs"]).max() > 0
    for key, value in serial_far.items():
        assert np.max(np.abs(far[key] - value)) <= 1e-10 * np.max(np.abs(value)), key


def read_far_field(directory):
    with h5py.File(directory / "out" / "case_farfield.h5") as f:
        out = {}
        f.visititems(lambda name, item: out.update({name: item[()]}) if isinstance(item, h5py.Dataset) else None)
        return out


def test_a_box_cutting_an_element_is_reported_once(tmp_path):
    (tmp_path / "case.toml").write_text(CASE.replace("INTEGRATOR", "lsrk45").replace("upper = [1.0, 0.75, 0.75]",
                                                                                     "upper = [1.0, 0.7, 0.75]"))
    result = run(3, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(tmp_path / "out"), "--quiet"])
    assert result.returncode == 2, describe(result)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, describe(result)
    assert "[source.incident] the total-field box" in lines[0] and "cuts element" in lines[0]
