"""A case on a gmsh mesh (curved second-order elements, two regions) on 2 and 3 ranks, with
each partitioner, gives the 1-rank fields."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, max_relative_difference, run, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or ""),
              pytest.mark.skipif(importlib.util.find_spec("gmsh") is None, reason="gmsh is not installed")]

MESH = Path(__file__).resolve().parents[1] / "data" / "meshes" / "sphere_in_box_order2.msh"

CASE = f"""
[mesh]
generator = "gmsh"
file = "{MESH}"
boundary = "pec"
[mesh.boundaries]
walls = "absorbing"
[discretization]
order = 3
[initial]
Ez = "cos(pi*x/2)*cos(pi*y/2)*exp(z)"
Hx = "sin(x*y)*cos(z)"
Ey = "x*z + y"
[time]
t_end = 0.1
"""


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("serial"), CASE, 1)


@pytest.mark.parametrize("partitioner", [
    "rcb", "rsb",
    pytest.param("metis", marks=pytest.mark.skipif(importlib.util.find_spec("pymetis") is None,
                                                   reason="pymetis is not installed")),
])
@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_reproduce_the_serial_fields(serial, nprocs, partitioner, tmp_path):
    summary, ids, fields = run_case(tmp_path, CASE + f'[parallel]\npartitioner = "{partitioner}"\n', nprocs)
    serial_summary, serial_ids, serial_fields = serial
    assert summary["ranks"] == nprocs and summary["config"]["parallel"]["partitioner"] == partitioner
    assert summary["mesh"]["file"] == str(MESH) and summary["mesh"]["regions"] == ["sphere", "air"]
    assert summary["elements"] == 13 and np.array_equal(ids, serial_ids) and np.array_equal(ids, np.arange(13))
    assert max_relative_difference(fields, serial_fields) <= 1e-13
    assert abs(summary["energy"]["final"] / serial_summary["energy"]["final"] - 1) <= 1e-13


def test_a_bad_group_is_reported_once_by_every_rank(tmp_path):
    (tmp_path / "case.toml").write_text(CASE.replace('walls = "absorbing"', 'wall = "absorbing"'))
    result = run(3, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(tmp_path / "out")], timeout=60)
    assert result.returncode == 2, describe(result)
    assert result.stderr.count("names the group 'wall'") == 1 and "Traceback" not in result.stderr, describe(result)
