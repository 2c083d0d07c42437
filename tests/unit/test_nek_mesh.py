"""Nek5000 mesh import (lobatto.mesh.readers.nek5000): real NekCEM files, curved sides, round trips.

Independent checks: pymech's readers and writer (corners, curves, codes), NekCEM's real files,
and geometry computed here from first principles (volumes by exact Gauss quadrature of the
polynomial map's Jacobian, circle centres from the edge's end points, grid positions).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from lobatto.discretization.gll import derivative_matrix, gll_points, interpolation_matrix
from lobatto.mesh.readers import nek5000
from lobatto.mesh.topology import FACE_AXIS, FACE_SIDE, face_slice
from nek_mesh_writer import box_corners, write_re2, write_rea

DATA = Path(__file__).resolve().parent.parent / "data" / "nek"
SHA256 = {
    "3dboxper.re2": "20cf93b79079b6e9cf663316cd19a91c85c61ccc4e426f29137e113fe313c26d",
    "3dboxper.rea": "d8c29f342b80e1eaa06072d0a9cba73cc460aa1c950bfe0fc9f6b1432f208ede",
    "cylinder.rea": "bcd54446ee7f2aa7ba65a8464aa9ac47ae41e0970162dafed5112094fd590e53",
}
#: Nek corner n (0-based) as the offsets (di, dj, dk) of a structured element: counter-clockwise
#: in each layer, written here from the format's description, not from the reader
NEK_CORNER_OFFSETS = ((0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1))
#: Nek's preprocessor faces as (axis x/y/z, side): 1: y-, 2: x+, 3: y+, 4: x-, 5: z-, 6: z+
NEK_FACE_PLANES = ((1, 0), (0, 1), (1, 1), (0, 0), (2, 0), (2, 1))
#: Nek edges (start, end) corners, 0-based
NEK_EDGE_CORNERS = ((0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4),
                    (0, 4), (1, 5), (2, 6), (3, 7))


def test_data_files_are_the_committed_ones():
    for name, digest in SHA256.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name


# ------------------------------------------------------------------ geometry helpers

def element_volumes(nodes: np.ndarray) -> np.ndarray:
    """Volume of each element of the tensor-product Lagrange map of its GLL nodes, by Gauss
    quadrature exact for it (det J has degree < 3q in each variable; 2q + 2 points)."""
    q = nodes.shape[-1] - 1
    xg, wg = np.polynomial.legendre.leggauss(2 * q + 2)
    interp = interpolation_matrix(q, xg)
    deriv = interp @ derivative_matrix(q)  # a derivative of the degree-q map is exact on GLL nodes

    def at_gauss(along_i, along_j, along_k):  # (E, 3, k, j, i) -> (E, c, b, a, 3)
        out = nodes @ along_i.T
        out = np.swapaxes(np.swapaxes(out, -1, -2) @ along_j.T, -1, -2)
        out = np.moveaxis(np.moveaxis(out, 2, -1) @ along_k.T, -1, 2)
        return np.moveaxis(out, 1, -1)

    jacobian = np.stack([at_gauss(deriv, interp, interp), at_gauss(interp, deriv, interp),
                         at_gauss(interp, interp, deriv)], axis=-2)
    return np.einsum("ecba,c,b,a->e", np.linalg.det(jacobian), wg, wg, wg)


def face_points(nodes: np.ndarray, element: int, face: int) -> np.ndarray:
    """(n, 3) nodes of one lobatto face."""
    q = nodes.shape[-1] - 1
    return nodes[element][face_slice(face, q)].reshape(3, -1).T


def same_point_sets(a: np.ndarray, b: np.ndarray) -> float:
    """Largest distance from a point of one set to the nearest of the other (0: the same sets)."""
    d = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
    return max(d.min(axis=1).max(), d.min(axis=0).max())


def edge_nodes(nodes: np.ndarray, element: int, nek_edge: int) -> np.ndarray:
    """(q+1, 3) nodes along a Nek edge, from its start corner to its end corner."""
    q = nodes.shape[-1] - 1
    start, end = (NEK_CORNER_OFFSETS[c] for c in NEK_EDGE_CORNERS[nek_edge])
    steps = np.linspace(0, 1, q + 1)
    idx = [np.rint((s + (e - s) * steps) * q).astype(int) for s, e in zip(start, end)]  # i, j, k
    return nodes[element][:, idx[2], idx[1], idx[0]].T


def arc_centre(p1, p2, radius):
    """Centre of the circle of radius |R| through p1, p2 in the x-y plane, on the left of
    p1 -> p2 for R > 0 (the format's rule)."""
    d = np.asarray(p2[:2]) - np.asarray(p1[:2])
    half = np.linalg.norm(d) / 2
    left = np.array([-d[1], d[0]]) / np.linalg.norm(d)
    return (np.asarray(p1[:2]) + np.asarray(p2[:2])) / 2 + np.sign(radius) * np.sqrt(radius**2 - half**2) * left


def corners_lex(nodes: np.ndarray) -> np.ndarray:
    """(E, 8, 3) corners in lobatto's lexicographic order, from the nodes."""
    q = nodes.shape[-1] - 1
    return np.stack([nodes[:, :, c * q, b * q, a * q] for c in (0, 1) for b in (0, 1) for a in (0, 1)], axis=1)


# ------------------------------------------------------------------ 3dboxper (real, binary)

def test_3dboxper_re2_box_volume_and_periodic_pairs():
    mesh = nekread("3dboxper.re2", 3)
    assert mesh.num_elements == 128 and mesh.geometry_order == 3
    assert mesh.info["version"] == "#v002" and mesh.info["precision"] == "float64"
    x = mesh.element_nodes
    assert np.allclose([x[:, d].min() for d in range(3)], -1, atol=1e-15)
    assert np.allclose([x[:, d].max() for d in range(3)], 1, atol=1e-15)
    corners = corners_lex(x)
    assert [len(np.unique(np.round(corners[..., d], 12))) for d in range(3)] == [5, 5, 9]  # 4 x 4 x 8
    vols = element_volumes(x)
    assert np.all(vols > 0)  # corner order right: no inverted element
    assert abs(vols.sum() - 8.0) < 1e-13
    assert mesh.boundary_faces == {} and mesh.region_names == ("all",)
    pairs = mesh.periodic_faces
    assert pairs.shape == (80, 4)  # 160 'P' records, each pair once
    faces = {(int(e), int(f)) for e, f, _, _ in pairs} | {(int(e), int(f)) for _, _, e, f in pairs}
    assert len(faces) == 160
    for e, f, pe, pf in pairs:
        # faces numbered right: lobatto face f lies on the box side it names
        axis, side = 2 - FACE_AXIS[f], FACE_SIDE[f]
        pts, partner = face_points(x, e, f), face_points(x, pe, pf)
        assert np.allclose(pts[:, axis], 2 * side - 1, atol=1e-15)
        assert FACE_AXIS[pf] == FACE_AXIS[f] and FACE_SIDE[pf] == 1 - side
        shift = np.zeros(3)
        shift[axis] = 2.0 if side == 0 else -2.0
        assert same_point_sets(pts + shift, partner) < 1e-14


def test_3dboxper_rea_reads_its_re2():
    via_rea, direct = nekread("3dboxper.rea", 2), nekread("3dboxper.re2", 2)
    assert via_rea.info["via"] == "3dboxper.rea"
    assert np.array_equal(via_rea.element_nodes, direct.element_nodes)
    assert np.array_equal(via_rea.periodic_faces, direct.periodic_faces)


def nekread(name: str, order: int):
    return nek5000.read(DATA / name, order)


# ------------------------------------------------------------------ pymech, an independent reader

@pytest.mark.parametrize("name", ["3dboxper.re2", "cylinder.rea"])
def test_real_files_agree_with_pymech(name):
    neksuite = pytest.importorskip("pymech.neksuite")
    theirs = (neksuite.readre2 if name.endswith(".re2") else neksuite.readrea)(str(DATA / name))
    ours = nekread(name, 1)
    nek = nek5000.read_nek(DATA / name)
    # pymech stores the corners of each element lexicographically as [xyz][z][y][x], like ours
    positions = np.array([el.pos for el in theirs.elem])
    assert np.array_equal(ours.element_nodes, positions)
    for e, el in enumerate(theirs.elem):
        for edge in range(12):
            pick = (nek.curves["elements"] == e) & (nek.curves["sides"] == edge)
            assert (el.ccurv[edge] != "") == bool(pick.any())
            if pick.any():
                assert nek.curves["types"][pick][0] == el.ccurv[edge]
                assert np.array_equal(nek.curves["values"][pick][0], el.curv[edge])
        for face in range(6):
            code = el.bcs[0, face][0]
            ours_code = nek.bc_codes[e, face]
            if code == "":  # pymech blanks E faces
                assert ours_code == "E"
            else:  # pymech's .rea reader keeps 2 characters of a code (PEC -> PE)
                assert ours_code[:len(code)] == code
                assert np.array_equal(nek.bc_values[e, face], [el.bcs[0, face][k] for k in range(3, 8)])


# ------------------------------------------------------------------ cylinder (real, circle arcs)

def cylinder_arc_volume(nek) -> float:
    """The volume enclosed by the file's straight sides and arcs: per element, the bottom
    quadrilateral's area plus the circular segment of each arc on its bottom edges, times the
    height (the elements are prisms along z)."""
    total = 0.0
    for e, c in enumerate(nek.corners):
        height = c[4, 2] - c[0, 2]
        x, y = c[:4, 0], c[:4, 1]
        area = 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)
        pick = (nek.curves["elements"] == e) & (nek.curves["sides"] < 4)
        for side, values in zip(nek.curves["sides"][pick], nek.curves["values"][pick]):
            a, b = NEK_EDGE_CORNERS[side]
            radius = values[0]
            angle = 2 * np.arcsin(np.linalg.norm(c[b, :2] - c[a, :2]) / (2 * abs(radius)))
            area += np.sign(radius) * 0.5 * radius**2 * (angle - np.sin(angle))
        total += area * height
    return total


def test_cylinder_volume_converges_spectrally_with_geometry_order():
    nek = nek5000.read_nek(DATA / "cylinder.rea")
    assert nek.num_elements == 225
    assert set(nek.curves["types"]) == {"C"} and len(nek.curves["types"]) == 120
    assert np.all(nek.curves["values"][:, 0] == 7.5)
    exact = cylinder_arc_volume(nek)
    nominal = np.pi * 7.5**2 * 10.0
    assert abs(exact / nominal - 1) < 1e-6  # the file's corners carry 6 digits
    errors = []
    for order in range(1, 7):
        volume = element_volumes(nek5000.to_imported(nek, order).element_nodes).sum()
        errors.append(abs(volume - exact) / exact)
    # measured: 4.5e-2, 1.6e-4, 2.7e-7, 2.8e-10, 1.8e-13, 2.6e-15
    assert errors[0] > 1e-2
    assert all(errors[i + 1] < 5e-3 * errors[i] for i in range(4))
    assert errors[4] < 1e-12 and errors[5] < 1e-13


def test_cylinder_arcs_walls_ends_and_conformity():
    order = 6
    nek = nek5000.read_nek(DATA / "cylinder.rea")
    mesh = nek5000.to_imported(nek, order)
    x = mesh.element_nodes
    # every C edge's nodes lie on its circle to round-off; the circles are the cylinder's
    for e, side, values in zip(nek.curves["elements"], nek.curves["sides"], nek.curves["values"]):
        a, b = NEK_EDGE_CORNERS[side]
        centre = arc_centre(nek.corners[e, a], nek.corners[e, b], values[0])
        pts = edge_nodes(x, e, side)
        assert np.allclose(pts[[0, -1]], nek.corners[e, [a, b]], atol=1e-14)
        assert np.abs(np.linalg.norm(pts[:, :2] - centre, axis=1) - 7.5).max() < 1e-13
        assert np.linalg.norm(centre) < 2e-5
        angles = np.unwrap(np.arctan2(pts[:, 1] - centre[1], pts[:, 0] - centre[0]))
        assert np.allclose((angles - angles[0]) / (angles[-1] - angles[0]), (gll_points(order) + 1) / 2, atol=1e-13)
    # wall faces (PEC) are on the cylinder, the periodic ends on z = 0 and z = 10
    assert set(mesh.boundary_faces) == {"PEC"}
    for e, f in mesh.boundary_faces["PEC"]:
        assert np.abs(np.hypot(*face_points(x, e, f)[:, :2].T) - 7.5).max() < 1e-5
    assert mesh.periodic_faces.shape == (45, 4)
    for e, f, pe, pf in mesh.periodic_faces:
        low, high = face_points(x, e, f), face_points(x, pe, pf)
        if low[0, 2] > high[0, 2]:
            low, high = high, low
        assert np.allclose(low[:, 2], 0.0) and np.allclose(high[:, 2], 10.0)
        assert same_point_sets(low + [0, 0, 10.0], high) < 1e-13
    # conforming: every E face has the nodes of the neighbour face that the file names
    to_lobatto = nek5000.NEK_FACE_TO_LOBATTO
    elements, faces = np.nonzero(nek.bc_codes == "E")
    assert len(elements) == 1200
    worst = 0.0
    for e, f in zip(elements, faces):
        ne, nf = (int(v) - 1 for v in nek.bc_values[e, f, :2])
        worst = max(worst, same_point_sets(face_points(x, e, to_lobatto[f]), face_points(x, ne, to_lobatto[nf])))
    assert worst < 1e-13


# ------------------------------------------------------------------ round trips through the writer

def warped_box(nx=3, ny=3, nz=2, seed=0):
    """A box mesh [0,1]x[0,1]x[0,1] with its interior grid points moved at random, midpoint
    (m) edges inside, circle (C) edges bulging out of the y = 1 side, and boundary codes
    W (x = 0), v (x = 1), O (y = 0), PEC (y = 1), P (z = 0 <-> z = 1), in Nek's conventions.
    Returns corners, curves, bcs, the (i, j, k) of each element, and the grid."""
    rng = np.random.default_rng(seed)
    corners, index = box_corners(nx, ny, nz)
    grid = np.stack(np.meshgrid(*(np.linspace(0, 1, n + 1) for n in (nx, ny, nz)), indexing="ij"), axis=-1)
    inner = (slice(1, nx), slice(1, ny), slice(1, nz))
    grid[inner] += rng.uniform(-0.08, 0.08, grid[inner].shape)
    grid = np.vectorize(lambda v: float(f"{v:.7g}"))(grid)  # exact in a .rea's 7 digits too
    for e, (i, j, k) in enumerate(index):
        for n, (di, dj, dk) in enumerate(NEK_CORNER_OFFSETS):
            corners[e, n] = grid[i + di, j + dj, k + dk]
    num = {tuple(ijk): e for e, ijk in enumerate(index.tolist())}
    curves, midpoints = [], {}
    for e, (i, j, k) in enumerate(index):
        for edge, (a, b) in enumerate(NEK_EDGE_CORNERS):
            ends = tuple(sorted((tuple(np.add((i, j, k), NEK_CORNER_OFFSETS[a])),
                                 tuple(np.add((i, j, k), NEK_CORNER_OFFSETS[b])))))
            on_y1 = ends[0][1] == ny and ends[1][1] == ny
            along_x = ends[0][0] != ends[1][0]
            if on_y1 and along_x:  # C edge, centre inside the box (left of travel for edges 3, 7)
                assert edge in (2, 6)
                curves.append((e + 1, edge + 1, [2.5, 0, 0, 0, 0], "C"))
            elif all(0 < g[1] < ny and 0 < g[0] < nx for g in ends) and along_x:
                if ends not in midpoints:  # one random midpoint per grid edge, shared
                    mid = 0.5 * (grid[ends[0]] + grid[ends[1]]) + rng.uniform(-0.03, 0.03, 3)
                    midpoints[ends] = [float(f"{v:.7g}") for v in mid]
                curves.append((e + 1, edge + 1, midpoints[ends] + [0, 0], "m"))
    bcs = []
    sides = {(0, 0): "W", (0, 1): "v", (1, 0): "O", (1, 1): "PEC"}
    for e, (i, j, k) in enumerate(index):
        for f, (axis, side) in enumerate(NEK_FACE_PLANES):
            pos = (i, j, k)[axis] + side
            if pos not in (0, (nx, ny, nz)[axis]):
                continue
            if axis < 2:
                bcs.append((e + 1, f + 1, sides[(axis, side)], np.zeros(5)))
            else:
                partner = num[(i, j, nz - 1 if side == 0 else 0)]
                bcs.append((e + 1, f + 1, "P", [partner + 1, (6 if side == 0 else 5), 0, 0, 0]))
    return corners, curves, bcs, index, grid


def test_round_trip_rea_and_re2_variants_give_the_same_mesh(tmp_path):
    corners, curves, bcs, index, _ = warped_box()
    groups = index[:, 2]  # z layers as element groups
    write_rea(tmp_path / "m.rea", corners, groups=groups, curves=curves, bcs=bcs)
    meshes = {"rea": nek5000.read(tmp_path / "m.rea", 5)}
    for version, order in (("#v002", "<"), ("#v002", ">"), ("#v003", "<"), ("#v001", ">"), ("#v001", "<")):
        name = f"m{version[-1]}{'le' if order == '<' else 'be'}.re2"
        write_re2(tmp_path / name, corners, groups=groups, curves=curves,
                  bcs=[b for b in bcs if b[2] != "E"], version=version, byte_order=order, extra_fields=1)
        meshes[name] = nek5000.read(tmp_path / name, 5)
    reference = meshes["rea"]
    assert reference.region_names == ("group0", "group1")
    assert np.array_equal(reference.regions, index[:, 2])
    for name, mesh in meshes.items():
        tol = 1e-6 if "1" in name[1] else 0.0  # #v001 holds float32
        assert np.allclose(mesh.element_nodes, reference.element_nodes, rtol=0, atol=tol), name
        assert mesh.boundary_faces.keys() == reference.boundary_faces.keys()
        for code in mesh.boundary_faces:
            assert np.array_equal(mesh.boundary_faces[code], reference.boundary_faces[code])
        assert np.array_equal(mesh.periodic_faces, reference.periodic_faces)
        assert np.array_equal(mesh.regions, reference.regions)


def test_round_trip_geometry_matches_the_written_mesh(tmp_path):
    order = 4
    nx, ny, nz = 3, 3, 2
    corners, curves, bcs, index, grid = warped_box(nx, ny, nz)
    write_rea(tmp_path / "m.rea", corners, curves=curves, bcs=bcs)
    mesh = nek5000.read(tmp_path / "m.rea", order)
    x = mesh.element_nodes
    num = {tuple(ijk): e for e, ijk in enumerate(index.tolist())}
    # corners: lexicographic corner (a, b, c) of element (i, j, k) is grid point (i+a, j+b, k+c)
    for e, (i, j, k) in enumerate(index):
        for c in (0, 1):
            for b in (0, 1):
                for a in (0, 1):
                    assert np.array_equal(x[e, :, c * order, b * order, a * order], grid[i + a, j + b, k + c])
    assert np.all(element_volumes(x) > 0)
    # m edges: the quadratic through the ends and the midpoint, at the GLL points
    tau = gll_points(order)
    for e, edge, values, ctype in curves:
        a, b = NEK_EDGE_CORNERS[edge - 1]
        p1, p2 = corners[e - 1, a], corners[e - 1, b]
        pts = edge_nodes(x, e - 1, edge - 1)
        if ctype == "m":
            mid = np.asarray(values[:3])
            quad = (np.outer(tau * (tau - 1) / 2, p1) + np.outer(1 - tau**2, mid) + np.outer(tau * (tau + 1) / 2, p2))
            assert np.abs(pts - quad).max() < 1e-14
        else:
            centre = arc_centre(p1, p2, values[0])
            assert np.abs(np.linalg.norm(pts[:, :2] - centre, axis=1) - 2.5).max() < 1e-14
            assert np.all(pts[1:-1, 1] > 1.0)  # bulging out of the box
            assert np.allclose(pts[:, 2], (1 - tau) / 2 * p1[2] + (1 + tau) / 2 * p2[2], atol=1e-15)
    # conforming: neighbours in the grid share their face nodes exactly (all aligned here)
    for (i, j, k), e in num.items():
        for axis, step in ((0, (1, 0, 0)), (1, (0, 1, 0)), (2, (0, 0, 1))):
            other = num.get((i + step[0], j + step[1], k + step[2]))
            if other is not None:
                upper, lower = 2 * axis + 1, 2 * axis
                assert np.abs(face_points(x, e, upper) - face_points(x, other, lower)).max() < 1e-15
    # boundary codes on the faces of the sides they were written for
    expect = {"W": (0, 0), "v": (0, 1), "O": (1, 0), "PEC": (1, 1)}
    assert set(mesh.boundary_faces) == set(expect)
    for code, (axis, side) in expect.items():
        got = {tuple(r) for r in mesh.boundary_faces[code].tolist()}
        want = {(e, 2 * axis + side) for (i, j, k), e in num.items() if (i, j)[axis] == side * ((nx, ny)[axis] - 1)}
        assert got == want, code
        for e, f in got:
            if code != "PEC":
                assert np.allclose(face_points(x, e, f)[:, axis], side, atol=1e-15)
    pairs = {tuple(r) for r in mesh.periodic_faces.tolist()}
    assert pairs == {(num[(i, j, 0)], 4, num[(i, j, nz - 1)], 5) for i in range(nx) for j in range(ny)}


def test_thousand_elements_use_the_wide_fixed_formats(tmp_path):
    """From 1000 elements on, .rea curve and boundary lines change columns (I2,I6 and I5,I1)."""
    corners, index = box_corners(10, 10, 10)
    mids = [[float(f"{v:.7g}") for v in 0.5 * (corners[e, 0] + corners[e, 1]) + [0, 0, 0.01]] for e in range(1000)]
    curves = [(e + 1, 1, mids[e] + [0, 0], "m") for e in range(0, 1000, 7)]
    bcs = ([(e + 1, 5, "W", np.zeros(5)) for e in range(100)]
           + [(e + 1, 6, "O", [1.5, 0, 0, 0, 0]) for e in range(900, 1000)])
    write_rea(tmp_path / "big.rea", corners, curves=curves, bcs=bcs, thermal=True)
    write_re2(tmp_path / "big.re2", corners, curves=curves, bcs=bcs)
    via_rea = nek5000.read_nek(tmp_path / "big.rea")
    via_re2 = nek5000.read_nek(tmp_path / "big.re2")
    assert np.array_equal(via_rea.corners, via_re2.corners)
    for key in ("elements", "sides", "values"):
        assert np.array_equal(via_rea.curves[key], via_re2.curves[key])
    assert np.array_equal(via_rea.bc_codes, via_re2.bc_codes) and np.array_equal(via_rea.bc_values, via_re2.bc_values)
    mesh = nek5000.to_imported(via_rea, 2)
    assert {k: len(v) for k, v in mesh.boundary_faces.items()} == {"W": 100, "O": 100}
    neksuite = pytest.importorskip("pymech.neksuite")
    theirs = neksuite.readrea(str(tmp_path / "big.rea"))
    assert np.array_equal(np.array([el.pos for el in theirs.elem]), nek5000.to_imported(via_rea, 1).element_nodes)
    assert theirs.elem[7].ccurv[0] == "m" and np.allclose(theirs.elem[7].curv[0, :3], via_rea.curves["values"][1, :3])


def test_pymech_written_re2_is_read(tmp_path):
    """pymech's writer (another implementation of the format: codes padded with NULs) -> lobatto."""
    core = pytest.importorskip("pymech.core")
    neksuite = pytest.importorskip("pymech.neksuite")
    corners, curves, bcs, index, _ = warped_box(seed=3)
    data = core.HexaData(3, len(corners), [2, 2, 2], [3, 0, 0, 0, 0], nbc=1)
    data.endian = "big"
    lex = [0, 1, 3, 2, 4, 5, 7, 6]  # pymech's [z][y][x] corners from Nek's counter-clockwise ones
    for e, el in enumerate(data.elem):
        el.pos[...] = corners[e, lex].reshape(2, 2, 2, 3).transpose(3, 0, 1, 2)
    for e, edge, values, ctype in curves:
        data.elem[e - 1].curv[edge - 1] = values
        data.elem[e - 1].ccurv[edge - 1] = ctype
    for e, f, code, values in bcs:
        data.elem[e - 1].bcs[0, f - 1] = (code, e, f, *values)
    data.update_ncurv()
    neksuite.writere2(str(tmp_path / "p.re2"), data)
    write_rea(tmp_path / "m.rea", corners, curves=curves, bcs=bcs)
    theirs, ours = nek5000.read(tmp_path / "p.re2", 4), nek5000.read(tmp_path / "m.rea", 4)
    assert theirs.info["byte order"] == "big-endian"
    assert np.array_equal(theirs.element_nodes, ours.element_nodes)
    assert np.array_equal(theirs.periodic_faces, ours.periodic_faces)
    for code in ours.boundary_faces:
        assert np.array_equal(theirs.boundary_faces[code], ours.boundary_faces[code])


def test_our_files_read_by_pymech(tmp_path):
    neksuite = pytest.importorskip("pymech.neksuite")
    corners, curves, bcs, _, _ = warped_box(seed=5)
    write_re2(tmp_path / "m.re2", corners, curves=curves, bcs=bcs)
    theirs = neksuite.readre2(str(tmp_path / "m.re2"))
    ours = nek5000.read(tmp_path / "m.re2", 1)
    assert np.array_equal(np.array([el.pos for el in theirs.elem]), ours.element_nodes)
    for e, edge, values, ctype in curves:
        assert theirs.elem[e - 1].ccurv[edge - 1] == ctype
        assert np.array_equal(theirs.elem[e - 1].curv[edge - 1], values)
    for e, f, code, values in bcs:
        assert theirs.elem[e - 1].bcs[0, f - 1][0] == code


# ------------------------------------------------------------------ sphere faces

def cubed_ball(radius=2.0, half=0.5):
    """A ball of 7 elements: a cube [-half, half]^3 and six elements between its faces and the
    sphere, each with its outer face (Nek face 6, t = +1) an 's' face on the sphere."""
    frames = [((1, 0, 0), (0, 1, 0), (0, 0, 1)), ((0, 1, 0), (1, 0, 0), (0, 0, -1)),
              ((0, 1, 0), (0, 0, 1), (1, 0, 0)), ((0, 0, 1), (0, 1, 0), (-1, 0, 0)),
              ((0, 0, 1), (1, 0, 0), (0, 1, 0)), ((1, 0, 0), (0, 0, 1), (0, -1, 0))]
    elements = [[np.multiply(half, np.subtract(np.multiply(2, o), 1)) for o in NEK_CORNER_OFFSETS]]
    curves = []
    for u, v, n in frames:
        element = []
        for di, dj, dk in NEK_CORNER_OFFSETS:
            p = (2 * di - 1) * np.array(u) + (2 * dj - 1) * np.array(v) + np.array(n)
            element.append(half * p if dk == 0 else radius * p / np.linalg.norm(p))
        elements.append(element)
        curves.append((len(elements), 6, [0, 0, 0, radius, 0], "s"))
    return np.array(elements, dtype=np.float64), curves


def test_sphere_faces_ball_volume_converges_and_conforms(tmp_path):
    corners, curves = cubed_ball()
    write_re2(tmp_path / "ball.re2", corners, curves=curves, bcs=[(e, 6, "W", np.zeros(5)) for e in range(2, 8)])
    exact = 4 / 3 * np.pi * 2.0**3
    errors = []
    for order in (2, 4, 6, 8):
        mesh = nek5000.read(tmp_path / "ball.re2", order)
        vols = element_volumes(mesh.element_nodes)
        assert np.all(vols > 0)
        errors.append(abs(vols.sum() - exact) / exact)
        x = mesh.element_nodes
        for e, f in mesh.boundary_faces["W"]:
            assert f == 5 and np.abs(np.linalg.norm(face_points(x, e, f), axis=1) - 2.0).max() < 1e-14
        # the six shell elements and the cube share faces node for node
        faces = [face_points(x, e, f) for e in range(7) for f in range(6)]
        centres = np.array([p.mean(axis=0) for p in faces])
        shared = 0
        for a in range(len(faces)):
            for b in range(a + 1, len(faces)):
                if a // 6 != b // 6 and np.linalg.norm(centres[a] - centres[b]) < 1e-3:
                    shared += 1
                    assert same_point_sets(faces[a], faces[b]) < 1e-14
        assert shared == 6 + 12
    # measured: 2.7e-2, 2.2e-4, 2.1e-6, 2.0e-8 (one element spans a sixth of the sphere)
    assert all(errors[i + 1] < 2e-2 * errors[i] for i in range(3)) and errors[-1] < 5e-8
