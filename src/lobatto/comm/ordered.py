"""Sums of a gather-scatter in an order fixed by global keys: the same bits on every partition.

A plain gather-scatter sums a shared point's copies on each rank first and then adds the
ranks' partial sums: with 8 elements at a vertex, ((a + b) + c) + d on one partition is
(a + b) + (c + d) on another. With keys (one global integer per point, unique, e.g. global
element id * n^3 + local point) every id's copies are added one by one in increasing key
order, on one rank or many:

- ids held by this rank alone: the compiled combine over the key-ordered groups (C or CUDA,
  each group added left to right), as the serial gather-scatter does;
- ids shared with other ranks: every rank learns at setup the keys of all copies of its
  shared ids (one message to each neighbour), so it knows each copy's place ("slot") in key
  order. NumPy data: each rank sends each neighbour its own copies of the ids they share
  (MPI point to point, no partial sums) and puts what arrives in its slots. CuPy data: a
  second gather-scatter over the slots (one id per copy of a shared id, all of an id's slots
  held by every rank that holds the id) carries each rank's values in its own slots and
  zeros elsewhere, over the device transports: x + 0 + 0 is exact in any order. Then every
  rank holds all copies of each shared id, in key order, and adds them left to right.

The exchange carries an id's every copy instead of one partial sum per rank (a point inside
a face: 1 value each way either way; an edge or corner: the copies on the sending rank):
the cost is in docs/benchmarks.md.
"""

from __future__ import annotations

import numpy as np


def _counts(starts, total):
    return np.diff(np.append(np.asarray(starts, dtype=np.int64), total))


def ordered_ids(ids: np.ndarray, keys: np.ndarray):
    """As ``local.unique_ids``, with each id's points in increasing key order."""
    pts = np.flatnonzero(ids)
    spts = pts[np.lexsort((keys[pts], ids[pts]))]
    sid = ids[spts]
    first = np.ones(len(sid), dtype=bool)
    first[1:] = sid[1:] != sid[:-1]
    starts = np.flatnonzero(first)
    return spts, sid[starts], starts


def add_in_order(k, u_sorted, starts):
    """(vn, groups): each run of columns of ``u_sorted`` starting at ``starts`` added left to
    right (the C and CUDA gathers do this; NumPy's reduceat adds runs of 8 or more pairwise)."""
    if k.xp is not np:
        return k.gather(u_sorted, starts, "sum")
    starts_host = np.asarray(starts, dtype=np.int64)
    total = int(u_sorted.shape[1])
    kernels = _c_kernels(u_sorted.dtype)
    if kernels is not None and u_sorted.flags.c_contiguous:
        return kernels["gather"](u_sorted, np.arange(total, dtype=np.int64), starts_host, "sum")
    counts = _counts(starts_host, total)
    out = u_sorted[:, starts_host].copy()
    for j in range(1, int(counts.max()) if counts.size else 0):
        g = np.flatnonzero(counts > j)
        out[:, g] += u_sorted[:, starts_host[g] + j]
    return out


def _c_kernels(dtype):
    name = np.dtype(dtype).name
    if name not in ("float64", "float32"):
        return None
    from lobatto.comm.local_c import gs_kernels

    return gs_kernels(name)


def combine_in_order(k, u2, perm, starts):
    """In place: every point of each group (``perm[starts[g]:starts[g+1]]``) gets the sum of
    its group added left to right."""
    if len(starts) == 0:
        return
    combine = getattr(k, "compiled_combine", lambda dtype: None)(u2.dtype)
    if combine is not None and u2.flags.c_contiguous:
        combine(u2, perm, starts, "sum")
        return
    # NumPy without a C compiler (CuPy always has its combine kernel)
    sums = add_in_order(k, k.take(u2, perm), starts)
    col = np.repeat(np.arange(len(starts)), _counts(starts, len(perm)))
    k.scatter(sums, u2, perm, k.asindex(col))


class OrderedShared:
    """The shared ids' part of an ordered gather-scatter (collective setup over ``comm``).

    ``plan``: the parent's ``local.LocalPlan`` built from key-ordered points; ``keys``: int64
    per point; ``topo``: the parent's ``discovery.Topology``; ``make_gs(slot_ids)``: builds
    the slot gather-scatter (the parent's method and transport)."""

    def __init__(self, comm, plan, keys, topo, make_gs):
        counts = _counts(plan.starts, len(plan.perm))
        cols = plan.shared_cols
        local_cols = np.flatnonzero(~plan.shared)
        self.perm_local, self.starts_local = group_runs(plan.perm, plan.starts, counts, local_cols)
        perm_shared, _ = group_runs(plan.perm, plan.starts, counts, cols)
        shared_counts = counts[cols]
        ns = len(cols)
        own_id = np.repeat(np.arange(ns, dtype=np.int64), shared_counts)
        own_key = keys[perm_shared]
        # 1. every neighbour's keys of the ids it shares with this rank
        requests, received = [], []
        self.comm = comm
        self.neighbours = [int(r) for r in topo.nbr_ranks]
        self.send_points = []  # per neighbour: this rank's copies of the ids they share, in key order
        for i, rank in enumerate(topo.nbr_ranks):
            ids = topo.nbr_idx[topo.nbr_offsets[i]:topo.nbr_offsets[i + 1]]
            mine = np.isin(own_id, ids)
            self.send_points.append(perm_shared[mine].astype(np.int64))
            requests.append(comm.isend((shared_counts[ids], own_key[mine]), dest=int(rank), tag=71))
        for i, rank in enumerate(topo.nbr_ranks):
            ids = topo.nbr_idx[topo.nbr_offsets[i]:topo.nbr_offsets[i + 1]]
            their_counts, their_keys = comm.recv(source=int(rank), tag=71)
            received.append((np.repeat(ids, np.asarray(their_counts, dtype=np.int64)), np.asarray(their_keys)))
        for r in requests:
            r.wait()
        # 2. every copy of every shared id in key order: its slot
        all_id = np.concatenate([own_id] + [ids for ids, _ in received]).astype(np.int64)
        all_key = np.concatenate([own_key] + [keys_ for _, keys_ in received]).astype(np.int64)
        is_own = np.zeros(len(all_id), dtype=bool)
        is_own[:len(own_id)] = True
        order = np.lexsort((all_key, all_id))
        total = np.bincount(all_id, minlength=ns).astype(np.int64)  # copies of each id, all ranks
        base = np.zeros(ns, dtype=np.int64)
        base[1:] = np.cumsum(total)[:-1]
        slot_of = np.empty(len(all_id), dtype=np.int64)
        slot_of[order] = np.arange(len(all_id), dtype=np.int64)  # ids ascending, keys within
        self.own_points = perm_shared
        self.own_slots = slot_of[:len(own_id)]
        # per neighbour: the slots of the copies it sends (the order of its send_points)
        ends = np.cumsum([len(own_id)] + [len(ids) for ids, _ in received])
        self.recv_slots = [slot_of[ends[i]:ends[i + 1]] for i in range(len(received))]
        self.slot_starts = base
        self.slots = int(total.sum())
        self.dest, self.src = plan.dest_shared, plan.src_shared
        from mpi4py import MPI

        widest = comm.allreduce(int(total.max()) if ns else 0, op=MPI.MAX)
        position = np.arange(self.slots, dtype=np.int64) - np.repeat(base, total)
        slot_ids = np.repeat(topo.gidx.astype(np.int64), total) * widest + position + 1
        self.gs = make_gs(slot_ids)
        self._buffers: dict = {}
        self._index: dict = {}

    def index(self, k) -> dict:
        idx = self._index.get(k.__name__)
        if idx is None:
            idx = {name: k.asindex(getattr(self, name)) for name in
                   ("perm_local", "starts_local", "own_points", "own_slots", "slot_starts", "dest", "src")}
            idx["own_range"] = k.asindex(np.arange(len(self.own_points), dtype=np.int64))
            self._index[k.__name__] = idx
        return idx

    def start(self, k, u2, defer_local: bool = False):
        """Copies of shared points into their slots, ids of this rank alone combined (or, with
        ``defer_local``, left to ``combine_local``), the slot exchange posted; returns what
        ``finish`` needs."""
        if k.xp is np:
            return self._start_host(k, u2, defer_local)
        idx = self.index(k)
        key = (k.__name__, u2.shape[0], np.dtype(u2.dtype).str)
        slots = self._buffers.get(key)
        if slots is None:
            slots = self._buffers[key] = k.xp.zeros((u2.shape[0], self.slots), dtype=u2.dtype)
        else:
            slots.fill(0)
        if len(self.own_points):
            k.scatter(k.take(u2, idx["own_points"]), slots, idx["own_slots"], idx["own_range"])
        if not defer_local:
            self.combine_local(k, u2)
        return slots, self.gs.start(slots, "sum")

    def combine_local(self, k, u2) -> None:
        """The ids this rank holds alone, each combined in key order, in place."""
        if k.xp is np:
            combine_in_order(k, u2, self.perm_local, self.starts_local)
            return
        idx = self.index(k)
        combine_in_order(k, u2, idx["perm_local"], idx["starts_local"])

    def _start_host(self, k, u2, defer_local=False):
        """NumPy data: each neighbour gets this rank's own copies only (no zeros), straight
        over MPI, and they land in their slots on arrival."""
        from mpi4py import MPI

        vn = u2.shape[0]
        slots = np.empty((vn, self.slots), dtype=u2.dtype)
        receives, requests = [], []
        for rank, where in zip(self.neighbours, self.recv_slots):
            buffer = np.empty((vn, len(where)), dtype=u2.dtype)
            receives.append(buffer)
            requests.append(self.comm.Irecv(buffer, source=rank, tag=7101))
        for rank, points in zip(self.neighbours, self.send_points):
            buffer = np.take(u2, points, axis=1)
            requests.append(self.comm.Isend(buffer, dest=rank, tag=7101))
            receives.append(buffer)  # kept alive until the sends complete
        if len(self.own_points):
            slots[:, self.own_slots] = np.take(u2, self.own_points, axis=1)
        if not defer_local:
            self.combine_local(k, u2)
        return slots, (requests, receives, MPI)

    def finish(self, k, u2, pending) -> None:
        slots, handle = pending
        if k.xp is np:
            requests, receives, MPI = handle
            MPI.Request.Waitall(requests)
            for where, buffer in zip(self.recv_slots, receives):
                slots[:, where] = buffer
            if self.slots:
                k.scatter(add_in_order(k, slots, self.slot_starts), u2, self.dest, self.src)
            return
        self.gs.finish(handle)
        if self.slots:
            idx = self.index(k)
            k.scatter(add_in_order(k, slots, idx["slot_starts"]), u2, idx["dest"], idx["src"])

    def free(self) -> None:
        self.gs.free()


def group_runs(perm, starts, counts, groups):
    """(points of ``groups``, in order, and the start of each group among them): the runs of
    ``perm`` (grouped at ``starts``, ``counts`` long) of the chosen groups only."""
    groups = np.asarray(groups, dtype=np.int64)
    c = counts[groups]
    new_starts = np.zeros(len(groups), dtype=np.int64)
    if len(groups):
        new_starts[1:] = np.cumsum(c)[:-1]
    offsets = np.arange(int(c.sum()), dtype=np.int64) - np.repeat(new_starts, c)
    return perm[np.repeat(starts[groups], c) + offsets].astype(np.int64), new_starts
