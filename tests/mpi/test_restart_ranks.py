"""Restart across rank counts, and a job killed while it writes a checkpoint (docs/restart.md).

A 2-rank run writes checkpoints; continued on 2 ranks from one of them it ends bitwise equal
to the uninterrupted run, on 1 and 3 ranks to 1e-13. A job killed with SIGKILL while every
rank is inside the write of its second checkpoint leaves the first one restartable, and the
run continued from it (`--restart latest`) equals the uninterrupted one bitwise.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from mpirun import MPIEXEC, SKIP_REASON, SRC, describe, launcher_flags, max_relative_difference, read_final, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [4, 3, 2]
deform = {{ y = "0.03*sin(pi*x)*sin(pi*y)*sin(pi*z)" }}
[discretization]
order = 3
[initial]
Ez = "sin(pi*x)*sin(pi*y)"
Hy = "0.2*cos(pi*z)"
[time]
t_end = {t_end}
[output]
every = 6
[checkpoint]
every = 4
keep = 10
"""


def lobatto_run(nprocs, case, out, *options, timeout=120):
    result = run(nprocs, ["-m", "lobatto", "run", str(case), "--output", str(out), "--quiet", *options],
                 timeout=timeout)
    assert result.returncode == 0, describe(result)
    return read_final(out)


@pytest.fixture(scope="module")
def two_rank_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("restart")
    case = directory / "case.toml"
    case.write_text(CASE.format(t_end=0.4))
    summary, ids, fields = lobatto_run(2, case, directory / "full")
    assert summary["ranks"] == 2 and summary["steps"] > 8
    return case, directory / "full", ids, fields


@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_two_rank_checkpoint_continues_on_any_rank_count(two_rank_run, tmp_path, nprocs):
    case, full, ids, expected = two_rank_run
    out = tmp_path / "out"
    shutil.copytree(full / "checkpoints" / "case_000004", out / "checkpoints" / "case_000004")
    summary, got_ids, fields = lobatto_run(nprocs, case, out, "--restart", "latest")
    assert np.array_equal(got_ids, ids)
    assert summary["ranks"] == nprocs and summary["restarts"][0]["from"]["ranks"] == 2
    assert summary["restarts"][0]["step"] == 4
    if nprocs == 2:
        assert np.array_equal(fields, expected)
    else:
        assert max_relative_difference(fields, expected) <= 1e-13


def test_one_rank_checkpoint_continues_on_three(two_rank_run, tmp_path):
    case, _, ids, expected = two_rank_run
    summary, _, _ = lobatto_run(1, case, tmp_path / "serial")
    out = tmp_path / "serial"
    summary, got_ids, fields = lobatto_run(3, case, out, "--restart", out / "checkpoints" / "case_000008",
                                           "--overwrite")
    assert np.array_equal(got_ids, ids) and summary["restarts"][0]["from"]["ranks"] == 1
    assert max_relative_difference(fields, expected) <= 1e-13


def test_kill_during_a_checkpoint_leaves_the_previous_one(two_rank_run, tmp_path):
    case, _, ids, expected = two_rank_run
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(SRC), OMP_NUM_THREADS="1", LOBATTO_TEST_CHECKPOINT_PAUSE="8:60")
    cmd = [MPIEXEC, *launcher_flags(MPIEXEC), "-n", "2", sys.executable, "-m", "lobatto", "run", str(case), "-o",
           str(out), "--quiet"]
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                           start_new_session=True)  # its own process group: mpiexec and every rank
    checkpoints = out / "checkpoints"
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:  # both ranks inside the write of the step-8 checkpoint
            if len(list(checkpoints.glob("case_000008.tmp-*/rank*.h5"))) == 2:
                break
            assert job.poll() is None, job.communicate()
            time.sleep(0.05)
        else:
            pytest.fail("the job did not reach the checkpoint of step 8")
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.communicate()
    assert sorted(p.name for p in checkpoints.iterdir()) == ["case_000004", next(checkpoints.glob("*.tmp-*")).name]
    assert not (checkpoints / "case_000008").exists()
    summary, got_ids, fields = lobatto_run(2, case, out, "--restart", "latest", "--overwrite")
    assert summary["restarts"][0]["step"] == 4
    assert np.array_equal(got_ids, ids) and np.array_equal(fields, expected)
    assert not list(checkpoints.glob("*.tmp-*"))  # the killed writer's temporary is gone


@pytest.mark.parametrize("nprocs", [2, 3])
def test_wall_clock_checkpoints_agree_across_ranks(tmp_path, nprocs):
    """Checkpoints every 0.01 s of rank 0's clock: the ranks must take each decision together
    (a rank deciding alone would leave the others waiting, and the job would not finish)."""
    from lobatto.io.checkpoint import Checkpoint
    from lobatto.io.checkpoint_dir import find_checkpoints

    case = tmp_path / "case.toml"
    case.write_text(CASE.format(t_end=0.4).replace("every = 4\nkeep = 10", "wall_minutes = 0.0002\nkeep = 100\n"
                                                                            "at_end = false"))
    summary, _, _ = lobatto_run(nprocs, case, tmp_path / "out", timeout=60)
    found = find_checkpoints(tmp_path / "out", "case")
    assert found and found[0][0] < summary["steps"]  # written during the run (at_end is off)
    for _, path in found:
        checkpoint = Checkpoint(path)
        assert checkpoint.attrs["ranks"] == nprocs and len(checkpoint.counts) == nprocs
