"""An error on any rank ends every rank promptly, with one line and the right exit code.

Each fault is injected on one rank (faulty_run.py) of a 2- and a 3-rank `lobatto run`; the job
must end well within its timeout (no rank left waiting in a collective call), print exactly
one `lobatto: error:` line and leave no temporary file. SIGINT and SIGTERM to mpiexec end
every rank with 130 / 143.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpirun import MPIEXEC, SKIP_REASON, SRC, describe, launcher_flags, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

HERE = Path(__file__).resolve().parent
CASE = """
[mesh]
elements = [4, 2, 2]
[discretization]
order = 3
[initial]
Ez = "sin(pi*x)*sin(pi*y)"
[time]
t_end = {t_end}
[output]
every = 3
formats = ["hdf5", "nek"]
"""


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("lobatto: error:")]


def run_faulty(tmp_path, fault, rank, nprocs, t_end=0.1, extra=()):
    case = tmp_path / "case.toml"
    case.write_text(CASE.format(t_end=t_end))
    start = time.monotonic()
    result = run(nprocs, [str(HERE / "faulty_run.py"), fault, str(rank), "--", "run", str(case), "-o",
                          str(tmp_path / "out"), "--quiet", *extra], timeout=60)
    return result, time.monotonic() - start


@pytest.mark.parametrize("nprocs", [2, 3])
@pytest.mark.parametrize("fault,rank", [("hdf5_part", 1), ("hdf5_virtual", 0), ("nek_file", 1), ("nek_index", 0),
                                        ("nek_file", 2), ("nek_rename", 0)])
def test_write_failure_on_one_rank_ends_the_job(tmp_path, fault, rank, nprocs):
    if rank >= nprocs:
        pytest.skip("the faulty rank is not in this job")
    result, seconds = run_faulty(tmp_path, fault, rank, nprocs)
    assert result.returncode == 1, describe(result)
    lines = error_lines(result.stderr)
    assert len(lines) == 1, describe(result)
    assert "no space left on device" in lines[0].lower(), describe(result)
    assert "Traceback" not in result.stderr, describe(result)
    assert seconds < 30
    assert not [p for p in (tmp_path / "out").rglob("*") if ".tmp" in p.name]


@pytest.mark.parametrize("nprocs", [2, 3])
def test_error_on_one_rank_mid_run_ends_the_job(tmp_path, nprocs):
    result, seconds = run_faulty(tmp_path, "solver", nprocs - 1, nprocs, t_end=0.5)
    assert result.returncode == 1, describe(result)
    lines = error_lines(result.stderr)
    assert lines == ["lobatto: error: injected failure on one rank"], describe(result)
    assert seconds < 30


def test_unexpected_error_on_one_rank_ends_the_job(tmp_path):
    result, seconds = run_faulty(tmp_path, "bug", 1, 2, t_end=0.5)
    assert result.returncode == 1, describe(result)
    assert "RuntimeError: injected bug" in result.stderr  # a bug keeps its traceback
    assert seconds < 30


BAD_INPUT = {
    "order out of range": (("order = 3", "order = 0"), "[discretization] order"),
    "initial field not finite": (('Ez = "sin(pi*x)*sin(pi*y)"', 'Ez = "1/x"'), "[initial] Ez is"),
    "exact field not finite": (("[time]", '[exact]\nHx = "exp(1000*y)"\n[time]'), "[exact] Hx is"),
    "wave speed underflows": (("[time]", "[physics]\nepsilon = 1e300\nmu = 1e300\n[time]"),
                              "[physics] epsilon must be a number from 1e-30"),
    "cfl over the bound": (("t_end = {t_end}", "t_end = {t_end}\ncfl = 0.9"), "stability bound"),
    "mesh too large": (("elements = [4, 2, 2]", "elements = [2000, 2000, 1000]"), "GiB of host memory"),
    "name too long": (("[output]", "[output]\nname = \"" + "n" * 300 + "\""), "[output] name"),
    "output path is a file": (None, "not a directory"),
    "earlier outputs": (None, "--overwrite"),
}


@pytest.mark.parametrize("nprocs", [2, 3])
@pytest.mark.parametrize("what", sorted(BAD_INPUT))
def test_bad_input_is_reported_once_by_every_rank_count(tmp_path, nprocs, what):
    change, fragment = BAD_INPUT[what]
    text = CASE if change is None else CASE.replace(*change)
    case = tmp_path / "case.toml"
    case.write_text(text.format(t_end=0.1))
    out = tmp_path / "out"
    if what == "output path is a file":
        out.write_text("not a directory")
    if what == "earlier outputs":
        out.mkdir()
        (out / "summary.json").write_text("{}")
    start = time.monotonic()
    result = run(nprocs, ["-m", "lobatto", "run", str(case), "-o", str(out), "--quiet"], timeout=60)
    assert result.returncode == 2, describe(result)
    lines = error_lines(result.stderr)
    assert len(lines) == 1 and fragment in lines[0], describe(result)
    assert "Traceback" not in result.stderr and "Warning" not in result.stderr, describe(result)
    assert time.monotonic() - start < 30


@pytest.mark.parametrize("nprocs", [2, 3])
def test_unstable_run_stops_on_every_rank(tmp_path, nprocs):
    case = tmp_path / "case.toml"
    case.write_text(CASE.format(t_end=2.0).replace("[time]", "[time]\ncfl = 40\ncfl_check = false"))
    result = run(nprocs, ["-m", "lobatto", "run", str(case), "-o", str(tmp_path / "out"), "--quiet"], timeout=60)
    assert result.returncode == 1, describe(result)
    lines = error_lines(result.stderr)
    assert len(lines) == 1 and ("energy grew" in lines[0] or "non-finite" in lines[0]), describe(result)
    assert "the fields are largest (" in lines[0] and "centred at (" in lines[0], describe(result)  # from every rank's part


@pytest.mark.parametrize("nprocs", [2, 3])
@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_ends_every_rank(tmp_path, signum, code, nprocs):
    case = tmp_path / "case.toml"
    case.write_text(CASE.format(t_end=1000.0).replace("order = 3", "order = 6"))
    env = dict(os.environ, PYTHONPATH=str(SRC), OMP_NUM_THREADS="1")
    cmd = [MPIEXEC, *launcher_flags(MPIEXEC), "-n", str(nprocs), sys.executable, "-m", "lobatto", "run", str(case), "-o",
           str(tmp_path / "out"), "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(4.0)  # well into the step loop
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the job did not end within 20 s of the signal\n{err}")
    assert proc.returncode == code, err
    assert "Traceback" not in err, err
    assert err.count("lobatto: interrupted") == 1, err  # rank 0's handler and its watcher both saw it
