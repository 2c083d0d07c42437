"""`mpiexec -n P lobatto run` gives the serial fields, for P = 1..4, through the joined output."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from maxwell_cases import CASE, WIDE, max_relative_difference, run_case
from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("serial"), CASE, 1)


@pytest.mark.parametrize("nprocs", [2, 3, 4])
def test_ranks_reproduce_serial_fields(serial, nprocs, tmp_path):
    summary, ids, fields = run_case(tmp_path, CASE, nprocs)
    serial_summary, serial_ids, serial_fields = serial
    assert summary["ranks"] == nprocs
    assert np.array_equal(ids, serial_ids)
    scale = np.abs(serial_fields).max()
    assert np.max(np.abs(fields - serial_fields)) <= 1e-13 * scale
    assert abs(summary["energy"]["final"] - serial_summary["energy"]["final"]) <= 1e-13 * serial_summary["energy"]["final"]
    # Nek5000 output: one file for all ranks (nfiles = 1), elements in global order
    # (read by VTK and pymech: test_nek5000_ranks.py).
    from lobatto.io.nek5000 import read_field_file

    assert not (tmp_path / "out" / "case1.f00001").exists()
    nek = read_field_file(tmp_path / "out" / "case0.f00001", velocity=("Ex", "Ey", "Ez"), scalars=("Hx", "Hy", "Hz"))
    assert nek["nfiles"] == 1 and nek["nelgt"] == 12
    assert nek["element_ids"].tolist() == list(range(1, 13))


@pytest.fixture(scope="module")
def wide_serial(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("wide"), WIDE, 1)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_overlapped_stage_reproduces_serial_fields(wide_serial, nprocs, tmp_path):
    summary, ids, fields = run_case(tmp_path, WIDE, nprocs)
    # the default "auto" overlaps on the stage-by-stage path (it times the choice only on the CUDA whole-step path)
    assert summary["overlap"]["enabled"] and summary["config"]["parallel"]["overlap"] == "auto"
    assert summary["overlap"]["setting"] == "auto" and "auto_trial" not in summary["overlap"]
    assert 0 < summary["overlap"]["interior_elements"] < 32
    assert summary["overlap"]["interior_elements"] + summary["overlap"]["elements_after_exchange"] == 32
    _, serial_ids, serial_fields = wide_serial
    assert np.array_equal(ids, serial_ids)
    assert max_relative_difference(fields, serial_fields) <= 1e-13
    # without overlap: the same arithmetic in another order of kernel launches, so the same bits
    plain_summary, _, plain = run_case(tmp_path / "plain", WIDE + "[parallel]\noverlap = false\n", nprocs)
    assert plain_summary["overlap"]["enabled"] is False
    assert np.array_equal(plain, fields)


@pytest.mark.parametrize("partitioner", [
    pytest.param("metis", marks=pytest.mark.skipif(importlib.util.find_spec("pymetis") is None, reason="pymetis is not installed")),
    "rsb",
])
def test_graph_partition_reproduces_serial_fields(wide_serial, partitioner, tmp_path):
    summary, ids, fields = run_case(tmp_path, WIDE + f'[parallel]\npartitioner = "{partitioner}"\n', 3)
    assert summary["config"]["parallel"]["partitioner"] == partitioner and summary["ranks"] == 3
    _, serial_ids, serial_fields = wide_serial
    assert np.array_equal(ids, serial_ids)
    assert max_relative_difference(fields, serial_fields) <= 1e-13


def test_partition_leaving_a_rank_empty_is_an_error(tmp_path):
    (tmp_path / "case.toml").write_text(CASE.replace("elements = [3, 2, 2]", "elements = [1, 1, 2]"))
    result = run(3, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(tmp_path / "out")], timeout=60)
    assert result.returncode == 2, describe(result)
    assert "without elements" in result.stderr and "Traceback" not in result.stderr, describe(result)
