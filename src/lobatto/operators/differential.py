"""Gradient, curl, divergence, weak divergence and mass on the elements of a mesh (no assembly).

    gradient(geometry, backend, u)         (3, E, n, n, n): (du/dx, du/dy, du/dz) at every point
    weak_divergence(geometry, backend, v)  (E, n, n, n): integral of v . grad(phi_p) for every
                                           basis function phi_p of the element (GLL quadrature)
    mass(geometry, backend, u)             (E, n, n, n): B u, B = w J the diagonal mass
    curl(geometry, backend, v)             (3, E, n, n, n): curl of v (3, E, n, n, n) at every point
    divergence(geometry, backend, v)       (E, n, n, n): div v at every point

Fused forms for the Navier–Stokes step (one pass over memory each on the CUDA backend,
operators/kernels/differential.cu; the reference is the composition of the plain operators):

    weighted_curl(geometry, backend, v)                       B curl v
    weak_divergence_minus_curl(geometry, backend, f, w, nu)   weak_divergence(f - nu curl w)
    mass_minus_gradient(geometry, backend, f, p)              B (f - gradient p)

gradient, curl and divergence are pointwise (collocation): reference derivatives along each axis,
then the chain rule d/dx_a = sum_b (d r_b / d x_a) d/dr_b. They are exact where the field is a
polynomial of degree <= N in r, s, t (a field of degree p in x, y, z on a map of degree g is one
of degree p g). On affine elements the metrics are constant and the 1-D derivatives along
different axes commute, so div(curl v) and curl(grad f) vanish to round-off; on curved elements
they are as small as the interpolation error of the metric products.

weak_divergence is the transpose of the gradient in the quadrature inner product:
``weak_divergence(gradient(u))`` is the stiffness matrix K u (``HelmholtzOperator`` with
h1 = 1, h2 = 0), and after assembly it equals -integral(div(v) phi) plus the boundary flux
integral of (v . n) phi. It also carries coefficients: weak_divergence(k * gradient(u)).

2-D (a mesh of quads, ``geometry.dim == 2``; arrays (..., E, 1, n, n)): vectors have the 2
components (x, y), the gradient too; the curl of v = (vx, vy) is the scalar omega_z = dvy/dx - dvx/dy,
shape (1, E, 1, n, n), and weak_divergence_minus_curl takes that omega_z, whose curl is
(d omega_z / dy, -d omega_z / dx). ``BackendGeometry`` keeps the compact metrics[:2, :2] there.
Kernels are looked up with ``dim=2`` (3 by default).

``geometry`` is a ``lobatto.mesh.Geometry`` (host arrays: copied to the backend on every
call) or a ``BackendGeometry`` made once from it (no copies): use the latter in loops.
All work is batched matrix products on ``backend.xp``; nothing loops over elements.
"""

from __future__ import annotations

import numpy as np

from lobatto.backends.base import reference_kernel
from lobatto.discretization import derivative_matrix
from lobatto.discretization.tensor import derivative_r, derivative_s, derivative_t, physical_gradient
from lobatto.operators import differential_cuda  # noqa: F401  (register the tuned kernels)


class BackendGeometry:
    """The factors these operators need, on a backend, in one dtype."""

    def __init__(self, geometry, backend, dtype=None):
        self.order = int(geometry.order)
        self.dim = int(getattr(geometry, "dim", 3))
        self.backend = backend
        self.dtype = np.dtype(dtype or backend.dtype)
        metrics = geometry.metrics if self.dim == 3 else np.ascontiguousarray(geometry.metrics[:2, :2])
        self.metrics = backend.asarray(metrics, dtype=self.dtype)  # [b, a] = d r_b / d x_a (2x2 in 2-D)
        self.mass = backend.asarray(geometry.mass, dtype=self.dtype)
        d = derivative_matrix(self.order)
        self.derivative = backend.asarray(d, dtype=self.dtype)
        self.derivative_transpose = backend.asarray(np.ascontiguousarray(d.T), dtype=self.dtype)


def on_backend(geometry, backend) -> BackendGeometry:
    if isinstance(geometry, BackendGeometry):
        return geometry
    return BackendGeometry(geometry, backend)


def gradient(geometry, backend, u):
    """(3, E, n, n, n) physical gradient of u (E, n, n, n) by the chain rule ((2, E, 1, n, n) in 2-D)."""
    g = on_backend(geometry, backend)
    return _gradient(backend.xp, u, g.derivative, g.metrics)


def _gradient(xp, u, d, metrics):
    if metrics.shape[0] == 3:
        return physical_gradient(xp, u, d, metrics)
    u_r, u_s = derivative_r(xp, u, d), derivative_s(xp, u, d)
    return xp.stack([metrics[0, a] * u_r + metrics[1, a] * u_s for a in range(2)])


def _weak_divergence(xp, v, dt, metrics, mass):
    dims = range(metrics.shape[0])
    flux = [mass * sum(metrics[b, a] * v[a] for a in dims) for b in dims]
    out = derivative_r(xp, flux[0], dt) + derivative_s(xp, flux[1], dt)
    return out + derivative_t(xp, flux[2], dt) if len(dims) == 3 else out


def weak_divergence(geometry, backend, v):
    """(E, n, n, n) sum_b D_b^T [w J sum_a (d r_b / d x_a) v_a] for v (3, E, n, n, n)."""
    g = on_backend(geometry, backend)
    return _weak_divergence(backend.xp, v, g.derivative_transpose, g.metrics, g.mass)


def mass(geometry, backend, u):
    """B u: u (..., E, n, n, n) times the diagonal mass w J."""
    return on_backend(geometry, backend).mass * u


def _curl(xp, v, d, metrics):
    """curl v; in 2-D (metrics 2x2) omega_z (1, ...) of v (2, ...), and (d w / dy, -d w / dx) of w (1, ...)."""
    if metrics.shape[0] == 2:
        if v.shape[0] == 1:
            g = _gradient(xp, v[0], d, metrics)
            return xp.stack([g[1], -g[0]])
        gx, gy = _gradient(xp, v[0], d, metrics), _gradient(xp, v[1], d, metrics)
        return (gy[0] - gx[1])[None]
    g = [physical_gradient(xp, v[c], d, metrics) for c in range(3)]  # [c][a] = d v_c / d x_a
    return xp.stack([g[2][1] - g[1][2], g[0][2] - g[2][0], g[1][0] - g[0][1]])


def curl_shape(shape) -> tuple:
    """The curl's shape for v of ``shape``: the same in 3-D, (1, ...) (omega_z) for (2, E, 1, n, n)."""
    return (1,) + tuple(shape[1:]) if shape[0] == 2 else tuple(shape)


def _empty(backend, g, shape, out):
    return backend.xp.empty(shape, dtype=g.dtype) if out is None else out


def curl(geometry, backend, v, out=None):
    """(3, E, n, n, n) curl of v (3, E, n, n, n) by the chain rule, pointwise (backend kernel ``curl``);
    2-D: omega_z (1, E, 1, n, n) of v (2, E, 1, n, n)."""
    g = on_backend(geometry, backend)
    kernel = backend.kernel("curl", order=g.order, dim=g.dim)
    return kernel(v, g.metrics, None, g.derivative, _empty(backend, g, curl_shape(v.shape), out))


def weighted_curl(geometry, backend, v, out=None):
    """(3, E, n, n, n) B curl v: the curl times the diagonal mass, in one pass ((1, E, 1, n, n) in 2-D)."""
    g = on_backend(geometry, backend)
    kernel = backend.kernel("curl", order=g.order, dim=g.dim)
    return kernel(v, g.metrics, g.mass, g.derivative, _empty(backend, g, curl_shape(v.shape), out))


def weak_divergence_minus_curl(geometry, backend, forcing, vorticity, viscosity, out=None):
    """(E, n, n, n) weak_divergence(forcing - viscosity * curl(vorticity)) for forcing and
    vorticity (3, E, n, n, n): the curl-curl pressure right-hand side in one pass (backend
    kernel ``weak_divergence_minus_curl``); 2-D: forcing (2, E, 1, n, n), vorticity omega_z (1, E, 1, n, n)."""
    g = on_backend(geometry, backend)
    kernel = backend.kernel("weak_divergence_minus_curl", order=g.order, dim=g.dim)
    return kernel(forcing, vorticity, g.metrics, g.mass, g.derivative, float(viscosity),
                  _empty(backend, g, forcing.shape[1:], out))


def mass_minus_gradient(geometry, backend, forcing, pressure, out=None):
    """(3, E, n, n, n) B (forcing - gradient(pressure)): the velocity right-hand side in one
    pass (backend kernel ``mass_minus_gradient``); 2-D: forcing and out (2, E, 1, n, n)."""
    g = on_backend(geometry, backend)
    kernel = backend.kernel("mass_minus_gradient", order=g.order, dim=g.dim)
    return kernel(forcing, pressure, g.metrics, g.mass, g.derivative, _empty(backend, g, forcing.shape, out))


@reference_kernel("curl")
def reference_curl(backend, order, dim=3):
    """curl(v (3, E, n, n, n), metrics (3, 3, E, n, n, n), mass (E, n, n, n) or None, D (n, n), out):
    out = curl v, times mass when given; dim = 2: v (2, E, 1, n, n), metrics (2, 2, E, 1, n, n),
    out omega_z (1, E, 1, n, n)."""
    xp = backend.xp

    def apply(v, metrics, mass_or_none, d, out):
        out[...] = _curl(xp, v, d, metrics)
        if mass_or_none is not None:
            out *= mass_or_none
        return out

    return apply


@reference_kernel("weak_divergence_minus_curl")
def reference_weak_divergence_minus_curl(backend, order, dim=3):
    """apply(forcing, vorticity (3, E, n, n, n), metrics, mass, D, viscosity, out (E, n, n, n));
    dim = 2: forcing (2, E, 1, n, n), vorticity omega_z (1, E, 1, n, n), metrics 2x2."""
    xp = backend.xp

    def apply(forcing, vorticity, metrics, mass_, d, viscosity, out):
        flux = forcing - viscosity * _curl(xp, vorticity, d, metrics)
        out[...] = _weak_divergence(xp, flux, xp.ascontiguousarray(d.T), metrics, mass_)
        return out

    return apply


@reference_kernel("mass_minus_gradient")
def reference_mass_minus_gradient(backend, order, dim=3):
    """apply(forcing (3, E, n, n, n), pressure (E, n, n, n), metrics, mass, D, out (3, E, n, n, n));
    dim = 2: forcing and out (2, E, 1, n, n), metrics 2x2."""
    xp = backend.xp

    def apply(forcing, pressure, metrics, mass_, d, out):
        rhs = forcing - _gradient(xp, pressure, d, metrics)
        rhs *= mass_
        out[...] = rhs
        return out

    return apply


def divergence(geometry, backend, v):
    """(E, n, n, n) div v of v (3, E, n, n, n): sum_a sum_b (d r_b / d x_a) d v_a / d r_b, pointwise
    (over x, y of v (2, E, 1, n, n) in 2-D)."""
    g = on_backend(geometry, backend)
    xp = backend.xp
    d = g.derivative
    total = None
    for a in range(g.dim):
        term = g.metrics[0, a] * derivative_r(xp, v[a], d) + g.metrics[1, a] * derivative_s(xp, v[a], d)
        if g.dim == 3:
            term = term + g.metrics[2, a] * derivative_t(xp, v[a], d)
        total = term if total is None else total + term
    return total
