"""Port modes of any cross-section (systems/maxwell/port_mode_solver.py): a rectangle meshed by
box-mesh faces against the analytic TE/TM modes, the O-grid disc of tests/cylwave.py against the
Bessel cutoffs and circular_mode, orthonormality under the face quadrature, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import jn_zeros, jnp_zeros

from cylwave import cylinder_rea
from lobatto.discretization import gll_weights
from lobatto.errors import InputError
from lobatto.mesh.box import box_mesh
from lobatto.mesh.geometry import element_coordinates
from lobatto.mesh.readers import mesh_from_file
from lobatto.mesh.topology import face_slice
from lobatto.systems.maxwell.port_mode_solver import circular_mode, solved_modes


def plane_faces(coords, order, axis, value):
    """(3, K, n, n) points of every element face lying on x_axis = value."""
    faces = np.concatenate([coords[face_slice(f, order)] for f in range(6)], axis=1)
    return faces[:, np.all(np.abs(faces[axis] - value) < 1e-12, axis=(1, 2))]


def quadrature(faces, axis):
    """GLL weights x surface Jacobian of flat axis-aligned rectangular faces."""
    u, v = [a for a in range(3) if a != axis]
    order = faces.shape[-1] - 1
    w = gll_weights(order)
    hu, hv = np.ptp(faces[u], axis=(1, 2)), np.ptp(faces[v], axis=(1, 2))
    return (hu * hv / 4)[:, None, None] * w[:, None] * w[None, :]


def gram(modes, mass):
    e = np.stack([m[1] for m in modes])
    return np.einsum("ickab,jckab,kab->ij", e, e, mass)


@pytest.fixture(scope="module")
def rectangle():
    """a x b = 1 x 0.5: the side x = 0 of a box (guide axis x; in-plane axes y, z), 4 x 2 faces."""
    order = 6
    mesh = box_mesh((1, 4, 2), lower=(0.0, 0.0, 0.0), upper=(0.5, 1.0, 0.5))
    return plane_faces(element_coordinates(mesh, order), order, 0, 0.0)


def analytic(kind, m, n, y, z, a=1.0, b=0.5):
    """e_t (y, z parts) of TE/TM_mn of the guide along x, cross-section 0 < y < a, 0 < z < b:
    TE: x^ x grad cos(m pi y/a) cos(n pi z/b); TM: grad sin(m pi y/a) sin(n pi z/b)."""
    ky, kz = m * np.pi / a, n * np.pi / b
    if kind == "TM":
        return ky * np.cos(ky * y) * np.sin(kz * z), kz * np.sin(ky * y) * np.cos(kz * z)
    gy, gz = -ky * np.sin(ky * y) * np.cos(kz * z), -kz * np.cos(ky * y) * np.sin(kz * z)
    return -gz, gy  # x^ x (0, gy, gz) = (0, -gz, gy)


@pytest.mark.parametrize("kind, expected", [("TE", [(1, 0), (0, 1), (2, 0), (1, 1)]),
                                              ("TM", [(1, 1), (2, 1), (3, 1)])])
def test_rectangle_cutoffs_and_profiles(rectangle, kind, expected):
    modes = solved_modes(rectangle, 0, kind, len(expected))
    mass = quadrature(rectangle, 0)
    y, z = rectangle[1], rectangle[2]
    for (kc, e), (m, n) in zip(modes, expected):
        assert kc == pytest.approx(np.pi * np.hypot(m / 1.0, n / 0.5), abs=1e-8)
        assert np.abs(e[0]).max() == 0.0
        ey, ez = analytic(kind, m, n, y, z)
        norm = np.sqrt(np.sum(mass * (ey ** 2 + ez ** 2)))
        err = min(np.abs(np.stack([e[1], e[2]]) - s * np.stack([ey, ez]) / norm).max() for s in (1, -1))
        assert err < 1e-3 * np.abs(np.stack([ey, ez])).max() / norm  # measured: up to 2.4e-4 (TM31)
    assert np.allclose(gram(modes, mass), np.eye(len(modes)), atol=1e-12)


def test_rectangle_sign_and_degenerate_pair(rectangle):
    """TE10's e_z (the only component) has a positive mean; TE20 and TE01 share k_c = 2 pi:
    the first of the pair has its mean along the first in-plane axis (y) and is TE01 (e_y only)."""
    modes = solved_modes(rectangle, 0, "TE", 3)
    mass = quadrature(rectangle, 0)
    te10, first, second = (m[1] for m in modes)
    assert np.sum(mass * te10[2]) > 0 and np.abs(te10[1]).max() < 1e-12
    assert modes[1][0] == pytest.approx(modes[2][0], rel=1e-10)
    assert np.sum(mass * first[1]) > 0 and abs(np.sum(mass * first[2])) < 1e-12
    assert np.abs(first[2]).max() < 1e-8 and np.abs(second[1]).max() < 1e-8
    # TE20 has zero mean: its sign is that of its first moment along y
    assert np.sum(mass * second[2] * (rectangle[1] - 0.5)) > 0


@pytest.fixture(scope="module")
def disc(tmp_path_factory):
    """The z = 0 faces of the O-grid cylinder (radius 1; m = 2: 12 faces) at N = 3..6."""
    path = tmp_path_factory.mktemp("disc") / "cyl.rea"
    cylinder_rea(path, m=2, layers=1, length=0.5)
    out = {}
    for order in (3, 4, 5, 6):
        mesh = mesh_from_file("nek", path, order, {"PEC": "pec"})
        out[order] = plane_faces(element_coordinates(mesh, order), order, 2, 0.0)
    return out


def test_disc_cutoffs_converge_and_match_circular_modes(disc):
    te11, tm01 = jnp_zeros(1, 1)[0], jn_zeros(0, 1)[0]
    errors = []
    for order, faces in disc.items():
        te, tm = solved_modes(faces, 2, "TE", 2), solved_modes(faces, 2, "TM", 1)
        assert te[0][0] == pytest.approx(te[1][0], rel=1e-9)  # the TE11 pair
        kc, e_te = circular_mode("TE11", faces, 2)
        kt, e_tm = circular_mode("TM01", faces, 2)
        assert kc == pytest.approx(te11) and kt == pytest.approx(tm01)
        errors.append((abs(te[0][0] - te11), abs(tm[0][0] - tm01),
                       np.abs(te[0][1] - e_te).max(), np.abs(tm[0][1] - e_tm).max()))
    errors = np.array(errors)
    # spectral convergence (measured: k_c errors 1.9e-5 -> 1.1e-11, profiles 5e-3 -> 5e-6 at N = 3 -> 6)
    assert np.all(errors[-1] < [1e-10, 1e-10, 2e-5, 2e-5])
    assert np.all(errors[-1] < 1e-2 * errors[0])
    # the TE11 pair: the first's mean e_t along x (positive), the second's along y
    faces = disc[6]
    (_, first), (_, second) = solved_modes(faces, 2, "TE", 2)
    mean = lambda e: np.array([e[0].sum(), e[1].sum()])  # noqa: E731 (the rotation needs no weights)
    assert mean(first)[0] > 0 and abs(mean(first)[1]) < 1e-9 * abs(mean(first)[0])
    assert mean(second)[1] > 0 and abs(mean(second)[0]) < 1e-9 * abs(mean(second)[1])


def test_disc_modes_orthonormal(disc):
    faces = disc[5]
    plane = solved_modes(faces, 2, "TE", 5) + solved_modes(faces, 2, "TM", 3)
    # face quadrature on curved faces: weights x |Jacobian| of the face's 2-D map
    from lobatto.discretization import derivative_matrix
    d, w = derivative_matrix(5), gll_weights(5)
    x, y = faces[0], faces[1]
    xr, xs = np.einsum("ai,kib->kab", d, x), np.einsum("bj,kaj->kab", d, x)
    yr, ys = np.einsum("ai,kib->kab", d, y), np.einsum("bj,kaj->kab", d, y)
    mass = np.abs(xr * ys - xs * yr) * w[:, None] * w[None, :]
    g = gram(plane[:5], mass)
    assert np.allclose(g, np.eye(5), atol=1e-10)
    g = gram(plane[5:], mass)
    assert np.allclose(g, np.eye(3), atol=1e-10)
    for kc, e in plane:
        assert np.abs(e[2]).max() == 0.0


def test_errors(rectangle, disc):
    with pytest.raises(InputError, match="kind"):
        solved_modes(rectangle, 0, "TEM", 1)
    with pytest.raises(InputError, match="too few faces"):
        solved_modes(rectangle[:, :0], 0, "TE", 1)
    with pytest.raises(InputError, match="too few faces"):
        solved_modes(rectangle[:, :1], 0, "TM", 30)
    tilted = rectangle.copy()
    tilted[0] += 0.1 * tilted[1]
    with pytest.raises(InputError, match="not lie on one plane"):
        solved_modes(tilted, 0, "TE", 1)
    with pytest.raises(InputError, match="not a disc"):
        circular_mode("TE11", rectangle, 0)
    with pytest.raises(InputError, match="same face twice"):
        solved_modes(np.concatenate([rectangle, rectangle[:, :1]], axis=1), 0, "TE", 1)
    for name in ("TE00", "TEM", "HE11", "TE1", 11):
        with pytest.raises(InputError, match="unknown mode name"):
            circular_mode(name, disc[3], 2)


def test_sparse_shift_invert_equals_dense(rectangle, monkeypatch):
    """Large planes go through eigsh (shift-invert below the spectrum): same modes."""
    import lobatto.systems.maxwell.port_mode_solver as solver
    dense = solved_modes(rectangle, 0, "TE", 4) + solved_modes(rectangle, 0, "TM", 2)
    monkeypatch.setattr(solver, "DENSE", 10)
    sparse = solved_modes(rectangle, 0, "TE", 4) + solved_modes(rectangle, 0, "TM", 2)
    for (k1, e1), (k2, e2) in zip(dense, sparse):
        assert k1 == pytest.approx(k2, rel=1e-10)
        assert np.abs(e1 - e2).max() < 1e-7


def test_face_order_and_orientation_do_not_matter(disc):
    """Ranks gather the faces in another order, faces come in either orientation: the same modes
    on the same points (the rank-count independence the ports need)."""
    faces = disc[4]
    rng = np.random.default_rng(3)
    order = rng.permutation(faces.shape[1])
    shuffled = faces[:, order].copy()
    shuffled[:, ::2] = np.swapaxes(shuffled[:, ::2], -1, -2)  # every other face transposed
    for kind, count in (("TE", 4), ("TM", 3)):
        a, b = solved_modes(faces, 2, kind, count), solved_modes(shuffled, 2, kind, count)
        for (ka, ea), (kb, eb) in zip(a, b):
            eb = eb.copy()
            eb[:, ::2] = np.swapaxes(eb[:, ::2], -1, -2)
            back = np.empty_like(eb)
            back[:, order] = eb
            assert ka == pytest.approx(kb, rel=1e-11) and np.abs(ea - back).max() < 1e-9


def test_shapes_for_the_ports_registry(disc, rectangle):
    """circle_shape / any_shape have the ports' registry signature and name the port in errors."""
    from lobatto.systems.maxwell.port_mode_solver import any_shape, circle_shape
    kc, e = circle_shape("TM01", disc[4], 2, "case.toml: [port.in]")
    assert kc == pytest.approx(jn_zeros(0, 1)[0])
    third = solved_modes(rectangle, 0, "TE", 3)[2]
    kc, e = any_shape("TE3", rectangle, 0, "case.toml: [port.in]")
    assert kc == third[0] and np.array_equal(e, third[1])
    for name in ("TE0", "TEM", "TE10x", 3):
        with pytest.raises(InputError, match=r"case.toml: \[port.in\]: mode"):
            any_shape(name, rectangle, 0, "case.toml: [port.in]")
    with pytest.raises(InputError, match=r"^case.toml: \[port.in\]: mode = 'TE11': the cross-section is not a disc"):
        circle_shape("TE11", rectangle, 0, "case.toml: [port.in]")
    with pytest.raises(InputError, match=r"^case.toml: \[port.in\]: mode = 'TM40': too few faces"):
        any_shape("TM40", rectangle[:, :1], 0, "case.toml: [port.in]")
