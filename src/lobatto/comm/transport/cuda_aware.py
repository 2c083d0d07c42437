"""CUDA-aware MPI transport: CuPy device buffers handed straight to mpi4py.

mpi4py accepts any object with ``__cuda_array_interface__`` as a message buffer; an MPI
library built with CUDA support then reads and writes device memory itself.  MPI knows
nothing of CUDA streams, so ``post`` first waits for the current stream (the packing kernels
must have finished); after ``wait`` the receive buffer holds the data.

Used only when the MPI library says it supports CUDA (:func:`mpi_cuda_support`):

1. ``MPI.Query_cuda_support()`` where mpi4py provides it (mpi4py >= 4 built against an MPI
   that exports ``MPIX_Query_cuda_support``);
2. ``MPIX_Query_cuda_support`` looked up with ctypes in the MPI library mpi4py loaded;
3. for Open MPI, ``ompi_info --parsable --all``: ``mpi_built_with_cuda_support:value:true``.

Nothing detected means unsupported.  ``LOBATTO_CUDA_AWARE_MPI=1`` / ``=0`` overrides the
detection (for MPI libraries that support CUDA without saying so, or to switch it off).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

from lobatto.comm.transport.base import Transport

_CACHE: dict = {}


def _ompi_info() -> tuple[bool, str] | None:
    exe = shutil.which("ompi_info")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--parsable", "--all"], check=False, capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if "mpi_built_with_cuda_support:value:" in line:
            val = line.rsplit(":", 1)[-1].strip().lower()
            return val == "true", f"ompi_info: mpi_built_with_cuda_support = {val}"
    return None


def mpi_cuda_support() -> tuple[bool, str]:
    """(supported, how that was found out) for this rank's MPI library; cached."""
    if "v" in _CACHE:
        return _CACHE["v"]
    env = os.environ.get("LOBATTO_CUDA_AWARE_MPI", "").strip()
    if env in ("0", "1"):
        res = (env == "1", f"LOBATTO_CUDA_AWARE_MPI={env}")
    else:
        res = None
        from mpi4py import MPI

        query = getattr(MPI, "Query_cuda_support", None)
        if query is not None:
            try:
                res = (bool(query()), "MPI.Query_cuda_support()")
            except Exception:  # noqa: BLE001
                res = None
        if res is None:
            try:
                fn = ctypes.CDLL(MPI.__file__).MPIX_Query_cuda_support
                fn.restype = ctypes.c_int
                res = (bool(fn()), "MPIX_Query_cuda_support() via ctypes")
            except (OSError, AttributeError):
                res = None
        if res is None and "open mpi" in MPI.Get_library_version().lower():
            res = _ompi_info()
        if res is None:
            res = (False, "the MPI library reports nothing about CUDA support")
    _CACHE["v"] = res
    return res


class CudaAwareTransport(Transport):
    name = "cuda-aware-mpi"
    device_direct = True

    def post(self, ex, sendbuf, vn, op, concurrent=True):
        import cupy

        sendbuf = cupy.ascontiguousarray(sendbuf)
        recvbuf = cupy.empty_like(sendbuf)
        cupy.cuda.get_current_stream().synchronize()  # MPI reads sendbuf outside any stream
        return ex, ex.post(sendbuf, vn, op, recvbuf=recvbuf)

    def wait(self, request):
        ex, req = request
        return ex.wait(req)
