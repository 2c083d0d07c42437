"""lobatto sysbench on 2 and 3 ranks: ping-pong and allreduce rows with positive, finite rates;
GPU sections skipped with a reason; every rank returns the same exit code (0, 1 with a
regression under --compare, 2 for a bad baseline, printed once). No timing is asserted."""

from __future__ import annotations

import json
import math

import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

SMALL = ["--quick", "--mpi-max-bytes", "64K", "--allreduce-max-bytes", "4K", "--cpu-stream-bytes", "64K",
         "--threads", "1", "--repeats", "1", "--no-png"]
# each rank writes what lobatto.cli.main returned to it into DIR/exit.<rank>
REPORT_EXIT = ("import sys; from pathlib import Path; from lobatto.cli import main; from mpi4py import MPI; "
               "rc = main(sys.argv[2:]); Path(sys.argv[1], f'exit.{MPI.COMM_WORLD.Get_rank()}').write_text(str(rc)); "
               "sys.exit(rc)")


def exit_codes(directory, ranks):
    return [int((directory / f"exit.{r}").read_text()) for r in range(ranks)]


@pytest.mark.parametrize("ranks", [2, 3])
def test_sysbench_ranks(tmp_path, ranks):
    path = tmp_path / "sb.json"
    result = run(ranks, ["-c", REPORT_EXIT, str(tmp_path), "sysbench", *SMALL, "--json", str(path)])
    assert result.returncode == 0, describe(result)
    assert exit_codes(tmp_path, ranks) == [0] * ranks, describe(result)
    assert result.stdout.count("section ") == 1  # rank 0 alone prints the table
    doc = json.loads(path.read_text())
    assert doc["ranks"] == ranks and doc["mpi_library"]
    res = doc["results"]
    sizes = [r["bytes"] for r in res["mpi_pingpong"]["rows"]]
    assert sizes[0] == 0 and sizes[1] == 8 and sizes[-1] == 65536
    for row in res["mpi_pingpong"]["rows"]:
        assert math.isfinite(row["seconds_one_way"]) and row["seconds_one_way"] > 0
        if row["bytes"] > 0:
            assert math.isfinite(row["bytes_per_second"]) and row["bytes_per_second"] > 0
            assert row["bytes_per_second"] == pytest.approx(row["bytes"] / row["seconds_one_way"])
    assert res["mpi_allreduce"]["ranks"] == ranks
    assert [r["bytes"] for r in res["mpi_allreduce"]["rows"]] == [8, 32, 128, 512, 2048]
    assert all(math.isfinite(r["seconds"]) and r["seconds"] > 0 for r in res["mpi_allreduce"]["rows"])
    assert res["cpu_stream"]["rows"][0]["threads"] == 1
    for name in ("gpu_stream", "gemm", "host_device", "gpu_gpu"):
        assert res[name]["skipped"], name

    # --compare on every rank: a baseline with a far faster 8-byte ping-pong -> exit 1 everywhere
    faster = json.loads(path.read_text())
    for row in faster["results"]["mpi_pingpong"]["rows"]:
        row["seconds_one_way"] *= 1e4  # the others far slower ...
    faster["results"]["mpi_pingpong"]["rows"][1]["seconds_one_way"] *= 1e-8  # ... 8 B far faster
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(faster))
    result = run(ranks, ["-c", REPORT_EXIT, str(tmp_path), "sysbench", *SMALL, "--only", "mpi_pingpong", "--json",
                         str(tmp_path / "again.json"), "--compare", str(baseline)])
    assert result.returncode == 1, describe(result)
    assert exit_codes(tmp_path, ranks) == [1] * ranks, describe(result)
    assert result.stdout.count("REGRESSION mpi_pingpong.8B.seconds_one_way") == 1, describe(result)


def test_bad_baseline_every_rank_exits_2(tmp_path):
    baseline = tmp_path / "base.json"
    baseline.write_text('{"benchmark": "sysbench"}')
    result = run(2, ["-m", "lobatto", "sysbench", *SMALL, "--json", str(tmp_path / "x.json"), "--compare",
                     str(baseline)])
    assert result.returncode == 2, describe(result)
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("lobatto: error:")]
    assert len(errors) == 1 and str(baseline) in errors[0] and "not a lobatto sysbench result" in errors[0], \
        describe(result)
    assert not (tmp_path / "x.json").exists()
