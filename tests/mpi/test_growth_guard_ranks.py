"""The growth guard (runner/growth_guard.py) is collective: an unstable run stops at the same
step on 1, 2 and 3 ranks, every rank raising alike, including ranks that own no [pml] element
and no source; one mpiexec launch of growth_guard_ranks.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def test_same_stop_on_every_rank_and_rank_count():
    result = run(3, [str(Path(__file__).with_name("growth_guard_ranks.py"))])
    assert result.returncode == 0, describe(result)
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted(line["rank"] for line in lines) == [0, 1, 2], describe(result)
    serial = next(line for line in lines if line["rank"] == 0)["found"]["1"]
    assert serial["collective"] and serial["message"].startswith(f"stopped at step {serial['step']},")
    assert serial["overlap"]  # the medium's overlap with the layer, counted over ranks, in every message
    seen = []
    for line in lines:
        for ranks, found in line["found"].items():
            assert {k: v for k, v in found.items() if k not in ("layer", "sources")} == \
                {k: v for k, v in serial.items() if k not in ("layer", "sources")}, (line["rank"], ranks)
            seen.append((ranks, line["rank"], found["layer"], found["sources"]))
    assert sorted(ranks for ranks, *_ in seen) == ["1", "2", "2", "3", "3", "3"]
    # on 3 ranks the last owns no layer element and no source, yet stops at the same step
    assert ("3", 2, 0, 0) in seen and any(layer and sources for ranks, _, layer, sources in seen if ranks == "3")
