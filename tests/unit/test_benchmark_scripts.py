"""Every committed benchmark script imports and answers --help.

The scripts run rarely (most on a lent GPU), so an API change under them can go unnoticed until
a device session; this catches import-time and argument-parsing breakage on the CPU machine."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


def test_the_scripts_are_found():
    assert len(SCRIPTS) >= 20


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help(script):
    result = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1"))
    if (result.returncode != 0 and "No module named 'cupy'" in result.stderr
            and importlib.util.find_spec("cupy") is None):
        pytest.skip(f"{script.name} is a GPU tool that imports CuPy at start")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage:" in result.stdout
