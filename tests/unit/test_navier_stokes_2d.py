"""Navier–Stokes on 2-D meshes (issue 34, slice D): fields (ux, uy, p) and scalars.

The oracle is the extruded 3-D twin (mesh.extrude.extrude_quads: one layer, z in [-1, 1],
periodic z; docs/notes-2d-plan.md 2.1): the operators equal it plane by plane to 1e-12, with the
GLL weight w_k of the plane on what integrates (A3 ext(u) = w_k A2 u, Lz = 2); a run equals it
to ~1e-10 after 5 BDF2 steps at solver tolerances of 1e-14 (CG: the Krylov paths differ).
"""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.discretization import gll_weights
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.extrude import extrude_quads
from lobatto.operators.advection import Advection
from lobatto.operators.differential import (BackendGeometry, curl, divergence, gradient, mass_minus_gradient,
                                            weak_divergence, weak_divergence_minus_curl, weighted_curl)

REFERENCE = NumpyBackend()


def deform_xy(x, y, z):
    """A smooth z-independent deformation (curved quads)."""
    return 0.06 * np.sin(np.pi * x) * np.sin(2 * np.pi * y), 0.05 * np.sin(2 * np.pi * x) * np.cos(np.pi * y), 0 * z


def twins(elements=(3, 2), order=4):
    """(2-D geometry, the extruded twin's geometry)."""
    flat = box_mesh(elements, deform=deform_xy)
    return compute_geometry(flat, order), compute_geometry(extrude_quads(flat), order)


def extruded(u2, n):
    """A z-independent 3-D field from a 2-D one: (..., E, 1, n, n) -> (..., E, n, n, n)."""
    return np.ascontiguousarray(np.broadcast_to(u2, u2.shape[:-3] + (n, n, n)))


def with_zero_z(v2, n):
    """The 3-vector (vx, vy, 0) of the twin from a 2-D (vx, vy)."""
    v3 = extruded(v2, n)
    return np.concatenate([v3, np.zeros((1,) + v3.shape[1:])])


def close(got, want, bound=1e-12):
    scale = np.abs(want).max()
    assert scale > 1e-3
    assert np.abs(got - want).max() <= bound * scale, np.abs(got - want).max() / scale


# Operators -------------------------------------------------------------------------------------

@pytest.mark.parametrize("order", [3, 6])
def test_differential_operators_equal_the_extruded_ones(order):
    g2, g3 = twins(order=order)
    n = order + 1
    w = gll_weights(order)[None, :, None, None]  # the twin's plane weight (Lz / 2 = 1)
    rng = np.random.default_rng(order)
    v2, f2 = rng.standard_normal((2,) + g2.jacobian.shape), rng.standard_normal((2,) + g2.jacobian.shape)
    p2, omega2 = rng.standard_normal(g2.jacobian.shape), rng.standard_normal((1,) + g2.jacobian.shape)
    b2, b3 = BackendGeometry(g2, REFERENCE), BackendGeometry(g3, REFERENCE)
    assert b2.metrics.shape == (2, 2, 6, 1, n, n)  # the compact metrics of a 2-D mesh
    v3, f3, p3 = with_zero_z(v2, n), with_zero_z(f2, n), extruded(p2, n)
    # curl: omega_z, pointwise; the twin's x and y components are 0
    c2, c3 = curl(b2, REFERENCE, v2), curl(b3, REFERENCE, v3)
    assert c2.shape == (1, 6, 1, n, n)
    close(c3[2], extruded(c2[0], n))
    assert np.abs(c3[:2]).max() <= 1e-12 * np.abs(c2).max()
    close(weighted_curl(b3, REFERENCE, v3)[2], w * weighted_curl(b2, REFERENCE, v2)[0])
    close(gradient(b3, REFERENCE, p3)[:2], extruded(gradient(b2, REFERENCE, p2), n))
    close(divergence(b3, REFERENCE, v3), extruded(divergence(b2, REFERENCE, v2), n))
    close(weak_divergence(b3, REFERENCE, v3), w * weak_divergence(b2, REFERENCE, v2))
    # the pressure right-hand side: the curl of omega_z e_z is (d omega / dy, -d omega / dx)
    omega3 = np.concatenate([np.zeros((2,) + p3.shape), extruded(omega2, n)])
    close(weak_divergence_minus_curl(b3, REFERENCE, f3, omega3, 0.3),
          w * weak_divergence_minus_curl(b2, REFERENCE, f2, omega2, 0.3))
    m3 = mass_minus_gradient(b3, REFERENCE, f3, p3)
    close(m3[:2], w * mass_minus_gradient(b2, REFERENCE, f2, p2))
    assert np.abs(m3[2]).max() <= 1e-12 * np.abs(m3).max()


@pytest.mark.parametrize("order, dealias", [(3, True), (5, True), (4, False)])
def test_advection_equals_the_extruded_one(order, dealias):
    g2, g3 = twins(order=order)
    n = order + 1
    w = gll_weights(order)[None, :, None, None]
    rng = np.random.default_rng(10 + order)
    u2, f2 = rng.standard_normal((2,) + g2.jacobian.shape), rng.standard_normal((3,) + g2.jacobian.shape)
    a2, a3 = Advection(g2, REFERENCE, dealias=dealias), Advection(g3, REFERENCE, dealias=dealias)
    c2 = a2.convective(u2, f2)
    c3 = a3.convective(with_zero_z(u2, n), extruded(f2, n))
    assert c2.shape == f2.shape
    close(c3, w * c2)
    # the CFL number: the twin's t term is 0 (u_z = 0, d t / d x = d t / d y = 0)
    assert a2.courant(u2, 0.1) == pytest.approx(a3.courant(with_zero_z(u2, n), 0.1), rel=1e-12)
    if dealias:
        m = a2.fine_points
        assert a2.factors.shape == (2, 2, 6, 1, m, m) and a2.contravariant(u2).shape == (2, 6, 1, m, m)
        # linear in u: the sub-steps combine contravariant velocities
        close(a2.convective_with(a2.contravariant(u2) * 2.0, f2), 2.0 * c2)
