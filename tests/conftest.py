"""Shared pytest setup: make ``lobatto`` importable from a plain checkout and
register the project's markers."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path


def _thread_policy_for_the_test_processes():
    """The test process runs the kernels in-process (``import lobatto`` leaves the thread
    variables alone, docs/parallel.md "Threads"), so without this each pytest-xdist worker got
    libgomp's and OpenBLAS's defaults: as many threads as cores, spinning when idle. Two workers
    on a 2-core CI machine then had 4 spinning threads on 2 cores, and every parallel region
    waited for a time slice: test_maxwell_bloch.py and test_maxwell_pml.py under `-n 2 --dist
    loadfile` took 420 s, 31 s with this (measured back to back on the same busy machine).
    Here, before NumPy or a kernel library loads: idle workers sleep, and each worker takes its
    share of the cores (cores // workers, at least 1). Variables already set are kept (the
    user's choice); child processes inherit these values as a user's setting."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    threads = str(max(1, cores // max(workers, 1)))
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    os.environ.setdefault("OMP_NUM_THREADS", threads)
    for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
        os.environ.setdefault(name, os.environ["OMP_NUM_THREADS"])


_thread_policy_for_the_test_processes()

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

if importlib.util.find_spec("lobatto") is None:  # not installed: use the checkout
    sys.path.insert(0, str(SRC))
sys.path.insert(0, str(ROOT / "tests"))  # shared helpers: tests/analytic.py


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU and CuPy (skipped without one)")
    config.addinivalue_line("markers", "mpi: runs under mpiexec with several ranks (needs mpi4py and mpiexec)")
