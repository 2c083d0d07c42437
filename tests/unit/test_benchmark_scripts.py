"""Every committed benchmark script imports and answers --help.

The scripts run rarely (most on a lent GPU), so an API change under them can go unnoticed until
a device session; this catches import-time and argument-parsing breakage on the CPU machine."""

import importlib.util
import json
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


def test_two_d_speed_smoke(tmp_path):
    """benchmarks/two_d_speed.py at its smallest (N = 2, 3 x 2 quads, the CPU backend): a 2-D
    row and an extruded-twin row per system, the twin with N + 1 times the points, the DG runs
    equal after the same steps and the Poisson solutions within the solver's tolerance."""
    out = tmp_path / "two_d.json"
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "two_d_speed.py"), "--sizes", "2:3x2",
                             "--repeats", "1", "--json", str(out)], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1"))
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    systems = ("acoustics", "maxwell", "poisson")
    assert [(r["system"], r["dim"]) for r in rows] == [(s, d) for s in systems for d in (2, 3)]
    for two, three in zip(rows[::2], rows[1::2]):
        assert three["points"] == 3 * two["points"] == 3 * 6 * 9
        assert two["ns_per_unit"] > 0 and three["time_ratio_3d_over_2d"] > 0
        assert three["difference"] < (1e-12 if two["unit"] == "point-stage" else 1e-6), three
    assert all(r["finite"] for r in rows if "finite" in r)
    assert all(r["converged"] for r in rows if "converged" in r)
