"""Navier–Stokes on the CUDA backend gives the same bits on 1, 2 and 3 ranks, and across a
restart written on 2 ranks and continued on 3: the cases of tests/mpi/test_navier_stokes_ranks.py
(a Beltrami flow, a curved Taylor–Green box with variable dt, a channel at constant flow rate,
a duct with inflow, outflow and walls). The ordered gather-scatter and the exact reductions
run as CUDA kernels there (comm/ordered.py, comm/exact_sum.py). The ranks share the GPUs
there are (LOBATTO_SHARE_GPUS=1). Skipped without CuPy and a GPU, or without mpiexec."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "mpi"))
from mpirun import SKIP_REASON, describe, read_final, run  # noqa: E402

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}"),
    pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or ""),
]
SCRIPT = str(HERE.parent / "mpi" / "test_navier_stokes_ranks.py")
CASES = ("beltrami", "tgv", "channel", "duct")


def launch(nprocs: int, out: Path, mode: str = "run", argument: str | None = None) -> dict:
    os.environ["LOBATTO_TEST_BACKEND"] = "cuda"
    os.environ["LOBATTO_SHARE_GPUS"] = "1"
    try:
        result = run(nprocs, [SCRIPT, str(out), "rcb", mode, *([argument] if argument else [])], timeout=300)
    finally:
        del os.environ["LOBATTO_TEST_BACKEND"], os.environ["LOBATTO_SHARE_GPUS"]
    assert result.returncode == 0, describe(result)
    if mode == "cut":
        return {}
    found = {}
    for name in CASES:
        summary, ids, fields = read_final(out / name)
        rows = [json.loads(line) for line in (out / name / "steps.jsonl").read_text().splitlines()]
        found[name] = (summary, fields, [(r["step"], r["t"], r["dt"], r["pressure_iterations"],
                                          r["velocity_iterations"]) for r in rows])
    return found


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return launch(1, tmp_path_factory.mktemp("serial"))


@pytest.mark.parametrize("nprocs", [2, 3])
def test_cuda_ranks_give_the_serial_bits(serial, tmp_path, nprocs):
    parallel = launch(nprocs, tmp_path)
    for name in CASES:
        assert "cuda" in str(parallel[name][0]["backend"]).lower(), parallel[name][0]["backend"]
        assert parallel[name][2] == serial[name][2], name
        assert np.array_equal(parallel[name][1], serial[name][1]), (
            f"{name}: {nprocs} ranks differ by {np.abs(parallel[name][1] - serial[name][1]).max():.2e}")


def test_cuda_checkpoint_of_two_ranks_continued_on_three(serial, tmp_path):
    launch(2, tmp_path / "first", mode="cut", argument="3")
    resumed = launch(3, tmp_path / "second", mode="resume", argument=str(tmp_path / "first"))
    for name in CASES:
        assert resumed[name][2] == serial[name][2][3:], name
        assert np.array_equal(resumed[name][1], serial[name][1]), name


def test_cuda_exact_sums_and_contractions_do_not_depend_on_the_element_count():
    """The CUDA exact reduction gives the correctly rounded total of its per-element sums,
    the same for any split of the elements; the tensor contraction gives each element the
    same bits whatever the other elements (cuBLAS would not)."""
    import math

    import cupy

    from lobatto.comm.exact_sum import accumulate_rows, row_sums, totals
    from lobatto.discretization.tensor import along

    rng = np.random.default_rng()
    points, elements = 125, 700
    u = rng.standard_normal((3, elements, points)) * np.exp2(rng.integers(-30, 30, (3, elements, points)))
    v, w = rng.standard_normal((3, elements, points)), rng.random((elements, points)) + 0.1
    du, dv, dw = (cupy.asarray(a) for a in (u, v, w))
    whole = totals(None, [accumulate_rows(points, du, dv, dw)])[0]
    rows = cupy.asnumpy(row_sums(du * dv, points, dw))
    assert whole == math.fsum(rows)
    cut = int(rng.integers(1, elements))
    parts = [accumulate_rows(points, *(cupy.ascontiguousarray(a[:, s] if a.ndim == 3 else a[s]) for a in (du, dv, dw)))
             for s in (slice(0, cut), slice(cut, None))]
    assert totals(None, [parts[0] + parts[1]])[0] == whole
    assert whole == pytest.approx(float((u * v * w).sum()), rel=1e-12)
    d = rng.standard_normal((7, 5))
    field = cupy.asarray(rng.standard_normal((elements, 5, 5, 5)))
    for inner in (1, 5, 25):
        full = cupy.asnumpy(along(cupy, field, cupy.asarray(d), inner))
        part = cupy.asnumpy(along(cupy, field[:cut], cupy.asarray(d), inner))
        assert np.array_equal(full[: part.shape[0]], part)
        expected = np.matmul(d, cupy.asnumpy(field).reshape(-1, 5, inner))
        np.testing.assert_allclose(full, expected, rtol=1e-12, atol=1e-12)
