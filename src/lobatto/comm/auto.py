"""Automatic choice of the exchange method, made identically on every rank.

At setup each candidate method runs, with the transport it will use (host
staging, NCCL or CUDA-aware MPI; see ``comm/transport``), a few timed trials (methods taking turns) of a real exchange on
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


def _host_sync():
    return None


def time_methods(routes, vn: int, trials: int = 10, warmup: int = 2, sync=_host_sync) -> list[float]:
    """Median seconds of one exchange (pack + transport + unpack) per route, on this rank.

    ``routes``: :class:`lobatto.comm.transport.Route` objects (method, transport, kernels);
    zeros of the routes' array module are exchanged; ``sync()`` waits for the device
    (a no-op on the host) so that each time covers the whole exchange.  The methods take
    turns within every trial (barrier before each), so a burst of load from elsewhere on
    the machine does not favour one of them.
    """
    from mpi4py import MPI

    r0 = routes[0]
    vals = r0.k.xp.zeros((vn, r0.ex.topo.nshared_ids))
    for r in routes:
        for _ in range(warmup):
            r.run(vals, "sum")
    sync()
    times = np.empty((len(routes), trials))
    for i in range(trials):
        for j, r in enumerate(routes):
            r.ex.comm.Barrier()
            t0 = MPI.Wtime()
            r.run(vals, "sum")
            sync()
            times[j, i] = MPI.Wtime() - t0
    return np.median(times, axis=1).tolist()


def choose(comm, topo, vn_hint: int | None = None, trials: int = 10, k=local, transport_for=None, sync=_host_sync):
    """Collective: returns (name, Route, {name: seconds}) chosen identically on all ranks.

    ``k``: local-kernel module of the data (NumPy's by default); ``transport_for(name)``:
    the transport each method would use (host by default), so the timing covers the
    transport that will really run.
    """
    from mpi4py import MPI

    from lobatto.comm.transport import HostTransport, Route

    if transport_for is None:
        host = HostTransport(comm)

        def transport_for(name):
            return host

    vns = [1] if not vn_hint or vn_hint == 1 else [1, int(vn_hint)]
    routes = {name: Route(name, cls(comm, topo), transport_for(name), k) for name, cls in METHODS.items()}
    mine = np.zeros(len(routes))
    for vn in vns:
        mine += np.array(time_methods(list(routes.values()), vn, trials, sync=sync))
    worst = np.empty(len(mine))
    comm.Allreduce(mine, worst, op=MPI.MAX)
    timings = {name: float(t) for name, t in zip(METHODS, worst)}
    best = list(METHODS)[int(np.argmin(worst))]
    return best, routes[best], timings
