import itertools
import warnings

import numpy as np
import pytest

from lobatto.discretization import gll_weights
from lobatto.backends import get_backend
from lobatto.errors import InputError
from lobatto.systems.maxwell.system import MaxwellSystem
from lobatto.mesh import HexMesh, box_mesh, compute_geometry, connectivity_from_vertices, face_point_ids
from lobatto.mesh.topology import NUM_FACES, face_slice


def rotations():
    """The 24 proper rotations of the cube as signed permutation matrices."""
    mats = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1, -1), repeat=3):
            m = np.zeros((3, 3), dtype=int)
            m[range(3), perm] = signs
            if round(np.linalg.det(m)) == 1:
                mats.append(m)
    return mats


def rotate_elements(mesh: HexMesh, seed: int) -> HexMesh:
    """Same physical mesh, each element's local r, s, t axes randomly rotated."""
    rng = np.random.default_rng(seed)
    mats = rotations()
    corners = np.array([[(v & 1) * 2 - 1, ((v >> 1) & 1) * 2 - 1, ((v >> 2) & 1) * 2 - 1] for v in range(8)])
    index = {tuple(c): v for v, c in enumerate(corners)}
    ev = mesh.element_vertices.copy()
    for e in range(mesh.num_elements):
        rot = mats[rng.integers(len(mats))]
        ev[e] = [mesh.element_vertices[e, index[tuple(rot.T @ c)]] for c in corners]
    fn, nf, fo = connectivity_from_vertices(ev)
    kind = np.where(fn < 0, 0, -1)
    return HexMesh(mesh.vertices, ev, fn, nf, fo, kind, deform=mesh.deform)


def sin_deform(x, y, z):
    bump = 0.06 * np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * z)
    return bump, 0.5 * bump, -bump


def test_box_connectivity_matches_vertex_matching():
    mesh = box_mesh([3, 2, 4])
    fn, nf, fo = connectivity_from_vertices(mesh.element_vertices)
    assert np.array_equal(fn, mesh.face_neighbour)
    assert np.array_equal(nf, mesh.neighbour_face)
    assert np.all(fo[fn >= 0] == 0)


def test_periodic_box_has_no_boundary_and_pairs_every_face_point():
    mesh = box_mesh([3, 1, 2], periodic=[True, True, True])
    ids = face_point_ids(mesh, 3)
    _, counts = np.unique(ids, return_counts=True)
    assert np.all(counts == 2)


def test_affine_geometry_matches_analytic():
    lower, upper, elements = np.array([0.5, -1.0, 2.0]), np.array([2.5, 3.0, 2.6]), np.array([4, 2, 3])
    geo = compute_geometry(box_mesh(elements, lower, upper), 5)
    h = (upper - lower) / elements
    expected = np.diag(2.0 / h)
    for b, a in itertools.product(range(3), range(3)):
        assert np.allclose(geo.metrics[b, a], expected[a, b], atol=1e-12)
    assert np.allclose(geo.jacobian, np.prod(h) / 8, rtol=1e-13)
    assert geo.affine.all()
    assert abs(geo.mass.sum() - np.prod(upper - lower)) < 1e-12


def test_polynomial_deformation_metrics_are_exact():
    # x' = x + d(x): a cubic map is reproduced exactly at N >= 3.
    def deform(x, y, z):
        return 0.05 * x**2 * y, 0.03 * y * z**2, 0.04 * x * y * z

    order = 4
    geo = compute_geometry(box_mesh([2, 3, 2], deform=deform), order)
    x, y, z = geo.coords
    h = np.array([1 / 2, 1 / 3, 1 / 2])
    # Analytic d x'_a / d x_c, then d x'/d r = (d x'/d x) diag(h/2).
    grad = np.zeros((3, 3) + x.shape)
    # undeformed coordinates are not stored; recover them from the deformed ones is hard, so
    # evaluate the analytic map at the undeformed GLL points instead.
    from lobatto.mesh.geometry import trilinear_coordinates

    mesh = box_mesh([2, 3, 2])
    x0, y0, z0 = trilinear_coordinates(mesh.vertices, mesh.element_vertices, order)
    grad[0, 0], grad[0, 1] = 1 + 0.1 * x0 * y0, 0.05 * x0**2
    grad[1, 1], grad[1, 2] = 1 + 0.03 * z0**2, 0.06 * y0 * z0
    grad[2, 0], grad[2, 1], grad[2, 2] = 0.04 * y0 * z0, 0.04 * x0 * z0, 1 + 0.04 * x0 * y0
    dxdr = grad * (h / 2)[None, :, None, None, None, None]
    jac = np.linalg.det(np.moveaxis(dxdr, (0, 1), (-2, -1)))
    inv = np.moveaxis(np.linalg.inv(np.moveaxis(dxdr, (0, 1), (-2, -1))), (-2, -1), (0, 1))
    assert np.max(np.abs(geo.jacobian - jac)) < 1e-13 * np.max(jac)
    assert np.max(np.abs(geo.metrics - inv)) < 1e-11 * np.max(np.abs(inv))
    assert not geo.affine.any()


@pytest.mark.parametrize("order", [6, 10, 14])
def test_sine_deformation_converges_spectrally(order):
    # Volume of the deformed unit cube is 1 (the bump vanishes on the boundary); the
    # quadrature of J converges spectrally to it.
    geo = compute_geometry(box_mesh([2, 2, 2], deform=sin_deform), order)
    assert abs(geo.mass.sum() - 1.0) < {6: 1e-6, 10: 1e-10, 14: 1e-13}[order]


def test_normals_opposite_and_face_points_coincide_on_rotated_curved_mesh():
    order = 5
    mesh = rotate_elements(box_mesh([3, 3, 2], deform=sin_deform), seed=3)
    assert np.any(mesh.face_orientation[mesh.face_neighbour >= 0] != 0)
    geo = compute_geometry(mesh, order)
    ids = face_point_ids(mesh, order).reshape(-1)
    coords = np.stack([geo.coords[a][face_slice(f, order)] for a in range(3) for f in range(NUM_FACES)])
    coords = coords.reshape(3, NUM_FACES, mesh.num_elements, order + 1, order + 1).swapaxes(1, 2).reshape(3, -1)
    normals = geo.normals.reshape(3, -1)
    uniq, counts = np.unique(ids, return_counts=True)
    assert set(np.unique(counts)) <= {1, 2}  # interior points pair up, boundary points are alone
    shared = np.isin(ids, uniq[counts == 2])
    sorted_shared = np.flatnonzero(shared)[np.argsort(ids[shared], kind="stable")]
    idx = sorted_shared.reshape(-1, 2)
    assert np.all(ids[idx[:, 0]] == ids[idx[:, 1]])
    assert np.max(np.abs(coords[:, idx[:, 0]] - coords[:, idx[:, 1]])) < 1e-13
    assert np.max(np.abs(normals[:, idx[:, 0]] + normals[:, idx[:, 1]])) < 1e-12
    # boundary of the deformed unit cube is the unit cube: total area 6
    w = gll_weights(order)
    area = (geo.surface_jacobian * w[:, None] * w[None, :]).reshape(mesh.num_elements, NUM_FACES, -1).sum(axis=2)
    assert abs(area[mesh.face_neighbour < 0].sum() - 6.0) < 1e-6


def test_inverted_element_is_reported_by_name():
    with pytest.raises(InputError, match=r"element \d+ \(box index"):
        compute_geometry(box_mesh([4, 1, 1], deform=lambda x, y, z: (2.0 * np.sin(8 * np.pi * x), 0 * y, 0 * z)), 4)


def test_box_rejects_bad_input():
    with pytest.raises(InputError):
        box_mesh([0, 1, 1])
    with pytest.raises(InputError):
        box_mesh([1, 1, 1], lower=[0, 0, 0], upper=[1, 0, 1])
    with pytest.raises(InputError):
        box_mesh([1, 1, 1], boundaries={"xmin": ""})
    # the mesh holds boundary names; the system says which names it knows
    mesh = box_mesh([1, 1, 1], boundary="sticky")
    assert mesh.boundary_names == ("sticky",)
    with pytest.raises(InputError, match="boundary 'sticky' is not a boundary kind of maxwell"):
        MaxwellSystem(mesh, 2, get_backend("cpu"))


@pytest.mark.parametrize("upper", [[1e-300, 1, 1], [1, 1e101, 1], [np.inf, 1, 1]])
def test_box_rejects_extents_whose_geometric_factors_overflow(upper):
    with pytest.raises(InputError, match=r"^\[mesh\] lower/upper"):
        box_mesh([2, 2, 2], upper=upper)


def test_box_rejects_elements_too_small_for_float64_jacobians():
    with pytest.raises(InputError, match=r"\[mesh\] lower/upper and elements: an element is .*volume 1e-288"):
        box_mesh([10, 10, 10], upper=[1e-95, 1e-95, 1e-95])
    compute_geometry(box_mesh([2, 2, 2], upper=[1e-90, 1e-90, 1e-90]), 3)  # small, but representable


def test_degenerate_element_is_reported_as_such_without_warnings():
    mesh = box_mesh([2, 1, 1])
    mesh.vertices[:, 0] = np.where(mesh.vertices[:, 0] > 0.6, 0.5, mesh.vertices[:, 0])  # flatten element 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InputError) as info:
            compute_geometry(mesh, 3)
    assert caught == []
    message = str(info.value)
    assert "element 1 (box index 1,0,0)" in message and "size 0 x 1 x 1" in message
    assert "degenerate" in message and "Jacobian det(dx/dr) is zero" in message
    assert "[mesh.deform]" not in message  # no deformation to blame


def test_inverted_element_blames_the_deformation_only_when_there_is_one():
    deform = lambda x, y, z: (2.0 * np.sin(8 * np.pi * x), 0 * y, 0 * z)  # noqa: E731
    with pytest.raises(InputError, match=r"inverted: its Jacobian det\(dx/dr\) is negative.*\[mesh\.deform\]"):
        compute_geometry(box_mesh([4, 1, 1], deform=deform), 4)
    mesh = box_mesh([2, 1, 1])
    mesh.vertices[:, 0] = np.where(mesh.vertices[:, 0] > 0.6, 0.2, mesh.vertices[:, 0])  # element 1 folded over
    with pytest.raises(InputError, match="inverted") as info:
        compute_geometry(mesh, 3)
    assert "[mesh.deform]" not in str(info.value)


def test_geometry_that_underflows_is_named():
    mesh = box_mesh([2, 1, 1])
    mesh.vertices[:, 0] *= 1e-310  # below what box_mesh accepts: the geometry check still catches it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InputError, match=r"\[mesh\] element 0 .* size 5e-311 x 1 x 1, is degenerate"):
            compute_geometry(mesh, 3)
    assert caught == []
