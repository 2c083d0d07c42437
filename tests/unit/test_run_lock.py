"""One run per output directory (io/run_lock.py, docs/output.md): with two real processes, a
second run into a live directory, or --overwrite of a live run, or a run of another output
name into it, is refused with exit 2 naming the first run's PID, and leaves its files alone;
after the first is killed with SIGKILL, a new run proceeds (the kernel dropped the lock)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lobatto.errors import InputError
from lobatto.io.run_lock import (LOCK_FILE, claim_output_dir, holder_of, lock_output_dir, release_claim,
                                 release_output_dir)

SRC = Path(__file__).resolve().parents[2] / "src"
sys.path.insert(0, str(SRC.parent / "tests"))
from held_write import ACOUSTICS  # noqa: E402

LONG_CASE = ACOUSTICS.replace("{t_end}", "1e4").replace("{every}", "5").replace("{formats}", '["hdf5"]')
SHORT_CASE = LONG_CASE.replace("t_end = 1e4", "t_end = 0.05")


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")
    for name in ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"):
        env.pop(name, None)
    return env


def _lobatto(*args: str, **kwargs) -> list[str]:
    return [sys.executable, "-m", "lobatto", *args]


def _start_long_run(tmp_path: Path, out: Path, name: str = "first") -> subprocess.Popen:
    case = tmp_path / f"{name}.toml"
    case.write_text(LONG_CASE.format(name=name))
    proc = subprocess.Popen(_lobatto("run", str(case), "-o", str(out), "--quiet"), env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the lock is taken before anything is written
        held = holder_of(out) if (out / LOCK_FILE).exists() else None
        if held is not None and held.get("pid") == proc.pid and list(out.glob(f"{name}_*.h5")):
            return proc
        if proc.poll() is not None:
            pytest.fail(f"the first run ended early ({proc.returncode}): {proc.communicate()[1]}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the first run did not take the lock and write a snapshot within 120 s")


def _run(args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run(_lobatto(*args), env=_env(), capture_output=True, text=True, timeout=timeout)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=30)


@pytest.fixture
def live_run(tmp_path):
    out = tmp_path / "out"
    proc = _start_long_run(tmp_path, out)
    yield proc, out
    _stop(proc)


def _assert_refused(result: subprocess.CompletedProcess, pid: int, out: Path) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("lobatto: error: "), result.stderr
    assert f"PID {pid} on " in lines[0] and str(out) in lines[0], lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("options, name", [((), "first"), (("--overwrite",), "first"), ((), "second")])
def test_second_run_into_a_live_directory_is_refused(live_run, tmp_path, options, name):
    proc, out = live_run
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("first_*.h5")}
    case = tmp_path / f"{name}_2.toml"
    case.write_text(SHORT_CASE.format(name=name))
    result = _run(["run", str(case), "-o", str(out), "--quiet", *options])
    _assert_refused(result, proc.pid, out)
    assert proc.poll() is None, "the first run must go on"
    after = {p.name: p.stat().st_mtime_ns for p in out.glob("first_*.h5")}
    assert all(after.get(n) == t for n, t in before.items()), "the live run's snapshots were touched"
    assert not list(out.glob(f"{name}_2*")) and not list(out.glob("second_*"))


def test_after_sigkill_a_new_run_proceeds(tmp_path):
    out = tmp_path / "out"
    proc = _start_long_run(tmp_path, out)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert (out / LOCK_FILE).exists()  # left behind by the dead process: must not block
    case = tmp_path / "again.toml"
    case.write_text(SHORT_CASE.format(name="again"))
    result = _run(["run", str(case), "-o", str(out), "--quiet"])
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["case"] == "again"
    assert not (out / LOCK_FILE).exists()  # released and removed at the end of the run


HOLDER = """
import sys, time
from lobatto.io.run_lock import lock_output_dir
lock_output_dir(sys.argv[1])
print("locked", flush=True)
time.sleep(120)
"""


def test_python_api_refuses_a_live_directory(tmp_path):
    """lobatto.run / Simulation take the same lock; lock_output_dir within one process counts its
    holders (the last releases it)."""
    import lobatto

    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], env=_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        case = lobatto.case_from_dict({"physics": {"equations": "acoustics"}, "mesh": {"elements": [1, 1, 1]},
                                       "discretization": {"order": 2}, "time": {"t_end": 0.01}}, name="api")
        with pytest.raises(InputError, match=rf"PID {holder.pid} on "):
            lobatto.run(case, output_dir=out, backend="cpu")
        assert not (out / "summary.json").exists()
    finally:
        holder.kill()
        holder.communicate(timeout=30)
    result = lobatto.run(case, output_dir=out, backend="cpu")  # the holder is dead: proceeds
    assert result.summary["t_final"] == pytest.approx(0.01)
    assert not (out / LOCK_FILE).exists()
    lock_output_dir(out)  # re-entrant in one process, released by the last holder
    lock_output_dir(out)
    release_output_dir(out)
    assert (out / LOCK_FILE).exists()
    release_output_dir(out)
    assert not (out / LOCK_FILE).exists()


def test_lock_is_refused_while_another_process_holds_it(tmp_path):
    out = tmp_path / "fresh" / "out"  # created with its parents
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], env=_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(InputError) as refused:
            lock_output_dir(out, overwrite=True)
        assert f"PID {holder.pid}" in str(refused.value) and "--overwrite" in str(refused.value)
        assert "\n" not in str(refused.value)
    finally:
        holder.kill()
        holder.communicate(timeout=30)
    lock_output_dir(out)
    release_output_dir(out)


def test_a_case_refused_at_set_up_frees_the_directory(tmp_path):
    import lobatto

    out = tmp_path / "out"
    case = lobatto.case_from_dict({"physics": {"equations": "acoustics"}, "mesh": {"elements": [1, 1, 1]},
                                   "discretization": {"order": 2}, "time": {"t_end": 0.01},
                                   "initial": {"p": "1e200"}}, name="refused")
    with pytest.raises(InputError, match=r"\[initial\] p"):
        lobatto.Simulation(case, backend="cpu", output_dir=out, comm=None)
    assert not (out / LOCK_FILE).exists()  # released at once, not when the object is collected
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], env=_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"  # another process may use it now
    finally:
        holder.kill()
        holder.communicate(timeout=30)


def _api_case(name: str):
    import lobatto

    return lobatto.case_from_dict({"physics": {"equations": "acoustics"}, "mesh": {"elements": [1, 1, 1]},
                                   "discretization": {"order": 2}, "time": {"t_end": 0.01},
                                   "initial": {"p": "exp(-20*((x-0.5)**2 + (y-0.5)**2))"}}, name=name)


def test_two_live_simulations_of_one_process_are_refused(tmp_path):
    """A second Simulation into the directory of one set up (not run to its end) in the same
    process is refused naming this process's PID; once the first has run, a new one proceeds."""
    import lobatto

    out = tmp_path / "out"
    first = lobatto.Simulation(_api_case("first"), backend="cpu", output_dir=out, comm=None)
    first.advance(1)
    with pytest.raises(InputError) as refused:
        lobatto.Simulation(_api_case("second"), backend="cpu", output_dir=out, comm=None)
    line = str(refused.value)
    assert f"PID {os.getpid()}" in line and str(out) in line and "\n" not in line, line
    with pytest.raises(InputError, match=rf"PID {os.getpid()}"):  # lobatto.run takes the same path
        lobatto.run(_api_case("third"), output_dir=out, backend="cpu")
    assert not (out / "summary.json").exists() and (out / LOCK_FILE).exists()
    first.run()  # to its end: releases the directory
    assert not (out / LOCK_FILE).exists() and json.loads((out / "summary.json").read_text())["case"] == "first"
    again = lobatto.run(_api_case("again"), output_dir=out, backend="cpu")
    assert again.summary["t_final"] == pytest.approx(0.01)
    assert json.loads((out / "summary.json").read_text())["case"] == "again"


def test_the_command_lines_lock_is_handed_to_one_run(tmp_path):
    """`lobatto run` (in this process) takes the lock and hands it to the run it starts; a lock
    taken with lock_output_dir is handed to one run at a time, and stays with its taker."""
    from lobatto.cli import main

    case, out = tmp_path / "cli.toml", tmp_path / "out"
    case.write_text(SHORT_CASE.format(name="cli"))
    assert main(["run", str(case), "-o", str(out), "--quiet"]) == 0
    assert json.loads((out / "summary.json").read_text())["case"] == "cli" and not (out / LOCK_FILE).exists()
    lock_output_dir(out)  # as the command line does, then its runs in turn
    claim_output_dir(out)
    with pytest.raises(InputError, match=rf"PID {os.getpid()}"):
        claim_output_dir(out)
    release_claim(out)
    claim_output_dir(out)
    release_claim(out)
    assert (out / LOCK_FILE).exists()  # still the taker's
    release_output_dir(out)
    assert not (out / LOCK_FILE).exists()
