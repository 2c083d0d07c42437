"""2-D mesh files (issue 34, slice A1): gmsh quadrilaterals and Nek5000 NDIM = 2 meshes read as
quads in z = 0, point location on quads and partitions of quad meshes.

Oracles: gmsh's own node positions, exact areas (a disc, pi r^2), lobatto's box_mesh((nx, ny)),
pymech (an independent reader and writer of Nek files) and the extruded 3-D twin
(mesh.extrude.extrude_quads), whose every k plane must carry the 2-D geometry.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

from lobatto.errors import InputError
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.extrude import extrude_quads
from lobatto.mesh.imported import hex_mesh_from_imported
from lobatto.mesh.locate import candidate_pairs, candidates, element_boxes, newton, tensor_weights
from lobatto.mesh.partition import partition_mesh
from lobatto.mesh.readers import mesh_from_file, nek5000, read_mesh
from nek_mesh_writer import box_corners2d, write_re2, write_rea
from quad_meshes import disc, strip

gmsh = pytest.importorskip("gmsh")


@pytest.fixture(scope="module")
def sdk():
    gmsh.initialize(readConfigFiles=False, interruptible=False)
    gmsh.option.setNumber("General.Terminal", 0)
    yield gmsh
    gmsh.finalize()


# ------------------------------------------------------------------ gmsh

@pytest.mark.parametrize("order, serendipity, nodes", [(1, False, 4), (2, True, 8), (2, False, 9), (3, False, 16),
                                                       (4, False, 25)])
def test_every_quad_order_reproduces_gmshs_own_nodes(sdk, tmp_path, order, serendipity, nodes):
    # our GLL nodes interpolated to gmsh's reference node positions give gmsh's nodes
    from lobatto.discretization import interpolation_matrix

    path = disc(tmp_path / "d.msh", order=order, serendipity=serendipity, version=2.2 if order == 3 else 4.1)
    imported = read_mesh("gmsh", path, 7)
    assert imported.dim == 2 and imported.geometry_order == order and imported.element_nodes.shape[2] == 1
    gmsh.open(str(path))
    (element_type,) = gmsh.model.mesh.getElementTypes(2)
    _, _, _, count, local, _ = gmsh.model.mesh.getElementProperties(element_type)
    assert count == nodes
    local = np.reshape(local, (count, 2))
    tags, node_tags = gmsh.model.mesh.getElementsByType(element_type)
    node_tags = np.reshape(node_tags, (len(tags), count))
    all_tags, xyz, _ = gmsh.model.mesh.getNodes()
    xyz = np.reshape(xyz, (-1, 3))[np.argsort(all_tags)][np.searchsorted(np.sort(all_tags), node_tags)]
    row = {int(t): e for e, t in enumerate(imported.info["element_numbers"])}
    mirrored = 0
    for k, tag in enumerate(tags):
        e = row[int(tag)]
        nodes_e = imported.element_nodes[e, :, 0]
        ours = np.einsum("pi,pj,cji->pc", interpolation_matrix(order, local[:, 0]),
                         interpolation_matrix(order, local[:, 1]), nodes_e)
        if np.abs(ours - xyz[k]).max() > 1e-12:  # a mirrored (clockwise) quad: r reversed
            mirrored += 1
            ours = np.einsum("pi,pj,cji->pc", interpolation_matrix(order, -local[:, 0]),
                             interpolation_matrix(order, local[:, 1]), nodes_e)
        assert np.abs(ours - xyz[k]).max() < 1e-12
    assert mirrored == imported.info["mirrored_elements"]


def test_disc_area_converges_at_the_isoparametric_rate(sdk, tmp_path):
    order = 8  # enough GLL points that the quadrature of the q <= 4 maps is exact
    errors = {}
    for q in (2, 4):
        for n in (1, 2, 4):
            mesh = mesh_from_file("gmsh", disc(tmp_path / f"d{q}{n}.msh", order=q, divisions=n), order,
                                  {"rim": "pec"})
            assert mesh.dim == 2 and mesh.num_elements == 5 * n * n and mesh.region_names == ("core", "ring")
            assert mesh.group_names == ("rim",) and mesh.boundary_names == ("pec",)
            geo = compute_geometry(mesh, order)
            assert np.all(geo.jacobian > 0)
            assert abs(geo.mass[mesh.regions == 0].sum() - 0.64) < 1e-14  # the straight core
            errors[q, n] = abs(geo.mass.sum() - math.pi)
    # measured: q = 2: 3.7e-2, 2.4e-3, 1.5e-4 (ratios 15, 16); q = 4: 2.3e-4, 3.7e-6, 5.9e-8 (60, 63)
    assert errors[2, 1] / errors[2, 2] > 12 and errors[2, 2] / errors[2, 4] > 12
    assert errors[4, 1] / errors[4, 2] > 40 and errors[4, 2] / errors[4, 4] > 40
    assert errors[4, 4] < 1e-7 and errors[4, 4] < errors[2, 4] / 1000


@pytest.mark.parametrize("q", [2, 4])
def test_extruded_disc_has_the_2d_geometry_in_every_plane(sdk, tmp_path, q):
    order = 5
    mesh = mesh_from_file("gmsh", disc(tmp_path / "d.msh", order=q, divisions=2), order)
    twin = extrude_quads(mesh)
    g2, g3 = compute_geometry(mesh, order), compute_geometry(twin, order)
    assert g2.coords.shape == (3, 20, 1, order + 1, order + 1)
    for k in range(order + 1):
        for name in ("jacobian", "mass"):
            a, b = getattr(g2, name)[:, 0], getattr(g3, name)[:, k]
            scale = 1.0 if name == "jacobian" else g3.mass[:, k].max() / g2.mass.max()
            assert np.abs(a * scale - b).max() <= 1e-13 * np.abs(b).max(), name
        assert np.abs(g2.coords[:2, :, 0] - g3.coords[:2, :, k]).max() <= 1e-13
        m2, m3 = g2.metrics[:2, :2, :, 0], g3.metrics[:2, :2, :, k]
        assert np.abs(m2 - m3).max() <= 1e-13 * np.abs(m3).max()
    # edges 0..3: the 2-D face factors on the (1, n) edge grid are the 3-D faces' rows a = 0..N
    for name in ("normals", "surface_jacobian", "lift"):
        a, b = getattr(g2, name)[..., :4, 0, :], getattr(g3, name)[..., :4, :, :]
        assert np.abs(a[..., None, :] - b).max() <= 1e-13 * np.abs(b).max(), name
    assert np.array_equal(twin.face_neighbour[:, :4], mesh.face_neighbour)
    assert np.array_equal(twin.face_group[:, :4], mesh.face_group)


def test_serendipity_clockwise_and_msh22_quads_give_the_same_disc(sdk, tmp_path):
    order = 6
    reference = compute_geometry(mesh_from_file("gmsh", disc(tmp_path / "a.msh", order=2), order), order)
    for name, kw in (("b", {"version": 2.2}), ("c", {"clockwise_core": True})):
        imported = read_mesh("gmsh", disc(tmp_path / f"{name}.msh", order=2, **kw), order)
        geo = compute_geometry(hex_mesh_from_imported(imported), order)
        assert np.all(geo.jacobian > 0) and abs(geo.mass.sum() - reference.mass.sum()) < 1e-13
    serendipity = compute_geometry(mesh_from_file("gmsh", disc(tmp_path / "s.msh", order=2, serendipity=True),
                                                  order), order)
    assert np.all(serendipity.jacobian > 0) and abs(serendipity.mass.sum() - math.pi) < 0.05


def test_periodic_curves_join_the_strip_into_a_ring_of_elements(sdk, tmp_path):
    mesh = mesh_from_file("gmsh", strip(tmp_path / "p.msh"), 3)
    assert mesh.dim == 2 and mesh.num_elements == 6 and mesh.group_names == ("ymin", "ymax")
    assert mesh.region_names == ("plate",)
    on_x = (mesh.face_neighbour[:, :2] >= 0).all()  # every r face has a neighbour: periodic in x
    assert on_x and np.all(mesh.face_neighbour[:, 2:][mesh.face_group[:, 2:] < 0] >= 0)
    geo = compute_geometry(mesh, 3)
    assert abs(geo.mass.sum() - 6.0) < 1e-13
    from lobatto.operators import continuous_ids

    assert continuous_ids(mesh, 3).max() + 1 == (3 * 3) * (2 * 3 + 1)  # nx N along the periodic x
    box = box_mesh((3, 2), lower=(0, 0), upper=(3, 2), periodic=(True, False))
    assert continuous_ids(box, 3).max() + 1 == (3 * 3) * (2 * 3 + 1)


def test_bad_2d_files_are_refused_naming_the_file(sdk, tmp_path):
    with pytest.raises(InputError, match=r"t\.msh: the 2-D mesh has elements other than quadrilaterals "
                                         r"\(\d+ Triangle 6; 16 quadrilaterals\): .*recombine"):
        read_mesh("gmsh", disc(tmp_path / "t.msh", divisions=2, triangle_core=True), 3)
    with pytest.raises(InputError, match=r"z\.msh: the file has no hexahedra \(no 3-D elements\), and its 2-D "
                                         r"elements are no 2-D mesh: a node lies at z = 0\.5"):
        read_mesh("gmsh", disc(tmp_path / "z.msh", z=0.5), 3)
    path = strip(tmp_path / "open.msh", periodic=False)
    text = path.read_text()
    with pytest.raises(InputError, match=r"open\.msh: \[mesh.boundaries\] names the group 'left'"):
        mesh_from_file("gmsh", path, 2, {"left": "pec"})
    assert mesh_from_file("gmsh", path, 2, {"xmin": "pec"}).boundary_names == ("default", "pec")
    assert "$Elements" in text


# ------------------------------------------------------------------ Nek5000

#: Nek sides 1-4 of a 2-D element: s = -1, r = +1, s = +1, r = -1; box sides and Nek codes
NEK_SIDE = ("ymin", "xmax", "ymax", "xmin")
CODE = {"xmin": "W", "xmax": "O", "ymin": "v", "ymax": "SYM"}


def box_bcs(index, nx, ny, periodic_x=False):
    bcs = []
    num = {tuple(ij): e for e, ij in enumerate(index.tolist())}
    for e, (i, j) in enumerate(index):
        for f, side in enumerate(NEK_SIDE):
            at = {"xmin": i == 0, "xmax": i == nx - 1, "ymin": j == 0, "ymax": j == ny - 1}[side]
            if not at:
                continue
            if periodic_x and side in ("xmin", "xmax"):
                partner = num[(nx - 1 if side == "xmin" else 0, j)]
                bcs.append((e + 1, f + 1, "P", [partner + 1, 2 if side == "xmin" else 4, 0, 0, 0]))
            else:
                bcs.append((e + 1, f + 1, CODE[side], np.zeros(5)))
    return bcs


def same_as_box(mesh, box, order=3):
    g, gb = compute_geometry(mesh, order), compute_geometry(box, order)
    assert mesh.dim == 2 and mesh.num_elements == box.num_elements
    assert np.abs(g.coords - gb.coords).max() < 1e-14
    assert np.array_equal(mesh.face_neighbour, box.face_neighbour)
    assert np.array_equal(mesh.neighbour_face, box.neighbour_face)
    for name in box.group_names:
        ours = mesh.face_group == mesh.group_names.index(CODE[name])
        assert np.array_equal(ours, box.face_group == box.group_names.index(name)), name


@pytest.mark.parametrize("name", ["b.re2", "b.rea", "b1.re2"])
def test_nek_2d_box_by_our_writer_is_lobattos_box(tmp_path, name):
    nx, ny = 3, 2
    corners, index = box_corners2d(nx, ny, (0, 0), (3, 2))
    writer = write_re2 if name.endswith(".re2") else write_rea
    kw = {"version": "#v001"} if name == "b1.re2" else {}
    writer(tmp_path / name, corners, bcs=box_bcs(index, nx, ny), **kw)
    mesh = hex_mesh_from_imported(nek5000.read(tmp_path / name, 3))
    same_as_box(mesh, box_mesh((nx, ny), lower=(0, 0), upper=(3, 2)))


def pymech_box(nx, ny, periodic_x=False):
    core = pytest.importorskip("pymech.core")
    corners, index = box_corners2d(nx, ny, (0, 0), (3, 2))
    data = core.HexaData(2, len(corners), [2, 2, 1], [2, 0, 0, 0, 0], nbc=1)
    data.endian = "little"
    for e, el in enumerate(data.elem):  # pymech's [y][x] corners from Nek's counter-clockwise ones
        el.pos[:2, 0] = corners[e, [0, 1, 3, 2]].reshape(2, 2, 2).transpose(2, 0, 1)
    for e, f, code, values in box_bcs(index, nx, ny, periodic_x):
        data.elem[e - 1].bcs[0, f - 1] = (code, e, f, *values)
    data.update_ncurv()
    return data, corners, index


def test_pymech_written_2d_re2_and_rea_are_lobattos_box(tmp_path):
    neksuite = pytest.importorskip("pymech.neksuite")
    data, _, _ = pymech_box(3, 2)
    neksuite.writere2(str(tmp_path / "p.re2"), data)
    mesh = mesh_from_file("nek", tmp_path / "p.re2", 3)
    same_as_box(mesh, box_mesh((3, 2), lower=(0, 0), upper=(3, 2)))
    periodic, _, _ = pymech_box(3, 2, periodic_x=True)
    neksuite.writere2(str(tmp_path / "q.re2"), periodic)
    mesh = mesh_from_file("nek", tmp_path / "q.re2", 3)
    box = box_mesh((3, 2), lower=(0, 0), upper=(3, 2), periodic=(True, False))
    assert np.array_equal(mesh.face_neighbour, box.face_neighbour)
    inside = box.face_neighbour >= 0
    assert np.array_equal(mesh.face_orientation[inside], box.face_orientation[inside])


def test_our_2d_files_read_by_pymech(tmp_path):
    neksuite = pytest.importorskip("pymech.neksuite")
    corners, curves = ring_disc()
    write_re2(tmp_path / "d.re2", corners, curves=curves, bcs=ring_bcs())
    write_rea(tmp_path / "d.rea", corners, curves=curves, bcs=ring_bcs())
    for name, read in (("d.re2", neksuite.readre2), ("d.rea", neksuite.readrea)):
        theirs = read(str(tmp_path / name))
        assert theirs.ndim == 2 and theirs.nel == 5
        ours = nek5000.read(tmp_path / name, 1).element_nodes  # the corners, (E, 3, 1, 2, 2)
        pos = np.array([el.pos for el in theirs.elem])
        assert np.abs(pos[:, :2] - ours[:, :2]).max() < 1e-15
        for e, edge, values, ctype in curves:
            assert theirs.elem[e - 1].ccurv[edge - 1] == ctype
        assert [theirs.elem[e].bcs[0, 0][0] for e in range(1, 5)] == ["W"] * 4


def ring_disc(radius=1.0, inner=0.4, arcs=True):
    """A Nek O-grid disc: a square core and four ring elements, counter-clockwise corners,
    'C' arcs (radius > 0: centre on the left of the edge's direction) on edge 1 of the ring."""
    a, r = inner, radius / math.sqrt(2)
    sq = np.array([(-a, -a), (a, -a), (a, a), (-a, a)])
    ci = np.array([(-r, -r), (r, -r), (r, r), (-r, r)])
    corners = [sq]
    for i in range(4):  # corners 1, 2 on the circle (edge 1 the arc), 3, 4 on the square
        j = (i + 1) % 4
        corners.append(np.array([ci[i], ci[j], sq[j], sq[i]]))
    curves = [(e, 1, [radius, 0, 0, 0, 0], "C") for e in range(2, 6)] if arcs else []
    return np.array(corners), curves


def ring_bcs():
    return [(e, 1, "W", np.zeros(5)) for e in range(2, 6)]


def test_nek_circle_arcs_give_the_disc_area_spectrally(tmp_path):
    corners, curves = ring_disc()
    write_re2(tmp_path / "d.re2", corners, curves=curves, bcs=ring_bcs())
    errors = {}
    for order in (2, 4, 6, 8):
        mesh = mesh_from_file("nek", tmp_path / "d.re2", order, {"W": "pec"})
        assert mesh.dim == 2 and mesh.group_names == ("W",)
        geo = compute_geometry(mesh, order)
        assert np.all(geo.jacobian > 0)
        errors[order] = abs(geo.mass.sum() - math.pi)
        # the rim's nodes lie on the circle
        x = geo.coords[:, 1:, 0, 0, :]
        assert np.abs(np.hypot(x[0], x[1]) - 1).max() < 1e-15
    # measured: 3.7e-2, 5.5e-6, 1.4e-10, 2.2e-15: spectral in the order
    assert errors[2] / errors[4] > 50 and errors[4] / errors[6] > 50 and errors[8] < 1e-8
    write_re2(tmp_path / "s.re2", corners, bcs=ring_bcs())
    straight = compute_geometry(mesh_from_file("nek", tmp_path / "s.re2", 2), 2)
    assert abs(straight.mass.sum() - 2.0) < 1e-14  # without the arcs: the inscribed square, 2 r^2


def test_nek_midpoint_edges_are_the_quadratic_through_the_midpoint(tmp_path):
    corners, index = box_corners2d(2, 1, (0, 0), (2, 1))
    # the shared edge (side 2 of element 1, side 4 of element 2) bent through (1.1, 0.5) by both
    curves = [(1, 2, [1.1, 0.5, 0, 0, 0], "m"), (2, 4, [1.1, 0.5, 0, 0, 0], "m")]
    bcs = [b for b in box_bcs(index, 2, 1)]
    write_rea(tmp_path / "m.rea", corners, curves=curves, bcs=bcs)
    mesh = mesh_from_file("nek", tmp_path / "m.rea", 4)
    geo = compute_geometry(mesh, 4)
    mid = geo.coords[:, 0, 0, 2, 4]  # element 1, r = +1, s = 0
    assert np.abs(mid - [1.1, 0.5, 0.0]).max() < 1e-15
    assert np.abs(geo.coords[:, 1, 0, 2, 0] - mid).max() < 1e-15  # the same point from element 2
    # the bulge moves area from element 2 to element 1: 2/3 * 0.1 * 1 (a parabola's segment)
    assert abs(geo.mass[0].sum() - (1 + 0.2 / 3)) < 1e-14 and abs(geo.mass.sum() - 2) < 1e-14


def test_bad_2d_nek_files_are_refused_naming_the_file(tmp_path):
    corners, index = box_corners2d(2, 1)
    flipped = corners[:, ::-1].copy()
    write_re2(tmp_path / "cw.re2", flipped)
    with pytest.raises(InputError, match=r"cw\.re2: element 1 of this 2-D mesh \(NDIM = 2\) has corners .* clockwise"):
        nek5000.read(tmp_path / "cw.re2", 2)
    write_re2(tmp_path / "s.re2", corners, curves=[(1, 1, [0, 0, 0, 1, 0], "s")])
    with pytest.raises(InputError, match=r"s\.re2: element 1 side 1: a sphere face \('s'\) in a 2-D mesh"):
        nek5000.read(tmp_path / "s.re2", 2)
    write_re2(tmp_path / "e5.re2", corners, curves=[(1, 5, [1, 0.5, 0, 0, 0], "m")])
    with pytest.raises(InputError, match=r"e5\.re2: element 1: curve type 'm' on side 5; expected 1\.\.4"):
        nek5000.read(tmp_path / "e5.re2", 2)
    write_re2(tmp_path / "f5.re2", corners, bcs=[(1, 5, "W", np.zeros(5))])
    with pytest.raises(InputError, match=r"f5\.re2: boundary-condition record 1 is for element 1 face 5; .*1\.\.4"):
        nek5000.read(tmp_path / "f5.re2", 2)
    write_rea(tmp_path / "open.rea", corners, bcs=[])
    with pytest.raises(InputError, match=r"open\.rea: element 0 .* face \d is on the boundary but in no named"):
        mesh_from_file("nek", tmp_path / "open.rea", 2)


# ------------------------------------------------------------------ locate

def curved_quads(order=4):
    def deform(x, y, z):
        return 0.08 * np.sin(np.pi * x) * np.sin(np.pi * y), 0.06 * np.sin(2 * np.pi * x) * np.sin(np.pi * y), 0 * z

    mesh = box_mesh((2, 2), deform=deform)
    return mesh, compute_geometry(mesh, order)


def test_locate_finds_points_on_curved_quads_ignoring_z():
    order = 4
    mesh, geo = curved_quads(order)
    rng = np.random.default_rng(5)
    coords = geo.coords
    e = 3
    target_rs = rng.uniform(-0.9, 0.9, 2)
    from lobatto.mesh.locate import basis

    hr, hs = basis(order, target_rs[:1])[0][0], basis(order, target_rs[1:])[0][0]
    point = np.einsum("cji,j,i->c", coords[:, e, 0], hs, hr)
    point[2] = 7.5  # a 2-D point's z means nothing
    near = candidates(element_boxes(coords), point)
    assert e in near
    found = newton(coords, near, point)
    hit = found.elements[found.inside]
    assert hit.tolist() == [e]
    reference = found.reference[found.inside][0]
    assert np.abs(reference[:2] - target_rs).max() < 1e-12 and reference[2] == 0
    points = np.array([point, point * [1, 1, -3], [0.5, 0.5, 0.0]])
    pairs = candidate_pairs(element_boxes(coords), points)
    assert set(pairs[1][pairs[0] == 0]) == set(pairs[1][pairs[0] == 1]) == set(near)
    # polynomials of degree <= N in (r, s) are interpolated exactly: the map itself (x, y of the
    # point) and r^4 s - 2 s^3 + r s^2 from its GLL node values
    weights = tensor_weights(order, found.reference[found.inside], dim=2)
    assert weights.shape == (1, 1, order + 1, order + 1)
    assert np.abs(np.einsum("ckji,kji->c", coords[:2, e], weights[0]) - point[:2]).max() < 1e-13
    from lobatto.discretization import gll_points

    s, r = np.meshgrid(gll_points(order), gll_points(order), indexing="ij")
    field = (r**4 * s - 2 * s**3 + r * s**2)[None]
    exact = target_rs[0] ** 4 * target_rs[1] - 2 * target_rs[1] ** 3 + target_rs[0] * target_rs[1] ** 2
    assert abs(np.sum(field * weights[0]) - exact) < 1e-13
    outside = newton(coords, np.arange(4), [1.3, 0.5, 0.0])
    assert not outside.inside.any()


def test_locate_in_3d_is_unchanged_by_the_2d_path():
    mesh = box_mesh((2, 1, 1))
    geo = compute_geometry(mesh, 3)
    found = newton(geo.coords, np.arange(2), [0.75, 0.25, 0.5])
    assert found.inside.tolist() == [False, True]
    assert np.abs(found.reference[1] - [0.0, -0.5, 0.0]).max() < 1e-12
    assert tensor_weights(3, found.reference[1:]).shape == (1, 4, 4, 4)


# ------------------------------------------------------------------ partitions

def test_quad_box_partitions_by_every_method_cover_the_box():
    from lobatto.mesh.partition import partition_box

    for method in ("rcb", "rsb", "metis"):
        if method == "metis" and importlib.util.find_spec("pymetis") is None:
            continue
        owned = [partition_box((4, 3), 3, p, method) for p in range(3)]
        assert np.array_equal(np.sort(np.concatenate(owned)), np.arange(12)), method
        assert [len(o) for o in owned] == [4, 4, 4] or method == "metis", method


@pytest.mark.parametrize("method", ["rcb", "rsb", "metis"])
def test_quad_meshes_partition_into_balanced_covering_parts(sdk, tmp_path, method):
    if method == "metis":
        pytest.importorskip("pymetis")
    mesh = mesh_from_file("gmsh", disc(tmp_path / "d.msh", order=2, divisions=3), 3)
    for parts in (2, 3, 5):
        owned = [partition_mesh(mesh, parts, p, method) for p in range(parts)]
        assert np.array_equal(np.sort(np.concatenate(owned)), np.arange(45))
        sizes = [len(o) for o in owned]
        assert max(sizes) - min(sizes) <= (1 if method != "metis" else 3)
        for o in owned:
            part = mesh.subset(o)
            part.check()
            assert part.dim == 2 and part.face_neighbour.shape == (len(o), 4)


def test_a_rea_whose_corner_copies_differ_by_ascii_rounding_reads_as_the_box(tmp_path):
    """Each element of a .rea carries its own copy of a shared corner, printed to 6 significant
    digits; files of Nek5000's 2-D examples (cyl2.rea) miss across a seam by ~4e-7. Copies
    that differ by such rounding (here up to 1e-5 at coordinates near 4, edges of 0.3) are one
    vertex, and the mesh is the box's."""
    nx, ny = 4, 3
    corners, index = box_corners2d(nx, ny, (3.1, 2.2), (4.3, 3.1))
    noisy = corners + np.random.default_rng(5).uniform(-5e-6, 5e-6, corners.shape)
    write_rea(tmp_path / "r.rea", noisy, bcs=box_bcs(index, nx, ny))
    mesh = hex_mesh_from_imported(nek5000.read(tmp_path / "r.rea", 3))
    box = box_mesh((nx, ny), lower=(3.1, 2.2), upper=(4.3, 3.1))
    assert len(mesh.vertices) == (nx + 1) * (ny + 1)
    assert np.array_equal(mesh.face_neighbour, box.face_neighbour)
    assert np.array_equal(mesh.neighbour_face, box.neighbour_face)
