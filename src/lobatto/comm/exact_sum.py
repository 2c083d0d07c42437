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
    parts = row_sums(x, points)                  # per-element sums in a fixed element-local order

Callers sum each element's points first (``row_sums``: its order depends only on the
element's values), then reduce the per-element partials exactly: the cost is one pass over
the partials (E values, not E n^3) and one allreduce of 71 int64 per sum. NaN and
infinities are counted apart: any NaN, or +inf with -inf, gives NaN; otherwise an infinity
wins; an exact total beyond the float64 range gives an infinity of its sign.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

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
    total = 0
    for k in range(CHUNKS - 1, -1, -1):
        total = (total << CHUNK_BITS) + int(acc[k])
    try:
        return total / _SCALE  # Python rounds an int quotient correctly (to nearest, ties even)
    except OverflowError:
        return float("inf") if total > 0 else float("-inf")


def exact_sums(comm, parts: list) -> list[float]:
    """The correctly rounded sum of each array of ``parts`` over every rank of ``comm``
    (None or one rank: this rank's); collective: every rank passes the same number of arrays
    (empty ones where it has nothing)."""
    accs = np.stack([accumulate(p) for p in parts]) if parts else np.zeros((0, SLOTS), dtype=np.int64)
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


def _row_sums_kernel(dtype):
    from lobatto.jit.nvrtc import ctype, get_module

    import cupy

    key = (np.dtype(dtype).str, cupy.cuda.runtime.getDevice())
    fn = _ROW_SUMS.get(key)
    if fn is None:
        name = f"lobatto::row_sums<{ctype(dtype)}>"
        fn = _ROW_SUMS[key] = get_module(ROW_SUMS_SOURCE, (name,)).get_function(name)
    return fn


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
        _row_sums_kernel(values.dtype)((blocks,), (threads,), (
            values, w, np.int64(rows), np.int64(points), np.int64(w.size // points if points else 1),
            np.int32(weights is not None), out))
    return out
