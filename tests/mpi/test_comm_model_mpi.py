"""The communication model under mpiexec on 2 and 3 ranks: the pattern it derives from lobatto's
partition equals the gather-scatter's own neighbour lists, `--measure` runs, and a bad input
ends every rank with exit 2."""

from __future__ import annotations

import json

import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CHECK = """
import json, sys
from mpi4py import MPI
from lobatto.bench.comm_measure import face_exchange
from lobatto.bench.comm_pattern import partition_pattern
comm = MPI.COMM_WORLD
out = []
for elements, order in (((5, 3, 2), 2), ((4, 4, 3), 3), ((7, 2, 2), 1)):
    fx = face_exchange(comm, elements, order, repeats=2)
    if comm.Get_rank() == 0:
        model = partition_pattern(elements, comm.Get_size())
        for lists in fx["rank_lists"]:
            pat = model[lists["rank"]]
            sizes = pat.message_bytes(order)
            out.append({"gs": [lists["neighbours"], lists["message_bytes"]],
                        "model": [sorted(sizes), [sizes[q] for q in sorted(sizes)]]})
if comm.Get_rank() == 0:
    print("PATTERNS " + json.dumps(out))
"""


@pytest.mark.parametrize("nprocs", [2, 3])
def test_pattern_matches_gather_scatter(nprocs):
    res = run(nprocs, ["-c", CHECK], timeout=120)
    assert res.returncode == 0, describe(res)
    line = next(l for l in res.stdout.splitlines() if l.startswith("PATTERNS "))
    rows = json.loads(line[len("PATTERNS "):])
    assert len(rows) == 3 * nprocs
    for row in rows:
        assert row["gs"] == row["model"], row
    assert any(len(r["gs"][0]) == 2 for r in rows) or nprocs == 2


@pytest.mark.parametrize("nprocs", [2, 3])
def test_measure(tmp_path, nprocs):
    out = tmp_path / "cm.json"
    res = run(nprocs, ["-m", "lobatto", "bench", "comm-model", "--measure", "--max-ranks", "16", "--order-points", "2",
                       "--json", str(out)], timeout=240)
    assert res.returncode == 0, describe(res)
    data = json.loads(out.read_text())
    lg = data["measured"]["loggp"]
    assert lg["G"] > 0 and lg["latency"] > 0 and lg["g"] >= lg["o"] >= 0
    assert all(r["ranks"] == nprocs and r["message_bytes"] == r["pattern_bytes"] for r in data["measured"]["face_exchange"])
    # the stage term: timed steps of the run against the block alone on each rank, on the CPU
    stage, sw = data["measured"]["stage"], data["measured"]["software"]
    assert [r["block"] for r in stage] == [[2, 2, 2], [3, 3, 3], [4, 4, 4], [5, 4, 4]]
    assert all(r["ranks"] == nprocs and r["stage_seconds"] > 0 and r["alone_stage_seconds"] > 0 for r in stage)
    assert all(r["single_stage_seconds"] > 0 for r in stage)
    assert all(r["extra"] == pytest.approx(r["stage_seconds"] - r["single_stage_seconds"]) for r in stage)
    assert all(r["contention"] == pytest.approx(r["alone_stage_seconds"] - r["single_stage_seconds"]) for r in stage)
    assert all(r["beyond_alone"] == pytest.approx(r["stage_seconds"] - r["alone_stage_seconds"]) for r in stage)
    assert all(r["predicted_beyond_alone"] == pytest.approx(r["exchange_model"] + sw["r0"] + sw["r_e"] * r["elements"])
               for r in stage)
    assert sw["backend"] == "cpu" and "timed steps of 4 block(s)" in sw["stage_source"]
    assert data["measured"]["sharing"]["shared_gpu"] is False and "NOTE:" not in res.stdout
    assert res.stdout.count("results written to") == 1  # rank 0 alone reports


@pytest.mark.parametrize("nprocs", [2, 3])
def test_bad_input_every_rank_exit_2(tmp_path, nprocs):
    res = run(nprocs, ["-m", "lobatto", "bench", "comm-model", "--sysbench", str(tmp_path / "missing.json")], timeout=120)
    assert res.returncode == 2, describe(res)
    # raised on every rank alike: rank 0 reports it once, then the job ends with exit 2
    assert res.stderr.count("missing.json: no such file") == 1, describe(res)
    assert "rank " not in res.stderr, describe(res)
