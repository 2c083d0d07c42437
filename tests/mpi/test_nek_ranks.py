"""Runs on the real Nek5000 meshes under `mpiexec -n P lobatto run`: P ranks give the 1-rank fields."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpirun import SKIP_REASON, max_relative_difference, run_case
from nek_cases import DATA, box_case, cylinder_case, toml_text

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def box_text(directory: Path) -> str:
    """The 3dboxper standing wave, its mesh copied next to the case and named relatively."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "3dboxper.re2").write_bytes((DATA / "3dboxper.re2").read_bytes())
    return toml_text(box_case({"generator": "nek", "file": "3dboxper.re2"}, 3, t_end=0.1))


@pytest.fixture(scope="module")
def box_serial(tmp_path_factory):
    directory = tmp_path_factory.mktemp("serial")
    return run_case(directory, box_text(directory), 1)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_3dboxper_on_ranks_equals_one_rank(box_serial, nprocs, tmp_path):
    summary, ids, fields = run_case(tmp_path, box_text(tmp_path), nprocs)
    serial_summary, serial_ids, serial_fields = box_serial
    assert summary["ranks"] == nprocs and summary["steps"] == serial_summary["steps"]
    assert np.array_equal(ids, serial_ids) and len(ids) == 128
    assert max_relative_difference(fields, serial_fields) <= 1e-13
    assert summary["errors"]["all"]["max"] < 2e-2  # the wave itself, at N = 3


def test_cylinder_on_three_ranks_equals_one_rank(tmp_path):
    text = toml_text(cylinder_case(2, t_end=0.5))
    one = run_case(tmp_path / "one", text, 1)
    three = run_case(tmp_path / "three", text, 3)
    assert three[0]["ranks"] == 3
    assert np.array_equal(three[1], one[1]) and len(one[1]) == 225
    assert max_relative_difference(three[2], one[2]) <= 1e-13
