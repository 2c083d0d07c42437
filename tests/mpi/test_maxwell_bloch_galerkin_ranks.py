"""Bloch-periodic boundaries with volume_form = "galerkin" on 1, 2 and 3 ranks in one mpiexec
launch (bloch_galerkin_ranks.py): the rotated sums across ranks feed the Galerkin kernels alike,
giving the serial fields and energy; on the mesh cut across its only wrap the middle of 3 ranks
owns no wrap point; a phased sheet and a [pml]; an oblique TF/SF plane wave whose surface one
rank of 3 owns; with the central flux the pair's Galerkin energy stays (up to the time
step's dissipation)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def test_ranks_give_the_serial_fields():
    result = run(3, [str(Path(__file__).with_name("bloch_galerkin_ranks.py"))], timeout=300)
    assert result.returncode == 0, describe(result)
    out = json.loads(result.stdout)
    for name, found in out.items():
        serial = np.array(found["1"]["fields"])
        assert serial.shape[0] == 12 and np.abs(serial[6:]).max() > 1e-2, name  # the imaginary part moved
        for ranks in ("2", "3"):
            fields = np.array(found[ranks]["fields"])
            assert np.abs(fields - serial).max() <= 1e-12 * np.abs(serial).max(), (name, ranks)
            assert abs(found[ranks]["energy"] - found["1"]["energy"]) <= 1e-12 * found["1"]["energy"], (name, ranks)
            assert found[ranks]["steps"] == found["1"]["steps"]
    assert sum(out["across"]["3"]["wraps"]) == sum(out["across"]["1"]["wraps"]) == 2 * 16
    assert 0 in out["across"]["3"]["wraps"]  # a rank with no wrap point
    assert all(w > 0 for w in out["curved"]["3"]["wraps"])  # cut along z: every rank owns wraps
    assert np.abs(np.array(out["sheet"]["1"]["fields"])).max() > 1e-3  # the sheet radiated
    assert np.abs(np.array(out["wave"]["1"]["fields"])).max() > 0.5  # the plane wave came in
