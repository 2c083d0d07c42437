"""`mpiexec -n P lobatto run` gives the serial fields, for P = 1..4, through the joined output."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [3, 2, 2]
periodic = [true, false, false]
boundary = "pec"
[mesh.boundaries]
zmax = "absorbing"
[mesh.deform]
x = "0.04*sin(pi*x)*sin(pi*y)*sin(pi*z)"
y = "0.03*sin(pi*x)*sin(pi*y)*sin(pi*z)"
[discretization]
order = 4
[initial]
Ez = "sin(pi*y)*cos(2*pi*x)"
Hx = "sin(pi*y)*sin(pi*z)*exp(x)"
Ey = "cos(3*x)*sin(pi*z)"
[time]
t_end = 0.15
[output]
every = 4
formats = ["hdf5", "nek"]
"""

FIELDS = ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz")


def read_final(directory: Path):
    import h5py

    summary = json.loads((directory / "summary.json").read_text())
    final = directory / summary["outputs"][-1]["files"][0]
    with h5py.File(final, "r") as f:
        ids = f["mesh/element_ids"][:] if "mesh/element_ids" in f else np.arange(f["fields/Ex"].shape[0])
        fields = np.stack([f[f"fields/{n}"][:] for n in FIELDS])
    order = np.argsort(ids)
    return summary, ids[order], fields[:, order]


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    directory = tmp_path_factory.mktemp("serial")
    (directory / "case.toml").write_text(CASE)
    result = run(1, ["-m", "lobatto", "run", str(directory / "case.toml"), "--output", str(directory / "out"), "--quiet"])
    assert result.returncode == 0, describe(result)
    return read_final(directory / "out")


@pytest.mark.parametrize("nprocs", [2, 3, 4])
def test_ranks_reproduce_serial_fields(serial, nprocs, tmp_path):
    (tmp_path / "case.toml").write_text(CASE)
    result = run(nprocs, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(tmp_path / "out"), "--quiet"])
    assert result.returncode == 0, describe(result)
    summary, ids, fields = read_final(tmp_path / "out")
    serial_summary, serial_ids, serial_fields = serial
    assert summary["ranks"] == nprocs
    assert np.array_equal(ids, serial_ids)
    scale = np.abs(serial_fields).max()
    assert np.max(np.abs(fields - serial_fields)) <= 1e-13 * scale
    assert abs(summary["energy"]["final"] - serial_summary["energy"]["final"]) <= 1e-13 * serial_summary["energy"]["final"]
    # Nek5000 output: one file per rank, each with nfiles = P and global element ids.
    from lobatto.io.nek5000 import read_field_file

    seen = []
    for rank in range(nprocs):
        nek = read_field_file(tmp_path / "out" / f"case{rank}.f00001")
        assert nek["nfiles"] == nprocs and nek["nelgt"] == 12
        seen.extend(np.asarray(nek["element_ids"]).tolist())
    assert sorted(seen) == list(range(1, 13))


def test_partition_leaving_a_rank_empty_is_an_error(tmp_path):
    (tmp_path / "case.toml").write_text(CASE.replace("elements = [3, 2, 2]", "elements = [1, 1, 2]"))
    result = run(3, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(tmp_path / "out")], timeout=60)
    assert result.returncode == 2, describe(result)
    assert "without elements" in result.stderr and "Traceback" not in result.stderr, describe(result)
