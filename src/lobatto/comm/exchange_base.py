"""Base class of the exchange methods (phase 2 of the gather-scatter).

An exchange method turns this rank's partial values of its shared ids
(``shared_vals``, shape ``(vn, ns)``, columns in increasing id order) into the
values combined over all sharing ranks.  It is split in two layers so that the
transport can later move device buffers (NCCL) while packing stays array work:

packing (array work in the array module of the data, via the local kernels)
    ``pack(shared_vals, op, k) -> sendbuf`` and
    ``unpack(shared_vals, recvbuf, op, k) -> combined``.
transport (moves flat buffers; here host buffers through mpi4py)
    ``post(sendbuf, vn, op) -> request`` then ``wait(request) -> recvbuf``;
    ``exchange(sendbuf, vn, op) -> recvbuf`` is both at once.

For the neighbour methods (pairwise, crystal router) ``sendbuf`` is laid out
neighbour by neighbour: the chunk for neighbour ``g`` is
``sendbuf[vn*off[g] : vn*off[g+1]]``, a ``(vn, count[g])`` block in row-major
order, ids increasing; ``recvbuf`` has the same layout for what the neighbours
sent (both sides list the ids they share in increasing id order, so the
columns match without any id travelling).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from lobatto.comm.discovery import Topology

#: tag of the gather-scatter's messages (on the gather-scatter's own duplicated communicator)
TAG = 0x6C6F  # "lo"


class Handle:
    """An exchange in flight (returned by ``Exchange.start``)."""

    __slots__ = ("shared_vals", "op", "request", "k")

    def __init__(self, shared_vals, op, request, k):
        self.shared_vals = shared_vals
        self.op = op
        self.request = request
        self.k = k


class Exchange(ABC):
    """One exchange method over a duplicated communicator and a fixed topology."""

    name = "?"
    #: True when the transport makes progress between ``post`` and ``wait``
    overlaps = False

    def __init__(self, comm, topo: Topology):
        self.comm = comm
        self.topo = topo
        self._cache: dict = {}

    # -- packing layer ----------------------------------------------------
    @abstractmethod
    def pack(self, shared_vals, op, k):
        """The flat send buffer of ``shared_vals`` (vn, ns)."""

    @abstractmethod
    def unpack(self, shared_vals, recvbuf, op, k):
        """Own values combined with the received ones: (vn, ns)."""

    # -- transport layer --------------------------------------------------
    @abstractmethod
    def post(self, sendbuf, vn: int, op: str):
        """Start moving ``sendbuf``; returns a request for :meth:`wait`."""

    @abstractmethod
    def wait(self, request):
        """Complete a request; returns the receive buffer."""

    def exchange(self, sendbuf, vn: int, op: str):
        """Blocking transport: ``wait(post(...))``."""
        return self.wait(self.post(sendbuf, vn, op))

    @abstractmethod
    def bytes_per_exchange(self, vn: int = 1, itemsize: int = 8) -> int:
        """Payload bytes this rank sends in one exchange (headers excluded)."""

    # -- both -------------------------------------------------------------
    def start(self, shared_vals, op: str, k) -> Handle:
        sendbuf = self.pack(shared_vals, op, k)
        return Handle(shared_vals, op, self.post(sendbuf, shared_vals.shape[0], op), k)

    def finish(self, h: Handle):
        recvbuf = self.wait(h.request)
        return self.unpack(h.shared_vals, recvbuf, h.op, h.k)

    def run(self, shared_vals, op: str, k):
        return self.finish(self.start(shared_vals, op, k))


class NeighbourExchange(Exchange):
    """Packing shared by the methods that send each neighbour its own block."""

    def _layout(self, vn: int, k):
        key = (k.__name__, vn)
        lay = self._cache.get(key)
        if lay is not None:
            return lay
        t = self.topo
        ns = t.nshared_ids
        M = int(t.nbr_offsets[-1])
        g = np.repeat(np.arange(t.nnbr), t.nbr_counts)
        off = t.nbr_offsets[:-1][g]
        j = np.arange(M) - off
        v = np.arange(vn)[:, None]
        pos = vn * off[None, :] + v * t.nbr_counts[g][None, :] + j[None, :]  # (vn, M)
        send_flat = np.empty(vn * M, dtype=np.int64)
        send_flat[pos.ravel()] = (v * ns + t.nbr_idx[None, :]).ravel()
        # combine: own columns (source = me) and received columns, ordered by (id, source rank)
        col_sidx = np.concatenate([np.arange(ns), t.nbr_idx])
        col_src = np.concatenate([np.full(ns, t.rank), t.nbr_ranks[g]])
        cperm = np.lexsort((col_src, col_sidx))
        first = np.ones(len(cperm), dtype=bool)
        first[1:] = col_sidx[cperm][1:] != col_sidx[cperm][:-1]
        cstarts = np.flatnonzero(first)
        # flat source of each (v, sorted column) in concat(shared_vals.ravel(), recvbuf)
        colsrc = np.concatenate([v * ns + np.arange(ns)[None, :], vn * ns + pos], axis=1)  # (vn, ns+M)
        comb_flat = colsrc[:, cperm].ravel()
        lay = (k.asindex(send_flat), k.asindex(comb_flat), k.asindex(cstarts), ns + M)
        self._cache[key] = lay
        return lay

    def pack(self, shared_vals, op, k):
        send_flat, _, _, _ = self._layout(shared_vals.shape[0], k)
        return k.xp.take(shared_vals.reshape(-1), send_flat)

    def unpack(self, shared_vals, recvbuf, op, k):
        vn = shared_vals.shape[0]
        _, comb_flat, cstarts, width = self._layout(vn, k)
        both = k.xp.concatenate([shared_vals.reshape(-1), recvbuf])
        ext = k.xp.take(both, comb_flat).reshape(vn, width)
        return k.gather(ext, cstarts, op)

    def bytes_per_exchange(self, vn: int = 1, itemsize: int = 8) -> int:
        return int(self.topo.nbr_offsets[-1]) * vn * itemsize
