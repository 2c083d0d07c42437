"""Dealiased advection, curl and divergence, the CFL number and the HPF-RT filter.

The convective term is compared with a separate reference: a plain Gauss quadrature of
phi_p (u . grad f) J with many points, basis functions from a Legendre Vandermonde matrix, and
the Jacobian matrix inverted by numpy.linalg (no code shared with operators.advection).
"""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.backends.cpu import CpuBackend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.discretization import gll_points, legendre
from lobatto.errors import InputError
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.operators import Advection, Assembly, HighPassFilter, curl, divergence, gradient

BACKENDS = [NumpyBackend(), CpuBackend()]
leg = np.polynomial.legendre


def bilinear_map(x, y, z):
    """Straight-edged but not affine: each element's map is trilinear in r, s, t."""
    return 0.08 * x * y, 0.06 * y * z - 0.05 * x * z, 0.07 * x * y


def biquadratic_map(x, y, z):
    """Curved, of degree 2 in each of r, s, t: d x / d r has degree 2 in s and t, cofactors degree 4."""
    xyz = (x * y * z) ** 2
    return 0.06 * (y * z) ** 2 + 0.04 * xyz, 0.05 * (x * z) ** 2 - 0.03 * xyz, 0.07 * (x * y) ** 2 + 0.02 * xyz


def quadratic_map(x, y, z):
    """A curved map of total degree 2 (its r, s, t derivatives are of degree 1)."""
    return 0.08 * y * (1 - y) + 0.05 * z * z, 0.06 * x * z, 0.07 * x * (1 - x) - 0.04 * y * y


def lagrange_on(order, points):
    """(values, derivatives) (m, n) of the GLL Lagrange basis at ``points``, from Legendre coefficients."""
    to_coefficients = np.linalg.inv(leg.legvander(gll_points(order), order))
    values = leg.legvander(points, order) @ to_coefficients
    derivatives = leg.legvander(points, order - 1) @ leg.legder(to_coefficients, axis=0)
    return values, derivatives


def reference_convective(coords, velocity, fields, order, quadrature_points):
    """integral of phi_p (u . grad) f_c over each element, by a tensor Gauss rule of the given size."""
    points, weights = leg.leggauss(quadrature_points)
    V, dV = lagrange_on(order, points)

    def at(u, di=V, dj=V, dk=V):  # (..., E, n, n, n) -> (..., E, Q, Q, Q)
        return np.einsum("kc,jb,ia,...ecba->...ekji", dk, dj, di, u)

    jac = np.stack([np.stack([at(coords[a], dV, V, V), at(coords[a], V, dV, V), at(coords[a], V, V, dV)], -1)
                    for a in range(3)], -2)  # [..., a, b] = d x_a / d r_b
    inverse, det = np.linalg.inv(jac), np.linalg.det(jac)  # inverse[..., b, a] = d r_b / d x_a
    u = at(velocity)
    w3 = weights[:, None, None] * weights[None, :, None] * weights[None, None, :]
    out = np.empty_like(fields)
    for c in range(fields.shape[0]):
        ref = np.stack([at(fields[c], dV, V, V), at(fields[c], V, dV, V), at(fields[c], V, V, dV)], -1)
        grad = np.einsum("...ba,...b->a...", inverse, ref)
        integrand = w3 * det * np.einsum("a...,a...->...", u, grad)
        out[c] = np.einsum("kc,jb,ia,ekji->ecba", V, V, V, integrand)
    return out


def element_polynomials(rng, count, elements, degree, order):
    """(count, E, n, n, n) nodal values of random polynomials of the given degree per variable."""
    c = rng.standard_normal((count, elements, degree + 1, degree + 1, degree + 1))
    v = leg.legvander(gll_points(order), degree)
    return np.einsum("kc,jb,ia,xecba->xekji", v, v, v, c)


def relative(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("backend", BACKENDS, ids=["numpy", "cpu"])
@pytest.mark.parametrize("case", ["trilinear", "curved"])
def test_convective_equals_reference_quadrature(backend, case):
    """3/2 rule: exact for degree-N u, f on trilinear elements (integrand degree 3 N + 1), and for
    degree N - 1 ones on curved elements of degree 2 (3 N + 1); GLL collocation aliases on them."""
    order = 5
    rng = np.random.default_rng(7)
    deform, degree = (bilinear_map, order) if case == "trilinear" else (biquadratic_map, order - 1)
    geometry = compute_geometry(box_mesh((3, 2, 2), deform=deform), order)
    assert not geometry.affine.any()
    e = geometry.jacobian.shape[0]
    velocity = element_polynomials(rng, 3, e, degree, order)
    fields = element_polynomials(rng, 3, e, degree, order)
    expected = reference_convective(geometry.coords, velocity, fields, order, 2 * order + 4)
    advection = Advection(geometry, backend)
    assert advection.fine_points == 9
    got = advection.convective(velocity, fields)
    assert got.shape == fields.shape
    assert relative(got, expected) < 1e-12
    scalar = advection.convective(velocity, fields[1:2], out=np.empty_like(fields[:1]))
    assert relative(scalar[0], expected[1]) < 1e-12
    aliased = Advection(geometry, backend, dealias=False).convective(velocity, fields)
    assert relative(aliased, expected) > 1e-3


def test_curved_full_degree_needs_more_points_than_the_rule():
    """Degree-N fields on a degree-2 map have an integrand of degree 3 N + 3: the 3/2 rule's
    M = 9 (N = 5, exact to degree 17) misses it, M = 10 integrates it exactly."""
    order = 5
    rng = np.random.default_rng(8)
    geometry = compute_geometry(box_mesh((2, 2, 1), deform=biquadratic_map), order)
    e = geometry.jacobian.shape[0]
    velocity, fields = element_polynomials(rng, 3, e, order, order), element_polynomials(rng, 1, e, order, order)
    expected = reference_convective(geometry.coords, velocity, fields, order, 2 * order + 4)
    backend = BACKENDS[0]
    assert relative(Advection(geometry, backend).convective(velocity, fields), expected) > 1e-8
    assert relative(Advection(geometry, backend, fine_points=10).convective(velocity, fields), expected) < 1e-12


def test_collocation_is_mass_times_pointwise_advection():
    order = 4
    geometry = compute_geometry(box_mesh((2, 1, 2), deform=quadratic_map), order)
    rng = np.random.default_rng(9)
    u, f = rng.standard_normal((2, 3) + geometry.jacobian.shape)
    backend = BACKENDS[0]
    grads = [gradient(geometry, backend, f[c]) for c in range(3)]
    expected = np.stack([geometry.mass * np.einsum("a...,a...->...", u, g) for g in grads])
    got = Advection(geometry, backend, dealias=False).convective(u, f)
    assert relative(got, expected) < 1e-13


def bump(t, slope):
    """t^2 (1 - t)^2 (1 + slope t) and its derivative: both vanish at t = 0 and t = 1."""
    p = np.polynomial.polynomial.polymul([0, 0, 1, -2, 1], [1, slope])
    return np.polynomial.polynomial.polyval(t, p), np.polynomial.polynomial.polyval(t, np.polynomial.polynomial.polyder(p))


def periodic_velocity(x, y, z, rng):
    """curl of (0, 0, psi) with psi = 30 a(x) b(y) e(z), plus a constant and u_z = c(x, y): divergence
    free, degree 5 in x and y, continuous on the periodic unit box. The bumps are not symmetric
    about 1/2 (a symmetric field on the symmetric mesh would cancel the aliasing error)."""
    c = rng.standard_normal(8)
    (a, da), (b, db) = bump(x, c[0]), bump(y, c[1])
    e = 1 + c[2] * z * (1 - z)
    return np.stack([30 * a * db * e + c[3], -30 * da * b * e + c[4], c[5] + c[6] * x * (1 - x) * y * (1 - y) * (1 + c[7] * x)])


@pytest.mark.parametrize("backend", BACKENDS, ids=["numpy", "cpu"])
def test_energy_is_conserved_with_dealiasing(backend):
    """sum over distinct points of u . C(u) u = -1/2 integral of div(u) |u|^2 = 0 for a continuous,
    periodic, divergence-free u when the quadrature is exact (affine elements; the integrand has
    degree 14 per variable, the 3/2 rule's M = 9 integrates 17, GLL with N = 5 only 9)."""
    order = 5
    mesh = box_mesh((3, 2, 2), periodic=(True, True, True))
    geometry = compute_geometry(mesh, order)
    velocity = periodic_velocity(*geometry.coords, np.random.default_rng(11))
    assert np.abs(divergence(geometry, backend, velocity)).max() < 1e-12
    assembly = Assembly(mesh, order, backend)
    energies = {}
    for dealias in (True, False):
        c = Advection(geometry, backend, dealias=dealias).convective(velocity, velocity)
        energy = sum(assembly.dot(velocity[a], assembly.dssum(c[a].copy())) for a in range(3))
        assert np.isclose(energy, float(np.vdot(velocity, c)), rtol=1e-8, atol=1e-14)  # continuous u: the same sum
        energies[dealias] = energy / float(np.abs(velocity * c).sum())
    assert abs(energies[True]) < 1e-14
    assert abs(energies[False]) > 1e-8  # GLL quadrature aliases: not conserved


def polynomial_velocity(x, y, z):
    """Degree 2 in x, y, z, with its curl and divergence."""
    v = np.stack([x * y + z * z, y * z - x * x, x * z + 2 * y])
    vx = np.stack([y, -2 * x, z])
    vy = np.stack([x, z, 2 * np.ones_like(x)])
    vz = np.stack([2 * z, y, x])
    rot = np.stack([vy[2] - vz[1], vz[0] - vx[2], vx[1] - vy[0]])
    return v, rot, vx[0] + vy[1] + vz[2]


@pytest.mark.parametrize("order", [4, 6])
def test_curl_and_divergence_exact_on_curved_elements(order):
    """Degree 2 in x on a degree-2 map is degree 4 in r: exact from N = 4."""
    geometry = compute_geometry(box_mesh((3, 2, 2), deform=quadratic_map), order)
    v, expected_curl, expected_div = polynomial_velocity(*geometry.coords)
    for backend in BACKENDS:
        assert relative(curl(geometry, backend, v), expected_curl) < 1e-11
        assert relative(divergence(geometry, backend, v), expected_div) < 1e-11


def test_curl_and_divergence_miss_a_degree_above_the_order():
    geometry = compute_geometry(box_mesh((3, 2, 2), deform=quadratic_map), 3)
    v, expected_curl, expected_div = polynomial_velocity(*geometry.coords)
    assert relative(curl(geometry, BACKENDS[0], v), expected_curl) > 1e-6
    assert relative(divergence(geometry, BACKENDS[0], v), expected_div) > 1e-6


def test_div_curl_and_curl_grad_vanish():
    """Affine elements: to round-off for any nodal data. Curved ones: spectrally small."""
    backend = BACKENDS[0]
    rng = np.random.default_rng(12)
    box = compute_geometry(box_mesh((2, 3, 2), upper=(2.0, 1.0, 1.5)), 6)
    v = rng.standard_normal((3,) + box.jacobian.shape)

    def second_derivatives(w):  # the size of the terms that cancel: round-off is relative to it
        return max(np.abs(gradient(box, backend, w[a])).max() for a in range(3))

    rot, grad = curl(box, backend, v), gradient(box, backend, v[0])
    assert np.abs(divergence(box, backend, rot)).max() < 1e-13 * second_derivatives(rot)
    assert np.abs(curl(box, backend, grad)).max() < 1e-13 * second_derivatives(grad)
    errors = []
    mesh = box_mesh((2, 2, 2), deform=lambda x, y, z: (0.05 * np.sin(3 * y), 0.04 * np.sin(2 * z + x), 0.03 * np.cos(x)))
    for order in (4, 8):
        geometry = compute_geometry(mesh, order)
        x, y, z = geometry.coords
        smooth = np.stack([np.sin(x + 2 * y), np.cos(y * z), np.sin(x * z + 1)])
        errors.append((np.abs(divergence(geometry, backend, curl(geometry, backend, smooth))).max(),
                       np.abs(curl(geometry, backend, gradient(geometry, backend, smooth[0]))).max()))
    (dc4, cg4), (dc8, cg8) = errors
    assert dc8 < 1e-3 * dc4 and cg8 < 1e-3 * cg4
    assert dc8 < 1e-6 and cg8 < 1e-6


def test_courant_on_a_uniform_box():
    """Constant u: the largest term is at a corner, where dr = 1 - sqrt(3/7) for N = 4."""
    order = 4
    size = np.array([2.0, 1.0, 1.5]) / np.array([4, 2, 3])  # element sizes h_x, h_y, h_z
    geometry = compute_geometry(box_mesh((4, 2, 3), upper=(2.0, 1.0, 1.5)), order)
    u = np.array([0.3, -1.2, 0.5])
    velocity = np.broadcast_to(u[:, None, None, None, None], (3,) + geometry.jacobian.shape).copy()
    dt = 0.01
    expected = dt * np.sum(np.abs(u) * (2 / size)) / (1 - np.sqrt(3 / 7))
    for backend in BACKENDS:
        assert np.isclose(Advection(geometry, backend).courant(velocity, dt), expected, rtol=1e-13)
    # a varying u, point by point by hand: spacing (r_{i+1} - r_{i-1}) / 2 inside, one-sided at the ends
    rng = np.random.default_rng(13)
    velocity = rng.standard_normal(velocity.shape)
    r = gll_points(order)
    dr = np.array([r[1] - r[0]] + [(r[i + 1] - r[i - 1]) / 2 for i in range(1, order)] + [r[-1] - r[-2]])
    best = 0.0
    for e in range(geometry.jacobian.shape[0]):
        for k in range(order + 1):
            for j in range(order + 1):
                for i in range(order + 1):
                    ux, uy, uz = velocity[:, e, k, j, i]
                    best = max(best, abs(ux) * 2 / size[0] / dr[i] + abs(uy) * 2 / size[1] / dr[j]
                               + abs(uz) * 2 / size[2] / dr[k])
    assert np.isclose(Advection(geometry, BACKENDS[0], dealias=False).courant(velocity, dt), dt * best, rtol=1e-13)


def legendre_field(order, a, b, c):
    """P_a(r) P_b(s) P_c(t) at the GLL points of one element, (1, n, n, n)."""
    r = gll_points(order)
    pa, pb, pc = (legendre(k, r)[0] for k in (a, b, c))
    return (pc[:, None, None] * pb[None, :, None] * pa[None, None, :])[None]


@pytest.mark.parametrize("modes", [1, 2])
def test_filter_keeps_low_and_removes_high_legendre_modes(modes):
    order = 6
    backend = BACKENDS[0]
    hpf = HighPassFilter(order, backend, modes=modes, weight=10.0)
    for a, b, c in [(0, 0, 0), (order - modes, 1, 0), (2, order - modes, order - modes), (order - modes + 1, 0, 0),
                    (1, order, 2), (order, order, order), (0, 3, order - modes + 1)]:
        u = legendre_field(order, a, b, c)
        kept = max(a, b, c) <= order - modes
        expected = np.zeros_like(u) if kept else 10.0 * u
        assert np.abs(hpf.relaxation(u) - expected).max() < 1e-12, (a, b, c)
        assert np.abs(hpf.lowpass(u) - (u if kept else 0 * u)).max() < 1e-12
    # a mix: only the filtered part remains, whatever is combined with it
    low, high = legendre_field(order, 1, 2, 0), legendre_field(order, 0, order, 1)
    assert np.abs(hpf.relaxation(3 * low - 2 * high) + 20 * high).max() < 1e-11


def test_filter_relaxation_constant_weight_and_errors():
    order = 5
    rng = np.random.default_rng(14)
    u = rng.standard_normal((3, 4, order + 1, order + 1, order + 1))
    for backend in BACKENDS:
        assert np.abs(HighPassFilter(order, backend).relaxation(np.full_like(u, 2.5))).max() < 1e-13
        r1 = HighPassFilter(order, backend, weight=1.0).relaxation(u)
        r7 = HighPassFilter(order, backend, weight=7.0).relaxation(u)
        assert np.abs(r7 - 7 * r1).max() < 1e-13 and np.abs(r1).max() > 0.1
        out = np.empty_like(u)
        assert HighPassFilter(order, backend).relaxation(u, out=out) is out
    # the tensor product is not (I - F) along one direction at a time
    hpf = HighPassFilter(order, BACKENDS[0], weight=1.0)
    one_direction = u - np.einsum("il,...l->...i", hpf.matrix, u)
    assert np.abs(hpf.relaxation(u) - one_direction).max() > 1e-3
    # nekRS's ramp: the same as the sharp cut for one mode, a partial cut of the lower filtered modes for two
    assert np.allclose(HighPassFilter(order, BACKENDS[0], ramp=True).matrix, HighPassFilter(order, BACKENDS[0]).matrix)
    ramp = HighPassFilter(order, BACKENDS[0], modes=2, weight=1.0, ramp=True)
    p4 = legendre_field(order, order - 1, 0, 0)
    assert np.abs(ramp.lowpass(p4) - 0.75 * p4).max() < 1e-12  # sigma = 1 - (1 / 2)^2
    for bad in (dict(modes=0), dict(modes=order), dict(weight=-1.0), dict(weight=float("nan"))):
        with pytest.raises(InputError):
            HighPassFilter(order, BACKENDS[0], **bad)
    with pytest.raises(InputError, match="must end in"):
        hpf.relaxation(u[..., :-1])


def test_advection_errors():
    geometry = compute_geometry(box_mesh((2, 1, 1)), 3)
    backend = BACKENDS[0]
    with pytest.raises(InputError, match="fine_points"):
        Advection(geometry, backend, fine_points=3)
    advection = Advection(geometry, backend)
    shape = geometry.jacobian.shape
    with pytest.raises(InputError, match="velocity"):
        advection.convective(np.zeros((2,) + shape), np.zeros((1,) + shape))
    with pytest.raises(InputError, match="fields"):
        advection.convective(np.zeros((3,) + shape), np.zeros(shape))
