"""The face exchange of one Maxwell stage, rank by rank (docs/comm-model.md).

What the DG exchange sends (systems/dg.py, comm/pairwise.py): before every stage, each rank
sends each neighbour rank one message holding, for every face point it shares with that
rank, the ``trace_components`` values of that point (Maxwell: -n x E and -n x H, 6 values;
the fused CUDA path's GhostExchange sends the same 6 per shared point). A face of an element
of order N has (N+1)^2 points, each with its own id shared by exactly the two faces of the
pair, so a neighbour sharing F faces gets F (N+1)^2 x 6 x itemsize bytes. Only faces count:
DG elements meeting at an edge or a corner exchange nothing.

Two sources of the pattern:

- ``partition_pattern``: lobatto's own partition of a box (``mesh.partition.partition_box``)
  and the box's face connectivity, for the small rank counts that can be run and checked
  against the gather-scatter's own neighbour lists.
- ``block_pattern``: weak scaling, each rank one block of elements in a grid of ranks, the
  busiest rank (the most neighbours) written down without building any mesh, for any P.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import numpy as np

#: values per shared face point of the Maxwell exchange (MaxwellSystem.trace_components)
MAXWELL_TRACES = 6


@dataclass
class RankPattern:
    """One rank's exchange in one stage."""

    rank: int
    elements: int
    halo_elements: int  # elements with a face on another rank (updated after the exchange)
    neighbours: dict = field(default_factory=dict)  # neighbour rank -> shared faces

    def message_bytes(self, order: int, components: int = MAXWELL_TRACES, itemsize: int = 8) -> dict:
        """neighbour rank -> bytes of the message to it."""
        per_face = (order + 1) ** 2 * components * itemsize
        return {q: f * per_face for q, f in self.neighbours.items()}

    def as_dict(self, order: int, components: int = MAXWELL_TRACES, itemsize: int = 8) -> dict:
        sizes = self.message_bytes(order, components, itemsize)
        return {"rank": self.rank, "elements": self.elements, "halo_elements": self.halo_elements,
                "neighbours": sorted(self.neighbours), "faces": [self.neighbours[q] for q in sorted(self.neighbours)],
                "message_bytes": [sizes[q] for q in sorted(sizes)], "bytes": int(sum(sizes.values()))}


def partition_pattern(elements, ranks: int, periodic=(False, False, False), method: str = "rcb") -> list[RankPattern]:
    """Every rank's pattern for lobatto's partition of the box ``elements`` over ``ranks``
    (builds the whole box's connectivity: for the rank counts that can be run)."""
    from lobatto.mesh.box import box_mesh
    from lobatto.mesh.partition import partition_box

    mesh = box_mesh(elements, periodic=periodic)
    part = np.empty(mesh.num_elements, dtype=np.int64)
    for r in range(ranks):
        part[partition_box(elements, ranks, r, method)] = r
    nb = mesh.face_neighbour  # (E, 6), global element ids (the box builds all of them in order)
    has = nb >= 0
    other = np.where(has, part[np.where(has, nb, 0)], -1)
    cut = has & (other != part[:, None])
    patterns = []
    for r in range(ranks):
        mine = part == r
        q, faces = np.unique(other[mine][cut[mine]], return_counts=True)
        patterns.append(RankPattern(rank=r, elements=int(mine.sum()), halo_elements=int(cut[mine].any(axis=1).sum()),
                                    neighbours={int(a): int(b) for a, b in zip(q, faces)}))
    return patterns


def rank_grid(ranks: int) -> tuple[int, int, int]:
    """(px, py, pz) with px*py*pz = ranks and the least cut area (px + py + pz smallest),
    largest first: the box decomposition of a weak-scaling run."""
    best = None
    for px in range(1, ranks + 1):
        if ranks % px:
            continue
        rest = ranks // px
        for py in range(1, rest + 1):
            if rest % py:
                continue
            dims = tuple(sorted((px, py, rest // py), reverse=True))
            if best is None or sum(dims) < sum(best):
                best = dims
    return best


def block_pattern(block, grid, periodic: bool = False) -> RankPattern:
    """The busiest rank of a grid ``grid`` = (px, py, pz) of ranks, each holding ``block`` =
    (bx, by, bz) elements: along an axis with p ranks it has min(p - 1, 2) neighbours without
    periodic wrap; with it, one neighbour sharing both sides when p = 2 and two when p > 2."""
    block, grid = tuple(int(b) for b in block), tuple(int(p) for p in grid)
    neighbours, shared_sides = {}, []
    area = (block[1] * block[2], block[0] * block[2], block[0] * block[1])
    for axis, p in enumerate(grid):
        if p == 1:
            shared_sides.append(0)
            continue
        if periodic and p == 2:
            neighbours[(axis, 1)] = 2 * area[axis]
            shared_sides.append(2)
            continue
        count = 2 if (periodic or p > 2) else 1
        for side in range(count):
            neighbours[(axis, side)] = area[axis]
        shared_sides.append(count)
    inner = [max(b - s, 0) for b, s in zip(block, shared_sides)]
    total = int(np.prod(block))
    return RankPattern(rank=-1, elements=total, halo_elements=total - int(np.prod(inner)),
                       neighbours={i: f for i, f in enumerate(neighbours.values())})


def block_of(elements_per_rank: float) -> tuple[int, int, int]:
    """The cube of elements closest to ``elements_per_rank``."""
    side = max(1, int(round(float(elements_per_rank) ** (1 / 3))))
    return (side, side, side)

