"""The builder of meshes read from files (mesh/imported.py), curved geometry, and the
partitioning of general meshes, on meshes made here (no gmsh needed)."""

import numpy as np
import pytest

from mesh_checks import check_face_pairs, face_areas, imported_box
from lobatto.discretization import derivative_matrix, gll_points
from lobatto.discretization.tensor import physical_gradient
from lobatto.errors import InputError
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.geometry import trilinear_coordinates
from lobatto.mesh.imported import MERGE_TOLERANCE, ImportedMesh, hex_mesh_from_imported
from lobatto.mesh.partition import partition_mesh


def test_builder_joins_rotated_elements_like_the_box():
    imported = imported_box((3, 2, 4), q=1, seed=1)
    mesh = hex_mesh_from_imported(imported, {"zmax": "absorbing"}, "pec")
    assert mesh.num_elements == 24 and len(mesh.vertices) == 4 * 3 * 5  # corners merged by coordinates
    assert np.any(mesh.face_orientation[mesh.face_neighbour >= 0] != 0)  # the rotations are felt
    geo, boundary_points = check_face_pairs(mesh, 4)
    box = compute_geometry(box_mesh((3, 2, 4)), 4)
    assert abs(geo.mass.sum() - 1.0) < 1e-13 and boundary_points == box.normals[0][box_mesh((3, 2, 4)).face_neighbour < 0].size
    # the same GLL points as the box's own mesh
    ours = np.sort(np.round(geo.coords.reshape(3, -1).T, 12), axis=0)
    theirs = np.sort(np.round(box.coords.reshape(3, -1).T, 12), axis=0)
    assert np.array_equal(ours, theirs)
    # names: groups where they are, kinds what the system does there
    assert mesh.group_names == ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")
    assert mesh.boundary_names == ("absorbing", "pec")
    boundary = mesh.face_neighbour < 0
    assert np.all((mesh.face_group >= 0) == boundary)
    zmax = mesh.face_group == 5
    assert zmax.sum() == 6 and np.all(mesh.boundary_kind[zmax] == 0) and np.all(mesh.boundary_kind[boundary & ~zmax] == 1)
    centres = geo.coords[2][:, 2, 2, 2]
    for e, f in zip(*np.nonzero(zmax)):
        assert centres[e] > 0.8  # the elements of the top layer


def test_corner_ids_give_the_same_mesh_as_merging():
    merged = hex_mesh_from_imported(imported_box((2, 3, 2), seed=4))
    shared = hex_mesh_from_imported(imported_box((2, 3, 2), seed=4, corner_ids=True))
    for name in ("face_neighbour", "neighbour_face", "face_orientation", "boundary_kind", "face_group"):
        assert np.array_equal(getattr(merged, name), getattr(shared, name)), name


def test_corners_within_the_tolerance_merge_and_beyond_it_do_not():
    imported = imported_box((2, 2, 2), seed=2)
    rng = np.random.default_rng(0)
    noisy = ImportedMesh(imported.element_nodes + rng.uniform(-1, 1, imported.element_nodes.shape) * 0.1
                         * MERGE_TOLERANCE * 0.5, imported.boundary_faces, imported.regions, source="noisy.rea")
    mesh = hex_mesh_from_imported(noisy)
    assert len(mesh.vertices) == 27 and (mesh.face_neighbour >= 0).sum() == 24
    cracked = imported.element_nodes.copy()
    cracked[0] += 2e-2  # one element moved off its neighbours (far beyond the tolerance): its faces no longer match
    with pytest.raises(InputError, match=r"cracked\.rea: element 0 centred at .* face \d is on the boundary but in no"):
        hex_mesh_from_imported(ImportedMesh(cracked, imported.boundary_faces, imported.regions, source="cracked.rea"))


@pytest.mark.parametrize("q", [1, 2])
def test_nodes_of_order_one_reproduce_the_trilinear_map(q):
    # a random lattice of straight-sided hexahedra: nodes of order q on the trilinear map
    rng = np.random.default_rng(7)
    imported = imported_box((2, 2, 2), q=q, seed=3, mapping=None)
    mesh = hex_mesh_from_imported(imported)
    corners = mesh.vertices + rng.uniform(-0.08, 0.08, mesh.vertices.shape)
    mesh.vertices = corners
    order = 6
    xi = gll_points(q)
    t, s, r = np.meshgrid(xi, xi, xi, indexing="ij")
    c = corners[mesh.element_vertices]  # (E, 8, 3)
    nodes = np.zeros((mesh.num_elements, 3) + r.shape)
    for v in range(8):
        a, b, l = v & 1, (v >> 1) & 1, v >> 2
        w = ((1 + (2 * a - 1) * r) * (1 + (2 * b - 1) * s) * (1 + (2 * l - 1) * t)) / 8
        nodes += c[:, v, :, None, None, None] * w
    mesh.curved_nodes = nodes
    curved = compute_geometry(mesh, order)
    straight = trilinear_coordinates(corners, mesh.element_vertices, order)
    assert np.abs(curved.coords - straight).max() < 1e-14
    mesh.curved_nodes = None
    plain = compute_geometry(mesh, order)
    assert np.abs(curved.metrics - plain.metrics).max() < 1e-12
    assert np.abs(curved.jacobian - plain.jacobian).max() < 1e-14


def test_quadratic_elements_give_exact_volume_area_and_derivatives():
    # x' = x (1 + 0.3 y^2): quadratic in each reference coordinate, so q = 2 nodes hold it
    # exactly. Volume 1.1; the face x' = max is stretched, the face y = 1 has area 1.3.
    def mapping(x, y, z):
        return x * (1 + 0.3 * y**2), y, z

    mesh = hex_mesh_from_imported(imported_box((2, 3, 2), q=2, seed=5, mapping=mapping))
    assert mesh.geometry_order == 2
    order = 5
    geo, _ = check_face_pairs(mesh, order, tol=1e-13)
    assert abs(geo.mass.sum() - 1.1) < 1e-13
    areas = face_areas(geo, order)
    ymax = mesh.face_group == mesh.group_names.index("ymax")
    assert abs(areas[ymax].sum() - 1.3) < 1e-13
    # x'^2 + y z: its gradient (2x', z, y) at every GLL point, to round-off
    x, y, z = geo.coords
    u = x**2 + y * z
    grad = physical_gradient(np, u, derivative_matrix(order), geo.metrics)
    assert np.abs(grad - np.stack([2 * x, z, y])).max() < 1e-12
    assert not geo.affine.all()


def test_periodic_faces_are_joined_with_the_orientation_of_their_corners():
    imported = imported_box((3, 2, 2), q=2, seed=6, periodic_x=True, lower=(-1.0, 0.0, 0.0), upper=(2.0, 1.0, 1.0))
    mesh = hex_mesh_from_imported(imported, {}, "pec")
    assert "xmin" not in mesh.group_names and (mesh.face_neighbour < 0).sum() == 24
    # points paired across the periodic faces are 3 apart in x, others coincide
    geo, _ = check_face_pairs(mesh, 4, shift=lambda a, b: np.where(np.abs(a[0] - b[0]) > 1.5, 1.0, 0.0)
                              * np.array([3.0, 0.0, 0.0])[:, None])
    assert abs(geo.mass.sum() - 3.0) < 1e-12


def test_boundary_errors_name_the_file_the_group_and_the_element():
    imported = imported_box((2, 2, 2), seed=8, source="walls.msh")
    with pytest.raises(InputError, match=r"walls\.msh: \[mesh\.boundaries\] names the group 'inlet', which the mesh "
                                         r"does not have \(its surface groups: 'xmin', 'xmax'"):
        hex_mesh_from_imported(imported, {"inlet": "pec"})
    del imported.boundary_faces["ymax"]
    with pytest.raises(InputError, match=r"walls\.msh: element \d \(number 1\d\d in the file\) centred at .* face \d is "
                                         r"on the boundary but in no named surface group \(4 such faces\)"):
        hex_mesh_from_imported(imported)
    inside = imported_box((2, 2, 2), seed=8, source="walls.msh")
    inside.boundary_faces["middle"] = np.array([[e, f] for e in range(8) for f in range(6)])
    mesh = hex_mesh_from_imported(inside)  # a group inside the mesh is fine while it takes no kind
    assert "middle" in mesh.group_names and not np.any(mesh.face_group[mesh.face_neighbour >= 0] >= 0)
    with pytest.raises(InputError, match=r"\[mesh\.boundaries\] middle = \"pec\": the group lies inside the mesh"):
        hex_mesh_from_imported(inside, {"middle": "pec"})
    inside.boundary_faces["middle"] = inside.boundary_faces["xmin"]
    with pytest.raises(InputError, match=r"groups mapped to \"absorbing\" and to \"pec\""):
        hex_mesh_from_imported(inside, {"xmin": "absorbing", "middle": "pec"})


def test_degenerate_and_non_conforming_meshes_are_refused():
    imported = imported_box((2, 1, 1), seed=9, source="flat.msh")
    nodes = imported.element_nodes.copy()
    nodes[0, :, 0, 0, 1] = nodes[0, :, 0, 0, 0]  # an edge of element 0 collapsed
    with pytest.raises(InputError, match=r"flat\.msh: element 0 .* has two corners at the same point"):
        hex_mesh_from_imported(ImportedMesh(nodes, imported.boundary_faces, imported.regions, source="flat.msh"))
    three = imported_box((3, 1, 1), seed=9, corner_ids=True, source="t.msh")
    three.corner_ids = three.corner_ids.copy()
    # a third element claims the face two others share
    three.element_nodes = np.concatenate([three.element_nodes, three.element_nodes[:1]])
    three.corner_ids = np.concatenate([three.corner_ids, three.corner_ids[:1]])
    three.regions = np.zeros(4, dtype=np.int64)
    with pytest.raises(InputError, match=r"t\.msh: a face is shared by more than two elements"):
        hex_mesh_from_imported(three)


def test_subset_and_reordering_carry_names_regions_and_nodes():
    imported = imported_box((4, 2, 2), q=2, seed=10)
    imported.regions = (np.arange(16) % 3).astype(np.int64)
    imported.region_names = ("a", "b", "c")
    mesh = hex_mesh_from_imported(imported, {"xmax": "pmc"}, "pec")
    ids = np.array([3, 7, 8, 15, 0])
    part = mesh.subset(ids)
    assert np.array_equal(part.element_ids, ids) and part.num_global_elements == 16
    for name in ("regions", "face_group", "curved_nodes", "face_neighbour", "boundary_kind"):
        assert np.array_equal(getattr(part, name), getattr(mesh, name)[ids]), name
    assert part.region_names == ("a", "b", "c") and part.group_names == mesh.group_names
    assert np.array_equal(part.vertices[part.element_vertices], mesh.vertices[mesh.element_vertices[ids]])
    assert len(part.vertices) < len(mesh.vertices)
    back = part.reordered([4, 3, 2, 1, 0])
    assert np.array_equal(back.regions, part.regions[::-1]) and np.array_equal(back.curved_nodes, part.curved_nodes[::-1])
    assert np.array_equal(compute_geometry(part, 3).coords, compute_geometry(mesh, 3).coords[:, ids])


def test_box_names_its_sides_and_its_one_region():
    mesh = box_mesh((2, 1, 3), periodic=(False, True, False))
    assert mesh.group_names == ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax") and mesh.region_names == ("all",)
    assert np.all(mesh.regions == 0)
    for f in range(6):
        on_side = mesh.face_group[:, f] == f
        assert np.array_equal(on_side, mesh.face_neighbour[:, f] < 0)
    assert not np.any(mesh.face_group[:, 2:4] >= 0)  # periodic along y: no y sides


@pytest.mark.parametrize("method", ["rcb", "rsb", "metis"])
@pytest.mark.parametrize("parts", [2, 3, 5])
def test_general_partitions_cover_the_mesh_once_and_are_reproducible(method, parts):
    if method == "metis":
        pytest.importorskip("pymetis")
    mesh = hex_mesh_from_imported(imported_box((5, 3, 2), seed=11))
    owned = [partition_mesh(mesh, parts, p, method) for p in range(parts)]
    assert np.array_equal(np.sort(np.concatenate(owned)), np.arange(30))
    assert all(np.array_equal(o, partition_mesh(mesh, parts, p, method)) for p, o in enumerate(owned))
    sizes = [len(o) for o in owned]
    if method != "metis":
        assert max(sizes) - min(sizes) <= 1
    if method == "rcb":  # coordinate bisection: parts are slabs along the longest side first
        centres = mesh.vertices[mesh.element_vertices].mean(axis=1)
        if parts == 2:
            assert centres[owned[0], 0].max() <= centres[owned[1], 0].min()


def test_partition_refuses_more_ranks_than_elements():
    mesh = hex_mesh_from_imported(imported_box((2, 1, 1)))
    with pytest.raises(InputError, match="2 elements cannot be shared by 3 ranks"):
        partition_mesh(mesh, 3, 0)


def test_without_the_gmsh_sdk_reading_says_how_to_install_it(monkeypatch, tmp_path):
    import sys

    from lobatto.mesh.readers import read_mesh

    monkeypatch.setitem(sys.modules, "gmsh", None)  # import gmsh now raises ImportError
    path = tmp_path / "a.msh"
    path.write_text("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n")
    with pytest.raises(InputError, match=r"gmsh SDK, which is not installed: pip install gmsh"):
        read_mesh("gmsh", path, 2)
