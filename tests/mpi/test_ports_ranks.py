"""Ports and S-parameters on 1, 2 and 3 ranks in one mpiexec launch (ports_ranks.py): the same
S-matrix to 1e-12, with a rank that holds none of a port plane's faces on 3 ranks; and the same
for ports on named surfaces of a device-only mesh (the extension grown before partitioning)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def test_ranks_give_the_serial_s_matrix():
    result = run(3, [str(Path(__file__).with_name("ports_ranks.py"))], timeout=600)
    assert result.returncode == 0, describe(result)
    out = json.loads(result.stdout)
    serial = np.array(out["1"]["re"]) + 1j * np.array(out["1"]["im"])
    assert serial.shape == (4, 2, 2) and np.all(np.isfinite(serial))
    assert np.abs(serial[:, 1, 0] - serial[:, 0, 1]).max() < 1e-4  # reciprocity
    for ranks in ("2", "3"):
        s = np.array(out[ranks]["re"]) + 1j * np.array(out[ranks]["im"])
        assert np.abs(s - serial).max() <= 1e-12, ranks
    assert min(out["3"]["holders"].values()) < 3  # some rank holds none of a plane's faces
    surface = np.array(out["s1"]["re"]) + 1j * np.array(out["s1"]["im"])
    assert np.all(np.isfinite(surface[:, :, 0]))  # port "in" driven
    for ranks in ("s2", "s3"):
        s = np.array(out[ranks]["re"]) + 1j * np.array(out[ranks]["im"])
        assert np.abs(s[:, :, 0] - surface[:, :, 0]).max() <= 1e-12, ranks
    assert min(out["s3"]["holders"].values()) < 3  # some rank holds none of a surface's faces
