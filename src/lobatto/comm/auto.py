"""Automatic choice of the exchange method, made identically on every rank.

At setup each candidate method runs a few timed trials (methods taking turns) of a real exchange on
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


def time_methods(exchanges, vn: int, trials: int = 10, warmup: int = 2) -> list[float]:
    """Median seconds of one exchange (pack + transport + unpack) per method, on this rank.

    The methods take turns within every trial (barrier before each), so a burst
    of load from elsewhere on the machine does not favour one of them.
    """
    from mpi4py import MPI

    vals = np.zeros((vn, exchanges[0].topo.nshared_ids))
    for ex in exchanges:
        for _ in range(warmup):
            ex.run(vals, "sum", local)
    times = np.empty((len(exchanges), trials))
    for i in range(trials):
        for j, ex in enumerate(exchanges):
            ex.comm.Barrier()
            t0 = MPI.Wtime()
            ex.run(vals, "sum", local)
            times[j, i] = MPI.Wtime() - t0
    return np.median(times, axis=1).tolist()


def choose(comm, topo, vn_hint: int | None = None, trials: int = 10):
    """Collective: returns (name, exchange object, {name: seconds}) chosen identically on all ranks."""
    from mpi4py import MPI

    vns = [1] if not vn_hint or vn_hint == 1 else [1, int(vn_hint)]
    objs = {name: cls(comm, topo) for name, cls in METHODS.items()}
    mine = np.zeros(len(objs))
    for vn in vns:
        mine += np.array(time_methods(list(objs.values()), vn, trials))
    worst = np.empty(len(mine))
    comm.Allreduce(mine, worst, op=MPI.MAX)
    timings = {name: float(t) for name, t in zip(METHODS, worst)}
    best = list(METHODS)[int(np.argmin(worst))]
    return best, objs[best], timings
