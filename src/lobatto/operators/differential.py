"""Gradient, weak divergence and mass on the elements of a mesh (no assembly).

    gradient(geometry, backend, u)         (3, E, n, n, n): (du/dx, du/dy, du/dz) at every point
    weak_divergence(geometry, backend, v)  (E, n, n, n): integral of v . grad(phi_p) for every
                                           basis function phi_p of the element (GLL quadrature)
    mass(geometry, backend, u)             (E, n, n, n): B u, B = w J the diagonal mass

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
