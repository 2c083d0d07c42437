"""Every committed benchmark script imports and answers --help.

The scripts run rarely (most on a lent GPU), so an API change under them can go unnoticed until
a device session; this catches import-time and argument-parsing breakage on the CPU machine."""

import importlib.util
import os
import re
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
    missing = re.search(r"No module named '([\w.]+)'", result.stderr)
    if (result.returncode != 0 and missing and not missing.group(1).startswith("lobatto")
            and importlib.util.find_spec(missing.group(1).split(".")[0]) is None):
        pytest.skip(f"{script.name} imports {missing.group(1)} at start, which is not installed here")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage:" in result.stdout
