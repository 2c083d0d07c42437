"""Pairwise exchange: one Isend/Irecv per neighbour rank (gslib's "pairwise").

The only method whose messages progress between ``start`` and ``finish``:
``post`` returns with the receives and sends posted, ``wait`` completes them.
"""

from __future__ import annotations

import numpy as np

from lobatto.comm.exchange_base import TAG, NeighbourExchange


class PairwiseExchange(NeighbourExchange):
    name = "pairwise"
    overlaps = True

    def _chunks(self, vn):
        key = ("chunks", vn)
        ch = self._cache.get(key)
        if ch is None:
            off = self.topo.nbr_offsets
            ch = [(q, vn * int(off[g]), vn * int(off[g + 1])) for g, q in enumerate(self.topo.nbr_ranks.tolist())]
            self._cache[key] = ch
        return ch

    def post(self, sendbuf, vn, op, recvbuf=None):
        chunks = self._chunks(vn)
        if recvbuf is None:
            recvbuf = np.empty_like(sendbuf)  # same layout and size as sendbuf
        comm = self.comm
        reqs = [comm.Irecv(recvbuf[a:b], source=q, tag=TAG) for q, a, b in chunks]
        reqs += [comm.Isend(sendbuf[a:b], dest=q, tag=TAG) for q, a, b in chunks]
        return reqs, recvbuf, sendbuf

    def wait(self, request):
        from mpi4py import MPI

        reqs, recvbuf, _sendbuf = request
        MPI.Request.Waitall(reqs)
        return recvbuf
