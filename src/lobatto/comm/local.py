"""Local (on-rank) phases of the gather-scatter: gather duplicates, scatter back.

Everything here is precomputed index arrays plus two vectorised kernels:

``gather(u_sorted, starts, op)``
    ``u_sorted`` is a ``(vn, m)`` array whose columns are grouped by id (all
    columns of one id are adjacent, groups start at ``starts``); returns the
    ``(vn, len(starts))`` array of the groups combined with ``op`` (``u_sorted``
    itself when every group has one column: callers pass a fresh array).

``scatter(values, u, dest, src)``
    ``u[:, dest] = values[:, src]`` in place.

A kernel module provides ``xp`` (its array module), ``asindex(a)`` (an index
array on its device), ``take(u, idx)`` (columns of a 2-D array), ``gather`` and
``scatter``.  This module is the NumPy one; ``lobatto.comm.local_cuda`` provides
the same names for CuPy arrays and is picked by :func:`kernels_for`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from lobatto.comm.ops import ufunc

xp = np


def asindex(a):
    return np.ascontiguousarray(a, dtype=np.intp)


def take(u, idx):
    """Columns ``idx`` of the 2-D array ``u`` (a new contiguous array)."""
    return np.take(u, idx, axis=1)


def gather(u_sorted, starts, op):
    """Combine each run of columns of ``u_sorted`` starting at ``starts`` with ``op``."""
    if len(starts) == u_sorted.shape[1]:  # every group has one column (also the empty case)
        return u_sorted
    return ufunc(op).reduceat(u_sorted, starts, axis=1)


def scatter(values, u, dest, src):
    """``u[:, dest] = values[:, src]`` in place (``u`` may be a view)."""
    if len(dest):
        u[:, dest] = np.take(values, src, axis=1)


_COMPILED_COMBINE: dict = {}


def compiled_combine(dtype):
    """The compiled in-place ``combine(u2, perm, starts, op)`` for NumPy arrays of ``dtype``, or None.

    It gathers and scatters every group in one pass (the CPU backend's C kernel); without a
    C compiler it is None and the NumPy kernels above are used.
    """
    key = np.dtype(dtype).name
    if key not in _COMPILED_COMBINE:
        fn = None
        if key in ("float64", "float32"):
            from lobatto.comm.local_c import gs_kernels

            kernels = gs_kernels(key)
            fn = None if kernels is None else kernels["combine"]
        _COMPILED_COMBINE[key] = fn
    return _COMPILED_COMBINE[key]


def array_module(u):
    """``numpy`` or ``cupy``, by the type of ``u`` (without importing CuPy)."""
    mod = type(u).__module__.split(".")[0]
    if mod == "cupy":
        import cupy

        return cupy
    return np


def kernels_for(xp_mod):
    """The local-kernel module for array module ``xp_mod``."""
    if xp_mod is np:
        return sys.modules[__name__]
    if getattr(xp_mod, "__name__", "") == "cupy":
        try:
            import lobatto.comm.local_cuda as mod
        except ImportError as exc:  # written later: say so clearly
            raise NotImplementedError(
                f"gather-scatter on CuPy arrays needs lobatto.comm.local_cuda, which is not available ({exc})"
            ) from exc
        return mod
    raise NotImplementedError(f"gather-scatter: no local kernels for array module {xp_mod!r}")


@dataclass
class LocalPlan:
    """Index arrays of the local phases (NumPy, int64), built once at setup.

    The compact array has one column per *kept* unique id, in increasing id
    order: ids that occur more than once on this rank or are shared with other
    ranks.  Ids that occur once and nowhere else are left out altogether (their
    combined value is their own value), and so are points with id 0.
    """

    n: int
    uids: np.ndarray  # kept unique ids, increasing (compact column -> id)
    perm: np.ndarray  # point indices grouped by id (kept ids only)
    starts: np.ndarray  # start of each id's group in perm
    shared: np.ndarray  # bool per compact column: shared with another rank
    shared_cols: np.ndarray  # compact columns of shared ids (increasing id)
    dest_local: np.ndarray  # points of local-only ids ...
    src_local: np.ndarray  # ... and the compact column of each
    dest_shared: np.ndarray  # points of shared ids ...
    src_shared: np.ndarray  # ... and the position of each in shared_cols

    @property
    def ncompact(self) -> int:
        return len(self.uids)

    @property
    def nshared_ids(self) -> int:
        return len(self.shared_cols)

    @property
    def nshared_points(self) -> int:
        return len(self.dest_shared)


def unique_ids(ids: np.ndarray):
    """Participating points grouped by id: (sorted point indices, unique ids, group starts)."""
    pts = np.flatnonzero(ids)
    order = np.argsort(ids[pts], kind="stable")
    spts = pts[order]
    sid = ids[spts]
    first = np.ones(len(sid), dtype=bool)
    first[1:] = sid[1:] != sid[:-1]
    starts = np.flatnonzero(first)
    return spts, sid[starts], starts


def build_plan(n: int, spts, uids, starts, shared_mask) -> LocalPlan:
    """Keep ids that are duplicated on this rank or shared; build the index arrays."""
    counts = np.diff(np.append(starts, len(spts)))
    keep = (counts > 1) | shared_mask
    kcounts = counts[keep]
    kstarts_old = starts[keep]
    # point positions (into spts) of kept groups, in order
    total = int(kcounts.sum())
    kstarts = np.zeros(len(kcounts), dtype=np.int64)
    if len(kcounts):
        kstarts[1:] = np.cumsum(kcounts)[:-1]
    offs = np.arange(total, dtype=np.int64) - np.repeat(kstarts, kcounts)
    pos = np.repeat(kstarts_old, kcounts) + offs
    perm = spts[pos].astype(np.int64)
    col = np.repeat(np.arange(len(kcounts), dtype=np.int64), kcounts)
    kshared = shared_mask[keep]
    shared_cols = np.flatnonzero(kshared).astype(np.int64)
    pt_shared = kshared[col]
    # position of each compact column among the shared columns
    shared_pos = np.cumsum(kshared) - 1
    return LocalPlan(
        n=n,
        uids=uids[keep].astype(np.int64),
        perm=perm,
        starts=kstarts,
        shared=kshared,
        shared_cols=shared_cols,
        dest_local=perm[~pt_shared],
        src_local=col[~pt_shared],
        dest_shared=perm[pt_shared],
        src_shared=shared_pos[col[pt_shared]].astype(np.int64),
    )
