"""Allreduce exchange: one global vector over all shared ids, one MPI Allreduce.

Every rank writes its partial values at the global index of each of its shared
ids into a ``(vn, nglobal)`` vector filled with the op's identity, and one
(non-blocking) Allreduce with the op combines them.  Simple and robust, but the
message is the size of *all* shared ids of the whole problem on every rank, so
it only wins for tiny problems or very latency-bound networks (as in gslib).
"""

from __future__ import annotations

from lobatto.comm.exchange_base import Exchange
from lobatto.comm.ops import identity, mpi_op


class AllreduceExchange(Exchange):
    name = "allreduce"
    overlaps = True  # Iallreduce: progress depends on the MPI library

    def _gidx(self, k):
        key = (k.__name__, "gidx")
        if key not in self._cache:
            self._cache[key] = k.asindex(self.topo.gidx)
        return self._cache[key]

    def pack(self, shared_vals, op, k):
        vn = shared_vals.shape[0]
        buf = k.xp.full((vn, self.topo.nglobal), identity(op, shared_vals.dtype), dtype=shared_vals.dtype)
        buf[:, self._gidx(k)] = shared_vals
        return buf

    def unpack(self, shared_vals, recvbuf, op, k):
        return k.take(recvbuf, self._gidx(k))

    def post(self, sendbuf, vn, op, recvbuf=None):  # in place; recvbuf: unused
        from mpi4py import MPI

        req = self.comm.Iallreduce(MPI.IN_PLACE, sendbuf, op=mpi_op(op))
        return req, sendbuf

    def wait(self, request):
        req, buf = request
        req.Wait()
        return buf

    def bytes_per_exchange(self, vn: int = 1, itemsize: int = 8) -> int:
        return self.topo.nglobal * vn * itemsize
