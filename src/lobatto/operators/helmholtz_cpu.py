"""The Helmholtz operator's compiled C kernel for the CPU backend (kernels/helmholtz.c).

Registered as the CPU backend's tuned ``helmholtz_apply``, with the reference signature
``apply(u, out, factors, mass, h1, h2)``. One library per (order, dimension, precision),
built on the first call with that precision; where it cannot be built the reference runs
instead. A 2-D mesh (``dim=2``) compiles the same source with -DDIM=2.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from lobatto.backends.base import REFERENCE_KERNELS, tuned_kernel
from lobatto.discretization import derivative_matrix
from lobatto.jit import c as cbuild
from lobatto.jit.c import pointer as _ptr

SOURCE = Path(__file__).resolve().parent / "kernels" / "helmholtz.c"
_REAL = {"float64": "double", "float32": "float"}
_SCALAR = {"float64": ctypes.c_double, "float32": ctypes.c_float}


def helmholtz_spec(order: int, precision: str, dim: int = 3) -> tuple[Path, dict]:
    """(source, macros) of the library for this order, precision and dimension (for
    jit.c.prebuild)."""
    return SOURCE, {"NQ": int(order) + 1, "DIM": int(dim), "REAL": _REAL[precision]}


def compiled_apply(order: int, precision: str, dim: int = 3):
    """The compiled ``apply`` of this order, precision and dimension, or None where it
    cannot be built."""
    source, macros = helmholtz_spec(order, precision, dim)
    lib = cbuild.load(source, **macros)
    if lib is None:
        return None
    dtype = np.dtype(precision)
    n = int(order) + 1
    volume = (n, n, n) if dim == 3 else (1, n, n)
    factors_count = 6 if dim == 3 else 3
    c_apply = lib.helmholtz_apply
    c_apply.argtypes = [ctypes.c_void_p] * 5 + [_SCALAR[precision]] * 2 + [ctypes.c_int64]
    c_apply.restype = None
    d = np.ascontiguousarray(derivative_matrix(order), dtype=dtype)

    def apply(u, out, factors, mass, h1, h2):
        E = u.shape[0]
        arrays = [(u, (E, *volume), "u"), (out, (E, *volume), "out"), (factors, (factors_count, E, *volume), "factors")]
        if mass is not None:
            arrays.append((mass, (E, *volume), "mass"))
        for a, shape, name in arrays:
            if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != shape or not a.flags.c_contiguous:
                raise TypeError(f"helmholtz_apply: {name} must be a C-contiguous {dtype} array of shape {shape}, got "
                                f"{type(a).__name__} {getattr(a, 'dtype', '?')} {getattr(a, 'shape', '?')}")
        if not out.flags.writeable or np.shares_memory(u, out):
            raise TypeError("helmholtz_apply: out must be writable and must not overlap u")
        c_apply(_ptr(u), _ptr(out), _ptr(factors), None if mass is None else _ptr(mass), _ptr(d), h1, h2, E)
        return out

    return apply


@tuned_kernel("cpu", "helmholtz_apply")
def make_apply(backend, order, dim=3):
    reference = REFERENCE_KERNELS["helmholtz_apply"](backend, order=order, dim=dim)
    compiled: dict = {}

    def apply(u, out, factors, mass, h1, h2):
        name = u.dtype.name
        if name not in compiled:
            compiled[name] = compiled_apply(order, name, dim) if name in _REAL else None
        kernel = compiled[name] or reference
        return kernel(u, out, factors, mass, h1, h2)

    return apply
