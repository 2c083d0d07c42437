"""Sub-cell (subpixel) averaging of a material table: ``sampling = "average"``.

Each GLL point owns a control volume: in reference coordinates the box whose width along each
axis is the point's GLL weight (the intervals [-1 + sum_{j<i} w_j, -1 + sum_{j<=i} w_j], which
tile the element), mapped by the element's own polynomial map. With the diagonal (GLL) mass
matrix, sum_i M_i <eps>_i is then the integral of a piecewise-constant eps over an affine
element exactly; the midpoints between the nodes as bounds would not give that (measured: they
made the slab below worse than point sampling). It is sampled at S^3 points (S = SUBSAMPLES per direction, midpoints of
equal sub-boxes in reference coordinates), where the table's ``where`` (or region) and values
are evaluated. With m the fraction of the sub-points inside the table, v its value there and o
the value the point had before the table (the background or earlier tables, at the point):
(a sub-point's m_s is its sub-box's share inside, from the ``where`` level set made linear
over the point's volume: exact for planes normal to an axis, whatever S; ``membership``)

    <eps> = mean(m_s v_s) + (1 - m) o          <1/eps> = mean(m_s / v_s) + (1 - m) / o

and, where the volume is cut (0 < m < 1), the Farjadpour/Meep rule (Farjadpour et al., Opt.
Lett. 31, 2972 (2006); Kottke et al., PRE 77, 036611 (2008)) with the interface normal n:
the harmonic mean 1/<1/eps> for the field component along n, the mean <eps> across it,

    eps_eff = <1/eps>^-1 n n^T + <eps> (I - n n^T)

of which lobatto keeps the diagonal in the x, y, z axes (anisotropy.py's diagonal tensor),
eps_ii = n_i^2 / <1/eps> + (1 - n_i^2) <eps>: exact for interfaces normal to an axis; for a
normal at an angle the off-diagonal terms n_i n_j (1/<1/eps> - <eps>) are dropped. n is the
direction of the level set's gradient fitted over the point's sub-points. mu is treated the same
way; sigma takes the plain mean. Where the volume is not cut the point gets the plain mean
(isotropic). A table with sampling = "average" makes eps and mu diagonal tensors everywhere
(the anisotropic path), on every rank alike.

A dispersive table's eps_inf (and mu, sigma) is averaged so; its poles are not: they act at the
points whose control volume lies more than half inside the table (``shares``; materials.py's
pole_mask), as Meep averages only the instantaneous part of eps and mu.
"""

from __future__ import annotations

import numpy as np

from lobatto.discretization.gll import gll_weights, interpolation_matrix
from lobatto.systems.maxwell.anisotropy import by_component
from lobatto.discretization.tensor import dimension_of

SUBSAMPLES = 4  # sub-points per direction per GLL point: 64 per point
CHUNK_POINTS = 2_000_000  # sub-points evaluated at once (memory: about 0.2 GB of float64 at this)


def sub_points(order: int, s: int = SUBSAMPLES) -> tuple:
    """(reference coordinates (n s,), interpolation matrix (n s, n)) of the sub-points, the s
    of GLL point i's control interval in order."""
    edges = np.concatenate([[-1.0], -1.0 + np.cumsum(gll_weights(order))])
    edges[-1] = 1.0  # (the weights sum to 2)
    fractions = (np.arange(s) + 0.5) / s
    targets = np.concatenate([edges[i] + fractions * (edges[i + 1] - edges[i]) for i in range(order + 1)])
    return targets, interpolation_matrix(order, targets)


def sub_coordinates(matrix: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """(3, c, m, m, m): the sub-points of elements ``coords`` (3, c, n, n, n), interpolated one
    axis at a time (m n^3 + m^2 n^2 + m^3 n per element, not the m^3 n^3 of one contraction:
    0.7 s an element at N = 7 before); two-operand einsums, so each element's values do not
    depend on how many elements a chunk holds (the same bits on any number of ranks). A 2-D
    element (3, c, 1, n, n) gives (3, c, 1, m, m): its k axis is not sub-sampled."""
    out = np.einsum("kc,deabc->deabk", matrix, coords)
    out = np.einsum("jb,deabk->deajk", matrix, out)
    if dimension_of(coords.shape) == 2:  # 2-D: z-invariant, one point along t
        return out
    return np.einsum("ia,deajk->deijk", matrix, out)


def _k_axis(thin: bool, n: int, s: int) -> tuple:
    """(points, sub-points per point) along k: (1, 1) on a 2-D element, else (n, s)."""
    return (1, 1) if thin else (n, s)


def _blocks(q, n, s):
    """(..., c, n s, n s, n s) -> mean over each point's s^3 sub-points: (..., c, n, n, n)
    (a 2-D (..., c, 1, n s, n s): its s^2, to (..., c, 1, n, n))."""
    lead = q.shape[:-3]
    nk, sk = _k_axis(dimension_of(q.shape) == 2, n, s)
    return q.reshape(lead + (nk, sk, n, s, n, s)).mean(axis=(-5, -3, -1))


def _by_point(q, n, s):
    """(..., c, n s, n s, n s) -> (..., c, n, n, n, s^3): each point's sub-points last (a 2-D
    (..., c, 1, n s, n s) -> (..., c, 1, n, n, s^2))."""
    lead = q.shape[:-3]
    nk, sk = _k_axis(dimension_of(q.shape) == 2, n, s)
    q = q.reshape(lead + (nk, sk, n, s, n, s))
    k = len(lead)
    q = q.transpose(tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3, k + 5))
    return q.reshape(lead + (nk, n, n, sk * s * s))


def _from_point(q, n, s):
    """The inverse of _by_point."""
    lead = q.shape[:-4]
    k = len(lead)
    nk, sk = _k_axis(q.shape[-4] == 1, n, s)
    q = q.reshape(lead + (nk, n, n, sk, s, s)).transpose(tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2, k + 5))
    return q.reshape(lead + (nk * sk, n * s, n * s))


def membership(phi, xs, n, s) -> tuple:
    """(m (c, m, m, m) in [0, 1], grad phi (3, c, n, n, n)): each sub-box's share inside phi > 0,
    from phi fitted linearly over each point's sub-points (least squares: the gradient g),
    m = clip(1/2 + phi_s / sum_j |g_j| d_j) with d_j the sub-boxes' widths: exact for a plane
    normal to an axis, a linear estimate otherwise (module docstring). Where phi is constant
    over a point's volume (g = 0: a region table, or no interface), m is phi > 0."""
    p, x = _by_point(phi, n, s), _by_point(xs, n, s)  # (c, n, n, n, S), (3, c, n, n, n, S)
    dim = dimension_of(phi.shape)  # 2-D: the fit in x, y (z is constant); g_z = 0
    d = x[:dim] - x[:dim].mean(axis=-1, keepdims=True)
    cov = np.einsum("i...s,j...s->...ij", d, d)  # (c, n, n, n, dim, dim)
    rhs = np.einsum("i...s,...s->...i", d, p - p.mean(axis=-1, keepdims=True))
    g = np.linalg.solve(cov, rhs[..., None])[..., 0]  # (c, n, n, n, dim)
    widths = np.sqrt(12.0 * np.diagonal(cov, axis1=-2, axis2=-1) / x.shape[-1] / (s * s - 1.0))
    reach = np.sum(np.abs(g) * widths, axis=-1)[..., None]  # phi's change across one sub-box
    soft = np.clip(0.5 + p / np.where(reach > 0, reach, 1.0), 0.0, 1.0)
    m = np.where(reach > 1e-300, soft, (p > 0).astype(np.float64))
    if dim == 2:
        g = np.concatenate([g, np.zeros_like(g[..., :1])], axis=-1)
    return _from_point(m, n, s), np.moveaxis(g, -1, 0)


def shares(mesh, coords: np.ndarray, order: int, level) -> np.ndarray:
    """(E, n, n, n): each GLL point's share of its control volume inside ``level`` > 0 (as
    ``average`` finds it; ``level`` as there)."""
    n, s = order + 1, SUBSAMPLES
    matrix = sub_points(order, s)[1]
    out = np.zeros(coords.shape[1:])
    step = max(1, CHUNK_POINTS // (n * s) ** 3)
    for a in range(0, out.shape[0], step):
        part = slice(a, min(a + step, out.shape[0]))
        xs = sub_coordinates(matrix, coords[:, part])
        mask = membership(np.asarray(level(xs[0], xs[1], xs[2], part), dtype=np.float64), xs, n, s)[0]
        out[part] = _blocks(mask, n, s)
    return out


def average(table, out: dict, mesh, coords: np.ndarray, order: int, level, ranges) -> tuple:
    """(out with the table's keys averaged, None or (global element id, key, value, local
    element) of a value out of ``ranges`` at a sub-point inside the table). ``level(x, y, z,
    elements)`` is > 0 inside the table at sub-point coordinates of those elements (its
    ``where``, or +-1 for a region); ``out``'s epsilon and mu become (3, E, n, n, n)."""
    n, s = order + 1, SUBSAMPLES
    matrix = sub_points(order, s)[1]
    shape = coords.shape[1:]
    result = {k: (by_component(out[k], shape) if k in ("epsilon", "mu") else np.array(out[k], dtype=np.float64))
              for k in table.values}
    problem = None
    step = max(1, CHUNK_POINTS // (n * s) ** 3)
    for a in range(0, shape[0], step):
        part = slice(a, min(a + step, shape[0]))
        xs = sub_coordinates(matrix, coords[:, part])  # (3, c, m, m, m)
        mask, gradient = membership(np.asarray(level(xs[0], xs[1], xs[2], part), dtype=np.float64), xs, n, s)
        fraction = _blocks(mask, n, s)
        cut = (fraction > 0) & (fraction < 1)
        size = np.sum(gradient**2, axis=0)
        n2 = np.where(size > 0, gradient**2 / np.where(size > 0, size, 1.0), 1.0 / 3.0)  # (3, c, n, n, n)
        for key, value in table.values.items():
            parts = value if isinstance(value, tuple) else (value,) * (3 if key in ("epsilon", "mu") else 1)
            for c, given in enumerate(parts):
                v = given if isinstance(given, float) else np.asarray(
                    given.evaluate(np, x=xs[0], y=xs[1], z=xs[2]), dtype=np.float64) * np.ones_like(mask)
                bad = (mask > 0) & ~ranges[key].within(v)
                if np.any(bad):  # the first element by global id (of this chunk), and a value there
                    local = np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))
                    e = int(local[np.argmin(np.asarray(mesh.element_ids)[a + local])])
                    value_there = float(np.broadcast_to(v, bad.shape)[e][bad[e]][0])
                    found = (int(mesh.element_ids[a + e]), key, value_there, a + e)
                    problem = found if problem is None or found[0] < problem[0] else problem
                    continue
                old = result[key][c, part] if result[key].ndim == 5 else result[key][part]
                mean = _blocks(mask * v, n, s) + (1.0 - fraction) * old
                if key not in ("epsilon", "mu"):
                    result[key][part] = mean
                    continue
                inside = np.where(mask > 0, mask / np.where(mask > 0, v, 1.0), 0.0)  # v > 0 there (checked)
                harmonic = 1.0 / (_blocks(inside, n, s) + (1.0 - fraction) / old)
                result[key][c, part] = np.where(cut, n2[c] * harmonic + (1.0 - n2[c]) * mean, mean)
    out = dict(out)
    out.update(result)
    for key in ("epsilon", "mu"):  # both as tensors, so every rank takes the same (anisotropic) path
        out[key] = by_component(out[key], shape)
    return out, problem


__all__ = ["SUBSAMPLES", "average", "shares", "sub_coordinates", "sub_points"]
