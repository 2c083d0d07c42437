"""Gradient, curl, divergence, weak divergence and mass on the elements of a mesh (no assembly).

    gradient(geometry, backend, u)         (3, E, n, n, n): (du/dx, du/dy, du/dz) at every point
    weak_divergence(geometry, backend, v)  (E, n, n, n): integral of v . grad(phi_p) for every
                                           basis function phi_p of the element (GLL quadrature)
    mass(geometry, backend, u)             (E, n, n, n): B u, B = w J the diagonal mass
    curl(geometry, backend, v)             (3, E, n, n, n): curl of v (3, E, n, n, n) at every point
    divergence(geometry, backend, v)       (E, n, n, n): div v at every point

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

``geometry`` is a ``lobatto.mesh.Geometry`` (host arrays: copied to the backend on every
call) or a ``BackendGeometry`` made once from it (no copies): use the latter in loops.
All work is batched matrix products on ``backend.xp``; nothing loops over elements.
"""

from __future__ import annotations

import numpy as np

from lobatto.discretization import derivative_matrix
from lobatto.discretization.tensor import derivative_r, derivative_s, derivative_t, physical_gradient


class BackendGeometry:
    """The factors these operators need, on a backend, in one dtype."""

    def __init__(self, geometry, backend, dtype=None):
        self.order = int(geometry.order)
        self.backend = backend
        self.dtype = np.dtype(dtype or backend.dtype)
        self.metrics = backend.asarray(geometry.metrics, dtype=self.dtype)  # [b, a] = d r_b / d x_a
        self.mass = backend.asarray(geometry.mass, dtype=self.dtype)
        d = derivative_matrix(self.order)
        self.derivative = backend.asarray(d, dtype=self.dtype)
        self.derivative_transpose = backend.asarray(np.ascontiguousarray(d.T), dtype=self.dtype)


def on_backend(geometry, backend) -> BackendGeometry:
    if isinstance(geometry, BackendGeometry):
        return geometry
    return BackendGeometry(geometry, backend)


def gradient(geometry, backend, u):
    """(3, E, n, n, n) physical gradient of u (E, n, n, n) by the chain rule."""
    g = on_backend(geometry, backend)
    return physical_gradient(backend.xp, u, g.derivative, g.metrics)


def weak_divergence(geometry, backend, v):
    """(E, n, n, n) sum_b D_b^T [w J sum_a (d r_b / d x_a) v_a] for v (3, E, n, n, n)."""
    g = on_backend(geometry, backend)
    xp = backend.xp
    flux = [g.mass * (g.metrics[b, 0] * v[0] + g.metrics[b, 1] * v[1] + g.metrics[b, 2] * v[2]) for b in range(3)]
    dt = g.derivative_transpose
    return derivative_r(xp, flux[0], dt) + derivative_s(xp, flux[1], dt) + derivative_t(xp, flux[2], dt)


def mass(geometry, backend, u):
    """B u: u (..., E, n, n, n) times the diagonal mass w J."""
    return on_backend(geometry, backend).mass * u


def _component_gradients(geometry, backend, v):
    g = on_backend(geometry, backend)
    return [physical_gradient(backend.xp, v[c], g.derivative, g.metrics) for c in range(3)]  # [c][a] = d v_c / d x_a


def curl(geometry, backend, v):
    """(3, E, n, n, n) curl of v (3, E, n, n, n) by the chain rule, pointwise."""
    d = _component_gradients(geometry, backend, v)
    return backend.xp.stack([d[2][1] - d[1][2], d[0][2] - d[2][0], d[1][0] - d[0][1]])


def divergence(geometry, backend, v):
    """(E, n, n, n) div v of v (3, E, n, n, n): sum_a sum_b (d r_b / d x_a) d v_a / d r_b, pointwise."""
    g = on_backend(geometry, backend)
    xp = backend.xp
    d = g.derivative
    total = None
    for a in range(3):
        term = (g.metrics[0, a] * derivative_r(xp, v[a], d) + g.metrics[1, a] * derivative_s(xp, v[a], d)
                + g.metrics[2, a] * derivative_t(xp, v[a], d))
        total = term if total is None else total + term
    return total
