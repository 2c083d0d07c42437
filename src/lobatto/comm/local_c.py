"""Compiled local gather-scatter kernels for NumPy arrays (``kernels/gs_local.c``).

``gs_kernels(precision)`` gives them, or None without a C compiler (the NumPy kernels of
``local.py`` are used then):

    combine(u2, perm, starts, op)        in place: u2[:, perm-group] = op over the group
    gather(u2, perm, starts, op) -> (vn, len(starts)) compact values (take + reduceat)
    scatter(values, u2, dest, src)       u2[:, dest] = values[:, src]

u2 is (vn, n) C-contiguous of ``precision``; index arrays are int64 (np.intp on 64-bit).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from lobatto.jit import c as cbuild
from lobatto.jit.c import pointer as _ptr

SOURCE = Path(__file__).resolve().parent / "kernels" / "gs_local.c"
_VP, _I64, _INT = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
_OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3}


def gs_kernels(precision: str = "float64") -> dict | None:
    lib = cbuild.load(SOURCE)
    if lib is None:
        return None
    sfx = {"float64": "f64", "float32": "f32"}[precision]
    dtype = np.dtype(precision)
    c_combine = getattr(lib, f"gs_combine_{sfx}")
    c_gather = getattr(lib, f"gs_gather_{sfx}")
    c_scatter = getattr(lib, f"gs_scatter_{sfx}")
    c_combine.argtypes = [_VP, _I64, _I64, _VP, _VP, _I64, _I64, _INT]
    c_gather.argtypes = [_VP, _I64, _I64, _VP, _VP, _I64, _I64, _INT, _VP]
    c_scatter.argtypes = [_VP, _I64, _VP, _I64, _I64, _VP, _VP, _I64]
    for f in (c_combine, c_gather, c_scatter):
        f.restype = None

    def _idx(a):
        if a.dtype != np.int64 or not a.flags.c_contiguous:
            raise TypeError("gs kernels: index arrays must be C-contiguous int64")
        return _ptr(a)

    def _u(u2):
        if u2.ndim != 2 or u2.dtype != dtype or not u2.flags.c_contiguous:
            raise TypeError(f"gs kernels: u must be a C-contiguous 2-D {dtype} array")
        return _ptr(u2)

    def combine(u2, perm, starts, op="sum"):
        if len(starts):
            c_combine(_u(u2), u2.shape[0], u2.shape[1], _idx(perm), _idx(starts), len(starts), len(perm), _OPS[op])
        return u2

    def gather(u2, perm, starts, op="sum"):
        out = np.empty((u2.shape[0], len(starts)), dtype=dtype)
        if len(starts):
            c_gather(_u(u2), u2.shape[0], u2.shape[1], _idx(perm), _idx(starts), len(starts), len(perm), _OPS[op],
                     _ptr(out))
        return out

    def scatter(values, u2, dest, src):
        values = np.ascontiguousarray(values, dtype=dtype)
        if len(dest):
            c_scatter(_ptr(values), values.shape[1], _u(u2), u2.shape[0], u2.shape[1], _idx(dest), _idx(src),
                      len(dest))

    return {"combine": combine, "gather": gather, "scatter": scatter}
