"""One GPU's parts of ``lobatto sysbench``: device STREAM, DGEMM/SGEMM, host<->device bandwidth.

CuPy is imported inside the functions: without it (or without a GPU) ``select_device`` says
why, and the sections are reported as skipped with that reason.

- gpu_stream: McCalpin's copy, scale, add, triad as CuPy ElementwiseKernels, bytes counted as
  STREAM counts them (sysbench_cpu.STREAM_ARRAYS), each launch timed with CUDA events, best of
  the rounds after a warm-up round; every element is checked at the end.
- gemm: cupy.matmul (cuBLAS) of two random n x n matrices, 2 n^3 flops, CUDA events; two
  rows of the product are checked against NumPy.
- host_device: cudaMemcpy from and to pageable (NumPy) and pinned (cupy.cuda.alloc_pinned_memory)
  host memory, timed on the host clock (the call returns when the copy is done).
"""

from __future__ import annotations

import os
import time

import numpy as np

from lobatto.bench.sysbench_cpu import SCALAR, STREAM_ARRAYS, expected_values
from lobatto.bench.sysbench_mpi import batch_count


def select_device(comm) -> tuple[int | None, str | None]:
    """(device id, None), this rank's GPU made current, or (None, why there is none).

    As ``lobatto run`` does (docs/parallel.md): the node-local rank picks the GPU; with
    LOBATTO_SHARE_GPUS=1 ranks share them (rank mod count)."""
    from lobatto.backends import cuda_available
    from lobatto.machine.parallel import node_local_rank

    ok, why = cuda_available()
    if not ok:
        return None, why
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    device = node_local_rank(comm)
    if os.environ.get("LOBATTO_SHARE_GPUS") == "1":
        device %= count
    if device >= count:
        return None, f"node-local rank {device} has no GPU of its own ({count} on the node)"
    cupy.cuda.Device(device).use()
    return device, None


def device_info(device: int) -> dict:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(device)
    name = props["name"]
    return {
        "id": int(device),
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "memory_bytes": int(props["totalGlobalMem"]),
        "compute_capability": f"{props['major']}.{props['minor']}",
    }


def _event_seconds(call) -> float:
    import cupy

    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    call()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) / 1e3


def gpu_stream(array_bytes: int, repeats: int) -> dict:
    import cupy

    n = max(1, int(array_bytes) // 8)
    ek = cupy.ElementwiseKernel
    kernels = {
        "copy": ek("T a", "T c", "c = a", "lobatto_stream_copy"),
        "scale": ek("T c, T q", "T b", "b = q * c", "lobatto_stream_scale"),
        "add": ek("T a, T b", "T c", "c = a + b", "lobatto_stream_add"),
        "triad": ek("T b, T c, T q", "T a", "a = b + q * c", "lobatto_stream_triad"),
    }
    a, b, c = cupy.full(n, 1.0), cupy.full(n, 2.0), cupy.zeros(n)
    q = np.float64(SCALAR)
    calls = {
        "copy": lambda: kernels["copy"](a, c),
        "scale": lambda: kernels["scale"](c, q, b),
        "add": lambda: kernels["add"](a, b, c),
        "triad": lambda: kernels["triad"](b, c, q, a),
    }
    best = {name: float("inf") for name in calls}
    rounds = int(repeats) + 1
    for r in range(rounds):
        for name, call in calls.items():
            seconds = _event_seconds(call)
            if r > 0:
                best[name] = min(best[name], seconds)
    for name, got, want in zip("abc", (a, b, c), expected_values(rounds)):
        if not bool(cupy.all(got == want)):
            raise RuntimeError(f"gpu_stream: array {name} differs from {want!r} after {rounds} rounds")
    out = {"array_bytes": n * 8, "repeats": int(repeats)}
    for name in calls:
        out[name] = {"bytes_per_second": STREAM_ARRAYS[name] * 8.0 * n / best[name], "seconds": best[name]}
    return out


def gemm(n: int, repeats: int) -> dict:
    import cupy

    out = {"tf32": os.environ.get("CUPY_TF32", "0") == "1"}
    for dtype, rtol in ((np.float64, 1e-10), (np.float32, 1e-3)):
        a = cupy.random.random((n, n), dtype=dtype)
        b = cupy.random.random((n, n), dtype=dtype)
        c = cupy.matmul(a, b)  # warm-up: cuBLAS picks its kernel
        best = min(_event_seconds(lambda: cupy.matmul(a, b, out=c)) for _ in range(int(repeats)))
        rows = min(n, 2)
        want = a[:rows].get().astype(np.float64) @ b.get().astype(np.float64)
        if not np.allclose(c[:rows].get(), want, rtol=rtol, atol=rtol * n):
            raise RuntimeError(f"gemm: the {np.dtype(dtype).name} product differs from NumPy's")
        out[np.dtype(dtype).name] = {"n": int(n), "seconds": best, "flops_per_second": 2.0 * n**3 / best}
        del a, b, c
    return out


def transfer_sizes(max_bytes: int, smallest: int = 1024) -> list[int]:
    """1 KB, 4 KB, ... (x4) up to ``max_bytes``."""
    sizes, n = [], smallest
    while n <= max_bytes:
        sizes.append(n)
        n *= 4
    return sizes


def host_device(max_bytes: int, repeats: int) -> dict:
    import cupy

    rt = cupy.cuda.runtime
    sizes = transfer_sizes(max_bytes)
    if not sizes:
        return {"skipped": f"--max-bytes {max_bytes} is below the smallest size (1024)"}
    top = sizes[-1]
    device = cupy.empty(top, dtype=np.uint8)
    pageable = np.ones(top, dtype=np.uint8)  # written, so its pages exist before the copies
    pinned_memory = cupy.cuda.alloc_pinned_memory(top)
    pinned = np.frombuffer(pinned_memory, dtype=np.uint8, count=top)
    pinned[:] = 1
    hosts = {"pageable": pageable.ctypes.data, "pinned": pinned.ctypes.data}
    rows = []
    for memory, host in hosts.items():
        for direction in ("h2d", "d2h"):
            for size in sizes:
                if direction == "h2d":
                    args = (device.data.ptr, host, size, rt.memcpyHostToDevice)
                else:
                    args = (host, device.data.ptr, size, rt.memcpyDeviceToHost)
                iters = batch_count(size, budget=1 << 28, most=200)
                best = float("inf")
                for batch in range(int(repeats) + 1):
                    t0 = time.perf_counter()
                    for _ in range(iters):
                        rt.memcpy(*args)
                    if batch > 0:
                        best = min(best, (time.perf_counter() - t0) / iters)
                rows.append({"direction": direction, "memory": memory, "bytes": size, "seconds": best,
                             "bytes_per_second": size / best})
    return {"rows": rows}
