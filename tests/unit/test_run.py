"""`lobatto run` end to end: outputs agree with the state and summary; bad runs stop cleanly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SRC = Path(__file__).resolve().parent.parent.parent / "src"

SMALL_CAVITY = """
[mesh]
elements = [2, 2, 1]
[mesh.deform]
x = "0.05*sin(pi*x)*sin(pi*y)*sin(pi*z)"
[discretization]
order = 5
[initial]
Ez = "sin(pi*x)*sin(pi*y)"
[exact]
Ez = "sin(pi*x)*sin(pi*y)*cos(sqrt(2)*pi*t)"
Hx = "-sin(pi*x)*cos(pi*y)*sin(sqrt(2)*pi*t)/sqrt(2)"
Hy = "cos(pi*x)*sin(pi*y)*sin(sqrt(2)*pi*t)/sqrt(2)"
[time]
t_end = 0.3
[output]
every = 5
formats = ["hdf5", "nek"]
"""


def lobatto(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, "-m", "lobatto", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def test_outputs_round_trip_and_match_summary(tmp_path):
    from lobatto.api import load_case
    from lobatto.runner.simulation import run_case
    from lobatto.io.hdf5 import read_snapshot
    from lobatto.io.nek5000 import read_field_file

    case_file = tmp_path / "small.toml"
    case_file.write_text(SMALL_CAVITY)
    case = load_case(case_file)
    summary = run_case(case, "cpu", tmp_path / "out", comm=None)
    assert summary == json.loads(json.dumps(summary))  # plain JSON data
    on_disk = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert on_disk["steps"] == summary["steps"] and on_disk["errors"] == summary["errors"]
    assert [o["step"] for o in summary["outputs"]][-1] == summary["steps"]
    assert all(o["step"] % 5 == 0 for o in summary["outputs"][:-1])

    final = summary["outputs"][-1]["files"]
    h5 = read_snapshot(tmp_path / "out" / final[0])
    nek = read_field_file(tmp_path / "out" / final[1], velocity=("Ex", "Ey", "Ez"), scalars=("Hx", "Hy", "Hz"))
    assert h5["attrs"]["step"] == summary["steps"]
    assert "[discretization]" in h5["attrs"]["config"]
    for name in ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz"):
        assert np.array_equal(h5["fields"][name], nek["fields"][name])
    assert np.array_equal(h5["coords"], nek["coords"])

    # The errors in the summary are those of the written fields against the exact solution.
    from lobatto.runner.build import build_system
    from lobatto.backends import get_backend

    system = build_system(case, get_backend("cpu"))
    written = np.stack([h5["fields"][n] for n in system.field_names])
    squares, maxima = system.error_sums(written, system.evaluate_fields(case.exact.fields, summary["t_final"]))
    assert np.isclose(np.sqrt(squares.sum()), summary["errors"]["all"]["l2"], rtol=1e-12)
    assert summary["errors"]["all"]["l2"] < 1e-3
    index = (tmp_path / "out" / "small.nek5000").read_text()
    assert f"numtimesteps: {len(summary['outputs'])}" in index


def test_inverted_element_exits_2_naming_it(tmp_path):
    case = SMALL_CAVITY.replace('x = "0.05*sin(pi*x)*sin(pi*y)*sin(pi*z)"', 'x = "0.6*sin(pi*x)*sin(pi*y)*sin(pi*z)"')
    (tmp_path / "bad.toml").write_text(case)
    result = lobatto("run", str(tmp_path / "bad.toml"), "--output", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert "element" in result.stderr and "Jacobian" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_time_step_far_over_cfl_stops_with_step_time_and_hint(tmp_path):
    # over the stability bound, with the up-front check off: the run itself must stop
    case = SMALL_CAVITY.replace("t_end = 0.3", "t_end = 100.0\ndt = 0.5\ncfl_check = false")
    (tmp_path / "nan.toml").write_text(case)
    result = lobatto("run", str(tmp_path / "nan.toml"), "--output", str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("lobatto: error")]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "step" in errors[0] and "time" in errors[0] and "dt" in errors[0], errors[0]
    assert not (tmp_path / "out" / "summary.json").exists()


def test_cuda_backend_without_gpu_is_a_clear_error(tmp_path):
    from lobatto.backends import cuda_available

    if cuda_available()[0]:
        pytest.skip("a GPU is present")
    (tmp_path / "c.toml").write_text(SMALL_CAVITY)
    result = lobatto("run", str(tmp_path / "c.toml"), "--backend", "cuda", "--output", str(tmp_path / "out"))
    assert result.returncode == 2 and "cuda" in result.stderr.lower() and "Traceback" not in result.stderr
