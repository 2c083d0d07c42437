"""Continuous numbering on meshes read from files (issue: general meshes everywhere).

The gmsh meshes committed under tests/data/meshes were written by gmsh itself: curved
second-order hexahedra with all face orientations gmsh produces. Ids must be equal exactly
where GLL points coincide, and the assembled Helmholtz operator must be symmetric there.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.mesh import compute_geometry
from lobatto.operators import Assembly, HelmholtzOperator, continuous_ids

pytest.importorskip("gmsh")
from lobatto.mesh.readers import mesh_from_file  # noqa: E402

MESHES = Path(__file__).resolve().parent.parent / "data" / "meshes"


def coincidence_classes(coords: np.ndarray, tol: float) -> np.ndarray:
    """A label per point, equal exactly for points within tol of each other (by rounding to a
    grid of tol and checking that no class straddles two grid cells)."""
    points = coords.reshape(3, -1).T
    keys = np.round(points / tol).astype(np.int64)
    _, labels = np.unique(keys, axis=0, return_inverse=True)
    return labels.reshape(-1)


@pytest.mark.parametrize("name, order", [("sphere_in_box_order2.msh", 3), ("coax_order2.msh", 4)])
def test_ids_match_coinciding_points(name, order):
    mesh = mesh_from_file("gmsh", MESHES / name, order)
    geo = compute_geometry(mesh, order)
    ids = continuous_ids(mesh, order).reshape(-1)
    labels = coincidence_classes(geo.coords, 1e-9)
    # the same partition of the points: each id maps to one coordinate class and back
    pairs = np.unique(np.stack([ids, labels]), axis=1)
    assert pairs.shape[1] == np.unique(ids).size == np.unique(labels).size
    if name.startswith("sphere"):  # its blocks meet with more than one orientation code
        assert np.unique(mesh.face_orientation[mesh.face_neighbour >= 0]).size > 1


def test_assembled_operator_symmetric_on_imported_mesh():
    order = 3
    mesh = mesh_from_file("gmsh", MESHES / "sphere_in_box_order2.msh", order)
    backend = NumpyBackend()
    geo = compute_geometry(mesh, order)
    assembly = Assembly(mesh, order, backend)
    operator = HelmholtzOperator(geo, backend, h1=1.0, h2=0.5)
    rng = np.random.default_rng(7)
    shape = geo.jacobian.shape

    def continuous(v):
        return assembly.dssum(v * assembly.inverse_multiplicity)

    x, y = continuous(rng.standard_normal(shape)), continuous(rng.standard_normal(shape))
    ax, ay = assembly.dssum(operator.apply_local(x)), assembly.dssum(operator.apply_local(y))
    left, right = assembly.dot(y, ax), assembly.dot(x, ay)
    assert abs(left - right) <= 1e-12 * abs(left)
    assert assembly.dot(x, ax) > 0
