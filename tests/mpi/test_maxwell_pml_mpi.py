"""The perfectly matched layer ([pml]) under ``mpiexec -n P lobatto run``: 2 and 3 ranks give
the serial fields (the layer's extent and sigma_max are found over all ranks, its elements
split between them), and a bad layer is one line, exit 2."""

from __future__ import annotations

import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [5, 4, 3]
upper = [1.25, 1.0, 0.75]
boundary = "pec"
periodic = [false, false, true]
[mesh.boundaries]
xmax = "absorbing"
[discretization]
order = 3
[time]
t_end = 0.3
[pml]
sides = ["xmin", "xmax", "ymax"]
elements = 1
reflection = 1e-4
[source.antenna]
type = "electric_dipole"
position = [0.6, 0.45, 0.3]
direction = [0, 1, 1]
waveform = "ricker"
frequency = 3.0
t0 = 0.12
"""


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("serial"), CASE, 1)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_reproduce_serial_fields_with_the_layer(serial, nprocs, tmp_path):
    summary, ids, fields = run_case(tmp_path, CASE, nprocs)
    serial_summary, serial_ids, serial_fields = serial
    assert summary["ranks"] == nprocs and np.array_equal(ids, serial_ids)
    assert summary["pml"] == serial_summary["pml"] and summary["pml"]["elements"] == 5 * 4 * 3 - 3 * 3 * 3
    assert np.abs(serial_fields).max() > 1e-2
    layer = serial_fields[:, [e for e in range(60) if e % 5 in (0, 4) or (e // 5) % 4 == 3]]
    assert np.abs(layer).max() > 1e-3 * np.abs(serial_fields).max()  # the wave reached the layer
    assert np.max(np.abs(fields - serial_fields)) <= 1e-13 * np.abs(serial_fields).max()


def test_a_bad_layer_is_reported_once(tmp_path):
    text = CASE.replace('sides = ["xmin", "xmax", "ymax"]', 'sides = ["xmin", "zmax"]')
    (tmp_path / "case.toml").write_text(text)
    result = run(3, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(tmp_path / "out"), "--quiet"])
    assert result.returncode == 2, describe(result)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, describe(result)
    assert "[pml] sides: zmax is not a boundary of the mesh" in lines[0]
