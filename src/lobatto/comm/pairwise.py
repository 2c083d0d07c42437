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

    def post(self, sendbuf, vn, op):
        from mpi4py import MPI  # noqa: F401  (mpi4py is present when comm is)

        t = self.topo
        recvbuf = np.empty(vn * int(t.nbr_offsets[-1]), dtype=sendbuf.dtype)
        reqs = []
        for g, q in enumerate(t.nbr_ranks.tolist()):
            a, b = vn * int(t.nbr_offsets[g]), vn * int(t.nbr_offsets[g + 1])
            reqs.append(self.comm.Irecv(recvbuf[a:b], source=q, tag=TAG))
        for g, q in enumerate(t.nbr_ranks.tolist()):
            a, b = vn * int(t.nbr_offsets[g]), vn * int(t.nbr_offsets[g + 1])
            reqs.append(self.comm.Isend(sendbuf[a:b], dest=q, tag=TAG))
        return reqs, recvbuf, sendbuf

    def wait(self, request):
        from mpi4py import MPI

        reqs, recvbuf, _sendbuf = request
        MPI.Request.Waitall(reqs)
        return recvbuf
