"""The materials library, diagonal anisotropy (also with poles, a dipole and a current) and
sub-cell averaging (also of a dispersive table) give the serial fields on 2 and 3 ranks (one
rank of 3 owns none of the material, nor a source point): one mpiexec launch of
materials_ranks.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def test_material_features_on_one_two_and_three_ranks():
    result = run(3, [str(Path(__file__).with_name("materials_ranks.py"))], timeout=180)
    assert result.returncode == 0, describe(result)
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found
    for name, by_ranks in found.items():
        assert sorted(by_ranks) == ["1", "2", "3"], name
        serial = np.array(by_ranks["1"]["u"])
        assert np.abs(serial).max() > 0.1
        assert min(by_ranks["3"]["counts"]) > 0 and min(by_ranks["3"]["inside"]) == 0  # a rank without the feature
        for ranks in ("2", "3"):
            got = by_ranks[ranks]
            assert got["steps"] == by_ranks["1"]["steps"], (name, ranks)
            assert np.max(np.abs(np.array(got["u"]) - serial)) <= 1e-13 * np.abs(serial).max(), (name, ranks)
            assert abs(got["energy"] - by_ranks["1"]["energy"]) <= 1e-13 * abs(by_ranks["1"]["energy"])
