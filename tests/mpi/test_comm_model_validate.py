"""benchmarks/comm_model_validate.py end to end on 1 and 2 ranks (it launches its own mpiexec):
the model's compute part is the same job's single-rank step divided by the memory-bandwidth
share that a given sysbench cpu_stream table implies, and the rows carry the measured parts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpirun import SKIP_REASON

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("rate_from", ["job", "p1"])
def test_validation_rows(tmp_path, rate_from):
    sysbench = tmp_path / "sysbench.json"
    # 2 processes get 16/2 of 10 GB/s each: a share of 0.8
    sysbench.write_text(json.dumps({"results": {"cpu_stream": {"rows": [
        {"threads": 1, "triad": 10e9}, {"threads": 2, "triad": 16e9}]}}}))
    out = tmp_path / "v.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "comm_model_validate.py"), "--ranks", "1", "2",
                          "--order", "2", "--block", "2", "2", "2", "--repeats", "2", "--cores", "2",
                          "--rate-from", rate_from, "--sysbench", str(sysbench), "--json", str(out)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(out.read_text())
    one, two = data["rows"]
    assert one["ranks"] == 1 and abs(one["step_error"]) < 1e-12 and one["bandwidth_share"] == 1.0
    assert two["ranks"] == 2 and two["bandwidth_share"] == pytest.approx(0.8)
    base = two["measured_single_step_seconds"] if rate_from == "job" else one["measured_step_seconds"]
    assert two["predicted_compute_step_seconds"] == pytest.approx(base / 0.8, rel=1e-9)
    assert two["measured_alone_step_seconds"] > 0 and two["measured_exchange_seconds"] >= 0
    assert two["predicted_step_seconds"] > two["predicted_compute_step_seconds"]
    assert two["step_error"] == pytest.approx(two["predicted_step_seconds"] / two["measured_step_seconds"] - 1)
    assert data["cpu_stream"][1]["triad"] == 16e9
    assert "P=2 0.800" in res.stdout


def test_missing_stream_section_is_one_line(tmp_path):
    bad = tmp_path / "sysbench.json"
    bad.write_text(json.dumps({"results": {}}))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "comm_model_validate.py"), "--ranks", "1",
                          "--order", "2", "--block", "2", "2", "2", "--params", str(bad), "--sysbench", str(bad)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode != 0 and "no results.cpu_stream section" in res.stderr and "Traceback" not in res.stderr
