"""The convective term (u . grad) f of continuous Galerkin, over-integrated on a Gauss grid, and
the CFL number of a velocity field.

    adv = Advection(geometry, backend)            # 3/2 rule: M = ceil(3 (N + 1) / 2) Gauss points
    C = adv.convective(u, fields)                 # (k, E, n, n, n), local (not assembled)
    cfl = adv.courant(u, dt)                      # this rank's largest CFL number (a float)

Weak form. For every basis function phi_p of an element and every field f_c,

    C_p = integral over the element of phi_p (u . grad f_c) dV
        = sum_q W_q J_q phi_p(q) sum_b (u . grad r_b)(q) (d f_c / d r_b)(q)

over the M^3 Gauss–Legendre points q of the fine grid (weights W_q = w_i w_j w_k). With I the
(M, n) interpolation from the GLL points to the Gauss points and D the GLL derivative, the
reference derivatives on the fine grid are tensor products of I and I D (d f / d r = (I D) x I x I
along (i, j, k)), and sum_p phi_p(q) ... is the transpose I^T along each axis. The fine factors

    G[b, a](q) = W_q J_q (d r_b / d x_a)(q)           (9 per fine point, held on the backend)

are formed once, so one call costs: 3 interpolations of u, 3 per field for its derivatives, one
I^T per field, and pointwise products: contravariant U_b = sum_a G[b, a] u_a, then sum_b U_b f_b.

Fine-grid metrics: computed from the coordinates, not interpolated. The element map that
``mesh.geometry`` works with is the degree-N interpolant of the coordinates at the GLL points,
so interpolating the coordinates to the Gauss points is exact, and so are their derivatives
(I D): J (d r_b / d x_a) is a cofactor of d x / d r, a polynomial, evaluated exactly. Interpolating
the GLL metric terms instead would put the interpolation error of a rational function
(d r / d x = cofactor / J) into every convective term of a curved element. For a map of degree
g in each reference variable the integrand has degree N (phi) + N (u) + N (d f) + 2 (g - 1) + 1 at
most, so the 3/2 rule (exact to degree 2 M - 1 >= 3 N + 2) is exact for affine and trilinear
elements; for curved (g = 2) ones it is exact when u and f have degree N - 1.

``dealias=False``: collocation at the GLL points instead, C = B (u . grad f) with B = w J the
diagonal mass (GLL quadrature, exact to degree 2 N - 1 only: it aliases).

CFL (Nek5000's compute_cfl): dt * max over the GLL points of sum_b |u . grad r_b| / dr_b, with dr_b
the local GLL spacing in the reference coordinate r_b at that point: (r_{i+1} - r_{i-1}) / 2 inside,
r_1 - r_0 and r_N - r_{N-1} at the two ends. For a box element of size h_x the term for r is
|u_x| (2 / h_x) / dr. The value is this rank's; the caller reduces it over ranks (max).

2-D (a mesh of quads, ``geometry.dim == 2``): velocity (ux, uy) (2, E, 1, n, n), fields
(k, E, 1, n, n), the fine grid (1, M, M) with W = w_j w_i, G (2, 2, E, 1, M, M), the contravariant
velocity (2, E, 1, M, M): the same sums over r, s and x, y only (kernels looked up with dim=2).

Memory: the fine factors take 9 M^3 values per element (M = 12 for N = 7: 15552, 30 times a
scalar field); they are built on the host a few thousand elements at a time. Nothing loops
over elements or points; everything is batched matrix products and pointwise ``backend.xp``.
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.backends.base import reference_kernel
from lobatto.discretization import derivative_matrix, gll_points
from lobatto.discretization.tensor import along, derivative_r, derivative_s, derivative_t
from lobatto.errors import InputError
from lobatto.operators import advection_cuda  # noqa: F401  (register the tuned kernels)
from lobatto.operators.differential import BackendGeometry
from lobatto.operators.interpolation import interpolate, interpolation_matrix

#: elements whose fine factors are formed at a time on the host (bounds the peak to ~20 arrays of that size)
_CHUNK = 2048


def tensor_apply(xp, u, along_i, along_j, along_k):
    """u (..., n, n, n) with axes [k, j, i] -> (..., mk, mj, mi): a different (m, n) matrix along each axis.
    ``along_k=None``: a 2-D field (..., 1, n, n) -> (..., 1, mj, mi), along i and j only."""
    lead = u.shape[:-3]
    nk = 1 if along_k is None else along_k.shape[1]
    if tuple(u.shape[-3:]) != (nk, along_j.shape[1], along_i.shape[1]):
        # a thin (..., 1, n, n) array of a 2-D mesh would reshape silently into meaningless numbers
        raise ValueError(f"tensor_apply: the array's last axes {tuple(u.shape[-3:])} do not match the matrices' "
                         f"{(nk, along_j.shape[1], along_i.shape[1])}")
    mi, mj = along_i.shape[0], along_j.shape[0]
    x = along(xp, u, along_i, 1)  # [(., k, j), a]
    x = along(xp, x, along_j, mi)  # [(., k), b, a]
    if along_k is None:
        return x.reshape(lead + (1, mj, mi))
    x = along(xp, x, along_k, mj * mi)  # [., c, (b, a)]
    return x.reshape(lead + (along_k.shape[0], mj, mi))


def gll_spacing(order: int) -> np.ndarray:
    """(n,) Nek5000's local reference spacing at each GLL point: centred inside, one-sided at the ends."""
    z = gll_points(order)
    dr = np.empty_like(z)
    dr[0], dr[-1] = z[1] - z[0], z[-1] - z[-2]
    dr[1:-1] = 0.5 * (z[2:] - z[:-2])
    return dr


def default_fine_points(order: int) -> int:
    """The 3/2 rule: ceil(3 (N + 1) / 2) Gauss points per direction."""
    return math.ceil(3 * (int(order) + 1) / 2)


def fine_factors(coords: np.ndarray, interp: np.ndarray, interp_derivative: np.ndarray,
                 weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(G, J) on the fine grid for host coords (3, E, n, n, n): G (3, 3, E, M, M, M) = W J d r_b / d x_a
    (the cofactors of d x / d r times the weights), J (E, M, M, M) the Jacobian. 2-D coords
    (3, E, 1, n, n): G (2, 2, E, 1, M, M) over x, y and r, s (dz / dt = 1, W = w_j w_i)."""
    I, ID = interp, interp_derivative
    if coords.shape[2] == 1 and I.shape[1] > 1:  # 2-D: the cofactors of the 2x2 map
        x_r, x_s = tensor_apply(np, coords[0], ID, I, None), tensor_apply(np, coords[0], I, ID, None)
        y_r, y_s = tensor_apply(np, coords[1], ID, I, None), tensor_apply(np, coords[1], I, ID, None)
        cofactor = np.stack([np.stack([y_s, -x_s]), np.stack([-y_r, x_r])])  # [b, a] = J d r_b / d x_a
        return cofactor * (weights[:, None] * weights[None, :]), x_r * y_s - x_s * y_r
    along = ((ID, I, I), (I, ID, I), (I, I, ID))  # d / d r, d / d s, d / d t
    dxdr = [[tensor_apply(np, coords[a], *along[b]) for b in range(3)] for a in range(3)]  # [a][b] = d x_a / d r_b
    w3 = weights[:, None, None] * weights[None, :, None] * weights[None, None, :]
    cofactor = np.empty((3, 3) + dxdr[0][0].shape)
    for b in range(3):
        b1, b2 = (b + 1) % 3, (b + 2) % 3
        for a in range(3):
            a1, a2 = (a + 1) % 3, (a + 2) % 3
            cofactor[b, a] = dxdr[a1][b1] * dxdr[a2][b2] - dxdr[a1][b2] * dxdr[a2][b1]  # J d r_b / d x_a
    jacobian = dxdr[0][0] * cofactor[0, 0] + dxdr[0][1] * cofactor[1, 0] + dxdr[0][2] * cofactor[2, 0]
    return cofactor * w3, jacobian


class Advection:
    """Convective term and CFL number on one mesh's elements (see the module docstring).

    geometry:          a ``lobatto.mesh.Geometry`` (host arrays; its coords give the fine metrics)
    backend:           the arrays' backend
    dealias:           over-integrate on the Gauss grid (True) or collocate at the GLL points
    fine_points:       Gauss points per direction, M >= N + 1 (default: the 3/2 rule)
    backend_geometry:  a ``BackendGeometry`` of the same geometry to share (its metrics and mass),
                       else one is made
    """

    def __init__(self, geometry, backend, dealias: bool = True, fine_points: int | None = None,
                 backend_geometry: BackendGeometry | None = None):
        self.backend = backend
        self.order = int(geometry.order)
        self.n = self.order + 1
        self.dim = int(getattr(geometry, "dim", 3))  # 2: (..., E, 1, n, n) arrays, velocity (ux, uy)
        self.dealias = bool(dealias)
        self.gll = backend_geometry if backend_geometry is not None else BackendGeometry(geometry, backend)
        self.dtype = self.gll.dtype
        xp = backend.xp
        d = derivative_matrix(self.order)
        shape = (self.n,)
        self.inverse_spacing = [backend.asarray((1.0 / gll_spacing(self.order)).reshape(shape + (1,) * b),
                                                dtype=self.dtype) for b in range(self.dim)]  # r along i, s along j, t along k
        self.fine_points = default_fine_points(self.order) if fine_points is None else fine_points
        if not isinstance(self.fine_points, (int, np.integer)) or isinstance(self.fine_points, bool) \
                or self.fine_points < self.n:
            raise InputError(f"Advection: fine_points must be an integer >= N + 1 = {self.n} (Gauss points per "
                             f"direction of the dealiasing grid), got {fine_points!r}")
        self.fine_points = int(self.fine_points)
        if not self.dealias:
            self.factors = None
            return
        m = self.fine_points
        points, weights = np.polynomial.legendre.leggauss(m)
        interp = interpolation_matrix(gll_points(self.order), points)  # (M, n)
        interp_derivative = interp @ d
        self.interp = backend.asarray(interp, dtype=self.dtype)
        self.interp_derivative = backend.asarray(interp_derivative, dtype=self.dtype)
        self.interp_transpose = backend.asarray(np.ascontiguousarray(interp.T), dtype=self.dtype)
        coords = np.asarray(geometry.coords, dtype=np.float64)
        num_elements = coords.shape[1]
        d_ = self.dim
        self.factors = xp.empty((d_, d_, num_elements) + self.fine_shape, dtype=self.dtype)
        for start in range(0, num_elements, _CHUNK):
            stop = min(start + _CHUNK, num_elements)
            g, jacobian = fine_factors(coords[:, start:stop], interp, interp_derivative, weights)
            low = jacobian.reshape(stop - start, -1).min(axis=1)
            if not np.all(low > 0):
                e = start + int(np.argmin(low))
                raise InputError(f"Advection: element {e} (local index) has a non-positive Jacobian ({low[e - start]:.3g}) "
                                 f"at a point of the {m}^{d_} Gauss grid, though positive at its GLL points: the element "
                                 f"is too strongly curved for its order; refine it or reduce the curvature")
            self.factors[:, :, start:stop] = backend.asarray(g, dtype=self.dtype)

    @property
    def fine_shape(self) -> tuple:
        """An element's fine grid: (M, M, M), or (1, M, M) in 2-D."""
        m = self.fine_points
        return (m if self.dim == 3 else 1, m, m)

    def _check(self, velocity, fields):
        e = self.gll.mass.shape[0]
        element = (e, self.n if self.dim == 3 else 1, self.n, self.n)
        if tuple(velocity.shape) != (self.dim,) + element:
            raise InputError(f"Advection: velocity must have shape (dim, E, nz, n, n) = {(self.dim,) + element}, "
                             f"got {velocity.shape}")
        if fields.ndim != 5 or tuple(fields.shape[1:]) != element:
            raise InputError(f"Advection: fields must have shape (k, E, nz, n, n) = (k,) + {element}, "
                             f"got {fields.shape}")

    def convective(self, velocity, fields, out=None):
        """(k, E, n, n, n) local weak convective term of each field f_c (k, E, n, n, n) by velocity
        (3, E, n, n, n): integral of phi_p (u . grad) f_c; written into ``out`` if given."""
        self._check(velocity, fields)
        xp = self.backend.xp
        if out is None:
            out = xp.empty(fields.shape, dtype=self.dtype)
        if not self.dealias:  # B u . grad f = sum_b [B (u . grad r_b)] d f / d r_b
            g, d = self.gll, self.gll.derivative
            m, dims = g.metrics, range(self.dim)
            contravariant = [g.mass * sum(m[b, a] * velocity[a] for a in dims) for b in dims]
            derivatives = (derivative_r, derivative_s, derivative_t)
            for c in range(fields.shape[0]):
                f = fields[c]
                result = contravariant[0] * derivative_r(xp, f, d)
                for b in dims[1:]:
                    result += contravariant[b] * derivatives[b](xp, f, d)
                out[c] = result
            return out
        return self.convective_with(self.contravariant(velocity), fields, out=out)

    def contravariant(self, velocity, out=None):
        """(3, E, M, M, M) fine-grid contravariant velocity U_b = sum_a G[b, a] (I u_a) (weights and
        Jacobian included) of velocity (3, E, n, n, n); linear in u, so a combination of the
        U of several velocities is the U of their combination (the sub-steps use this).
        Needs ``dealias``. Backend kernel ``advection_contravariant``."""
        self._check(velocity, velocity[:1])
        if not self.dealias:
            raise InputError("Advection.contravariant needs dealias=True (the fine grid)")
        xp = self.backend.xp
        if out is None:
            out = xp.empty((self.dim, velocity.shape[1]) + self.fine_shape, dtype=self.dtype)
        kernel = self.backend.kernel("advection_contravariant", order=self.order, fine=self.fine_points, dim=self.dim)
        kernel(velocity, self.factors, self.interp, out)
        return out

    def convective_with(self, contravariant, fields, out=None):
        """(k, E, n, n, n) local weak convective term of fields (k, E, n, n, n) by the fine
        contravariant velocity of ``contravariant``. Backend kernel ``advection_apply``."""
        xp = self.backend.xp
        if out is None:
            out = xp.empty(fields.shape, dtype=self.dtype)
        kernel = self.backend.kernel("advection_apply", order=self.order, fine=self.fine_points, dim=self.dim)
        kernel(contravariant, fields, self.interp, self.interp_derivative, self.interp_transpose, out)
        return out

    def courant(self, velocity, dt) -> float:
        """dt * max over this rank's GLL points of sum_b |u . grad r_b| / dr_b (0.0 with no elements)."""
        if velocity.shape[1] == 0:
            return 0.0
        m, dims = self.gll.metrics, range(self.dim)
        total = None
        for b in dims:
            rate = self.backend.xp.abs(sum(m[b, a] * velocity[a] for a in dims))
            rate *= self.inverse_spacing[b]
            total = rate if total is None else total + rate
        return float(dt) * float(total.max())


@reference_kernel("advection_contravariant")
def reference_contravariant(backend, order, fine, dim=3):
    """contravariant(velocity (3, E, n, n, n), factors (3, 3, E, M, M, M), interp (M, n), out (3, E, M, M, M));
    dim = 2: velocity (2, E, 1, n, n), factors (2, 2, E, 1, M, M), out (2, E, 1, M, M)."""

    def contravariant(velocity, factors, interp, out):
        fine_u = interpolate(backend, velocity, interp)
        dims = range(velocity.shape[0])
        for b in dims:
            out[b] = factors[b, 0] * fine_u[0]
            for a in dims[1:]:
                out[b] += factors[b, a] * fine_u[a]
        return out

    return contravariant


@reference_kernel("advection_apply")
def reference_apply(backend, order, fine, dim=3):
    """apply(contravariant (3, E, M, M, M), fields (k, E, n, n, n), interp (M, n), interp_derivative
    (M, n), interp_transpose (n, M), out (k, E, n, n, n)): out_c = I^T [sum_b U_b d f_c / d r_b];
    dim = 2: contravariant (2, E, 1, M, M), fields and out (k, E, 1, n, n), i and j only."""
    xp = backend.xp

    def apply(contravariant, fields, interp, interp_derivative, interp_transpose, out):
        I, ID = interp, interp_derivative
        thin = fields.shape[-3] == 1 and fields.shape[-1] > 1
        for c in range(fields.shape[0]):
            f = fields[c]
            if thin:
                product = contravariant[0] * tensor_apply(xp, f, ID, I, None)
                product += contravariant[1] * tensor_apply(xp, f, I, ID, None)
            else:
                product = contravariant[0] * tensor_apply(xp, f, ID, I, I)
                product += contravariant[1] * tensor_apply(xp, f, I, ID, I)
                product += contravariant[2] * tensor_apply(xp, f, I, I, ID)
            out[c] = interpolate(backend, product, interp_transpose)
        return out

    return apply
