"""Partitioning elements over ranks.

`rcb`: recursive coordinate bisection of a box's element index ranges. Each cut splits the
side of a sub-box (the one whose cut best matches the share) in proportion to the ranks on each side, so every rank computes
its own part in O(log P) work from the box dimensions alone (no global arrays).
`metis`: METIS through pymetis on the element graph; the graph is built on every rank
(serial in the global mesh size, documented in docs/parallel.md).
"""

from __future__ import annotations

import numpy as np

from lobatto.errors import InputError

PARTITIONERS = ("rcb", "metis")


def rcb_box_part(elements, num_parts: int, part: int) -> tuple[np.ndarray, np.ndarray]:
    """Index range [lo, hi) of `part`'s sub-box when the box is split into num_parts."""
    lo, hi = np.zeros(3, dtype=np.int64), np.asarray(elements, dtype=np.int64).copy()
    first, count = 0, num_parts
    while count > 1:
        sizes = hi - lo
        left = count // 2
        # Cut where the element count best matches the ranks' share; longer sides win ties.
        target = np.prod(sizes) * left / count
        best = None
        for axis in np.argsort(-sizes, kind="stable"):
            width = int(round(sizes[axis] * left / count))
            width = min(max(width, 1 if sizes[axis] > 1 else 0), sizes[axis])
            miss = abs(width * np.prod(sizes) / sizes[axis] - target)
            if best is None or miss < best[0]:
                best = (miss, int(axis), width)
        _, axis, width = best
        cut = lo[axis] + width
        if part < first + left:
            hi[axis], count = cut, left
        else:
            lo[axis], first, count = cut, first + left, count - left
    return lo, hi


def box_element_ids(elements, lo, hi) -> np.ndarray:
    nx, ny, _ = (int(n) for n in elements)
    iz, iy, ix = np.meshgrid(np.arange(lo[2], hi[2]), np.arange(lo[1], hi[1]), np.arange(lo[0], hi[0]), indexing="ij")
    return (ix + nx * (iy + ny * iz)).ravel().astype(np.int64)


def partition_box(elements, num_parts: int, part: int, method: str = "rcb") -> np.ndarray:
    """Global element ids owned by `part` (sorted)."""
    total = int(np.prod(elements))
    if num_parts > total:
        raise InputError(
            f"[mesh] {total} elements cannot be shared by {num_parts} ranks: a rank would be left "
            "without elements; use fewer ranks or more elements"
        )
    if method == "rcb":
        ids = box_element_ids(elements, *rcb_box_part(elements, num_parts, part))
    elif method == "metis":
        ids = _metis_box(elements, num_parts, part)
    else:
        raise InputError(f"[parallel] unknown partitioner '{method}' (expected one of {', '.join(PARTITIONERS)})")
    if ids.size == 0:
        raise InputError(f"[parallel] the '{method}' partition leaves rank {part} without elements")
    return np.sort(ids)


def _metis_box(elements, num_parts, part):
    try:
        import pymetis
    except ImportError:
        raise InputError("[parallel] partitioner 'metis' needs pymetis (pip install pymetis)") from None
    from lobatto.mesh.box import box_mesh

    mesh = box_mesh(elements)  # serial: the whole graph is built on each rank
    adjacency = [list(row[row >= 0]) for row in mesh.face_neighbour]
    _, membership = pymetis.part_graph(num_parts, adjacency=adjacency)
    return np.flatnonzero(np.asarray(membership) == part).astype(np.int64)
