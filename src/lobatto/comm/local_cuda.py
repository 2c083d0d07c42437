"""Local (on-rank) gather-scatter kernels for CuPy arrays: the GPU twin of ``local.py``.

Same names and meanings as :mod:`lobatto.comm.local` (``xp``, ``asindex``, ``take``,
``gather``, ``scatter``, ``compiled_combine``), implemented as CUDA kernels (``comm/kernels/
gather_scatter.cu``) on CuPy's current stream. Nothing here copies to or from the host or
synchronises, so a gather-scatter on device arrays can be recorded into a CUDA graph.

Index arrays are stored as int32 when their values fit (int64 otherwise): fewer bytes per
exchange. ``take`` and ``gather`` return buffers that are kept and reused for the same
(input, index, shape, dtype), so after a first call no device memory is allocated: the
result of one call stays valid until the next call with the same input and index (the
gather-scatter consumes each before the next, also with several in flight on different
arrays). Dtypes: float64, float32, int64, int32, uint64, uint32; other dtypes and arrays
whose last axis is not contiguous take a CuPy fallback path (which allocates).
"""

from __future__ import annotations

import contextlib
import math
from collections import OrderedDict
from pathlib import Path

import cupy
import numpy as np

from lobatto.jit.nvrtc import CTYPES, get_module

xp = cupy
SOURCE = Path(__file__).resolve().parent / "kernels" / "gather_scatter.cu"

_OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3}
_INDEX_TYPES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}
_THREADS = 256
_CACHE_SIZE = 64

_buffers: OrderedDict = OrderedDict()
_recorders: list[list] = []
_functions: dict = {}


@contextlib.contextmanager
def recording(keep: list):
    """While active, every buffer handed out is also appended to ``keep`` (graph capture)."""
    _recorders.append(keep)
    try:
        yield keep
    finally:
        _recorders.remove(keep)


def _buffer(key, shape, dtype):
    buf = _buffers.get(key)
    if buf is None or buf.shape != shape or buf.dtype != dtype:
        buf = cupy.empty(shape, dtype=dtype)
        _buffers[key] = buf
        while len(_buffers) > _CACHE_SIZE:
            _buffers.popitem(last=False)
    else:
        _buffers.move_to_end(key)
    for keep in _recorders:
        keep.append(buf)
    return buf


def clear_buffers() -> None:
    """Release the cached result buffers."""
    _buffers.clear()


def _kernel(name: str, dtype, *index_dtypes, op: int | None = None):
    t = CTYPES[np.dtype(dtype)]
    key = (name, np.dtype(dtype).str, tuple(np.dtype(i).str for i in index_dtypes), op, cupy.cuda.runtime.getDevice())
    fn = _functions.get(key)
    if fn is None:
        names = []
        for i in _INDEX_TYPES.values():
            names.append(f"lobatto::gs_take<{t}, {i}>")
            for o in range(4):
                names.append(f"lobatto::gs_gather<{t}, {i}, {o}>")
            for j in _INDEX_TYPES.values():
                names.append(f"lobatto::gs_scatter<{t}, {i}, {j}>")
                for o in range(4):
                    names.append(f"lobatto::gs_combine<{t}, {i}, {j}, {o}>")
        module = get_module(SOURCE, tuple(names))
        idx = [_INDEX_TYPES[np.dtype(i)] for i in index_dtypes]
        if name == "take":
            expr = f"lobatto::gs_take<{t}, {idx[0]}>"
        elif name == "gather":
            expr = f"lobatto::gs_gather<{t}, {idx[0]}, {op}>"
        elif name == "combine":
            expr = f"lobatto::gs_combine<{t}, {idx[0]}, {idx[1]}, {op}>"
        else:
            expr = f"lobatto::gs_scatter<{t}, {idx[0]}, {idx[1]}>"
        fn = _functions[key] = module.get_function(expr)
    return fn


def _grid(count: int) -> int:
    return max(1, min(math.ceil(count / _THREADS), _sm_count() * 32))


_SM: dict = {}


def _sm_count() -> int:
    dev = cupy.cuda.runtime.getDevice()
    n = _SM.get(dev)
    if n is None:
        n = _SM[dev] = int(cupy.cuda.runtime.getDeviceProperties(dev)["multiProcessorCount"])
    return n


def _fast(u) -> bool:
    """Kernel path: supported dtype, 2-D, unit column stride, non-negative row stride."""
    if u.ndim != 2 or np.dtype(u.dtype) not in CTYPES:
        return False
    item = u.dtype.itemsize
    s0, s1 = u.strides
    return (s1 == item or u.shape[1] <= 1) and s0 >= 0 and s0 % item == 0


def _row_stride(u) -> int:
    return u.strides[0] // u.dtype.itemsize if u.shape[0] > 1 else u.shape[1]


def _as_device_index(idx):
    if isinstance(idx, cupy.ndarray) and np.dtype(idx.dtype) in _INDEX_TYPES and idx.flags.c_contiguous:
        return idx
    return asindex(cupy.asnumpy(idx) if isinstance(idx, cupy.ndarray) else idx)


# The module's interface -------------------------------------------------------------------
def asindex(a):
    """An index array on the current device: int32 when its values fit, else int64."""
    if isinstance(a, cupy.ndarray):
        a = cupy.asnumpy(a)
    a = np.asarray(a)
    if a.size == 0 or (a.min() >= np.iinfo(np.int32).min and a.max() <= np.iinfo(np.int32).max):
        dtype = np.int32
    else:
        dtype = np.int64
    return cupy.asarray(np.ascontiguousarray(a, dtype=dtype))


def take(u, idx):
    """Columns ``idx`` of the 2-D array ``u``, as a contiguous (vn, len(idx)) array."""
    idx = _as_device_index(idx)
    m = int(idx.size)
    vn = int(u.shape[0])
    if not _fast(u):
        return cupy.take(u, idx, axis=1)
    out = _buffer(("take", u.data.ptr, u.shape, idx.data.ptr, m), (vn, m), u.dtype)
    if m and vn:
        fn = _kernel("take", u.dtype, idx.dtype)
        fn((_grid(m),), (_THREADS,), (u, np.int64(_row_stride(u)), idx, np.int64(m), np.int32(vn), out))
    return out


def gather(u_sorted, starts, op):
    """Combine each run of columns of ``u_sorted`` starting at ``starts`` with ``op``."""
    starts = _as_device_index(starts)
    groups = int(starts.size)
    vn, m = int(u_sorted.shape[0]), int(u_sorted.shape[1])
    if groups == m:  # every group has one column (also the empty case), as local.gather
        return u_sorted
    if not _fast(u_sorted):
        u_sorted = cupy.ascontiguousarray(u_sorted)
        if not _fast(u_sorted):
            raise NotImplementedError(f"gather-scatter on the GPU: dtype {u_sorted.dtype} is not supported")
    out = _buffer(("gather", u_sorted.data.ptr, u_sorted.shape, starts.data.ptr, groups), (vn, groups), u_sorted.dtype)
    if vn:
        fn = _kernel("gather", u_sorted.dtype, starts.dtype, op=_OPS[op])
        fn(
            (_grid(groups),),
            (_THREADS,),
            (u_sorted, np.int64(_row_stride(u_sorted)), np.int64(m), starts, np.int64(groups), np.int32(vn), out),
        )
    return out


def scatter(values, u, dest, src):
    """``u[:, dest] = values[:, src]`` in place (``u`` may be a view)."""
    dest = _as_device_index(dest)
    src = _as_device_index(src)
    count = int(dest.size)
    if count == 0:
        return
    vn = int(u.shape[0])
    if not (_fast(u) and _fast(values) and values.dtype == u.dtype):
        u[:, dest] = cupy.take(values, src, axis=1).astype(u.dtype, copy=False)
        return
    if vn:
        fn = _kernel("scatter", u.dtype, dest.dtype, src.dtype)
        fn(
            (_grid(count),),
            (_THREADS,),
            (values, np.int64(_row_stride(values)), u, np.int64(_row_stride(u)), dest, src, np.int64(count), np.int32(vn)),
        )


def compiled_combine(dtype):
    """In-place one-pass ``combine(u2, perm, starts, op)`` for CuPy arrays of ``dtype``, or None.

    The device twin of :func:`lobatto.comm.local.compiled_combine`: for a serial
    gather-scatter (every kept id local) it replaces take + gather + scatter, reading and
    writing each participating value once (one kernel, no buffers, capturable in a graph).
    ``u2`` must be a (vn, n) array with unit column stride.
    """
    if np.dtype(dtype) not in CTYPES:
        return None
    return combine


def combine(u2, perm, starts, op):
    """``u2[:, perm[q]] = op over its group`` for every group (in place)."""
    perm = _as_device_index(perm)
    starts = _as_device_index(starts)
    groups = int(starts.size)
    if groups == 0 or u2.shape[0] == 0:
        return u2
    if not _fast(u2):
        raise ValueError("combine: u2 must be a 2-D array with unit column stride")
    fn = _kernel("combine", u2.dtype, perm.dtype, starts.dtype, op=_OPS[op])
    fn(
        (_grid(groups),),
        (_THREADS,),
        (u2, np.int64(_row_stride(u2)), perm, starts, np.int64(groups), np.int64(perm.size), np.int32(u2.shape[0])),
    )
    return u2
