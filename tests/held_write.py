"""A `lobatto run` signalled in the middle of a snapshot write, for tests of SIGINT / SIGTERM
(tests/unit/test_interrupt_temporaries.py, tests/mpi/test_signal_temporaries.py). The write
is held at a known point (after the temporary is complete, before it is renamed) by a wrapper
around io.atomic's fsync, so the signal lands mid-write every time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# a run that lasts far longer than a test needs (it is signalled or killed): acoustics on a small box
# (also tests/unit/test_run_lock.py's)
ACOUSTICS = """
[physics]
equations = "acoustics"
[mesh]
elements = [2, 2, 2]
[discretization]
order = 3
[time]
t_end = {t_end}
[initial]
p = "exp(-20*((x-0.5)**2 + (y-0.5)**2 + (z-0.5)**2))"
[output]
name = "{name}"
every = {every}
formats = {formats}
"""

CASE = ACOUSTICS.format(t_end=100, name="held", every=2, formats='["hdf5", "vtk"]')

# `lobatto run`, with the third HDF5 snapshot (with several ranks: the file joining the parts)
# held between its complete temporary and the rename
HELD_RUN = r"""
import re, sys, time
import lobatto.io.atomic as atomic
real, seen = atomic._fsync_file, []
def held(path):
    real(path)
    if re.fullmatch(r"held_\d{6}\.h5\.tmp-\d+", path.name):  # the snapshot (rank 0), not a part
        seen.append(path)
        if len(seen) == 3:
            open(sys.argv[1], "w").write(str(path))
            time.sleep(120)
atomic._fsync_file = held
from lobatto.cli import main
sys.exit(main(sys.argv[2:]))
"""


def hold_and_signal(tmp_path: Path, signum: int, launcher=(), nprocs: int = 1):
    case = tmp_path / "case.toml"
    case.write_text(CASE)
    out, marker = tmp_path / "out", tmp_path / "held"
    env = dict(os.environ, PYTHONPATH=str(SRC), OMP_NUM_THREADS="1")
    cmd = [*launcher, sys.executable, "-c", HELD_RUN, str(marker), "run", str(case), "-o", str(out), "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while not marker.exists() or not marker.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the run did not reach the held write: {proc.communicate()}")
        time.sleep(0.05)
    temporary = Path(marker.read_text())
    assert temporary.exists() and ".tmp-" in temporary.name  # the write is under way
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"no exit within 30 s of the signal: {proc.communicate()}")
    return proc.returncode, err, out


def assert_clean(out: Path, err: str) -> None:
    left = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if ".tmp-" in p.name)
    assert not left, left
    assert "Traceback" not in err and err.count("lobatto: interrupted") == 1, err
    earlier = sorted(out.glob("held_*.h5"))
    assert [p.name for p in earlier] == ["held_000002.h5", "held_000004.h5"], earlier
    for step, path in zip((2, 4), earlier):
        with h5py.File(path, "r") as f:  # complete and readable
            assert int(f.attrs["step"]) == step
            assert f["fields/p"][...].std() > 0
