"""``lobatto bench roofline`` (bench/roofline.py): where each kernel sits under the measured
roofs (arithmetic on known numbers), the ceilings taken only from a sysbench JSON of the same
device, and a small real run on the CPU backend."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lobatto.bench.roofline import ceilings_from_sysbench, place
from lobatto.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))


def test_place_puts_kernels_under_the_roofs():
    ceilings = {"bytes_per_second": 2e12, "flops_per_second": 5e13}  # ridge at 25 flop/B
    rows = [{"kernel": "stage", "seconds": 1e-3, "bytes": 1e9, "flops": 4e9},
            {"kernel": "dense", "seconds": 1e-3, "bytes": 1e8, "flops": 4e10},
            {"kernel": "traces", "seconds": 2e-4, "bytes": 2e8, "flops": 0.0}]
    place(rows, ceilings)
    stage, dense, traces = rows
    assert stage["bytes_per_second"] == 1e12 and stage["percent_of_memory_roof"] == 50.0
    assert stage["intensity"] == 4.0 and stage["bound_by"] == "memory"
    assert stage["roof_flops_per_second"] == 8e12 and stage["percent_of_roof"] == pytest.approx(50.0)
    assert dense["intensity"] == 400.0 and dense["bound_by"] == "compute"
    assert dense["percent_of_roof"] == pytest.approx(100.0 * 4e13 / 5e13)
    assert traces["intensity"] is None and traces["flops_per_second"] is None
    assert traces["percent_of_memory_roof"] == pytest.approx(50.0)


def sysbench_json(tmp_path, name="NVIDIA H100 80GB HBM3"):
    data = {"benchmark": "sysbench", "device": {"name": name},
            "results": {"gpu_stream": {"copy": {"bytes_per_second": 3.0e12}, "triad": {"bytes_per_second": 3.1e12}},
                        "gemm": {"float64": {"n": 8192, "flops_per_second": 5.2e13},
                                 "float32": {"n": 8192, "flops_per_second": 5.0e13}}}}
    path = tmp_path / "sys.json"
    path.write_text(json.dumps(data))
    return path


def test_ceilings_from_sysbench_of_the_same_device(tmp_path):
    path = sysbench_json(tmp_path)
    c = ceilings_from_sysbench(path, "NVIDIA H100 80GB HBM3", "float64", "cuda")
    assert c["bytes_per_second"] == 3.1e12 and c["flops_per_second"] == 5.2e13
    with pytest.raises(InputError, match="same device"):
        ceilings_from_sysbench(path, "NVIDIA H200", "float64", "cuda")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(InputError, match="not a lobatto sysbench JSON"):
        ceilings_from_sysbench(broken, "x", "float64", "cuda")


def test_cpu_run_writes_every_kernel(tmp_path):
    out = tmp_path / "roof.json"
    result = subprocess.run([sys.executable, "-m", "lobatto", "bench", "roofline", "--backend", "cpu", "--orders", "2",
                             "--elements", "2", "2", "2", "--stream-bytes", "4e6", "--gemm-n", "256", "--calls", "2",
                             "--json", str(out)], capture_output=True, text=True, cwd=tmp_path, timeout=300, env=ENV)
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    kernels = {r["kernel"]: r for r in data["kernels"]}
    assert {"traces", "exchange", "whole step"} <= set(kernels) and ({"stage", "stage_a0"} <= set(kernels)
                                                                      or "rhs" in kernels)
    for r in data["kernels"]:
        assert r["seconds"] > 0 and r["bytes"] > 0 and r["order"] == 2
        if r["flops"]:
            assert r["intensity"] == pytest.approx(r["flops"] / r["bytes"])
            assert r["flops_per_second"] == pytest.approx(r["flops"] / r["seconds"])
    assert data["ceilings"]["bytes_per_second"] > 0 and data["ceilings"]["flops_per_second"] > 0
    assert "memory roof" in result.stdout


def test_bad_order_is_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "lobatto", "bench", "roofline", "--backend", "cpu", "--orders", "0"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120, env=ENV)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--orders" in result.stderr and len(result.stderr.strip().splitlines()) == 1
