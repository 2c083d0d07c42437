"""Gather-scatter (gslib ``gs``-class): combine values of points that share an id.

>>> gs = GatherScatter(ids, comm)          # setup (collective when comm has > 1 rank)
>>> gs.apply(u, "sum")                     # u: (n,) or (vn, n), in place
>>> h = gs.start(u, "max"); ...; gs.finish(h)

See docs/gather-scatter.md.
"""

from lobatto.comm.gather_scatter import METHOD_NAMES, GatherScatter, Handle
from lobatto.comm.ops import OPS

__all__ = ["METHOD_NAMES", "OPS", "GatherScatter", "Handle"]
