"""Maxwell sources under ``mpiexec -n P lobatto run``: a boxed current and dipoles on faces,
edges and corners that the partitions split give the serial fields on 2 and 3 ranks (each
dipole added once, by the lowest global element id holding it), and a dipole outside the
mesh is one line, exit 2."""

from __future__ import annotations

import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [4, 2, 2]
boundary = "pec"
[mesh.boundaries]
xmax = "absorbing"
[mesh.deform]
x = "0.02*sin(4*pi*x)*sin(pi*y)*sin(pi*z)"
[discretization]
order = 3
[time]
t_end = 0.3
[source.sheet]
type = "current"
Jy = "sin(7*t)*exp(-10*(z-0.5)**2)"
lower = [0.4, 0.0, 0.0]
upper = [0.6, 1.0, 1.0]
[source.corner]
type = "electric_dipole"
position = [0.5, 0.5, 0.5]
direction = [1, 1, 0]
waveform = "modulated_gaussian"
frequency = 3.0
t0 = 0.1
width = 0.05
[source.face]
type = "magnetic_dipole"
position = [0.25, 0.3, 0.5]
direction = [0, 0, 1]
amplitude = 2.0
waveform = "ricker"
frequency = 4.0
t0 = 0.15
"""


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("serial"), CASE, 1)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_reproduce_serial_fields_with_sources(serial, nprocs, tmp_path):
    summary, ids, fields = run_case(tmp_path, CASE, nprocs)
    serial_summary, serial_ids, serial_fields = serial
    assert summary["ranks"] == nprocs and np.array_equal(ids, serial_ids)
    assert np.abs(serial_fields).max() > 1e-2  # the sources did something
    assert np.max(np.abs(fields - serial_fields)) <= 1e-13 * np.abs(serial_fields).max()
    assert summary["sources"] == serial_summary["sources"]
    assert "off" in summary["sources"]["whole_step"]


def test_a_dipole_outside_is_reported_once(tmp_path):
    text = CASE.replace("position = [0.25, 0.3, 0.5]", "position = [0.25, 1.3, 0.5]")
    (tmp_path / "case.toml").write_text(text)
    result = run(3, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(tmp_path / "out"), "--quiet"])
    assert result.returncode == 2, describe(result)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, describe(result)
    assert "[source.face] position = [0.25, 1.3, 0.5] is outside the mesh" in lines[0]
