"""Base class of the exchange methods (phase 2 of the gather-scatter).

An exchange method turns this rank's partial values of its shared ids
(``shared_vals``, shape ``(vn, ns)``, columns in increasing id order) into the
values combined over all sharing ranks.  It is split in two layers so that the
transport can later move device buffers (NCCL) while packing stays array work:

packing (array work in the array module of the data, via the local kernels)
    ``pack(shared_vals, op, k) -> sendbuf`` and
    ``unpack(shared_vals, recvbuf, op, k) -> combined``.
transport (moves flat buffers with MPI; ``comm/transport`` wraps it: host staging of
device data, or NCCL / CUDA-aware MPI on device buffers for pairwise)
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
from lobatto.comm.ops import identity, ufunc

#: tag of the gather-scatter's messages (on the gather-scatter's own duplicated communicator)
TAG = 0x6C6F  # "lo"


class Handle:
    """An exchange in flight (returned by ``Exchange.start``)."""

    __slots__ = ("k", "op", "request", "shared_vals")

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
    def post(self, sendbuf, vn: int, op: str, recvbuf=None):
        """Start moving ``sendbuf`` with MPI; returns a request for :meth:`wait`.

        ``recvbuf``: where to receive (same shape and dtype as ``sendbuf``), for methods
        that receive into one flat buffer (pairwise); others ignore it.  The transports
        (``comm/transport``) call this with host buffers, or with device buffers
        (CUDA-aware MPI, pairwise only)."""

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
        lay = k.asindex(send_flat)
        self._cache[key] = lay
        return lay

    def _columns(self, k):
        """(lower, upper): per neighbour of lower / higher rank, in rank order, (g, its shared
        columns as a slice or an index array)."""
        key = (k.__name__, "cols")
        cols = self._cache.get(key)
        if cols is None:
            t = self.topo
            cols = []
            for g in range(t.nnbr):
                c = t.nbr_idx[t.nbr_offsets[g] : t.nbr_offsets[g + 1]]
                if len(c) and c[-1] - c[0] + 1 == len(c) and np.all(np.diff(c) == 1):
                    sel = slice(int(c[0]), int(c[-1]) + 1)
                else:
                    sel = k.asindex(c)
                cols.append((g, sel))
            cols = (
                [c for c in cols if t.nbr_ranks[c[0]] < t.rank],
                [c for c in cols if t.nbr_ranks[c[0]] > t.rank],
            )
            self._cache[key] = cols
        return cols

    def pack(self, shared_vals, op, k):
        send_flat = self._layout(shared_vals.shape[0], k)
        return k.xp.take(shared_vals.reshape(-1), send_flat)

    def unpack(self, shared_vals, recvbuf, op, k):
        """Combine contributions in increasing rank order (own one at this rank's place).

        Every sharer of an id then performs the same operations on the same
        values in the same order, so all copies of an id agree bit for bit.
        """
        vn, ns = shared_vals.shape
        f = ufunc(op, k.xp)
        lower, upper = self._columns(k)
        if lower:
            acc = k.xp.full((vn, ns), identity(op, shared_vals.dtype), dtype=shared_vals.dtype)
            for g, sel in lower:
                self._combine(acc, sel, self._recv_block(recvbuf, vn, g), f)
            f(acc, shared_vals, out=acc)
        else:
            acc = shared_vals.copy()
        for g, sel in upper:
            self._combine(acc, sel, self._recv_block(recvbuf, vn, g), f)
        return acc

    def _recv_block(self, recvbuf, vn, g):
        off = self.topo.nbr_offsets
        return recvbuf[vn * int(off[g]) : vn * int(off[g + 1])].reshape(vn, -1)

    @staticmethod
    def _combine(acc, sel, block, f):
        if isinstance(sel, slice):
            f(acc[:, sel], block, out=acc[:, sel])
        else:
            acc[:, sel] = f(acc[:, sel], block)

    def bytes_per_exchange(self, vn: int = 1, itemsize: int = 8) -> int:
        return int(self.topo.nbr_offsets[-1]) * vn * itemsize
