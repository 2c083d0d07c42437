"""Ranks sharing a node share its cores: without OMP_NUM_THREADS each rank of a 2-rank run
takes at most cores / 2 threads (fewer where other work keeps cores busy: lobatto/machine/threads.py),
and the summary says so; with it set, the user's number stands."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mpirun import MPIEXEC, SKIP_REASON, SRC, launcher_flags

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [2, 1, 1]
[discretization]
order = 2
[time]
t_end = 0.01
"""


@pytest.mark.parametrize("user_threads", [None, "1"])
def test_threads_per_rank(tmp_path, user_threads):
    (tmp_path / "case.toml").write_text(CASE)
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "LOBATTO_THREADS_SET_BY",
                                                            "LOBATTO_THREADS_CHOSEN", "OPENBLAS_NUM_THREADS")}
    env["PYTHONPATH"] = str(SRC)
    if user_threads is not None:
        env["OMP_NUM_THREADS"] = user_threads
    cmd = [MPIEXEC, *launcher_flags(MPIEXEC), "-n", "2", sys.executable, "-m", "lobatto", "run",
           str(tmp_path / "case.toml"), "-o", str(tmp_path / "out"), "--quiet"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    threads = json.loads((tmp_path / "out" / "summary.json").read_text())["threads"]
    if user_threads is None:  # cores / 2, fewer where other work keeps cores busy (lobatto/machine/threads.py)
        assert threads["set_by"].startswith("lobatto: ") and "2 ranks on the node" in threads["set_by"], threads
        most = max(1, len(os.sched_getaffinity(0)) // 2)
        if threads["per_rank"] is not None:
            assert 1 <= int(threads["per_rank"]) <= most, threads
        return
    else:
        assert threads["set_by"] == "OMP_NUM_THREADS", threads
        expected = 1
    if threads["per_rank"] is not None:  # None where the C kernels could not be built
        assert int(threads["per_rank"]) == expected, threads
