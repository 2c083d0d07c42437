"""Continuous numbering and assembly against coordinates and NumPy oracles.

Ids must be equal exactly where GLL points coincide (periodic wraps folded back), on box meshes
(periodic or not, deformed) and on meshes whose elements are rotated copies of box elements,
so that neighbouring faces meet with every orientation code. Multiplicity and the Dirichlet mask
are checked against point counts and positions, dssum against np.bincount, dot against sums over
distinct points.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.errors import InputError
from lobatto.mesh import INTERIOR, HexMesh, box_mesh, compute_geometry, connectivity_from_vertices
from lobatto.operators import Assembly, continuous_ids, dirichlet_faces
from lobatto.operators.numbering import connected_labels

# ---- meshes -------------------------------------------------------------------------------------

#: local coordinates (+-1) of the eight corners, corner v = p + 2q + 4l
CORNER_SIGNS = np.array([[2 * (v & 1) - 1, 2 * ((v >> 1) & 1) - 1, 2 * ((v >> 2) & 1) - 1] for v in range(8)])


def cube_rotations() -> list[np.ndarray]:
    """The 24 proper rotations of the cube (signed permutation matrices of determinant +1)."""
    out = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1, -1), repeat=3):
            rotation = np.zeros((3, 3), dtype=np.int64)
            rotation[np.arange(3), perm] = signs
            if round(np.linalg.det(rotation)) == 1:
                out.append(rotation)
    return out


def corner_permutation(rotation: np.ndarray) -> np.ndarray:
    """new corner v takes old corner number perm[v]: the element map becomes x_old(R r)."""
    old = CORNER_SIGNS @ rotation.T
    return ((old[:, 0] + 1) // 2 + 2 * ((old[:, 1] + 1) // 2) + 4 * ((old[:, 2] + 1) // 2)).astype(np.int64)


def rotated_box_mesh(elements, periodic=(False, False, False), seed=0, lower=(0.0, 0.0, 0.0),
                     upper=(1.0, 1.0, 1.0), deform=None) -> HexMesh:
    """A box of hexahedra, each given a random one of the 24 rotations of its corner numbering.

    Connectivity comes from connectivity_from_vertices on lattice vertex ids (wrapped on periodic
    axes, so wrapped faces match); the geometry from curved nodes of order 1 (the corners), since
    a wrapped vertex id has two positions. Periodic axes need 3 elements or more: with 2, two
    different faces would have the same four vertex ids."""
    counts = np.asarray(elements)
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    nx, ny, nz = (int(c) for c in counts)
    e = np.arange(nx * ny * nz)
    index = np.stack([e % nx, (e // nx) % ny, e // (nx * ny)], axis=1)
    lattice = index[:, None, :] + (CORNER_SIGNS[None] + 1) // 2  # (E, 8, 3)
    coords = lower + (upper - lower) * lattice / counts
    wrapped = np.where(np.asarray(periodic)[None, None, :], lattice % counts, lattice)
    vertex_key = wrapped[..., 0] + (nx + 1) * (wrapped[..., 1] + (ny + 1) * wrapped[..., 2])
    rng = np.random.default_rng(seed)
    rotations = cube_rotations()
    choice = rng.integers(0, len(rotations), size=len(e))
    perms = np.stack([corner_permutation(rotations[c]) for c in choice])
    rows = e[:, None]
    vertex_key, coords = vertex_key[rows, perms], coords[rows, perms]
    used, element_vertices = np.unique(vertex_key, return_inverse=True)
    element_vertices = element_vertices.reshape(len(e), 8)
    vertices = np.zeros((len(used), 3))
    vertices[element_vertices.ravel()] = coords.reshape(-1, 3)
    nodes = coords.reshape(len(e), 2, 2, 2, 3).transpose(0, 4, 1, 2, 3)  # [e, x, l, q, p]
    face_neighbour, neighbour_face, orientation = connectivity_from_vertices(element_vertices)
    mesh = HexMesh(
        vertices=vertices,
        element_vertices=element_vertices,
        face_neighbour=face_neighbour,
        neighbour_face=neighbour_face,
        face_orientation=orientation,
        boundary_kind=np.where(face_neighbour < 0, 0, INTERIOR),
        boundary_names=("wall",),
        curved_nodes=np.ascontiguousarray(nodes),
        deform=deform,
    )
    mesh.check()
    return mesh


def periodic_deform(lower, upper):
    """A smooth deformation that is periodic over the box (so wrapped points still coincide)."""
    lower, upper = np.asarray(lower), np.asarray(upper)

    def deform(x, y, z):
        a, b, c = (2 * np.pi * (v - lo) / (hi - lo) for v, lo, hi in zip((x, y, z), lower, upper))
        return 0.02 * np.sin(b) * np.sin(c), 0.015 * np.sin(a + c), 0.02 * np.cos(a) * np.sin(b)

    return deform


# ---- oracles --------------------------------------------------------------------------------------

def coordinate_classes(coords, lower, upper, periodic) -> np.ndarray:
    """(P,) class of every GLL point by position, periodic axes folded onto [lower, upper)."""
    x = coords.reshape(3, -1).T.copy()
    spacing = np.min(np.asarray(upper) - np.asarray(lower)) / 100
    tol = 1e-7 * spacing
    for axis in range(3):
        if periodic[axis]:
            length = upper[axis] - lower[axis]
            x[:, axis] = (x[:, axis] - lower[axis]) % length
            x[x[:, axis] > length - 10 * tol, axis] -= length
    _, classes = np.unique(np.round(x / tol).astype(np.int64), axis=0, return_inverse=True)
    return classes.ravel()


def same_partition(a, b) -> bool:
    """Whether two labelings of the same points define the same equivalence classes."""
    a, b = np.ravel(a), np.ravel(b)
    pairs = np.unique(np.stack([a, b], axis=1), axis=0)
    return len(pairs) == len(np.unique(a)) == len(np.unique(b))


BOX = ((0.0, -1.0, 0.5), (2.0, 1.0, 2.0))


def box_cases():
    lower, upper = BOX
    yield "box", box_mesh((3, 2, 2), lower, upper), (False,) * 3
    yield "box-deformed-periodic-x", box_mesh((3, 2, 2), lower, upper, periodic=(True, False, False),
                                              deform=periodic_deform(lower, upper)), (True, False, False)
    yield "box-periodic", box_mesh((2, 3, 2), lower, upper, periodic=(True, True, True),
                                   deform=periodic_deform(lower, upper)), (True,) * 3
    yield "box-one-element-periodic", box_mesh((1, 1, 2), lower, upper, periodic=(True, True, False)), \
        (True, True, False)
    yield "rotated", rotated_box_mesh((3, 3, 2), seed=1, lower=lower, upper=upper), (False,) * 3
    yield "rotated-periodic-deformed", rotated_box_mesh((3, 3, 3), (True, True, True), seed=2, lower=lower,
                                                        upper=upper, deform=periodic_deform(lower, upper)), (True,) * 3


CASES = list(box_cases())


@pytest.mark.parametrize("order", [1, 2, 4])
@pytest.mark.parametrize("name,mesh,periodic", CASES, ids=[c[0] for c in CASES])
def test_ids_equal_exactly_where_points_coincide(name, mesh, periodic, order):
    ids = continuous_ids(mesh, order)
    n = order + 1
    assert ids.shape == (mesh.num_elements, n, n, n) and ids.dtype == np.int64
    assert np.array_equal(np.unique(ids), np.arange(ids.max() + 1))  # dense 0..M-1
    coords = compute_geometry(mesh, order).coords
    assert same_partition(ids, coordinate_classes(coords, *BOX, periodic)), name


def test_rotated_meshes_use_every_orientation():
    codes = set()
    for seed in range(3):
        mesh = rotated_box_mesh((3, 3, 3), (True, False, True), seed=seed)
        codes |= set(np.unique(mesh.face_orientation[mesh.face_neighbour >= 0]).tolist())
    assert codes == set(range(8))


def test_count_of_points_on_a_box():
    for periodic in itertools.product((False, True), repeat=3):
        counts = (3, 2, 4)
        for order in (1, 3):
            ids = continuous_ids(box_mesh(counts, periodic=periodic), order)
            expected = np.prod([c * order + (not p) for c, p in zip(counts, periodic)])
            assert ids.max() + 1 == expected, (periodic, order)


def test_labels_do_not_depend_on_element_order():
    mesh = rotated_box_mesh((3, 2, 2), (True, False, False), seed=5)  # 3 along the periodic axis
    labels, sweeps = connected_labels(mesh, 3)
    assert 2 <= sweeps <= 6
    order = np.random.default_rng(0).permutation(mesh.num_elements)
    shuffled, _ = connected_labels(mesh.reordered(order), 3)
    assert np.array_equal(shuffled, labels[order])


# ---- assembly -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,mesh,periodic", CASES[1::2], ids=[c[0] for c in CASES[1::2]])
def test_dssum_multiplicity_and_dot_against_numpy(name, mesh, periodic):
    order = 3
    rng = np.random.default_rng(11)
    assembly = Assembly(mesh, order, NumpyBackend())
    ids = assembly.ids
    u = rng.standard_normal((2,) + ids.shape)
    expected = np.stack([np.bincount(ids.ravel(), weights=x.ravel())[ids] for x in u])
    summed = assembly.dssum(u.copy())
    assert np.allclose(summed, expected, rtol=1e-14, atol=1e-14)
    classes = coordinate_classes(compute_geometry(mesh, order).coords, *BOX, periodic)
    copies = np.bincount(classes)[classes].reshape(ids.shape)
    assert np.array_equal(assembly.multiplicity, copies)
    assert np.array_equal(assembly.inverse_multiplicity * copies, np.ones(ids.shape))
    g, h = rng.standard_normal((2, assembly.num_global_points))
    assert np.isclose(assembly.dot(g[ids], h[ids]), g @ h, rtol=1e-13)
    assert np.isclose(assembly.norm(g[ids]), np.linalg.norm(g), rtol=1e-13)


def test_dirichlet_mask_on_chosen_sides():
    lower, upper = BOX
    mesh = box_mesh((3, 2, 2), lower, upper, periodic=(False, False, True))
    order = 3
    assembly = Assembly(mesh, order, NumpyBackend(), dirichlet=dirichlet_faces(mesh, ["xmin", "ymax"]))
    x, y, _ = compute_geometry(mesh, order).coords
    on_sides = (np.abs(x - lower[0]) < 1e-12) | (np.abs(y - upper[1]) < 1e-12)
    assert on_sides.any() and (~on_sides).any()
    assert np.array_equal(assembly.mask, (~on_sides).astype(float))


def test_dirichlet_mask_on_rotated_elements():
    lower, upper = BOX
    mesh = rotated_box_mesh((3, 3, 2), (False, True, False), seed=4, lower=lower, upper=upper)
    order = 2
    assembly = Assembly(mesh, order, NumpyBackend(), dirichlet=mesh.face_neighbour < 0)
    x, _, z = compute_geometry(mesh, order).coords
    on_walls = (np.abs(x - lower[0]) < 1e-12) | (np.abs(x - upper[0]) < 1e-12)
    on_walls |= (np.abs(z - lower[2]) < 1e-12) | (np.abs(z - upper[2]) < 1e-12)
    assert np.array_equal(assembly.mask, (~on_walls).astype(float))


def test_bad_input_is_named():
    mesh = box_mesh((2, 1, 1))
    with pytest.raises(InputError, match=r"dirichlet must be a \(2, 6\) bool array"):
        Assembly(mesh, 2, NumpyBackend(), dirichlet=np.zeros((2, 5), bool))
    assembly = Assembly(mesh, 2, NumpyBackend())
    with pytest.raises(InputError, match=r"ending in \(2, 3, 3, 3\)"):
        assembly.dssum(np.zeros((2, 4, 4, 4)))
    with pytest.raises(InputError, match="C-contiguous"):
        assembly.dssum(np.zeros((3, 3, 3, 2)).T)
    with pytest.raises(InputError, match=r"Dirichlet boundaries \['top'\] are not in the mesh; its boundaries are"):
        dirichlet_faces(mesh, ["xmin", "top"])
    assembly.free()
    with pytest.raises(InputError, match="used after free"):
        assembly.dssum(np.zeros((2, 3, 3, 3)))
