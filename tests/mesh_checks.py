"""Checks shared by the mesh tests: face points that pair up coincide, and imported meshes
made from a box (lattice elements with their local axes turned at random)."""

from __future__ import annotations

import itertools

import numpy as np

from lobatto.discretization import gll_points, gll_weights
from lobatto.mesh import compute_geometry, face_point_ids
from lobatto.mesh.imported import ImportedMesh
from lobatto.mesh.topology import NUM_FACES, face_slice

SIDES = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")


def face_values(volume: np.ndarray, order: int) -> np.ndarray:
    """(E, 6, n, n) of a (E, n, n, n) array, faces in topology's order."""
    return np.stack([volume[face_slice(f, order)] for f in range(NUM_FACES)], axis=1)


def check_face_pairs(mesh, order: int, tol: float = 1e-12, shift=None):
    """Face points with equal ids coincide (or differ by `shift(a, b)`, periodic pairs) and have
    opposite normals; every id appears once (boundary) or twice. Returns the geometry."""
    mesh.check()
    geo = compute_geometry(mesh, order)
    ids = face_point_ids(mesh, order).reshape(-1)
    coords = np.stack([face_values(geo.coords[a], order).reshape(-1) for a in range(3)])
    normals = geo.normals.reshape(3, -1)
    uniq, counts = np.unique(ids, return_counts=True)
    assert set(np.unique(counts).tolist()) <= {1, 2}
    shared = np.isin(ids, uniq[counts == 2])
    pairs = np.flatnonzero(shared)[np.argsort(ids[shared], kind="stable")].reshape(-1, 2)
    a, b = coords[:, pairs[:, 0]], coords[:, pairs[:, 1]]
    gap = np.abs(a - b) if shift is None else np.abs(np.abs(a - b) - shift(a, b))
    assert gap.max() < tol, gap.max()
    assert np.abs(normals[:, pairs[:, 0]] + normals[:, pairs[:, 1]]).max() < 10 * tol
    boundary = ids[counts[np.searchsorted(uniq, ids)] == 1]
    return geo, len(boundary)


def face_areas(geo, order: int) -> np.ndarray:
    """(E, 6) area of each face from the surface Jacobian."""
    w = gll_weights(order)
    return (geo.surface_jacobian * w[:, None] * w[None, :]).sum(axis=(2, 3))


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


def imported_box(elements, q: int = 1, seed: int = 0, mapping=None, lower=(0.0, 0.0, 0.0), upper=(1.0, 1.0, 1.0),
                 periodic_x: bool = False, corner_ids: bool = False, source: str = "lattice.msh") -> ImportedMesh:
    """The box [lower, upper] in elements[0] x elements[1] x elements[2] hexahedra as a reader
    would give it: nodes at GLL points of order q, each element's reference axes turned by a
    random rotation, elements in a random order, boundary faces in groups xmin..zmax (or, with
    periodic_x, the x sides joined), `mapping(x, y, z) -> (x, y, z)` applied to the nodes."""
    rng = np.random.default_rng(seed)
    mats = rotations()
    nx, ny, nz = elements
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    h = (upper - lower) / np.array(elements)
    xi = gll_points(q)
    t, s, r = np.meshgrid(xi, xi, xi, indexing="ij")  # [k, j, i]
    reference = np.stack([r, s, t]).reshape(3, -1)
    cells = list(itertools.product(range(nx), range(ny), range(nz)))
    order = rng.permutation(len(cells))
    nodes, lattice_corners = [], []
    for c in order:
        index = np.array(cells[c])
        rot = mats[rng.integers(len(mats))]
        turned = rot @ reference  # the element's own axes, turned
        x = lower[:, None] + (index[:, None] + 0.5 * (turned + 1)) * h[:, None]
        if mapping is not None:
            x = np.stack(mapping(*x))
        nodes.append(x.reshape(3, q + 1, q + 1, q + 1))
        corner_ref = rot @ np.array([[2 * (v & 1) - 1, 2 * ((v >> 1) & 1) - 1, 2 * ((v >> 2) & 1) - 1]
                                     for v in range(8)]).T
        lattice = index[:, None] + (corner_ref + 1) // 2
        lattice_corners.append(lattice[0] + (nx + 1) * (lattice[1] + (ny + 1) * lattice[2]))
    nodes = np.array(nodes)
    ids = np.array(lattice_corners)
    imported = ImportedMesh(element_nodes=nodes, boundary_faces={}, regions=np.zeros(len(nodes), dtype=np.int64),
                            corner_ids=ids if corner_ids else None, source=source)
    # faces on the box's sides, found from the lattice indices of their corners
    from lobatto.mesh.topology import FACE_CORNERS

    lat = np.stack([ids % (nx + 1), (ids // (nx + 1)) % (ny + 1), ids // ((nx + 1) * (ny + 1))], axis=-1)
    groups = {name: [] for name in SIDES}
    for e in range(len(nodes)):
        for f in range(NUM_FACES):
            corners = lat[e, list(FACE_CORNERS[f])]
            for axis, count in enumerate(elements):
                for side, value in (("min", 0), ("max", count)):
                    if np.all(corners[:, axis] == value):
                        groups["xyz"[axis] + side].append((e, f))
    if periodic_x:
        low = {tuple(sorted(map(tuple, lat[e, list(FACE_CORNERS[f])][:, 1:]))): (e, f) for e, f in groups.pop("xmin")}
        pairs = []
        for e, f in groups.pop("xmax"):
            pe, pf = low[tuple(sorted(map(tuple, lat[e, list(FACE_CORNERS[f])][:, 1:])))]
            pairs.append((e, f, pe, pf))
        imported.periodic_faces = np.array(pairs)
    imported.boundary_faces = {name: np.array(faces, dtype=np.int64).reshape(-1, 2) for name, faces in groups.items()}
    imported.info["element_numbers"] = order + 100
    return imported
