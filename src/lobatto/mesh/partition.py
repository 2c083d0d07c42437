"""Partitioning elements over ranks.

`rcb`: recursive coordinate bisection of a box's element index ranges. Each cut splits the
side of a sub-box (the one whose cut best matches the share) in proportion to the ranks on each side, so every rank computes
its own part in O(log P) work from the box dimensions alone (no global arrays).
`metis`: METIS through pymetis on the element graph; the graph is built on every rank
(serial in the global mesh size, documented in docs/parallel.md).
`rsb`: recursive spectral bisection of the element face graph, numpy only. Like `metis` it is
serial in the global mesh size: every rank builds the whole graph and runs the same bisections
(O(E log P) work and O(E) memory per rank, E the global element count), following only its own
branch of the bisection tree, so ranks agree on the partition without communicating.

`partition_mesh` does the same for any mesh (a file's), which every rank holds whole: rcb
bisects the element centroids, rsb and metis take the face graph (periodic faces included).
"""

from __future__ import annotations

import numpy as np

from lobatto.errors import InputError

PARTITIONERS = ("rcb", "metis", "rsb")


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
            f"[mesh] {total} element{'s' if total != 1 else ''} cannot be shared by {num_parts} ranks: a rank would be "
            "left without elements; use fewer ranks or more elements"
        )
    if method == "rcb":
        counts = tuple(elements) + (1,) * (3 - len(elements))  # a 2-D box: one element along z
        ids = box_element_ids(counts, *rcb_box_part(counts, num_parts, part))
    elif method == "metis":
        ids = _metis_box(elements, num_parts, part)
    elif method == "rsb":
        ids = _rsb_box(elements, num_parts, part)
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


# --------------------------------------------------------------------------- rsb
# Recursive spectral bisection. Every rank runs the same floating-point operations on the same
# graph, so every rank gets the same cuts: no random numbers, a start vector from the element
# indices, reductions that do not depend on the BLAS thread count (numpy's own loops, not
# BLAS, whose multithreaded dot and gemv split the sum by thread), and ties in the Fiedler vector
# (symmetric meshes) broken by the global element id after rounding the vector to 2**-30 of
# its largest entry, far above round-off.

_QUANTUM = 2.0**30


def _rsb_box(elements, num_parts, part):
    from lobatto.mesh.box import box_mesh

    # serial: the whole graph is built on each rank. The partitioner is given the element counts
    # only, so like metis it sees the non-periodic graph.
    mesh = box_mesh(elements)
    return rsb_part(mesh.face_neighbour, mesh.element_labels, num_parts, part)


def rsb_part(neighbour, coords, num_parts: int, part: int) -> np.ndarray:
    """Element ids (ascending) of `part` when the graph is bisected recursively into num_parts.

    neighbour: (E, k) neighbour ids, -1 where none (the element face graph; symmetric).
    coords:    (E, d) element positions (box indices will do), used only for start vectors.

    Each bisection gives the first `count//2` of the `count` ranks of the current sub-graph
    floor(n * (count//2) / count) of its n elements: those with the smallest Fiedler values.
    Part sizes therefore differ by at most one element.
    """
    neighbour = np.asarray(neighbour, dtype=np.int64)
    coords = np.asarray(coords, dtype=np.float64).reshape(len(neighbour), -1)
    total = len(neighbour)
    ids = np.arange(total, dtype=np.int64)
    local = np.full(total + 1, -1, dtype=np.int64)  # local[-1] stays -1 for "no neighbour"
    first, count = 0, num_parts
    while count > 1:
        n = ids.size
        left = count // 2
        n_left = n * left // count
        local[ids] = np.arange(n)
        sub = local[neighbour[ids]]
        local[ids] = -1
        here = coords[ids]
        extent = here.max(axis=0) - here.min(axis=0)
        start = here[:, int(np.argmax(extent))] if extent.size and extent.max() > 0 else np.arange(n, dtype=np.float64)
        _, vector = fiedler_vector(sub, start)
        # smallest values (low coordinates) to the left, ties by global element id
        key = np.rint(vector * (_QUANTUM / max(float(np.abs(vector).max()), 1e-300))).astype(np.int64)
        order = np.lexsort((ids, key))
        if part < first + left:
            ids, count = np.sort(ids[order[:n_left]]), left
        else:
            ids, first, count = np.sort(ids[order[n_left:]]), first + left, count - left
    return ids


def _sum(x, axis=None):
    # Sums over elements use numpy's own loops (pairwise sum, einsum), never BLAS: OpenBLAS
    # splits dot and gemv over its threads, so their last bits depend on the thread count,
    # and ranks must agree to the bit.
    return np.add.reduce(x, axis=axis)


def fiedler_vector(neighbour, start, tol: float = 1e-2, basis: int = 60, restarts: int = 10):
    """(lambda_2, v_2) of the graph Laplacian L = D - A, by Lanczos with full reorthogonalisation.

    neighbour: (n, k) local neighbour indices, -1 where none; L x = degree*x - sum of x[neighbours].
    start:     (n,) start vector; the constant (L's null vector) is projected out of every
               Krylov vector. A vector close to the answer (a coordinate along the longest
               extent on a box) converges in a few dozen matrix-vector products.
    Stops when the residual ||L v - lambda v|| <= tol * lambda (so the vector is off by about
    tol * lambda / gap, gap the distance to the next eigenvalue: plenty for placing a cut; pass a
    small tol for an accurate eigenpair), or <= 1e-12 ||L|| when lambda = 0; restarts from the
    Ritz vector when `basis` vectors are not enough. v is normalised, has mean zero,
    and its sign makes v . start >= 0. On a disconnected graph lambda_2 = 0 and v separates
    components.
    """
    neighbour = np.asarray(neighbour, dtype=np.int64)
    n = len(neighbour)
    start = np.asarray(start, dtype=np.float64)
    if n < 2:
        return 0.0, np.zeros(n)
    # (k, n); a missing neighbour points at the element itself, so it adds x - x = 0
    padded = np.where(neighbour >= 0, neighbour, np.arange(n)[:, None]).T.copy()
    scale = 2.0 * max(float(_sum(neighbour >= 0, axis=1).max()), 1.0)  # >= ||L||

    def laplacian(x):
        # sum over neighbours of (x - x[neighbour]), elementwise only: two elements whose
        # neighbourhoods hold the same values get the same bits (a layer of a box)
        y = x - x[padded[0]]
        for column in padded[1:]:
            y += x - x[column]
        return y

    def combine(coefficients, vectors):
        # sum_i c_i vectors[i]; reducing over axis 0 adds row after row, elementwise
        return _sum(coefficients[:, None] * vectors, axis=0)

    def deflated_unit(x):
        x = x - _sum(x) / n
        norm = np.sqrt(_sum(x * x))
        return x / norm if norm > 0 else None

    q = deflated_unit(start)
    if q is None:
        q = deflated_unit(np.arange(n, dtype=np.float64))
    m = min(basis, n - 1)  # the deflated space has dimension n - 1
    Q = np.empty((m, n))
    theta = 0.0
    for _ in range(restarts):
        alpha, beta = np.zeros(m), np.zeros(m)
        steps, converged = 0, False
        for j in range(m):
            Q[j] = q
            w = laplacian(q)
            basis_j = Q[: j + 1]
            h = np.einsum("ij,j->i", basis_j, w)  # numpy loops, not BLAS: see _sum
            w -= combine(h, basis_j)
            alpha[j] = h[j]
            h = np.einsum("ij,j->i", basis_j, w)  # second pass of classical Gram-Schmidt
            w -= combine(h, basis_j)
            alpha[j] += h[j]
            w -= _sum(w) / n
            beta[j] = np.sqrt(_sum(w * w))
            steps = j + 1
            last = j == m - 1
            invariant = beta[j] <= 1e-14 * scale
            if steps % 4 == 0 or last or invariant:
                T = np.diag(alpha[:steps]) + np.diag(beta[: steps - 1], 1) + np.diag(beta[: steps - 1], -1)
                values, vectors = np.linalg.eigh(T)
                theta, s = float(values[0]), vectors[:, 0]
                if invariant or beta[j] * abs(s[-1]) <= max(tol * theta, 1e-12 * scale):
                    converged = True
                    break
            if last:
                break
            q = w / beta[j]
        v = deflated_unit(combine(s, Q[:steps]))
        if converged or v is None:
            break
        q = v
    if v is None:
        v = q
    if _sum(v * start) < 0:
        v = -v
    return theta, v


# --------------------------------------------------------------------------- general meshes
def element_centroids(mesh) -> np.ndarray:
    """(E, 3) mean of each element's corners."""
    return mesh.vertices[mesh.element_vertices].mean(axis=1)


def partition_mesh(mesh, num_parts: int, part: int, method: str = "rcb") -> np.ndarray:
    """Global element ids (sorted) that `part` owns of a whole mesh, the same on every rank.

    rcb: recursive coordinate bisection of the element centroids. Like the box version each
    cut gives the ranks on either side a share of the elements in proportion to their number;
    the cut is made along the axis along which the centroids spread furthest, the elements
    ordered by centroid (ties by element id), so the parts differ by at most one element.
    rsb: spectral bisection of the face graph, started from the centroids. metis: pymetis on
    the face graph."""
    total = mesh.num_elements
    if num_parts > total:
        raise InputError(
            f"[mesh] {total} element{'s' if total != 1 else ''} cannot be shared by {num_parts} ranks: a rank would be "
            "left without elements; use fewer ranks or a finer mesh"
        )
    ids = mesh.element_ids
    if method == "rcb":
        local = rcb_points(element_centroids(mesh), num_parts, part)
    elif method == "rsb":
        neighbour = np.where(mesh.face_neighbour >= 0, mesh.local_index(mesh.face_neighbour), -1)
        local = rsb_part(neighbour, element_centroids(mesh), num_parts, part)
    elif method == "metis":
        local = _metis_graph(mesh, num_parts, part)
    else:
        raise InputError(f"[parallel] unknown partitioner '{method}' (expected one of {', '.join(PARTITIONERS)})")
    if local.size == 0:
        raise InputError(f"[parallel] the '{method}' partition leaves rank {part} without elements")
    return np.sort(ids[local])


def rcb_points(points: np.ndarray, num_parts: int, part: int) -> np.ndarray:
    """Indices (ascending) of the points in `part` when they are bisected recursively."""
    points = np.asarray(points, dtype=np.float64)
    chosen = np.arange(len(points), dtype=np.int64)
    first, count = 0, num_parts
    while count > 1:
        left = count // 2
        n_left = len(chosen) * left // count
        here = points[chosen]
        axis = int(np.argmax(here.max(axis=0) - here.min(axis=0)))
        order = np.lexsort((chosen, here[:, axis]))
        if part < first + left:
            chosen, count = np.sort(chosen[order[:n_left]]), left
        else:
            chosen, first, count = np.sort(chosen[order[n_left:]]), first + left, count - left
    return chosen


def _metis_graph(mesh, num_parts, part):
    try:
        import pymetis
    except ImportError:
        raise InputError("[parallel] partitioner 'metis' needs pymetis (pip install pymetis)") from None
    neighbour = np.where(mesh.face_neighbour >= 0, mesh.local_index(mesh.face_neighbour), -1)
    # METIS wants a simple graph: no self-loops (an element periodic onto itself), no repeats
    adjacency = [sorted(set(row[(row >= 0) & (row != e)].tolist())) for e, row in enumerate(neighbour)]
    _, membership = pymetis.part_graph(num_parts, adjacency=adjacency)
    return np.flatnonzero(np.asarray(membership) == part).astype(np.int64)
