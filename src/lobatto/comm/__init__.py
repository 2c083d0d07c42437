"""Gather-scatter (gslib ``gs``-class): combine values of points that share an id.

>>> gs = GatherScatter(ids, comm)          # setup (collective when comm has > 1 rank)
>>> gs.apply(u, "sum")                     # u: (n,) or (vn, n), in place
>>> h = gs.start(u, "max"); ...; gs.finish(h)
>>> GatherScatter(ids, comm, xp=cupy, exchange="nccl")   # device-resident exchange

See docs/gather-scatter.md.
"""

from lobatto.comm.gather_scatter import METHOD_NAMES, GatherScatter, Handle
from lobatto.comm.ops import OPS
from lobatto.comm.transport import EXCHANGE_NAMES

__all__ = ["EXCHANGE_NAMES", "METHOD_NAMES", "OPS", "GatherScatter", "Handle"]
