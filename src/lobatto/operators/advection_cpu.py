"""The dealiased convective term's compiled C kernel for the CPU backend (kernels/advection.c).

Registered as the CPU backend's tuned ``advection_apply``, with the reference signature
``apply(contravariant, fields, interp, interp_derivative, interp_transpose, out)``: per element,
sum-factorised passes on the stack, where the NumPy reference makes 36 batched matrix products
per call of three fields (the sub-steps call it 4 substeps k times a step). One library per
(order, fine points, precision), built on first use; where it cannot be built, or N + 1 > 16
(the passes would not fit a thread's stack), the reference runs instead.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from lobatto.backends.base import REFERENCE_KERNELS, tuned_kernel
from lobatto.jit import c as cbuild
from lobatto.jit.c import pointer as _ptr

SOURCE = Path(__file__).resolve().parent / "kernels" / "advection.c"
_REAL = {"float64": "double", "float32": "float"}
#: the largest N + 1 compiled (the element's passes live on the thread's stack)
MAX_POINTS = 16


def compiled_apply(order: int, fine: int, precision: str):
    """The compiled ``apply`` of this order, fine grid and precision, or None."""
    n = int(order) + 1
    if n > MAX_POINTS:
        return None
    lib = cbuild.load(SOURCE, NQ=n, NM=int(fine), REAL=_REAL[precision])
    if lib is None:
        return None
    dtype = np.dtype(precision)
    c_apply = lib.advection_apply
    c_apply.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int64] * 2
    c_apply.restype = None
    m = int(fine)

    def apply(contravariant, fields, interp, interp_derivative, interp_transpose, out):
        k, e = fields.shape[0], fields.shape[1]
        shapes = ((contravariant, (3, e, m, m, m), "contravariant"), (fields, (k, e, n, n, n), "fields"),
                  (out, (k, e, n, n, n), "out"))
        for a, shape, name in shapes:
            if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != shape or not a.flags.c_contiguous:
                raise TypeError(f"advection_apply: {name} must be a C-contiguous {dtype} array of shape {shape}, got "
                                f"{type(a).__name__} {getattr(a, 'dtype', '?')} {getattr(a, 'shape', '?')}")
        if not out.flags.writeable or np.shares_memory(fields, out):
            raise TypeError("advection_apply: out must be writable and must not overlap fields")
        it = np.ascontiguousarray(np.asarray(interp, dtype=dtype).T)  # (n, m)
        idt = np.ascontiguousarray(np.asarray(interp_derivative, dtype=dtype).T)
        c_apply(_ptr(contravariant), _ptr(fields), _ptr(it), _ptr(idt), _ptr(out), e, k)
        return out

    return apply


@tuned_kernel("cpu", "advection_apply")
def make_apply(backend, order, fine):
    reference = REFERENCE_KERNELS["advection_apply"](backend, order=order, fine=fine)
    compiled: dict = {}

    def apply(contravariant, fields, interp, interp_derivative, interp_transpose, out):
        name = fields.dtype.name
        if name not in compiled:
            compiled[name] = compiled_apply(order, fine, name) if name in _REAL else None
        kernel = compiled[name]
        if kernel is None or not (fields.flags.c_contiguous and contravariant.flags.c_contiguous
                                  and out.flags.c_contiguous) or np.shares_memory(fields, out):
            kernel = reference
        return kernel(contravariant, fields, interp, interp_derivative, interp_transpose, out)

    return apply
