"""SIGINT / SIGTERM to mpiexec while rank 0 is inside a snapshot write (held between its
complete temporary and the rename; the other ranks wait in the next collective): every rank
ends (130 / 143), no ``*.tmp-*`` file or part is left, the earlier snapshots are intact."""

from __future__ import annotations

import signal

import pytest

from held_write import assert_clean, hold_and_signal
from mpirun import MPIEXEC, SKIP_REASON, launcher_flags

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


@pytest.mark.parametrize("nprocs, signum, code", [(2, signal.SIGTERM, 143), (3, signal.SIGINT, 130)])
def test_signal_mid_write_on_every_rank(tmp_path, nprocs, signum, code):
    launcher = (MPIEXEC, *launcher_flags(MPIEXEC), "-n", str(nprocs))
    returncode, err, out = hold_and_signal(tmp_path, signum, launcher)
    assert returncode == code, err
    assert_clean(out, err)
