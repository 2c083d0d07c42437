"""Transport selection pieces that run without a GPU (lobatto.comm.transport)."""

from __future__ import annotations

import importlib.util
import subprocess

import numpy as np
import pytest

from lobatto.comm import GatherScatter
from lobatto.comm.transport import EXCHANGE_NAMES, cuda_aware, cupy_status, local_status
from lobatto.errors import InputError

HAVE_CUPY = importlib.util.find_spec("cupy") is not None


def test_names():
    assert EXCHANGE_NAMES == ("auto", "nccl", "cuda-aware-mpi", "host")
    assert local_status("host") is None


def test_serial_reports_local():
    gs = GatherScatter(np.array([1, 2, 1], dtype=np.int64))
    assert gs.exchange == "local" and gs.setup_info()["exchange"] == "local"
    assert gs.setup_info()["device_direct"] is False
    assert gs.describe().startswith("gather-scatter: local")
    np.testing.assert_array_equal(gs.apply(np.array([1.0, 2.0, 3.0])), [4.0, 2.0, 4.0])


@pytest.mark.parametrize("exchange", ["nccl", "cuda-aware-mpi"])
def test_device_transport_with_numpy_xp(exchange):
    with pytest.raises(InputError, match=exchange):
        GatherScatter(np.array([1, 2], dtype=np.int64), exchange=exchange, xp=np)


@pytest.mark.skipif(HAVE_CUPY, reason="checks the message without CuPy")
@pytest.mark.parametrize("exchange", ["nccl", "cuda-aware-mpi"])
def test_device_transport_without_cupy(exchange):
    assert cupy_status() is not None and local_status(exchange) is not None
    with pytest.raises(InputError, match="CuPy"):
        GatherScatter(np.array([1, 2], dtype=np.int64), exchange=exchange)


def test_unknown_exchange():
    with pytest.raises(InputError, match="unknown exchange 'mpi'"):
        GatherScatter(np.array([1, 2], dtype=np.int64), exchange="mpi")


@pytest.fixture
def fresh_detection(monkeypatch):
    cuda_aware._CACHE.clear()
    monkeypatch.delenv("LOBATTO_CUDA_AWARE_MPI", raising=False)
    yield monkeypatch
    cuda_aware._CACHE.clear()


@pytest.mark.parametrize("value", ["0", "1"])
def test_cuda_aware_env_override(fresh_detection, value):
    fresh_detection.setenv("LOBATTO_CUDA_AWARE_MPI", value)
    ok, how = cuda_aware.mpi_cuda_support()
    assert ok is (value == "1") and "LOBATTO_CUDA_AWARE_MPI" in how


def test_cuda_aware_detection_runs(fresh_detection):
    pytest.importorskip("mpi4py")
    ok, how = cuda_aware.mpi_cuda_support()
    assert isinstance(ok, bool) and how


@pytest.mark.parametrize(("line", "want"), [
    ("mca:mpi:base:param:mpi_built_with_cuda_support:value:true", True),
    ("mca:mpi:base:param:mpi_built_with_cuda_support:value:false", False),
])
def test_ompi_info_parse(monkeypatch, line, want):
    monkeypatch.setattr(cuda_aware.shutil, "which", lambda name: "/usr/bin/ompi_info")
    monkeypatch.setattr(cuda_aware.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=f"x:y\n{line}\n", stderr=""))
    ok, how = cuda_aware._ompi_info()
    assert ok is want and "ompi_info" in how


def test_ompi_info_missing(monkeypatch):
    monkeypatch.setattr(cuda_aware.shutil, "which", lambda name: None)
    assert cuda_aware._ompi_info() is None
