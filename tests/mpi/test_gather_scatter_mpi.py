"""Run tests/mpi/gs_check.py under ``mpiexec -n P`` for P = 1..4.

gs_check.py compares every method x op x vn, blocking and non-blocking, against a serial
reference of the same random global problem, and checks that `auto` agrees on all ranks.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

SCRIPT = Path(__file__).resolve().parent / "gs_check.py"
TIMEOUT_S = 120


@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_gs_check(nprocs):
    try:
        res = run(nprocs, [str(SCRIPT)], timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"gs_check on {nprocs} ranks timed out after {TIMEOUT_S} s\n{exc.stdout or ''}\n{exc.stderr or ''}")
    assert res.returncode == 0, describe(res)
    assert f"gs_check P={nprocs}:" in res.stdout, (
        "mpiexec did not start the expected number of ranks (is mpiexec from the same MPI as mpi4py?)\n" + describe(res))
    assert "0 failures" in res.stdout, describe(res)
