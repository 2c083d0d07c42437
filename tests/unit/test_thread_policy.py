"""The thread policy (lobatto/machine/threads.py, docs/parallel.md "Threads"): the command line
(``cli.main``, first thing) makes idle OpenMP and OpenBLAS workers sleep and chooses the
threads per rank, before the libraries read their variables; a user's setting stands;
LOBATTO_THREAD_POLICY=off leaves the environment alone; ``import lobatto`` alone changes
nothing. Checked in child processes, as libgomp and OpenBLAS see it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lobatto.machine import threads

SRC = Path(__file__).resolve().parents[2] / "src"
VARIABLES = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT",
             "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "LOBATTO_THREADS_SET_BY",
             "LOBATTO_THREADS_CHOSEN", "LOBATTO_THREAD_POLICY", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE",
             "SLURM_NTASKS_PER_NODE")

# what the child's OpenMP runtime (libgomp prints its settings when it loads, with
# OMP_DISPLAY_ENV) and BLAS report once lobatto and a compiled kernel are loaded
CHILD = """
import json, os
from lobatto.machine.threads import apply_thread_policy
apply_thread_policy()  # what cli.main does first
from lobatto.backends.blas import blas_controls
from lobatto.jit import c
from lobatto.operators.helmholtz_cpu import compiled_apply
compiled = compiled_apply(2, "float64") is not None
print(json.dumps({"env": {k: os.environ.get(k) for k in %r}, "compiled": compiled,
                  "omp_threads": c.get_num_threads() if compiled else None,
                  "blas_threads": [get() for get, _ in blas_controls()]}))
""" % (VARIABLES,)


_CHILDREN: dict = {}  # one child per setting, shared by the environment's and libgomp's tests


def child(**settings) -> tuple[dict, str]:
    key = tuple(sorted(settings.items()))
    if key not in _CHILDREN:
        env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
        env.update(PYTHONPATH=str(SRC), OMP_DISPLAY_ENV="true", **settings)
        result = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        _CHILDREN[key] = json.loads(result.stdout.strip().splitlines()[-1]), result.stdout + result.stderr
    return _CHILDREN[key]


def test_importing_lobatto_leaves_the_environment_alone():
    code = ("import json, os; before = dict(os.environ); import lobatto, lobatto.api; "
            "print(json.dumps({k: v for k, v in os.environ.items() if before.get(k) != v}))")
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    result = subprocess.run([sys.executable, "-c", code], env=dict(env, PYTHONPATH=str(SRC)), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {}


def test_the_command_line_applies_the_policy(tmp_path):
    code = ("import os\nfrom lobatto import cli\ntry:\n    cli.main(['--version'])\nexcept SystemExit:\n    pass\n"
            "print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('LOBATTO_THREADS_SET_BY', ''))")
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    result = subprocess.run([sys.executable, "-c", code], env=dict(env, PYTHONPATH=str(SRC)), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("passive lobatto: ")


def compiled_child(**settings) -> tuple[dict, str]:
    """The child's report, or a visible skip where no C compiler built the kernel (then no
    libgomp was loaded to read the policy)."""
    seen, text = child(**settings)
    if not seen["compiled"]:
        pytest.skip("no C compiler here: the compiled kernels (and libgomp) were not loaded")
    return seen, text


def test_default_policy_reaches_the_environment_and_blas():
    seen, _ = child()
    env = seen["env"]
    assert env["OMP_WAIT_POLICY"] == "passive" and env["OPENBLAS_THREAD_TIMEOUT"] == "4"
    threads_ = int(env["OMP_NUM_THREADS"])
    assert 1 <= threads_ <= len(os.sched_getaffinity(0))
    assert env["OPENBLAS_NUM_THREADS"] == env["OMP_NUM_THREADS"]
    assert env["LOBATTO_THREADS_SET_BY"].startswith("lobatto: ")
    assert all(n == threads_ for n in seen["blas_threads"]), seen


def test_default_policy_reaches_libgomp():
    """libgomp read the policy when the kernel library loaded it."""
    seen, text = compiled_child()
    assert "OMP_WAIT_POLICY = 'PASSIVE'" in text, text
    assert seen["omp_threads"] == int(seen["env"]["OMP_NUM_THREADS"])


def test_user_settings_stand():
    seen, _ = child(OMP_NUM_THREADS="1", OMP_WAIT_POLICY="active", OPENBLAS_THREAD_TIMEOUT="28")
    env = seen["env"]
    assert (env["OMP_NUM_THREADS"], env["OMP_WAIT_POLICY"], env["OPENBLAS_THREAD_TIMEOUT"]) == ("1", "active", "28")
    assert env["LOBATTO_THREADS_SET_BY"] is None


def test_user_settings_reach_libgomp():
    seen, text = compiled_child(OMP_NUM_THREADS="1", OMP_WAIT_POLICY="active", OPENBLAS_THREAD_TIMEOUT="28")
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in text, text
    assert seen["omp_threads"] == 1


def test_policy_off_leaves_the_environment_alone():
    seen, _ = child(LOBATTO_THREAD_POLICY="off")
    assert all(v is None for k, v in seen["env"].items() if k != "LOBATTO_THREAD_POLICY"), seen


def test_inherited_choice_is_made_again(monkeypatch):
    """A child that inherits a count lobatto chose (not the user) chooses again."""
    monkeypatch.setattr(threads, "usable_cores", lambda: 8)
    monkeypatch.setattr(threads, "busy_elsewhere", lambda ranks: 0.0)
    environ = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "LOBATTO_THREADS_CHOSEN": "1"}
    threads.apply_thread_policy(environ)
    assert environ["OMP_NUM_THREADS"] == environ["OPENBLAS_NUM_THREADS"] == "8"
    user = {"OMP_NUM_THREADS": "3"}
    threads.apply_thread_policy(user)
    assert user["OMP_NUM_THREADS"] == "3" and "OPENBLAS_NUM_THREADS" not in user


@pytest.mark.parametrize("cores, ranks, running, expected", [
    (2, 1, 1, 2),   # idle: only this process runs
    (2, 1, 2, 1),   # one core busy elsewhere
    (2, 1, 5, 1),   # overloaded: never below 1
    (2, 2, 2, 1),   # two ranks on two idle cores
    (16, 4, 4, 4),  # four ranks, idle
    (16, 4, 12, 2),  # eight cores busy elsewhere: (16 - 8) / 4
])
def test_threads_from_cores_ranks_and_load(monkeypatch, cores, ranks, running, expected):
    monkeypatch.setattr(threads, "usable_cores", lambda: cores)
    monkeypatch.setattr(threads, "_runnable_now", lambda: running)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(threads, "_SAMPLE_PAUSE", 0.0)
    environ = {"MPI_LOCALNRANKS": str(ranks)}
    threads.apply_thread_policy(environ)
    assert environ["OMP_NUM_THREADS"] == str(expected), environ
    assert (f"{ranks} ranks on the node" in environ["LOBATTO_THREADS_SET_BY"]) == (ranks > 1)


def test_the_test_processes_themselves_follow_a_thread_policy():
    """tests/conftest.py sets the variables in each pytest (xdist worker) process before NumPy
    and the kernels load: idle workers sleep, and each worker takes cores // workers threads
    unless the variables were set. Spinning default threads of two workers on the 2-core CI
    machine had made CI's Maxwell tests 15 times slower. OpenBLAS must have seen the setting,
    i.e. nothing loaded NumPy before the conftest ran (libgomp loads later, with the first
    kernel library)."""
    from lobatto.backends.blas import blas_threads

    assert os.environ.get("OMP_WAIT_POLICY") or os.environ.get("GOMP_SPINCOUNT")
    assert int(os.environ["OMP_NUM_THREADS"]) >= 1
    if blas_threads() is not None:
        assert blas_threads() == int(os.environ["OPENBLAS_NUM_THREADS"])
