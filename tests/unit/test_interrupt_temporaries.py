"""SIGINT and SIGTERM while a file is being written (cli.py, io/atomic.py): the run exits
130 / 143 with one "interrupted" line, no ``*.tmp-*`` file is left in the output directory,
the snapshots written before are intact, and the output directory's lock is released."""

from __future__ import annotations

import signal

import pytest

from held_write import assert_clean, hold_and_signal


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_mid_write_leaves_no_temporary(tmp_path, signum, code):
    returncode, err, out = hold_and_signal(tmp_path, signum)
    assert returncode == code, err
    assert_clean(out, err)
    assert not (out / ".lobatto.lock").exists()  # released on the way out
