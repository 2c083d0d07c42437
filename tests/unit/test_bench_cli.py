"""`lobatto bench maxwell` runs on the CPU backend and writes a consistent JSON record."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent.parent / "src"


@pytest.mark.parametrize("extra", [[], ["--stages", "--curved"]])
def test_bench_maxwell_cpu(tmp_path, extra):
    out = tmp_path / "bench.json"
    cmd = [sys.executable, "-m", "lobatto", "bench", "maxwell", "--backend", "cpu", "--order", "3",
           "--elements", "2", "2", "2", "--copy-bytes", "0", "--repeats", "2", "--json", str(out), *extra]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(SRC)))
    assert result.returncode == 0, result.stderr
    record = json.loads(out.read_text())
    assert record["points"] == 8 * 4**3 and record["step_path"] == "stages"
    seconds = record["seconds_per_step"] if "seconds_per_step" in record else record["timing"]["seconds_per_step"]
    assert record["point_stage_updates_per_s"] == pytest.approx(record["points"] * 5 / seconds, rel=1e-9)
