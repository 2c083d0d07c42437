"""Shared pytest setup: make ``lobatto`` importable from a plain checkout and
register the project's markers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

if importlib.util.find_spec("lobatto") is None:  # not installed: use the checkout
    sys.path.insert(0, str(SRC))
sys.path.insert(0, str(ROOT / "tests"))  # shared helpers: tests/analytic.py


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU and CuPy (skipped without one)")
    config.addinivalue_line("markers", "mpi: runs under mpiexec with several ranks (needs mpi4py and mpiexec)")
