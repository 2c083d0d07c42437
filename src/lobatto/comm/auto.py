"""Automatic choice of the exchange method, made identically on every rank.

At setup each candidate method runs a few timed trials of a real exchange on
this gather-scatter's topology (zeros, op "sum") for vn = 1 and, when given, the
caller's ``vn_hint``.  Each rank takes the median of its trials per vn and adds
them; the per-method totals are reduced with MAX over ranks (an exchange is as
slow as its slowest rank), so every rank sees the same numbers and picks the
same, fastest method.  Ties go to the earlier method in ``METHODS``.
"""

from __future__ import annotations

import numpy as np

from lobatto.comm import local
from lobatto.comm.allreduce import AllreduceExchange
from lobatto.comm.crystal_router import CrystalRouterExchange
from lobatto.comm.pairwise import PairwiseExchange

#: exchange methods by name, in order of preference on ties
METHODS = {
    "pairwise": PairwiseExchange,
    "crystal_router": CrystalRouterExchange,
    "allreduce": AllreduceExchange,
}


def time_method(exchange, vn: int, trials: int = 5, warmup: int = 1) -> float:
    """Median seconds of one exchange (pack + transport + unpack) on this rank."""
    from mpi4py import MPI

    vals = np.zeros((vn, exchange.topo.nshared_ids))
    for _ in range(warmup):
        exchange.run(vals, "sum", local)
    times = []
    for _ in range(trials):
        exchange.comm.Barrier()
        t0 = MPI.Wtime()
        exchange.run(vals, "sum", local)
        times.append(MPI.Wtime() - t0)
    return float(np.median(times))


def choose(comm, topo, vn_hint: int | None = None, trials: int = 5):
    """Collective: returns (name, exchange object, {name: seconds}) chosen identically on all ranks."""
    from mpi4py import MPI

    vns = [1] if not vn_hint or vn_hint == 1 else [1, int(vn_hint)]
    objs, mine = {}, []
    for name, cls in METHODS.items():
        ex = cls(comm, topo)
        objs[name] = ex
        mine.append(sum(time_method(ex, vn, trials) for vn in vns))
    worst = np.empty(len(mine))
    comm.Allreduce(np.array(mine), worst, op=MPI.MAX)
    timings = {name: float(t) for name, t in zip(METHODS, worst)}
    best = list(METHODS)[int(np.argmin(worst))]
    return best, objs[best], timings
