"""Crystal router: ceil(log2 P) stages over a (generalised) hypercube.

Messages are records (destination rank, source rank, payload).  At each stage
the current rank range ``[lo, hi)`` is split into halves ``[lo, mid)`` and
``[mid, hi)`` with ``mid = lo + (hi - lo) // 2``; lower rank ``lo + i`` is
paired with upper rank ``mid + i``.  When the range has odd size the upper half
has one rank more, and that rank (``hi - 1``) sends to the last lower rank
``mid - 1`` (which then receives two bundles).  Every rank sends its partner all
records whose destination lies in the other half, keeps the rest, adds what it
received, and continues in its own half.  After the last stage every record it
holds is addressed to it.  Works for any P and any message sizes; each stage is
two messages per pair (a header of records and one concatenated payload) the
first time a given vn is exchanged; the headers depend only on the topology and
vn, so they are kept and later exchanges send one message per pair and stage.
"""

from __future__ import annotations

import numpy as np

from lobatto.comm.exchange_base import TAG, NeighbourExchange

_TAG_HDR = TAG + 1
_TAG_DATA = TAG + 2


def _stages(me: int, P: int):
    """Per stage: (partner, sources, lower bound of my half, upper bound of my half)."""
    lo, hi = 0, P
    out = []
    while hi - lo > 1:
        n = hi - lo
        nlow = n // 2
        mid = lo + nlow
        if me < mid:
            partner = me + nlow
            sources = [partner]
            if n % 2 and me == mid - 1:
                sources.append(hi - 1)  # the upper half's extra rank has no partner of its own
            hi = mid
        else:
            i = me - mid
            partner = lo + i if i < nlow else mid - 1
            sources = [partner] if i < nlow else []
            lo = mid
        out.append((partner, sources, lo, hi))
    return out


def route(comm, records, dtype, headers=None):
    """Deliver ``records`` [(dest, src, 1-D payload)]; returns those addressed to this rank.

    ``headers``: None to discover the incoming record headers with MPI_Probe
    (two messages per pair and stage), or the list returned by an earlier call
    with records of the same shapes (then one message per pair and stage, sizes
    known, no probing).  Returns ``(delivered, headers)``.
    """
    from mpi4py import MPI

    me, P = comm.Get_rank(), comm.Get_size()
    held = list(records)
    learned = []
    for s, (partner, sources, lo, hi) in enumerate(_stages(me, P)):
        out = [r for r in held if not lo <= r[0] < hi]
        held = [r for r in held if lo <= r[0] < hi]
        data = np.concatenate([p for _, _, p in out]) if out else np.empty(0, dtype=dtype)
        if headers is None:
            hdr = np.array([(d, src, len(p)) for d, src, p in out], dtype=np.int64).reshape(-1, 3)
            reqs = [comm.Isend(hdr, dest=partner, tag=_TAG_HDR), comm.Isend(data, dest=partner, tag=_TAG_DATA)]
            incoming = []
            for src in sources:
                st = MPI.Status()
                comm.Probe(source=src, tag=_TAG_HDR, status=st)
                rh = np.empty(st.Get_count(MPI.INT64_T), dtype=np.int64)
                comm.Recv(rh, source=src, tag=_TAG_HDR)
                rh = rh.reshape(-1, 3)
                rd = np.empty(int(rh[:, 2].sum()), dtype=dtype)
                comm.Recv(rd, source=src, tag=_TAG_DATA)
                incoming.append((rh, rd))
            MPI.Request.Waitall(reqs)
            learned.append([rh for rh, _ in incoming])
        else:
            rhs = headers[s]
            rds = [np.empty(int(rh[:, 2].sum()), dtype=dtype) for rh in rhs]
            reqs = [comm.Irecv(rd, source=src, tag=_TAG_DATA) for src, rd in zip(sources, rds)]
            reqs.append(comm.Isend(data, dest=partner, tag=_TAG_DATA))
            MPI.Request.Waitall(reqs)
            incoming = list(zip(rhs, rds))
        for rh, rd in incoming:
            pos = 0
            for d, src, m in rh.tolist():
                held.append((d, src, rd[pos : pos + m]))
                pos += m
    return held, (learned if headers is None else headers)


class CrystalRouterExchange(NeighbourExchange):
    name = "crystal_router"
    overlaps = False  # all stages run in post()

    def post(self, sendbuf, vn, op, recvbuf=None):  # host buffers only; recvbuf: unused
        t = self.topo
        off = t.nbr_offsets
        records = [
            (q, t.rank, sendbuf[vn * int(off[g]) : vn * int(off[g + 1])]) for g, q in enumerate(t.nbr_ranks.tolist())
        ]
        # the first exchange of each vn learns the stage headers (sizes); later ones reuse them
        key = ("headers", vn)
        got, self._cache[key] = route(self.comm, records, sendbuf.dtype, self._cache.get(key))
        recvbuf = np.empty(vn * int(off[-1]), dtype=sendbuf.dtype)
        where = {q: g for g, q in enumerate(t.nbr_ranks.tolist())}
        seen = 0
        for d, s, p in got:
            g = where.get(s)
            a, b = (vn * int(off[g]), vn * int(off[g + 1])) if g is not None else (0, -1)
            if d != t.rank or g is None or len(p) != b - a:
                raise RuntimeError(
                    f"crystal router: rank {t.rank} got a bad record (dest {d}, src {s}, {len(p)} values)"
                )
            recvbuf[a:b] = p
            seen += 1
        if seen != t.nnbr:
            raise RuntimeError(f"crystal router: rank {t.rank} got {seen} messages, expected {t.nnbr}")
        return recvbuf

    def wait(self, request):
        return request

    def bytes_per_exchange(self, vn: int = 1, itemsize: int = 8) -> int:
        # payload this rank originates; forwarding adds up to log2(P) times that in transit
        return super().bytes_per_exchange(vn, itemsize)
