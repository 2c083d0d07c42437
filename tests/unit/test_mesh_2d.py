"""The 2-D mesh foundation (issue 34, A0): quads as elements with a k axis of one point.

Each 2-D object is checked against its extruded 3-D twin (mesh.extrude.extrude_quads: one
layer of depth 2, periodic z), whose every k plane must carry the 2-D numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.comm import GatherScatter
from lobatto.discretization import derivative_matrix, gll_weights
from lobatto.discretization.tensor import derivative_s, derivative_t, physical_gradient, split_curl
from lobatto.mesh import box_mesh, compute_geometry, connectivity_from_vertices, face_point_ids
from lobatto.mesh.extrude import extrude_quads
from lobatto.mesh.mesh import HexMesh
from lobatto.mesh.partition import partition_box, partition_mesh
from lobatto.operators import Assembly, continuous_ids, dirichlet_faces
from lobatto.systems.dg import add_to_faces, face_values
from planar import deform_xy

ORDER = 3


def rotated_quads(mesh: HexMesh, seed: int) -> HexMesh:
    """The same quads with each element's vertices turned by 0-3 quarter turns (every edge
    pairing and both 2-D orientation codes occur), connectivity rebuilt from the vertices."""
    turn = np.array([1, 3, 0, 2])  # new vertex (p, q) = old one a quarter turn on: keeps J > 0
    rng = np.random.default_rng(seed)
    ev = mesh.element_vertices.copy()
    for e in range(len(ev)):
        for _ in range(rng.integers(4)):
            ev[e] = ev[e][turn]
    neighbour, neighbour_face, orientation = connectivity_from_vertices(ev)
    boundary = neighbour < 0
    return HexMesh(mesh.vertices, ev, neighbour, neighbour_face, orientation,
                   np.where(boundary, 0, -1), deform=mesh.deform)


def test_box_quads_connectivity_is_symmetric_and_matches_vertex_matching():
    mesh = box_mesh((4, 3), lower=(0, 0), upper=(2, 1))
    assert mesh.dim == 2 and mesh.num_faces == 4 and mesh.element_vertices.shape == (12, 4)
    assert np.all(mesh.vertices[:, 2] == 0) and mesh.group_names == ("xmin", "xmax", "ymin", "ymax")
    e, f = np.nonzero(mesh.face_neighbour >= 0)
    nb, nf = mesh.face_neighbour[e, f], mesh.neighbour_face[e, f]
    assert np.array_equal(mesh.face_neighbour[nb, nf], e) and np.array_equal(mesh.neighbour_face[nb, nf], f)
    assert len(e) == 2 * (3 * 3 + 4 * 2)  # interior edges, seen from both sides
    neighbour, neighbour_face, orientation = connectivity_from_vertices(mesh.element_vertices)
    assert np.array_equal(neighbour, mesh.face_neighbour) and np.array_equal(neighbour_face, mesh.neighbour_face)
    assert np.all(orientation[neighbour >= 0] == 0)


def test_rotated_quads_face_points_with_equal_ids_coincide():
    mesh = rotated_quads(box_mesh((4, 3), deform=deform_xy), seed=3)
    assert set(np.unique(mesh.face_orientation[mesh.face_neighbour >= 0])) == {0, 4}  # straight and reversed edges
    mesh.check()
    g = compute_geometry(mesh, ORDER)
    ids = face_point_ids(mesh, ORDER)  # (E, 4, 1, n)
    assert ids.shape == (12, 4, 1, ORDER + 1)
    coords = face_values(np, g.coords, ORDER)  # (3, E, 4, 1, n)
    flat_ids, flat_x = ids.ravel(), coords.reshape(3, -1)
    order = np.argsort(flat_ids, kind="stable")
    same = flat_ids[order][1:] == flat_ids[order][:-1]
    a, b = order[:-1][same], order[1:][same]
    assert same.sum() == 17 * (ORDER + 1)  # every interior edge point paired once
    assert np.abs(flat_x[:, a] - flat_x[:, b]).max() < 1e-14
    normals = face_values(np, np.zeros((1,) + g.jacobian.shape), ORDER)  # shape only
    assert g.normals.shape == (3,) + normals.shape[1:]
    assert np.abs(g.normals.reshape(3, -1)[:, a] + g.normals.reshape(3, -1)[:, b]).max() < 1e-13


@pytest.mark.parametrize("periodic", [(False, False), (True, False), (True, True)])
def test_continuous_ids_count_the_distinct_points(periodic):
    nx, ny, n = 3, 2, ORDER
    mesh = box_mesh((nx, ny), periodic=periodic)
    ids = continuous_ids(mesh, n)
    assert ids.shape == (nx * ny, 1, n + 1, n + 1)
    along_x = nx * n if periodic[0] else nx * n + 1
    along_y = ny * n if periodic[1] else ny * n + 1
    assert ids.max() + 1 == len(np.unique(ids)) == along_x * along_y
    g = compute_geometry(mesh, n)  # equal ids <=> equal coordinates (modulo the periods)
    key = np.round(g.coords[:2].reshape(2, -1), 12)
    for axis in (0, 1):
        if periodic[axis]:
            key[axis] = np.where(key[axis] == 1.0, 0.0, key[axis])
    pairs = np.vstack([ids.reshape(1, -1), key])
    assert len(np.unique(key, axis=1).T) == len(np.unique(pairs, axis=1).T) == ids.max() + 1
    assembly = Assembly(mesh, n, NumpyBackend(), dirichlet=dirichlet_faces(mesh, ["ymin"]) if not periodic[1] else None)
    assert assembly.shape == ids.shape and assembly.num_global_points == along_x * along_y
    assert np.isclose(float(np.sum(1.0 / assembly.multiplicity)), along_x * along_y)


def test_extrude_quads_equals_the_one_layer_periodic_box():
    for periodic in ((False, False), (True, False)):
        flat = box_mesh((3, 2), lower=(0, 0), upper=(3, 1), periodic=periodic, deform=deform_xy)
        twin = extrude_quads(flat)
        box = box_mesh((3, 2, 1), lower=(0, 0, -1), upper=(3, 1, 1), periodic=periodic + (True,), deform=deform_xy)
        for key in ("face_neighbour", "neighbour_face", "face_orientation", "boundary_kind"):
            assert np.array_equal(getattr(twin, key), getattr(box, key)), key
        assert np.array_equal(twin.vertices[twin.element_vertices], box.vertices[box.element_vertices])
        gt, gb = compute_geometry(twin, ORDER), compute_geometry(box, ORDER)
        for key in ("coords", "metrics", "jacobian", "mass", "normals", "surface_jacobian", "lift"):
            assert np.array_equal(getattr(gt, key), getattr(gb, key)), key
        assert np.array_equal(continuous_ids(twin, ORDER), continuous_ids(box, ORDER))


def curved_quads() -> HexMesh:
    """Quads whose map is a degree-2 interpolant of a deformed box (curved_nodes)."""
    mesh = rotated_quads(box_mesh((3, 2), lower=(0, 0), upper=(1.5, 1)), seed=5)
    nodes = compute_geometry(mesh, 2, deform=deform_xy).coords  # (3, E, 1, 3, 3)
    mesh.curved_nodes = np.moveaxis(nodes, 0, 1).copy()
    return mesh


@pytest.mark.parametrize("kind", ["affine", "deformed", "curved"])
def test_geometry_equals_every_plane_of_the_extruded_mesh(kind):
    if kind == "curved":
        flat = curved_quads()
    else:
        flat = rotated_quads(box_mesh((3, 2), lower=(0, 0), upper=(1.5, 1),
                                      deform=deform_xy if kind == "deformed" else None), seed=1)
    g2, g3 = compute_geometry(flat, ORDER), compute_geometry(extrude_quads(flat), ORDER)
    assert g2.dim == 2 and g2.coords.shape == (3, 6, 1, ORDER + 1, ORDER + 1)
    assert np.all(g2.coords[2] == 0) and np.all(g2.metrics[2, :2] == 0) and np.all(g2.metrics[:2, 2] == 0)
    assert np.array_equal(g2.affine, g3.affine) and bool(g2.affine.all()) == (kind == "affine")
    wk = gll_weights(ORDER)
    for k in range(ORDER + 1):
        for name, a2, a3 in (("coords", g2.coords[:2], g3.coords[:2, :, k]), ("metrics", g2.metrics, g3.metrics[..., k, :, :]),
                             ("jacobian", g2.jacobian, g3.jacobian[:, k]),
                             ("mass", g2.mass, g3.mass[:, k] / wk[k]),  # per unit depth
                             ("normals", g2.normals, g3.normals[:, :, :4, k:k + 1]),
                             ("surface_jacobian", g2.surface_jacobian, g3.surface_jacobian[:, :4, k:k + 1]),
                             ("lift", g2.lift, g3.lift[:, :4, k:k + 1])):
            a2 = a2[..., 0, :, :] if name in ("coords", "metrics", "jacobian", "mass") else a2
            assert a2.shape == a3.shape, name
            assert np.abs(a2 - a3).max() <= 1e-14 * np.abs(a2).max(), (name, k)
    # integrals per unit depth: I3 = Lz * I2
    assert abs(g3.mass.sum() - 2 * g2.mass.sum()) < 1e-13 * g3.mass.sum()


def test_dg_trace_sum_equals_the_extruded_one():
    flat = rotated_quads(box_mesh((3, 2), periodic=(True, False), deform=deform_xy), seed=7)
    twin = extrude_quads(flat)
    n = ORDER + 1
    rng = np.random.default_rng(11)
    u2 = rng.standard_normal((2, flat.num_elements, 1, n, n))
    u3 = np.repeat(u2, n, axis=2)  # z-independent
    sums = []
    for mesh, u in ((flat, u2), (twin, u3)):
        traces = np.ascontiguousarray(face_values(np, u, ORDER))  # (2, E, faces, a, b)
        gs = GatherScatter(face_point_ids(mesh, ORDER).ravel())
        gs.apply(traces.reshape(2, -1), "sum")
        gs.free()
        out = np.zeros_like(u)
        add_to_faces(out, traces[:, :, :4] if mesh is flat else np.concatenate(
            [traces[:, :, :4], np.zeros_like(traces[:, :, 4:])], axis=2), ORDER)
        sums.append((traces, out))
    (t2, o2), (t3, o3) = sums
    assert t2.shape == (2, 6, 4, 1, n)
    for k in range(n):
        assert np.array_equal(t3[:, :, :4, k:k + 1], t2)
        assert np.array_equal(o3[:, :, k:k + 1], o2)
    for face in (4, 5):  # periodic z: the element's own k = 0 and k = N planes, equal values
        assert np.array_equal(t3[:, :, face], 2 * u2[:, :, 0])
    assert np.count_nonzero(o2[..., 1:-1, 1:-1]) == 0 and np.count_nonzero(o2[..., 0, :]) > 0  # faces only


def test_thin_axis_derivatives():
    d = derivative_matrix(ORDER)
    n = ORDER + 1
    thin = np.random.default_rng(0).standard_normal((n, 1, n, n))  # E = n: the reshape would divide
    with pytest.raises(ValueError, match="k axis has 1 points"):
        derivative_t(np, thin, d)
    assert derivative_s(np, thin, d).shape == thin.shape
    flat = rotated_quads(box_mesh((3, 2), deform=deform_xy), seed=2)
    g2, g3 = compute_geometry(flat, ORDER), compute_geometry(extrude_quads(flat), ORDER)
    rng = np.random.default_rng(4)
    f2 = rng.standard_normal((3, flat.num_elements, 1, n, n))
    f3 = np.repeat(f2, n, axis=2)
    grad2, grad3 = physical_gradient(np, f2[0], d, g2.metrics), physical_gradient(np, f3[0], d, g3.metrics)
    curl2, curl3 = split_curl(np, f2, d, g2.metrics, g2.jacobian), split_curl(np, f3, d, g3.metrics, g3.jacobian)
    assert np.all(grad2[2] == 0)
    for k in range(n):
        assert np.abs(grad3[:, :, k:k + 1] - grad2).max() < 1e-12 * np.abs(grad2).max()
        assert np.abs(curl3[:, :, k:k + 1] - curl2).max() < 1e-12 * np.abs(curl2).max()


@pytest.mark.parametrize("method", ["rcb", "rsb"])
def test_a_quad_box_is_partitioned_whole(method):
    whole = box_mesh((5, 3))
    for ranks in (2, 3):
        parts = [partition_box((5, 3), ranks, p, method) for p in range(ranks)]
        assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(15))
        # the same parts as the one-layer 3-D box's (rcb cuts whole columns: 6 + 9 on 2 ranks)
        assert all(np.array_equal(p, partition_box((5, 3, 1), ranks, r, method)) for r, p in enumerate(parts))
        assert np.array_equal(np.sort(np.concatenate([partition_mesh(whole, ranks, p, method) for p in range(ranks)])),
                              np.arange(15))
        part = box_mesh((5, 3), element_ids=parts[-1]).halo_last()
        part.check()
        assert part.dim == 2 and part.halo_elements().any()


def test_three_axis_contractions_refuse_a_thin_array():
    """tensor_apply (dealiased advection) and the Galerkin form's along3 would reshape a 2-D
    field's (..., 1, n, n) array into numbers that mean nothing: both refuse it (E = n here,
    where the reshape itself would succeed)."""
    from lobatto.operators.advection import tensor_apply
    from lobatto.systems.maxwell.galerkin import along3

    n, m = 4, 6
    thin = np.random.default_rng(5).standard_normal((n, 1, n, n))
    a = np.random.default_rng(6).standard_normal((m, n))
    with pytest.raises(ValueError, match="tensor_apply"):
        tensor_apply(np, thin, a, a, a)
    with pytest.raises(ValueError, match="along3"):
        along3(np, a, thin)
    full = np.random.default_rng(7).standard_normal((2, n, n, n))
    want = np.einsum("ck,bj,ai,ekji->ecba", a, a, a, full)
    assert np.allclose(tensor_apply(np, full, a, a, a), want) and np.allclose(along3(np, a, full), want)
