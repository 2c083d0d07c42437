"""One run per output directory under MPI: rank 0 takes the lock and every rank refuses
together (exit 2, one line naming the holder's PID, no hang) on 2 and 3 ranks."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mpirun import SKIP_REASON, SRC, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [3, 1, 1]
[discretization]
order = 2
[time]
t_end = 0.01
"""

HOLDER = """
import sys, time
from lobatto.io.run_lock import lock_output_dir
lock_output_dir(sys.argv[1])
print("locked", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("nprocs, options", [(2, ()), (3, ("--overwrite",))])
def test_every_rank_refuses_a_live_directory(tmp_path, nprocs, options):
    (tmp_path / "case.toml").write_text(CASE)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(SRC))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        result = run(nprocs, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "-o", str(out), "--quiet",
                              *options], timeout=120)
    finally:
        holder.kill()
        holder.communicate(timeout=30)
    assert result.returncode == 2, describe(result)
    errors = [line for line in result.stderr.splitlines() if line.startswith("lobatto: error:")]
    assert len(errors) == 1 and f"PID {holder.pid} on " in errors[0], describe(result)
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in out.iterdir()) == [".lobatto.lock"]  # nothing written
