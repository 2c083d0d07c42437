"""Reduction operations of the gather-scatter: name -> ufunc, identity, MPI op."""

from __future__ import annotations

import numpy as np

from lobatto.errors import InputError

#: Names accepted by ``GatherScatter.apply(u, op=...)``.
OPS = ("sum", "prod", "min", "max")

_UFUNC = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}


def check_op(op: str) -> str:
    if op not in _UFUNC:
        raise InputError(f"gather-scatter: unknown op {op!r}; expected one of {', '.join(OPS)}")
    return op


def ufunc(op: str, xp=np):
    """The elementwise binary ufunc of ``op`` in array module ``xp``."""
    return getattr(xp, _UFUNC[op].__name__)


def identity(op: str, dtype) -> object:
    """The neutral element of ``op`` for ``dtype`` (used to fill unused slots)."""
    dtype = np.dtype(dtype)
    if op == "sum":
        return dtype.type(0)
    if op == "prod":
        return dtype.type(1)
    if dtype.kind == "f":
        return dtype.type(np.inf) if op == "min" else dtype.type(-np.inf)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.max) if op == "min" else dtype.type(info.min)
    if dtype.kind == "b":
        return dtype.type(True) if op == "min" else dtype.type(False)
    raise InputError(f"gather-scatter: op {op!r} is not defined for dtype {dtype}")


def mpi_op(op: str):
    """The mpi4py reduction operation of ``op`` (imports mpi4py lazily)."""
    from mpi4py import MPI

    return {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}[op]
