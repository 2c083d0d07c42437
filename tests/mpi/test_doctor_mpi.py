"""`lobatto doctor` under mpiexec on 1, 2 and 3 ranks: it passes, every rank is in the JSON with
its hostname, the host transport's check compared real exchanged values, and every rank exits
with the same code; a corrupted exchange or an unwritable kernel cache on one rank gives exit 1
on every rank and a FAIL verdict naming that rank and the check.

Run as a script (``mpiexec -n P python test_doctor_mpi.py [--corrupt-rank R] [--bad-cache-rank R]
-- DOCTOR OPTIONS``) this file is the MPI side: it breaks the named rank in process, runs
``lobatto doctor`` through lobatto.cli.main and prints each rank's exit code.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve()


def _script_main(argv: list[str]) -> int:
    import argparse
    import os

    from mpi4py import MPI

    from lobatto import cli
    from lobatto.comm.gather_scatter import GatherScatter

    split = argv.index("--") if "--" in argv else len(argv)
    ap = argparse.ArgumentParser()
    ap.add_argument("--corrupt-rank", type=int, default=None)
    ap.add_argument("--bad-cache-rank", type=int, default=None)
    ap.add_argument("--blocker", default=None, help="a file: the bad cache directory goes under it")
    ap.add_argument("--stall-rank", type=int, default=None, help="this rank stalls in its first exchange")
    opts = ap.parse_args(argv[:split])
    rank = MPI.COMM_WORLD.Get_rank()
    if rank == opts.corrupt_rank:
        finish = GatherScatter.finish

        def corrupted(self, handle):
            out = finish(self, handle)
            handle.u2[:, 0] += 0.5  # one point of this rank's result is wrong
            return out

        GatherScatter.finish = corrupted
    if rank == opts.stall_rank:
        import time

        finish = GatherScatter.finish

        def stalled(self, handle):
            time.sleep(30)
            return finish(self, handle)

        GatherScatter.finish = stalled
    if rank == opts.bad_cache_rank:
        os.environ["LOBATTO_CACHE_DIR"] = str(Path(opts.blocker) / "cache")
    code = cli.main(["doctor", *argv[split + 1:]])
    print(f"DOCTOR-EXIT rank {rank} code {code}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(_script_main(sys.argv[1:]))

import pytest  # noqa: E402

from mpirun import SKIP_REASON, describe, run  # noqa: E402

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def doctor(nprocs, tmp_path, *script_options):
    path = tmp_path / "doctor.json"
    res = run(nprocs, [str(SCRIPT), *script_options, "--", "--json", str(path), "--bytes", "64K"], timeout=90)
    # the ranks' lines may interleave: find them anywhere
    codes = sorted((int(r), int(c)) for r, c in re.findall(r"DOCTOR-EXIT rank (\d+) code (\d+)", res.stdout))
    report = json.loads(path.read_text()) if path.exists() else None
    return res, codes, report


@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_doctor_passes_on_every_rank(nprocs, tmp_path):
    res, codes, report = doctor(nprocs, tmp_path)
    assert res.returncode == 0, describe(res)
    assert codes == [(r, 0) for r in range(nprocs)], describe(res)
    assert report["verdict"].startswith(f"doctor: OK ({nprocs} rank{'s' if nprocs > 1 else ''}, cpu; "
                                        "transports: host ok"), describe(res)
    assert report["verdict"] in res.stdout
    assert [row["rank"] for row in report["rows"]] == list(range(nprocs))
    assert all(row["hostname"] and row["size"] == nprocs for row in report["rows"])
    host = report["transports"]["host"]["ranks"]
    assert len(host) == nprocs
    for result in host:
        assert result["ok"] and 0 <= result["max_relative_error"] <= 1e-12 and result["values_checked"] > 0
    if nprocs > 1:
        for result in host:  # values really crossed ranks, from every other rank
            assert result["exchange_used"] == "host" and result["shared_values"] > 0
            assert result["neighbours"] == nprocs - 1
        band = host[0]["bandwidth"]
        assert band["bytes_per_pair"] == 65536 and band["wrong_values"] == 0 and band["seconds"] > 0
        assert band["values_checked"] == 8192 * (nprocs - 1)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_corrupted_exchange_on_one_rank_fails_everywhere(nprocs, tmp_path):
    bad = nprocs - 1
    res, codes, report = doctor(nprocs, tmp_path, "--corrupt-rank", str(bad))
    assert res.returncode == 1, describe(res)
    assert codes == [(r, 1) for r in range(nprocs)], describe(res)
    assert report["verdict"] == f"doctor: FAIL: rank {bad}: host exchange wrong (max error 0.5)", describe(res)
    assert [r["ok"] for r in report["transports"]["host"]["ranks"]] == [r != bad for r in range(nprocs)]


def test_unwritable_cache_on_one_rank_fails_everywhere(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    res, codes, report = doctor(3, tmp_path, "--bad-cache-rank", "1", "--blocker", str(blocker))
    assert res.returncode == 1, describe(res)
    assert codes == [(r, 1) for r in range(3)], describe(res)
    assert report["verdict"].startswith(f"doctor: FAIL: rank 1: C kernels (jit.c) cache {blocker}/cache is not "
                                        "writable"), describe(res)


def test_bad_option_is_one_line_exit_2(tmp_path):
    res = run(2, ["-m", "lobatto", "doctor", "--bytes", "lots"], timeout=60)
    assert res.returncode == 2, describe(res)
    lines = res.stderr.strip().splitlines()
    assert lines == ["lobatto: error: doctor: argument --bytes: expected a size in bytes such as 1048576, 1e6, "
                     "64K or 1M, got 'lots'"], describe(res)


def test_a_stalled_rank_ends_the_job_with_exit_1(tmp_path):
    res = run(2, [str(SCRIPT), "--stall-rank", "1", "--", "--timeout", "2"], timeout=60)
    assert res.returncode == 1, describe(res)
    assert re.search(r"doctor: FAIL: rank \d: the host correctness check did not finish within 2 s", res.stdout), \
        describe(res)
