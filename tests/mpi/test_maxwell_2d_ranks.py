"""2-D Maxwell on 1, 2 and 3 ranks gives the same fields (a rank of 3 holds none of the medium,
poles, current or PML): one mpiexec -n 3 launch of maxwell_2d_ranks.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def test_2d_maxwell_on_one_two_and_three_ranks():
    result = run(3, [str(Path(__file__).with_name("maxwell_2d_ranks.py"))], timeout=180)
    assert result.returncode == 0, describe(result)
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert sorted(found) == ["1", "2", "3"]
    serial = np.array(found["1"]["u"])
    assert serial.shape == (6, 12, 1, 4, 4) and np.abs(serial).max() > 0.1
    assert found["1"]["terms"] == [["dispersion.metal", "pml", "sources"]]
    assert [] in found["3"]["terms"]  # a rank holding none of the terms' elements
    for ranks in ("2", "3"):
        got = np.array(found[ranks]["u"])
        assert np.abs(got - serial).max() <= 1e-13 * np.abs(serial).max(), ranks
