"""`lobatto run --backend cuda` on 1 and 2 GPUs gives the serial CPU fields.

lsrk45 runs whole steps with the face exchange folded into the stage kernel: on two GPUs the
shared face points' traces travel as ghosts (NCCL or host-staged) while the interior
elements are updated.  rk4 runs stage by stage with the gather-scatter between ranks, also
overlapped.  Skipped without CuPy and a GPU; the 2-rank cases need 2 GPUs (one per rank).
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
    summary, ids, fields = run_case(tmp_path / "overlap", text + "overlap = true\n", 2, ["--backend", "cuda"],
                                    timeout=TIMEOUT_S)
    assert summary["ranks"] == 2 and summary["backend"] == "cuda" and summary["step_path"] == "whole-step"
    assert summary["exchange"] == exchange and summary["overlap"]["enabled"] is True
    # an overlapped multi-rank step needs NCCL's stream priority, which a graph does not keep;
    # host-staged exchange synchronises with the host, which a graph cannot hold
    assert summary["cuda_graph"] is False
    if exchange == "nccl":
        assert "high-priority" in summary["cuda_graph_note"]
    assert 0 < summary["overlap"]["interior_elements"] < 32
    assert np.array_equal(ids, one_gpu[1])
    assert max_relative_difference(fields, one_gpu[2]) <= 1e-13
    assert max_relative_difference(fields, cpu_serial[2]) <= 1e-13
    # without overlap: the same arithmetic in another order of launches, so the same bits
    plain_summary, _, plain = run_case(tmp_path / "plain", text + "overlap = false\n", 2, ["--backend", "cuda"],
                                       timeout=TIMEOUT_S)
    assert plain_summary["overlap"]["enabled"] is False
    assert plain_summary["cuda_graph"] is (exchange == "nccl")
    assert np.array_equal(plain, fields)
    # "auto" (the default) times both ways on trial steps, restores the state and keeps the faster
    auto_summary, _, auto = run_case(tmp_path / "auto", text, 2, ["--backend", "cuda"], timeout=TIMEOUT_S)
    trial = auto_summary["overlap"]["auto_trial"]
    assert auto_summary["overlap"]["setting"] == "auto" and trial["seconds_per_step_with"] > 0
    assert auto_summary["overlap"]["enabled"] == (trial["seconds_per_step_with"] < trial["seconds_per_step_without"])
    assert auto_summary["steps"] == summary["steps"]
    assert np.array_equal(auto, fields)


@pytest.mark.skipif(NGPU < 2, reason="needs 2 GPUs (one per rank)")
def test_two_gpus_stage_path_matches_one(tmp_path):
    text = WIDE.replace("t_end = 0.15", 't_end = 0.15\nintegrator = "rk4"')
    one = run_case(tmp_path / "one", text, 1, ["--backend", "cuda"], timeout=TIMEOUT_S)
    two = run_case(tmp_path / "two", text, 2, ["--backend", "cuda"], timeout=TIMEOUT_S)
    assert one[0]["step_path"] == two[0]["step_path"] == "stages"
    assert 0 < two[0]["overlap"]["interior_elements"] < 32
    assert np.array_equal(one[1], two[1])
    assert max_relative_difference(two[2], one[2]) <= 1e-13
