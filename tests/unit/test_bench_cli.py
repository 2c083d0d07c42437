"""`lobatto bench maxwell` runs on the CPU backend and writes a consistent JSON record."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SRC = Path(__file__).resolve().parent.parent.parent / "src"


@pytest.mark.parametrize("elements, extra", [(["2", "2", "2"], []), (["2", "2", "2"], ["--stages", "--curved"]),
                                            (["3", "2"], ["--curved"])])
def test_bench_maxwell_cpu(tmp_path, elements, extra):
    """Three counts: a box of hexahedra; two: of quadrilaterals (no GFLOP/s: the work model is 3-D)."""
    out = tmp_path / "bench.json"
    cmd = [sys.executable, "-m", "lobatto", "bench", "maxwell", "--backend", "cpu", "--order", "3",
           "--elements", *elements, "--copy-bytes", "0", "--repeats", "2", "--json", str(out), *extra]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(SRC)))
    assert result.returncode == 0, result.stderr
    record = json.loads(out.read_text())
    dim = len(elements)
    assert record["points"] == int(np.prod([int(e) for e in elements])) * 4**dim
    assert record["step_path"] == "stages" and (record["gflops"] is None) == (dim == 2)
    assert ("GFLOP/s" in result.stdout) == (dim == 3)
    seconds = record["seconds_per_step"] if "seconds_per_step" in record else record["timing"]["seconds_per_step"]
    assert record["point_stage_updates_per_s"] == pytest.approx(record["points"] * 5 / seconds, rel=1e-9)


@pytest.mark.parametrize("size, fragment", [("1e6", "CuPy or a CUDA device is not available"),
                                            ("nan", "--bytes must be from 1 to 2**40, got nan")])
def test_bench_copy_refuses_cleanly(size, fragment):
    """Without CuPy (or with a bad size) `lobatto bench copy` is one line and exit 2, no traceback."""
    import importlib.util

    if size != "nan" and importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed: the copy would run")
    cmd = [sys.executable, "-m", "lobatto", "bench", "copy", "--bytes", size]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(SRC)))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("lobatto: error:") and fragment in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("elements", [["4", "3"], ["2", "2", "2"]])
def test_bench_poisson_cpu_in_2d_and_3d(tmp_path, elements):
    """Two counts pose the 2-D problem (-lap u = 2 pi^2 u on a curved square): it converges to
    the exact solution; a fourth count is one line and exit 2."""
    out = tmp_path / "poisson.json"
    cmd = [sys.executable, "-m", "lobatto", "bench", "poisson", "--backend", "cpu", "--order", "5", "--elements",
           *elements, "--repeats", "1", "--json", str(out)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(SRC)))
    assert result.returncode == 0, result.stderr
    record = json.loads(out.read_text())
    n = 6 ** len(elements)
    assert record["converged"] and record["points"] == n * int(elements[0]) * int(elements[1]) * (
        int(elements[2]) if len(elements) == 3 else 1)
    assert record["max_error"] < 1e-3
    bad = subprocess.run(cmd[:10] + ["1", "2", "3", "4"], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(SRC)))
    assert bad.returncode == 2 and "2 or 3 counts" in bad.stderr and "Traceback" not in bad.stderr
