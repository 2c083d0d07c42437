"""Sums over ranks that are the same however the terms are split among the ranks.

Floating-point addition is not associative: an allreduce of per-rank partial sums (or a
BLAS dot over a rank's share of a vector) depends on the partition, in the last bits, and an
iterative solver turns those bits into 1e-10 differences. Here every term is split exactly
into 32-bit integer chunks at fixed binary exponents (a superaccumulator); integers add
exactly in any order, so the chunk totals do not depend on which rank held which term, and
the total is rounded once. The result is the correctly rounded sum of all the terms
(``math.fsum`` of them), on every rank and every partition.

    total = exact_sum(comm, partials)            # partials: any float array (NumPy or CuPy)
    a, b = exact_sums(comm, [pa, pb])            # several sums, one allreduce
    dot, = totals(comm, [accumulate_rows(points, u, v, w)])   # sum of u v w, one pass

Callers sum each element's points first (its order depends only on the element's values),
then add the per-element partials exactly: ``accumulate_rows`` does both in one pass (a C
kernel for NumPy float64, a CUDA kernel for CuPy, NumPy otherwise), and ``totals`` reduces
the accumulators with one allreduce of 71 int64 per sum. NaN and
infinities are counted apart: any NaN, or +inf with -inf, gives NaN; otherwise an infinity
wins; an exact total beyond the float64 range gives an infinity of its sign.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto.machine.parallel import count_collective

CHUNK_BITS = 32
#: frexp exponents of float64 are >= -1073 (subnormals); e - 53 + BIAS >= 0
BIAS = 1126
#: chunk k holds the bits [32 k, 32 k + 32) of the integer term * 2**BIAS
CHUNKS = (1024 - 53 + BIAS) // CHUNK_BITS + 3
#: after the chunks: counts of NaN, +inf, -inf
SLOTS = CHUNKS + 3
#: at most this many terms per bincount, so its float64 totals (terms < 2**33) stay exact
BLOCK = 1 << 19
_MASK = (1 << CHUNK_BITS) - 1
_SCALE = 1 << BIAS  # chunk totals are (sum of terms) * 2**BIAS
ROW_SUMS_SOURCE = Path(__file__).resolve().parent / "kernels" / "row_sums.cu"


def _xp_of(a):
    mod = type(a).__module__.split(".")[0]
    if mod == "cupy":
        import cupy

        return cupy
    return np


def accumulate(values) -> np.ndarray:
    """This rank's (SLOTS,) int64 accumulator of ``values`` (any shape, NumPy or CuPy):
    the chunks with carries propagated once (each below 2**33 in magnitude) and the
    NaN / +inf / -inf counts."""
    xp = _xp_of(values)
    x = values.reshape(-1).astype(xp.float64)
    acc = np.zeros(SLOTS, dtype=np.int64)
    finite = xp.isfinite(x)
    if not bool(finite.all()):
        acc[CHUNKS] = int(xp.isnan(x).sum())
        acc[CHUNKS + 1] = int((x == xp.inf).sum())
        acc[CHUNKS + 2] = int((x == -xp.inf).sum())
        x = x[finite]
    x = x[x != 0]
    chunks = xp.zeros(CHUNKS, dtype=xp.float64)
    for start in range(0, int(x.size), BLOCK):
        part = x[start:start + BLOCK]
        mantissa, exponent = xp.frexp(part)
        whole = (mantissa * 2.0 ** 53).astype(xp.int64)  # exact: |whole| in [2**52, 2**53)
        sign = xp.where(whole < 0, -1.0, 1.0)
        whole = xp.abs(whole)
        shift = exponent.astype(xp.int64) + (BIAS - 53)
        index, r = shift >> 5, shift & 31
        low = (whole & _MASK) << r   # < 2**63
        high = (whole >> CHUNK_BITS) << r  # < 2**52
        terms = ((low & _MASK), (low >> CHUNK_BITS) + (high & _MASK), high >> CHUNK_BITS)
        for j, term in enumerate(terms):
            chunks += xp.bincount(index + j, weights=sign * term.astype(xp.float64), minlength=CHUNKS)
    chunks = np.asarray(chunks.get() if xp is not np else chunks).astype(np.int64)  # exact: |sum| < 2**53
    carry = chunks[:-1] >> CHUNK_BITS
    chunks[:-1] -= carry << CHUNK_BITS
    chunks[1:] += carry
    acc[:CHUNKS] = chunks
    return acc


def rounded(acc) -> float:
    """The float64 nearest to the total an accumulator (summed over ranks) holds."""
    nan, pinf, ninf = (int(v) for v in acc[CHUNKS:CHUNKS + 3])
    if nan or (pinf and ninf):
        return float("nan")
    if pinf or ninf:
        return float("inf") if pinf else float("-inf")
    chunks = np.asarray(acc[:CHUNKS])
    total = 0
    for k in np.flatnonzero(chunks)[::-1]:  # usually a few: the terms' exponents span little
        total += int(chunks[k]) << (CHUNK_BITS * int(k))
    try:
        return total / _SCALE  # Python rounds an int quotient correctly (to nearest, ties even)
    except OverflowError:
        return float("inf") if total > 0 else float("-inf")


def exact_sums(comm, parts: list) -> list[float]:
    """The correctly rounded sum of each array of ``parts`` over every rank of ``comm``
    (None or one rank: this rank's); collective: every rank passes the same number of arrays
    (empty ones where it has nothing)."""
    return totals(comm, [accumulate(p) for p in parts])


def totals(comm, accumulators: list) -> list[float]:
    """The rounded totals of accumulators (``accumulate``, ``accumulate_rows``) summed over
    every rank of ``comm`` (collective: every rank passes as many)."""
    count_collective("reductions")
    accs = np.stack(accumulators) if accumulators else np.zeros((0, SLOTS), dtype=np.int64)
    if comm is not None and comm.Get_size() > 1:
        from mpi4py import MPI

        total = np.empty_like(accs)
        comm.Allreduce(accs, total, op=MPI.SUM)
        accs = total
    return [rounded(a) for a in accs]


def exact_sum(comm, values) -> float:
    """The correctly rounded sum of ``values`` over every rank of ``comm`` (collective)."""
    return exact_sums(comm, [values])[0]


_ROW_SUMS: dict = {}
_C: dict = {}


def _cuda_kernel(kind: str, dtype):
    import cupy

    from lobatto.jit.nvrtc import ctype, get_module

    key = (kind, np.dtype(dtype).str, cupy.cuda.runtime.getDevice())
    fn = _ROW_SUMS.get(key)
    if fn is None:
        names = tuple(f"lobatto::{k}<{t}>" for k in ("row_sums", "exact_rows") for t in ("double", "float"))
        fn = _ROW_SUMS[key] = get_module(ROW_SUMS_SOURCE, names).get_function(f"lobatto::{kind}<{ctype(dtype)}>")
    return fn


def _c_exact_rows():
    """The C ``exact_rows_f64`` (kernels/exact_sum.c), or None without a C compiler."""
    if "fn" not in _C:
        import ctypes

        from lobatto.jit import c as cbuild

        lib = cbuild.load(Path(__file__).resolve().parent / "kernels" / "exact_sum.c")
        fn = None
        if lib is not None:
            fn = lib.exact_rows_f64
            vp, i64 = ctypes.c_void_p, ctypes.c_int64
            fn.argtypes = [vp, vp, vp, i64, i64, i64, ctypes.c_int, vp]
            fn.restype = None
        _C["fn"] = fn
    return _C["fn"]


def accumulate_rows(points: int, u, v=None, w=None) -> np.ndarray:
    """This rank's (SLOTS,) int64 accumulator of the per-row sums of u, u v or u v w (rows of
    ``points`` values: an element's points; ``w`` is repeated over leading axes as in
    ``row_sums``), each row summed in a fixed order first. One pass, no temporaries, with the
    C (NumPy float64) or CUDA (CuPy) kernel; NumPy otherwise."""
    return accumulate_rows_many(points, [(u, v, w)])[0]


def accumulate_rows_many(points: int, terms) -> list:
    """``[accumulate_rows(points, *t) for t in terms]`` (each t is (u,), (u, v) or (u, v, w)),
    with CuPy data one device buffer for all of them and one copy to the host (one wait for
    the device instead of one per sum): what a solver's fused dot products use."""
    terms = [tuple(t) + (None,) * (3 - len(t)) for t in terms]
    out: list = [None] * len(terms)
    device = []  # (position, contiguous arrays) of the terms the CUDA kernel takes
    for i, (u, v, w) in enumerate(terms):
        xp = _xp_of(u)
        rows = u.size // points if points else 0
        arrays = [a for a in (u, v, w) if a is not None]
        if xp is np:
            out[i] = _host_rows(points, u, v, w, rows, arrays)
        elif rows and len({a.dtype for a in arrays}) == 1 and np.dtype(u.dtype) in (np.dtype(np.float64),
                                                                                      np.dtype(np.float32)):
            device.append((i, u, v, w, rows))
        else:
            product = u if v is None else u * v
            out[i] = accumulate(row_sums(product, points, w))
    if device:
        xp = _xp_of(device[0][1])
        accs = xp.zeros((len(device), SLOTS), dtype=xp.uint64)
        threads = 256
        for j, (_, u, v, w, rows) in enumerate(device):
            x = xp.ascontiguousarray(u)
            y = x if v is None else xp.ascontiguousarray(v)
            q = x if w is None else xp.ascontiguousarray(w)
            mode = 0 if v is None else (1 if w is None else 2)
            _cuda_kernel("exact_rows", x.dtype)(((rows * 32 + threads - 1) // threads,), (threads,), (
                x, y, q, np.int64(rows), np.int64(points), np.int64(max(q.size // points, 1)), np.int32(mode),
                accs[j]))
        host = accs.get().view(np.int64)
        for j, (i, *_) in enumerate(device):
            acc = host[j].copy()
            carry = acc[:CHUNKS - 1] >> CHUNK_BITS
            acc[:CHUNKS - 1] -= carry << CHUNK_BITS
            acc[1:CHUNKS] += carry
            out[i] = acc
    return out


def _host_rows(points, u, v, w, rows, arrays) -> np.ndarray:
    """accumulate_rows of NumPy arrays: the C kernel where it is built, else NumPy."""
    fn = _c_exact_rows()
    if fn is not None and rows and all(a.dtype == np.float64 for a in arrays):
        from lobatto.jit.c import pointer

        # the same kernel whatever the layout (a strided view is copied), so the same bits
        u, v, w = (None if a is None else np.ascontiguousarray(a) for a in (u, v, w))
        acc = np.zeros(SLOTS, dtype=np.int64)
        x, y, q = u, (u if v is None else v), (u if w is None else w)
        mode = 0 if v is None else (1 if w is None else 2)
        fn(pointer(x), pointer(y), pointer(q), rows, points, max(q.size // points, 1), mode, pointer(acc))
        return acc
    product = u if v is None else u * v
    return accumulate(row_sums(product, points, w))


def row_sums(values, points: int, weights=None):
    """(rows,) sums of ``values * weights`` over each row of ``points`` consecutive values
    (an element's n^3 points), each in an order fixed by ``points`` alone: a row's sum is
    the same whatever the other rows and wherever the row lies. ``weights`` (optional) has
    ``values``'s trailing shape, a whole number of rows; it is repeated over leading axes.
    NumPy: multiply, then pairwise sums of each contiguous row; CuPy: one warp per row,
    strided sequential sums then a fixed shuffle tree (CuPy's own reductions choose their
    tree by the array's shape)."""
    xp = _xp_of(values)
    rows = values.size // points if points else 0
    if xp is np:
        x = values.reshape(rows, points)
        if weights is not None:
            x = (x.reshape(-1, weights.size) * weights.reshape(1, -1)).reshape(rows, points)
        return x.sum(axis=1)
    values = xp.ascontiguousarray(values)
    w = values if weights is None else xp.ascontiguousarray(weights, dtype=values.dtype)
    out = xp.empty(rows, dtype=values.dtype)
    if rows:
        threads = 256
        blocks = (rows * 32 + threads - 1) // threads
        _cuda_kernel("row_sums", values.dtype)((blocks,), (threads,), (
            values, w, np.int64(rows), np.int64(points), np.int64(w.size // points if points else 1),
            np.int32(weights is not None), out))
    return out
