"""Backends: where arrays live and kernels run. `get_backend` picks one by name."""

from __future__ import annotations

import os

from lobatto.backends.base import Backend
from lobatto.errors import InputError

BACKEND_NAMES = ("cpu", "cuda", "auto")


def cuda_available() -> tuple[bool, str]:
    """(True, '') when CuPy imports and sees a GPU, else (False, reason)."""
    try:
        import cupy  # noqa: F401  (probing only)

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # ImportError, CUDARuntimeError, missing driver ...
        return False, f"CuPy or a CUDA device is not available ({type(exc).__name__}: {exc})"
    if count < 1:
        return False, "no CUDA device found"
    return True, ""


def get_backend(name: str = "cpu", precision: str = "float64", device_id: int | None = None, rank: int = 0) -> Backend:
    """The backend called `name`; with CUDA, `device_id` picks the GPU (the node-local rank)."""
    if name not in BACKEND_NAMES:
        raise InputError(f"unknown backend '{name}' (expected one of {', '.join(BACKEND_NAMES)})")
    if name == "auto":
        name = "cuda" if cuda_available()[0] else "cpu"
    if name == "cuda":
        ok, why = cuda_available()
        if not ok:
            raise InputError(f"backend 'cuda' was requested but {why}; use the cpu backend ([backend] name = "
                             "\"cpu\", --backend cpu, or backend=\"cpu\" in Python)")
        if device_id is not None:
            import cupy

            count = cupy.cuda.runtime.getDeviceCount()
            if os.environ.get("LOBATTO_SHARE_GPUS") == "1":
                device_id %= count  # several ranks on one GPU: for tests of the multi-rank paths
            if device_id >= count:
                raise InputError(
                    f"rank {rank} needs GPU {device_id} of its node but the node has {count}: "
                    "start at most one rank per GPU"
                )
        from lobatto.backends.cuda.backend import CudaBackend

        return CudaBackend(precision=precision, device_id=device_id)
    from lobatto.backends.cpu import CpuBackend

    return CpuBackend(precision=precision)
