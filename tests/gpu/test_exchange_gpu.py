"""GPU transports of the gather-scatter: tests/gpu/gs_gpu_check.py under mpiexec.

Skipped without CuPy or a GPU; the 2-rank runs need 2 GPUs (one per rank: NCCL refuses
two ranks on one device).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mpi"))
from mpirun import SKIP_REASON, describe, run

SCRIPT = Path(__file__).resolve().parent / "gs_gpu_check.py"
TIMEOUT_S = 300


def _gpus() -> tuple[int, str]:
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001
        return 0, f"CuPy is not importable ({exc})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001
        return 0, f"no usable GPU ({exc})"
    return n, "" if n else "no GPU"


NGPU, WHY = _gpus()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(NGPU < 1, reason=WHY or "no GPU"),
    pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or ""),
]


def _run(nprocs, extra=()):
    try:
        res = run(nprocs, [str(SCRIPT), *extra], timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"gs_gpu_check on {nprocs} ranks timed out after {TIMEOUT_S} s\n{exc.stdout or ''}\n{exc.stderr or ''}")
    assert res.returncode == 0, describe(res)
    assert f"gs_gpu_check P={nprocs}:" in res.stdout, describe(res)
    assert " 0 failures" in res.stdout, describe(res)
    return res


def test_one_rank():
    _run(1)


@pytest.mark.skipif(NGPU < 2, reason="needs 2 GPUs (one per rank)")
def test_two_ranks_nccl():
    res = _run(2, ["--require", "nccl"])
    assert "transport nccl: available" in res.stdout
