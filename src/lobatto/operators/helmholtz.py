"""The Helmholtz operator A u = h1 K u + h2 B u, element by element (nekRS's axhelm, BK5).

K is the stiffness matrix of -div(grad): with D_r, D_s, D_t the 1-D derivative applied along
one axis of an element's (k, j, i) points,

    K u = [D_r^T D_s^T D_t^T] G [D_r D_s D_t]^T u,     G_ij = w J (grad r_i . grad r_j),

G symmetric (six factors rr, rs, rt, ss, st, tt per point, precomputed), w the product of
the three GLL weights and J the Jacobian; B = w J is the diagonal mass. ``apply_local`` does
no assembly: ``Assembly.dssum(op.apply_local(u))`` is the assembled operator.

On a 2-D mesh (arrays (E, 1, n, n), the thin k axis of mesh/topology.py) there is no t
derivative: K u = [D_r^T D_s^T] G [D_r D_s]^T u with the three factors rr, rs, ss
(``FACTOR_NAMES_2D``), w = w_i w_j (per unit depth). The kernels are specialised on the
dimension (``backend.kernel("helmholtz_apply", order=N, dim=2)``).

h1 and h2 are scalars or (E, n, n, n) ((E, 1, n, n) in 2-D) arrays. A scalar is passed to the kernel; an array is
folded into a scaled copy of G (h1) or B (h2) once, so the kernel reads the same 64 or 72
bytes per point either way (``bytes_per_point``; 40 or 48 in 2-D). With h2 = 0 the mass is
not read at all.

Kernels (``backend.kernel("helmholtz_apply", order=N, dim=3 or 2)``), all with the signature
``apply(u, out, factors, mass, h1, h2)`` (mass None: no h2 term):
    reference   here, on ``xp`` (NumPy or CuPy): the oracle
    cpu         helmholtz_cpu.py, kernels/helmholtz.c (OpenMP over elements)
    cuda        helmholtz_cuda.py, kernels/helmholtz.cu (one block per element or a few,
                2-D thread layout over (i, j), the k loop in registers)
"""

from __future__ import annotations

import numpy as np

from lobatto.backends.base import reference_kernel
from lobatto.discretization import derivative_matrix
from lobatto.discretization.tensor import derivative_r, derivative_s, derivative_t, dimension_of
from lobatto.errors import InputError
from lobatto.operators import helmholtz_cpu, helmholtz_cuda  # noqa: F401  (register the tuned kernels)

#: order of the six factors along the first axis of ``geometric_factors``
FACTOR_NAMES = ("rr", "rs", "rt", "ss", "st", "tt")
#: the three of a 2-D mesh (no t row)
FACTOR_NAMES_2D = ("rr", "rs", "ss")
_PAIRS = {3: ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)), 2: ((0, 0), (0, 1), (1, 1))}


def geometric_factors(geometry) -> np.ndarray:
    """(6, E, n, n, n) host array G_ij = w J (grad r_i . grad r_j), in FACTOR_NAMES order;
    (3, E, 1, n, n) in FACTOR_NAMES_2D order on a 2-D mesh (w = w_i w_j there)."""
    metrics = geometry.metrics  # [b, a] = d r_b / d x_a
    pairs = _PAIRS[dimension_of(geometry.jacobian.shape)]
    factors = np.empty((len(pairs),) + geometry.jacobian.shape)
    for c, (p, q) in enumerate(pairs):
        factors[c] = metrics[p, 0] * metrics[q, 0] + metrics[p, 1] * metrics[q, 1] + metrics[p, 2] * metrics[q, 2]
        factors[c] *= geometry.mass  # w J
    return factors


@reference_kernel("helmholtz_apply")
def make_apply(backend, order, dim=3):
    xp = backend.xp
    d_host = derivative_matrix(order)
    matrices: dict = {}

    def derivatives(dtype):
        pair = matrices.get(dtype)
        if pair is None:
            d = xp.asarray(d_host, dtype=dtype)
            pair = matrices[dtype] = (d, xp.ascontiguousarray(d.T))
        return pair

    def apply(u, out, factors, mass, h1, h2):
        d, dt = derivatives(u.dtype)
        g = factors
        if dim == 2:  # the thin k axis: no t derivative, factors rr rs ss
            ur, us = derivative_r(xp, u, d), derivative_s(xp, u, d)
            result = derivative_r(xp, g[0] * ur + g[1] * us, dt) + derivative_s(xp, g[1] * ur + g[2] * us, dt)
            result *= h1
            if mass is not None:
                result += (h2 * mass) * u
            out[...] = result
            return out
        ur, us, ut = derivative_r(xp, u, d), derivative_s(xp, u, d), derivative_t(xp, u, d)
        wr = g[0] * ur + g[1] * us + g[2] * ut
        ws = g[1] * ur + g[3] * us + g[4] * ut
        wt = g[2] * ur + g[4] * us + g[5] * ut
        result = derivative_r(xp, wr, dt) + derivative_s(xp, ws, dt) + derivative_t(xp, wt, dt)
        result *= h1
        if mass is not None:
            result += (h2 * mass) * u
        out[...] = result
        return out

    return apply


def _coefficient(value, shape, name):
    """(scalar, None) or (None, host array of ``shape``), checked."""
    if np.isscalar(value) or np.ndim(value) == 0:
        scalar = float(value)
        if not np.isfinite(scalar):
            raise InputError(f"HelmholtzOperator: {name} must be finite, got {value!r}")
        return scalar, None
    array = np.asarray(value.get() if hasattr(value, "get") else value, dtype=np.float64)
    if array.shape != shape:
        raise InputError(f"HelmholtzOperator: {name} must be a scalar or an (E, n, n, n) = {shape} array, "
                         f"got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InputError(f"HelmholtzOperator: {name} has non-finite values")
    return None, array


class HelmholtzOperator:
    """A u = h1 K u + h2 B u on one mesh's elements (no assembly), on a backend.

    geometry:   a ``lobatto.mesh.Geometry`` (host arrays), order N
    dtype:      arrays' precision (default: the backend's), e.g. float32 for a preconditioner
    Members: ``geometric_factors`` (6, E, n, n, n) and ``mass`` (E, n, n, n) on the backend
    ((3, E, 1, n, n) and (E, 1, n, n) on a 2-D mesh; ``dim``),
    ``apply_local``, ``diagonal_local``, ``set_coefficients``, ``bytes_per_point``.
    """

    def __init__(self, geometry, backend, h1=1.0, h2=0.0, dtype=None):
        self.backend = backend
        self.order = int(geometry.order)
        self.n = self.order + 1
        self.dtype = np.dtype(dtype or backend.dtype)
        self.shape = tuple(geometry.jacobian.shape)
        self.dim = dimension_of(self.shape)
        self.geometric_factors = backend.asarray(geometric_factors(geometry), dtype=self.dtype)
        self.mass = backend.asarray(geometry.mass, dtype=self.dtype)
        self._kernel = backend.kernel("helmholtz_apply", order=self.order, dim=self.dim)
        self._subsets: dict = {}
        self.set_coefficients(h1, h2)

    def set_coefficients(self, h1=1.0, h2=0.0) -> None:
        """New h1, h2 (scalars or (E, n, n, n) arrays); array ones are folded into copies of G / B."""
        s1, a1 = _coefficient(h1, self.shape, "h1")
        s2, a2 = _coefficient(h2, self.shape, "h2")
        asarray = self.backend.asarray
        if a1 is None:
            self._factors, self._h1 = self.geometric_factors, s1
        else:
            self._factors, self._h1 = self.geometric_factors * asarray(a1, dtype=self.dtype)[None], 1.0
        if a2 is None:
            self._mass, self._h2 = (None if s2 == 0.0 else self.mass), s2
        else:
            self._mass, self._h2 = self.mass * asarray(a2, dtype=self.dtype), 1.0
        self.h1, self.h2 = (a1 if a1 is not None else s1), (a2 if a2 is not None else s2)

    def apply_local(self, u, out=None):
        """h1 K u + h2 B u for every element of u (E, n, n, n); into ``out`` if given."""
        if tuple(u.shape) != self.shape or u.dtype != self.dtype:
            raise InputError(f"HelmholtzOperator: u must be a {self.dtype} array of shape {self.shape}, "
                             f"got {u.dtype} {tuple(u.shape)}")
        if out is None:
            out = self.backend.xp.empty_like(u)
        return self._kernel(u, out, self._factors, self._mass, self._h1, self._h2)

    def apply_elements(self, u, out, elements):
        """out[elements] = (h1 K u + h2 B u)[elements] for ``elements``, a host int64 array of
        element indices, the others of ``out`` untouched: the kernel runs on those elements'
        copies of u and of the factors (the factors' copies kept until the coefficients
        change). Each element's result has the bits ``apply_local`` gives it (elements are
        independent in every kernel). For a few elements (those an exchange waits for)."""
        xp = self.backend.xp
        key = elements.tobytes()
        entry = self._subsets.get(key)
        if entry is None or entry[0] is not self._factors or entry[1] is not self._mass:
            index = self.backend.asarray(np.asarray(elements, dtype=np.int64), dtype=np.int64)
            factors = xp.ascontiguousarray(self._factors[:, index])
            mass = None if self._mass is None else xp.ascontiguousarray(self._mass[index])
            entry = self._subsets[key] = (self._factors, self._mass, index, factors, mass)
        index, factors, mass = entry[2:]
        if index.size:
            part = xp.ascontiguousarray(u[index])
            out[index] = self._kernel(part, xp.empty_like(part), factors, mass, self._h1, self._h2)
        return out

    def diagonal_local(self):
        """The exact diagonal of each element's matrix, (E, n, n, n) on the backend.

        (K)_pp = sum_l D_li^2 G_rr(k,j,l) + D_lj^2 G_ss(k,l,i) + D_lk^2 G_tt(l,j,i)
                 + 2 D_ii D_jj G_rs + 2 D_ii D_kk G_rt + 2 D_jj D_kk G_st   at p = (k, j, i)
        (a cross term's only diagonal entry is where both derivatives meet p itself); in 2-D
        the r, s terms only."""
        xp = self.backend.xp
        d = derivative_matrix(self.order)
        squares = xp.asarray(np.ascontiguousarray((d**2).T), dtype=self.dtype)  # [i, l] = D_li^2
        g = self._factors
        dd = xp.asarray(np.diag(d), dtype=self.dtype)
        di, dj, dk = dd[None, None, None, :], dd[None, None, :, None], dd[None, :, None, None]
        if self.dim == 2:
            diag = derivative_r(xp, g[0], squares) + derivative_s(xp, g[2], squares) + 2 * (di * dj * g[1])
        else:
            diag = derivative_r(xp, g[0], squares) + derivative_s(xp, g[3], squares) + derivative_t(xp, g[5], squares)
            diag += 2 * (di * dj * g[1] + di * dk * g[2] + dj * dk * g[4])
        diag *= self._h1
        if self._mass is not None:
            diag += self._h2 * self._mass
        return diag

    @property
    def bytes_per_point(self) -> int:
        """Device-memory bytes per local point of one apply: u read, Au written, the six
        factors (three in 2-D), and the mass where h2 != 0 (72 in float64 with the mass, 64
        without; 48 and 40 in 2-D)."""
        values = 2 + len(self.geometric_factors) + (1 if self._mass is not None else 0)
        return values * self.dtype.itemsize

    @property
    def flops_per_point(self) -> int:
        """Floating-point operations per local point: 6n for the three derivatives, 15 for
        G, 6n + 2 for the transposed derivatives and their sum, 1 for h1, 3 for the mass
        (2-D: 4n, 6, 4n + 1, 1, 3)."""
        if self.dim == 2:
            return 8 * self.n + 8 + (3 if self._mass is not None else 0)
        return 12 * self.n + 18 + (3 if self._mass is not None else 0)

