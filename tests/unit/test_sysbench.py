"""lobatto sysbench: the JSON of a CPU-only run, the STREAM kernels against NumPy, --compare
(flags a degraded result, exit 1; exit 0 within tolerance; exit 2 for a bad baseline), sizes,
the table and the plots. No timing is asserted."""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lobatto.bench import sysbench, sysbench_cpu
from lobatto.bench.sysbench_compare import compare, flatten_metrics, not_compared
from lobatto.bench.sysbench_table import format_table

SRC = Path(__file__).resolve().parents[2] / "src"
SMALL = ["--quick", "--cpu-stream-bytes", "64K", "--threads", "1", "2", "--repeats", "1", "--no-png"]


def lobatto(*args, cwd=None):
    # no GPU visible: the GPU sections skip on a GPU machine as on CI, so the expected JSON holds
    env = dict(os.environ, PYTHONPATH=str(SRC), OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    env.pop("LOBATTO_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "lobatto", *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("sysbench") / "cpu.json"
    result = lobatto("sysbench", *SMALL, "--json", path)
    assert result.returncode == 0, result.stderr
    return path, json.loads(path.read_text()), result.stdout


def test_cpu_run_schema(cpu_run):
    path, doc, stdout = cpu_run
    assert doc["benchmark"] == "sysbench" and doc["version"] == 1 and doc["ranks"] == 1
    for key in ("date", "commit", "hostname", "command", "device"):
        assert key in doc
    assert doc["device"] is None and doc["command"].startswith("lobatto sysbench --quick")
    assert list(doc["results"]) == list(sysbench.SECTIONS)
    for name in ("gpu_stream", "gemm", "host_device", "gpu_gpu", "mpi_pingpong", "mpi_allreduce"):
        assert isinstance(doc["results"][name]["skipped"], str) and doc["results"][name]["skipped"]
    cpu = doc["results"]["cpu_stream"]
    assert cpu["array_bytes"] == 65536
    assert [r["threads"] for r in cpu["rows"]] == ([1, 2] if cpu["implementation"] == "C/OpenMP" else [1])
    for row in cpu["rows"]:
        for kernel in ("copy", "scale", "add", "triad"):
            assert math.isfinite(row[kernel]) and row[kernel] > 0
    assert "cpu_stream" in stdout and "skipped" in stdout  # the table is printed last
    assert stdout.rstrip().splitlines()[-1].lstrip().startswith("2 threads") or cpu["implementation"] != "C/OpenMP"


def test_stream_kernels_match_numpy():
    rng = np.random.default_rng(7)
    k = sysbench_cpu.StreamKernels()
    for threads in (1, 2):
        k.set_threads(threads)
        a, b, c = (rng.standard_normal(100_003) for _ in range(3))
        a0, b0, c0 = a.copy(), b.copy(), c.copy()
        k.triad(a, b, c, 2.5)
        np.testing.assert_allclose(a, b0 + 2.5 * c0, rtol=1e-14, atol=1e-15)  # fused multiply-add
        k.add(a0, b0, c)
        np.testing.assert_array_equal(c, a0 + b0)
        k.scale(b, c0, -1.5)
        np.testing.assert_array_equal(b, -1.5 * c0)
        k.copy(a0, c)
        np.testing.assert_array_equal(c, a0)
    assert k.implementation in ("C/OpenMP", "C (no OpenMP)", "numpy")


def test_wrong_kernel_is_caught(monkeypatch):
    def wrong_triad(self, a, b, c, q=sysbench_cpu.SCALAR):
        a[:-1] = b[:-1] + q * c[:-1]  # misses the last element
    monkeypatch.setattr(sysbench_cpu.StreamKernels, "triad", wrong_triad)
    with pytest.raises(RuntimeError, match="STREAM kernel is wrong"):
        sysbench_cpu.run(8 * 1000, repeats=1, threads=[1])


def test_thread_counts_and_sizes():
    assert sysbench_cpu.thread_counts(1) == [1]
    assert sysbench_cpu.thread_counts(6) == [1, 2, 4, 6]
    assert sysbench_cpu.thread_counts(8) == [1, 2, 4, 8]
    assert sysbench.byte_count("64M") == 2**26 and sysbench.byte_count("1GiB") == 2**30
    assert sysbench.byte_count("4k") == 4096 and sysbench.byte_count("1e6") == 10**6
    for bad in ("0", "abc", "1.5", "-4K"):
        with pytest.raises(Exception, match="size|bytes"):
            sysbench.byte_count(bad)


def synthetic(rng) -> dict:
    """A result with every section, random values."""
    def r():
        return float(rng.uniform(1e9, 1e11))

    sizes = [0, 8, 1024, 2**20]
    return {
        "benchmark": "sysbench", "version": 1, "hostname": "h", "date": "2026-01-01", "ranks": 3, "device": None,
        "results": {
            "gpu_stream": {"array_bytes": 2**30, **{k: {"bytes_per_second": r()} for k in ("copy", "scale", "add", "triad")}},
            "gemm": {"float64": {"n": 8192, "flops_per_second": r()}, "float32": {"n": 8192, "flops_per_second": r()}},
            "host_device": {"rows": [{"direction": d, "memory": m, "bytes": s, "seconds": s / 1e9, "bytes_per_second": r()}
                                     for d in ("h2d", "d2h") for m in ("pageable", "pinned") for s in (1024, 4096)]},
            "gpu_gpu": {"rows": [{"transport": t, "bytes": s, "chunk_bytes": c, "seconds": 1e-5, "bytes_per_second": r()}
                                 for t, c in (("nccl", None), ("host_staged", None), ("host_staged", 65536))
                                 for s in (8, 2**26)]},
            "mpi_pingpong": {"rows": [{"bytes": s, "seconds_one_way": rng.uniform(1e-6, 1e-3),
                                       "bytes_per_second": s / 1e-4} for s in sizes]},
            "mpi_allreduce": {"ranks": 3, "rows": [{"bytes": s, "seconds": rng.uniform(1e-6, 1e-3)} for s in (8, 32)]},
            "cpu_stream": {"rows": [{"threads": t, **{k: r() for k in ("copy", "scale", "add", "triad")}} for t in (1, 2)]},
        },
    }


def test_compare_flags_degraded_metrics():
    rng = np.random.default_rng(1)
    base = synthetic(rng)
    metrics = flatten_metrics(base)
    assert metrics["mpi_pingpong.8B.seconds_one_way"][1] is False
    assert metrics["gpu_gpu.host_staged.67108864B.chunk_65536B.bytes_per_second"][1] is True
    assert len(metrics) == 4 + 2 + 8 + 6 + 4 + 2 + 8
    assert compare(base, base, 0.8) == []
    worse = copy.deepcopy(base)
    worse["results"]["host_device"]["rows"][3]["bytes_per_second"] *= 0.5
    worse["results"]["mpi_pingpong"]["rows"][1]["seconds_one_way"] *= 3
    worse["results"]["cpu_stream"]["rows"][0]["add"] *= 0.9  # within tolerance
    flagged = compare(worse, base, 0.8)
    assert [f["metric"] for f in flagged] == ["host_device.h2d.pinned.4096B.bytes_per_second",
                                              "mpi_pingpong.8B.seconds_one_way"]
    assert flagged[0]["ratio"] == pytest.approx(0.5) and flagged[1]["ratio"] == pytest.approx(1 / 3)
    assert compare(worse, base, 0.4) == [flagged[1]]
    assert compare(base, worse, 0.8) == []  # better than the baseline is no regression
    worse["results"]["gemm"] = {"skipped": "no GPU"}
    missing = not_compared(worse, base)
    assert missing == {"only_in_result": [], "only_in_baseline": ["gemm.float32.flops_per_second",
                                                                  "gemm.float64.flops_per_second"]}


def test_compare_through_the_cli(cpu_run, tmp_path):
    path, doc, _ = cpu_run
    faster = copy.deepcopy(doc)
    for row in faster["results"]["cpu_stream"]["rows"]:  # a baseline far slower than any run here ...
        for kernel in ("copy", "scale", "add", "triad"):
            row[kernel] *= 1e-4
    faster["results"]["cpu_stream"]["rows"][0]["triad"] *= 1e8  # ... but for one metric, far faster
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(faster))
    out = tmp_path / "now.json"
    result = lobatto("sysbench", *SMALL, "--json", out, "--compare", baseline)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "REGRESSION cpu_stream.threads_1.triad.bytes_per_second" in result.stdout
    entry = json.loads(out.read_text())["compare"]
    assert [f["metric"] for f in entry["regressions"]] == ["cpu_stream.threads_1.triad.bytes_per_second"]
    # a baseline far slower: nothing below tolerance (a run against its own numbers is
    # test_compare_flags_degraded_metrics: rates of 64 KiB arrays on a shared 2-core machine
    # vary by 1000x when a thread waits for a core)
    for row in faster["results"]["cpu_stream"]["rows"]:
        for kernel in ("copy", "scale", "add", "triad"):
            row[kernel] = 1.0
    baseline.write_text(json.dumps(faster))
    result = lobatto("sysbench", *SMALL, "--json", out, "--compare", baseline)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 below tolerance" in result.stdout


@pytest.mark.parametrize("content, expected", [
    (None, "baseline file not found"),
    ("{not json", "not valid JSON"),
    ('{"benchmark": "maxwell", "results": {}}', "not a lobatto sysbench result"),
    ("[1, 2]", "not a lobatto sysbench result"),
])
def test_bad_baseline_is_one_line_exit_2(tmp_path, content, expected):
    baseline = tmp_path / "base.json"
    if content is not None:
        baseline.write_text(content)
    result = lobatto("sysbench", *SMALL, "--json", tmp_path / "x.json", "--compare", baseline)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lobatto: error: ") and str(baseline) in lines[0], result.stderr
    assert expected in lines[0]
    assert not (tmp_path / "x.json").exists()  # refused before measuring


@pytest.mark.parametrize("flags, expected", [(["--repeats", "0"], "--repeats"), (["--tolerance", "1.5"], "--tolerance")])
def test_bad_flags_exit_2(tmp_path, flags, expected):
    result = lobatto("sysbench", "--only", "cpu_stream", *flags, "--json", tmp_path / "x.json")
    assert result.returncode == 2 and expected in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_table_and_plots(tmp_path, monkeypatch):
    doc = synthetic(np.random.default_rng(3))
    doc["results"]["gemm"] = {"skipped": "no GPU here"}
    table = format_table(doc)
    for name in sysbench.SECTIONS:
        assert name in table
    assert "no GPU here" in table and "best chunk 64 KiB" in table
    from lobatto.bench.sysbench_plot import plot_all

    pytest.importorskip("matplotlib")
    written = plot_all(doc, tmp_path, "s")
    assert sorted(p.name for p in written) == ["s_cpu_stream.png", "s_gpu_gpu.png", "s_host_device.png",
                                               "s_mpi_pingpong.png"]
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert "matplotlib is not installed" in plot_all(doc, tmp_path, "t")
