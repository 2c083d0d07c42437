"""The step check (runner/step_check.py) gives the same dt on 1, 2 and 3 ranks: one mpiexec
launch of step_check_ranks.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def test_same_step_on_one_two_and_three_ranks():
    result = run(3, [str(Path(__file__).with_name("step_check_ranks.py"))])
    assert result.returncode == 0, describe(result)
    found = json.loads(result.stdout.strip().splitlines()[-1])
    for equations, by_ranks in found.items():
        assert sorted(by_ranks) == ["1", "2", "3"], equations
        serial = by_ranks["1"]
        assert serial["record"]["shortened"], (equations, serial)
        for ranks in ("2", "3"):
            assert by_ranks[ranks] == serial, (equations, ranks, by_ranks[ranks], serial)
