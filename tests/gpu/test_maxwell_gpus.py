"""`lobatto run --backend cuda` on 1 and 2 GPUs gives the serial CPU fields.

One GPU runs whole steps with the face exchange folded into the stage kernel; two GPUs run
stage by stage with the gather-scatter between ranks (NCCL or host-staged), the interior
elements updated while the exchange is in flight.  Skipped without CuPy and a GPU; the
2-rank cases need 2 GPUs (one per rank).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mpi"))
from maxwell_cases import WIDE, max_relative_difference, run_case
from mpirun import SKIP_REASON

from lobatto.backends import cuda_available

OK, WHY = cuda_available()
NGPU = 0
if OK:
    import cupy

    NGPU = cupy.cuda.runtime.getDeviceCount()

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}"),
    pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or ""),
]
TIMEOUT_S = 300


@pytest.fixture(scope="module")
def cpu_serial(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("cpu"), WIDE, 1, ["--backend", "cpu"])


@pytest.fixture(scope="module")
def one_gpu(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("gpu1"), WIDE, 1, ["--backend", "cuda"], timeout=TIMEOUT_S)


def test_one_gpu_matches_cpu(one_gpu, cpu_serial):
    summary, ids, fields = one_gpu
    assert summary["backend"] == "cuda" and summary["step_path"] == "whole-step"
    assert np.array_equal(ids, cpu_serial[1])
    # different kernels (C vs CUDA) round differently; 1e-13 of the field scale still holds
    assert max_relative_difference(fields, cpu_serial[2]) <= 1e-13


@pytest.mark.skipif(NGPU < 2, reason="needs 2 GPUs (one per rank)")
@pytest.mark.parametrize("exchange", ["nccl", "host"])
def test_two_gpus_match_one(one_gpu, cpu_serial, exchange, tmp_path):
    text = WIDE + f'[parallel]\nexchange = "{exchange}"\nmethod = "pairwise"\n'
    summary, ids, fields = run_case(tmp_path / "overlap", text, 2, ["--backend", "cuda"], timeout=TIMEOUT_S)
    assert summary["ranks"] == 2 and summary["backend"] == "cuda" and summary["step_path"] == "stages"
    assert summary["exchange"] == exchange
    assert 0 < summary["overlap"]["interior_elements"] < 32
    assert np.array_equal(ids, one_gpu[1])
    assert max_relative_difference(fields, one_gpu[2]) <= 1e-13
    assert max_relative_difference(fields, cpu_serial[2]) <= 1e-13
    _, _, plain = run_case(tmp_path / "plain", text + "overlap = false\n", 2, ["--backend", "cuda"], timeout=TIMEOUT_S)
    assert np.array_equal(plain, fields)
