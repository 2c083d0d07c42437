"""Distributed discovery of which ranks share each id (gslib-style, no root).

Each rank sends each of its unique ids to the owner rank ``id % P``
(one ``Alltoallv``).  An owner sorts what it got by (id, source rank); an id
that came from two or more ranks is *shared*: the owner numbers it (a global
shared-id index, contiguous over owners through an exclusive scan) and answers
every sharer with (id, other sharer, global index) for each other sharer
(a second ``Alltoallv``).  Memory and messages per rank are proportional to the
rank's own ids, never to the global problem.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Topology:
    """Who shares what with this rank, in terms of the rank's shared ids.

    The rank's shared ids are numbered 0..ns-1 in increasing id order.
    """

    rank: int
    size: int
    shared_mask: np.ndarray  # bool per local unique id (input order): shared?
    nbr_ranks: np.ndarray  # neighbour ranks, increasing
    nbr_counts: np.ndarray  # ids shared with each neighbour
    nbr_offsets: np.ndarray  # start of each neighbour in nbr_idx (len nnbr+1)
    nbr_idx: np.ndarray  # shared-id numbers, neighbour-major, increasing id within
    gidx: np.ndarray  # global shared-id index of each shared id
    nglobal: int  # number of shared ids over all ranks

    @property
    def nshared_ids(self) -> int:
        return len(self.gidx)

    @property
    def nnbr(self) -> int:
        return len(self.nbr_ranks)


def _alltoallv(comm, send: np.ndarray, counts: np.ndarray, width: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Alltoallv of int64 records of ``width`` values; ``send`` sorted by destination."""
    from mpi4py import MPI

    P = comm.Get_size()
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    rcounts = np.zeros(P, dtype=np.int64)
    comm.Alltoall([counts, MPI.INT64_T], [rcounts, MPI.INT64_T])
    sc = (counts * width).astype(np.int64)
    rc = (rcounts * width).astype(np.int64)
    sd = np.zeros(P, dtype=np.int64)
    rd = np.zeros(P, dtype=np.int64)
    sd[1:] = np.cumsum(sc)[:-1]
    rd[1:] = np.cumsum(rc)[:-1]
    recv = np.empty(int(rc.sum()), dtype=np.int64)
    sendbuf = np.ascontiguousarray(send, dtype=np.int64).reshape(-1)
    comm.Alltoallv([sendbuf, (sc, sd), MPI.INT64_T], [recv, (rc, rd), MPI.INT64_T])
    return recv.reshape(-1, width) if width > 1 else recv, rcounts


def discover(comm, uids: np.ndarray) -> Topology:
    """Collective over ``comm``: find the sharers of each of this rank's unique ids.

    ``uids``: this rank's unique nonzero ids, increasing.
    """
    from mpi4py import MPI

    P = comm.Get_size()
    me = comm.Get_rank()
    uids = np.asarray(uids, dtype=np.int64)

    # 1. route ids to their owners
    owner = uids % P
    order = np.argsort(owner, kind="stable")
    got, gcounts = _alltoallv(comm, uids[order], np.bincount(owner, minlength=P))
    src = np.repeat(np.arange(P, dtype=np.int64), gcounts)

    # 2. owners group by (id, source rank); groups of >= 2 ranks are shared
    o = np.lexsort((src, got))
    gid, gsrc = got[o], src[o]
    first = np.ones(len(gid), dtype=bool)
    first[1:] = gid[1:] != gid[:-1]
    gstart = np.flatnonzero(first)
    gsize = np.diff(np.append(gstart, len(gid)))
    gshared = gsize >= 2
    nown = int(gshared.sum())
    offset = comm.exscan(nown, op=MPI.SUM)
    offset = 0 if (me == 0 or offset is None) else int(offset)
    nglobal = int(comm.allreduce(nown, op=MPI.SUM))
    ggl = np.full(len(gstart), -1, dtype=np.int64)
    ggl[gshared] = offset + np.arange(nown, dtype=np.int64)

    # 3. all ordered pairs (a, b), a != b, inside each shared group
    sstart, ssize = gstart[gshared], gsize[gshared]
    sgl = ggl[gshared]
    members = np.repeat(np.arange(len(sstart)), ssize)  # group of each member record
    rec = np.repeat(sstart, ssize) + (np.arange(int(ssize.sum())) - np.repeat(np.cumsum(ssize) - ssize, ssize))
    # each member record r of group g is paired with every member of g
    rep = ssize[members]
    a = np.repeat(rec, rep)
    grp_of_a = np.repeat(members, rep)
    first_of_pair = np.repeat(np.cumsum(rep) - rep, rep)
    b = sstart[grp_of_a] + (np.arange(len(a)) - first_of_pair)
    keep = a != b
    a, b, grp_of_a = a[keep], b[keep], grp_of_a[keep]
    dest = gsrc[a]
    reply = np.stack([gid[a], gsrc[b], sgl[grp_of_a]], axis=1)
    order = np.argsort(dest, kind="stable")
    recv, _ = _alltoallv(comm, reply[order], np.bincount(dest, minlength=P), width=3)
    if recv.ndim == 1:
        recv = recv.reshape(-1, 3)

    # 4. this rank: its shared ids, their neighbours and global numbers
    rid, rnbr, rgl = recv[:, 0], recv[:, 1], recv[:, 2]
    shared_ids = np.unique(rid)
    shared_mask = np.isin(uids, shared_ids)
    gidx = np.empty(len(shared_ids), dtype=np.int64)
    sidx = np.searchsorted(shared_ids, rid)
    gidx[sidx] = rgl
    o = np.lexsort((rid, rnbr))
    nbr_sorted = rnbr[o]
    nbr_idx = sidx[o].astype(np.int64)
    nbr_ranks, nbr_counts = np.unique(nbr_sorted, return_counts=True)
    nbr_offsets = np.zeros(len(nbr_ranks) + 1, dtype=np.int64)
    nbr_offsets[1:] = np.cumsum(nbr_counts)
    return Topology(
        rank=me,
        size=P,
        shared_mask=shared_mask,
        nbr_ranks=nbr_ranks.astype(np.int64),
        nbr_counts=nbr_counts.astype(np.int64),
        nbr_offsets=nbr_offsets,
        nbr_idx=nbr_idx,
        gidx=gidx,
        nglobal=nglobal,
    )


def serial_topology(nuids: int) -> Topology:
    """The topology of a rank alone: nothing shared."""
    z = np.zeros(0, dtype=np.int64)
    return Topology(0, 1, np.zeros(nuids, dtype=bool), z, z, np.zeros(1, dtype=np.int64), z, z, 0)
