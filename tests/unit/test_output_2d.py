"""2-D output (issue 34, slice A2): every writer on a quad mesh (volume arrays (C, E, 1, n, n),
coordinates (3, E, 1, n, n) with z = 0), each file read back by the reader users use: VTK's own
readers (Lagrange quadrilaterals; vtkNek5000Reader), pymech, h5py, and lobatto's readers.

The data is a Maxwell state (six fields, TE and TM) of the NumPy reference system on a curved
2-D box: smooth fields of x and y. The checkpoints: the thin state stored and read back bit for
bit, a restart across dimensions refused, and 2-D onto another order or mesh exact for
polynomials the old element holds.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.discretization import gll_points, gll_weights
from lobatto.errors import InputError
from lobatto.io import hdf5, hdf5_parts, nek5000
from lobatto.io import vtk as vtk_io
from lobatto.io.checkpoint import Checkpoint, write_checkpoint
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.runner.restart_onto import check_dimension, onto_order, onto_points, state_dimension
from lobatto.systems.maxwell.system import MaxwellSystem

vtk = pytest.importorskip("vtk")
from vtk.util.numpy_support import vtk_to_numpy  # noqa: E402

ORDER = 4
NAMES = ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz")
CONFIG = '[mesh]\nelements = [3, 2]\n# a 2-D case\n'


def deform_xy(x, y, z):
    """Curved quads of the box [0, 1.5] x [0, 1] (its sides stay on their lines; z stays 0)."""
    return (0.06 * np.sin(2 * np.pi * x / 1.5) * np.sin(np.pi * y),
            0.05 * np.sin(np.pi * x / 1.5) * np.sin(2 * np.pi * y), 0 * z)


@pytest.fixture(scope="module")
def maxwell():
    """(system, coords (3, E, 1, n, n), state (6, E, 1, n, n)) on a curved (3, 2) box."""
    mesh = box_mesh((3, 2), lower=(0.0, 0.0), upper=(1.5, 1.0), deform=deform_xy)
    system = MaxwellSystem(mesh, ORDER, NumpyBackend())
    x, y, _ = system.geometry.coords
    state = np.stack([np.sin(np.pi * x) * np.cos(2 * y), np.exp(0.3 * x) * y, np.cos(np.pi * y) * x ** 2,
                      x * y - 0.5, np.sin(3 * x + y), 1.0 + x ** 3 - y])
    assert state.shape == (6, 6, 1, ORDER + 1, ORDER + 1)
    assert np.all(system.geometry.coords[2] == 0)
    return system, system.geometry.coords, state


def read_vtu(path, parallel=False):
    reader = vtk.vtkXMLPUnstructuredGridReader() if parallel else vtk.vtkXMLUnstructuredGridReader()
    reader.SetFileName(str(path))
    reader.Update()
    grid = reader.GetOutput()
    assert grid.GetNumberOfCells() > 0, f"VTK read no cells from {path}"
    return grid


def at_gll(cell, values, order):
    """(n, n, C) a cell's point values (cell points, C) interpolated by VTK at lobatto's GLL
    points [j, i] (VTK's parametric [0, 1] is (r + 1) / 2)."""
    r = (gll_points(order) + 1) / 2
    out = np.empty((order + 1, order + 1, values.shape[1]))
    w = [0.0] * cell.GetNumberOfPoints()
    for j, i in itertools.product(range(order + 1), repeat=2):
        cell.InterpolateFunctions([r[i], r[j], 0.0], w)
        out[j, i] = np.asarray(w) @ values
    return out


def vtk_area(cell, points) -> float:
    """The cell's area from VTK's own map: Gauss-Legendre quadrature (exact for the degree
    2N - 1 Jacobian) of |x_r y_s - x_s y_r| with VTK's shape-function derivatives."""
    q, wq = np.polynomial.legendre.leggauss(ORDER + 2)
    q, wq = (q + 1) / 2, wq / 2
    m = cell.GetNumberOfPoints()
    area = 0.0
    derivs = [0.0] * (2 * m)
    for (a, wa), (b, wb) in itertools.product(zip(q, wq), repeat=2):
        cell.InterpolateDerivs([a, b, 0.0], derivs)
        d = np.asarray(derivs).reshape(m, 2).T  # (d/dr, d/ds) of each shape function in turn
        (xr, yr), (xs, ys) = d[0] @ points[:, :2], d[1] @ points[:, :2]
        area += wa * wb * abs(xr * ys - xs * yr)
    return area


# ------------------------------------------------------------------------------------ VTK
@pytest.mark.parametrize("order", range(1, 9))
def test_quad_point_numbering_is_vtks(order):
    n = order + 1
    numbers = [vtk_io.lagrange_quad_index(i, j, order) for j, i in itertools.product(range(n), repeat=2)]
    assert sorted(numbers) == list(range(n * n))
    for (j, i), number in zip(itertools.product(range(n), repeat=2), numbers):
        assert number == vtk.vtkLagrangeQuadrilateral.PointIndexFromIJK(i, j, [order, order]), (i, j)


def test_vtk_quads_carry_lobattos_map_area_and_fields(maxwell, tmp_path):
    system, coords, state = maxwell
    path = tmp_path / "te.vtu"
    ids = np.array([5, 0, 3, 1, 4, 2])
    vtk_io.write_piece(path, coords, state, NAMES, ORDER, time=0.25, step=7, config_toml=CONFIG, element_ids=ids)
    grid = read_vtu(path)
    n, num = ORDER + 1, coords.shape[1]
    assert grid.GetNumberOfCells() == num and grid.GetNumberOfPoints() == num * n * n
    assert {grid.GetCellType(e) for e in range(num)} == {vtk_io.VTK_LAGRANGE_QUADRILATERAL} == {70}
    assert all(grid.GetCell(e).GetOrder(a) == ORDER for e in range(num) for a in range(2))
    assert vtk_to_numpy(grid.GetCellData().GetArray("element_id")).tolist() == ids.tolist()
    fd = grid.GetFieldData()
    assert fd.GetArray("TimeValue").GetValue(0) == 0.25 and fd.GetAbstractArray("config").GetValue(0) == CONFIG
    points = vtk_to_numpy(grid.GetPoints().GetData())
    assert np.all(points[:, 2] == 0)
    data = grid.GetPointData()
    assert [data.GetArrayName(a) for a in range(data.GetNumberOfArrays())] == ["E", "H"]
    fields = np.concatenate([vtk_to_numpy(data.GetArray("E")), vtk_to_numpy(data.GetArray("H"))], axis=1)
    w = gll_weights(ORDER)
    areas = np.einsum("j,i,eji->e", w, w, system.geometry.jacobian[:, 0])
    for e in range(num):
        cell, rows = grid.GetCell(e), slice(e * n * n, (e + 1) * n * n)
        # VTK's interpolant at the GLL points is lobatto's: the node order and the resampling are right
        assert np.abs(at_gll(cell, points[rows], ORDER)[..., :2] - np.moveaxis(coords[:2, e, 0], 0, -1)).max() < 1e-12
        assert np.abs(at_gll(cell, fields[rows], ORDER) - np.moveaxis(state[:, e, 0], 0, -1)).max() < 1e-12
        # and its area is lobatto's (curved edges: both exact for the degree-N map)
        assert vtk_area(cell, points[rows]) == pytest.approx(areas[e], rel=1e-12)
    assert areas.sum() == pytest.approx(1.5, rel=1e-12)  # the deformation keeps the box's area


def test_vtk_2d_vector_pairs_get_a_zero_z(maxwell, tmp_path):
    _, coords, state = maxwell
    names = ("p", "ux", "uy")  # acoustics in 2-D
    assert vtk_io.vector_groups(names, 2) == [("p", ("p",)), ("u", ("ux", "uy"))]
    assert vtk_io.vector_groups(names) == [(a, (a,)) for a in names]  # 3-D: as before
    assert vtk_io.vector_groups(("bx", "by", "b"), 2) == [(a, (a,)) for a in ("bx", "by", "b")]
    assert vtk_io.vector_groups(NAMES, 2) == [("E", NAMES[:3]), ("H", NAMES[3:])]
    path = tmp_path / "p.vtu"
    vtk_io.write_piece(path, coords, state[:3], names, ORDER, time=0.0, step=0, config_toml=CONFIG)
    data = read_vtu(path).GetPointData()
    u = vtk_to_numpy(data.GetArray("u"))
    assert u.shape == (coords[0].size, 3) and np.all(u[:, 2] == 0)
    assert data.GetArray("u").GetComponentName(0) == "ux" and data.GetVectors().GetName() == "u"
    p = vtk_to_numpy(data.GetArray("p"))
    equispaced = vtk_io.to_vtk_nodes(state[:3], ORDER)  # (3, E, n*n) in VTK's point order
    assert np.array_equal(p, equispaced[0].ravel()) and np.array_equal(u[:, :2], equispaced[1:].reshape(2, -1).T)


def test_vtk_parallel_index_joins_uneven_2d_pieces(maxwell, tmp_path):
    _, coords, state = maxwell
    owners = [np.array([4]), np.array([0, 2, 5]), np.array([1, 3])]
    series = vtk_io.VtkSeries(tmp_path, "te", size=3)
    for rank, ids in enumerate(owners):
        series.rank = rank
        series.write_piece(3, 0.5, coords[:, ids], state[:, ids], NAMES, ORDER,
                           SimpleNamespace(element_ids=ids, dim=2), CONFIG)
    series.write_index(3, 0.5, NAMES, SimpleNamespace(element_ids=None, dim=2))
    grid = read_vtu(tmp_path / "te_000003.pvtu", parallel=True)
    assert grid.GetNumberOfCells() == 6 and {grid.GetCellType(e) for e in range(6)} == {70}
    ids = vtk_to_numpy(grid.GetCellData().GetArray("element_id"))
    assert ids.tolist() == [4, 0, 2, 5, 1, 3]
    e_field = vtk_to_numpy(grid.GetPointData().GetArray("E")).reshape(6, -1, 3)
    expected = np.moveaxis(vtk_io.to_vtk_nodes(state[:3], ORDER), 0, -1)[ids]
    assert np.array_equal(e_field, expected)
    assert (tmp_path / "te.pvd").exists()


# ------------------------------------------------------------------------------- Nek5000
def nek_write(path, coords, state, wdsz, element_ids=None):
    nek5000.write_field_file(path, coords, dict(zip(NAMES, state)), 0.125, 40, ORDER, velocity=("Ex", "Ey"),
                             scalars=("Ez", "Hx", "Hy", "Hz"), wdsz=wdsz, element_ids=element_ids)


@pytest.mark.parametrize("wdsz", [8, 4])
def test_nek5000_2d_file_reads_in_pymech_and_ours(maxwell, tmp_path, wdsz):
    pymech = pytest.importorskip("pymech")
    _, coords, state = maxwell
    real = np.float64 if wdsz == 8 else np.float32
    order = np.array([3, 0, 5, 1, 4, 2])  # the rank's elements out of global order
    path = tmp_path / "te0.f00001"
    nek_write(path, coords[:, order], state[:, order], wdsz, element_ids=order + 1)
    raw = path.read_bytes()
    n, num = ORDER + 1, coords.shape[1]
    assert raw[:132].split()[:7] == [b"#std", str(wdsz).encode(), b"5", b"5", b"1", b"6", b"6"]
    assert raw[:132].split()[11] == b"XUS04"
    assert len(raw) == 136 + 4 * num + num * (2 + 2 + 4) * n * n * wdsz  # no min/max metadata, as Nek5000's 2-D
    ours = nek5000.read_field_file(path, velocity=("Ex", "Ey"), scalars=("Ez", "Hx", "Hy", "Hz"))
    assert ours["coords"].shape == (2, num, 1, n, n) and np.array_equal(ours["coords"], coords[:2].astype(real))
    assert sorted(ours["fields"]) == sorted(NAMES)
    assert all(np.array_equal(ours["fields"][name], state[c].astype(real)) for c, name in enumerate(NAMES))
    data = pymech.readnek(str(path))
    assert data.ndim == 2 and list(data.var) == [2, 2, 0, 0, 4] and data.nel == num
    pos = np.stack([e.pos for e in data.elem], axis=1)
    vel = np.stack([e.vel for e in data.elem], axis=1)
    scal = np.stack([e.scal for e in data.elem], axis=1)
    assert np.array_equal(pos[:2], coords[:2].astype(real)) and np.all(pos[2] == 0)
    assert np.array_equal(vel[:2], state[:2].astype(real)) and np.array_equal(scal, state[2:].astype(real))


def test_nek5000_2d_float32_file_reads_in_vtk(maxwell, tmp_path):
    """VTK 9.7's vtkNek5000Reader reads 2-D files right in float32 (Nek5000's usual output);
    its float64 path reads 2-D coordinates and velocity with 3-D strides (its bug; docs/output.md)."""
    from vtkmodules.vtkIOParallel import vtkNek5000Reader

    _, coords, state = maxwell
    nek_write(tmp_path / "te0.f00001", coords, state, 4)
    nek5000.write_index(tmp_path / "te.nek5000", "te", 1, 1)
    reader = vtkNek5000Reader()
    reader.SetFileName(str(tmp_path / "te.nek5000"))
    reader.UpdateInformation()
    for a in range(reader.GetNumberOfPointArrays()):
        reader.SetPointArrayStatus(reader.GetPointArrayName(a), 1)
    reader.Update()
    grid = reader.GetOutput()
    n, num = ORDER + 1, coords.shape[1]
    assert grid.GetNumberOfPoints() == num * n * n and grid.GetNumberOfCells() == num * ORDER ** 2
    assert {grid.GetCellType(c) for c in range(grid.GetNumberOfCells())} == {vtk.VTK_QUAD}
    points = vtk_to_numpy(grid.GetPoints().GetData())
    as32 = lambda a: a.astype(np.float32).reshape(len(a), -1).T  # noqa: E731  (components, ...) -> (points, components)
    assert np.array_equal(points[:, :2], as32(coords[:2])) and np.all(points[:, 2] == 0)
    data = grid.GetPointData()
    assert np.array_equal(vtk_to_numpy(data.GetArray("Velocity"))[:, :2], as32(state[:2]))
    for s in range(4):
        assert np.array_equal(vtk_to_numpy(data.GetArray(f"S{s + 1:02d}")), state[2 + s].astype(np.float32).ravel())


def test_nek5000_layout_for_2d(maxwell, tmp_path):
    system, coords, state = maxwell
    layout = nek5000.layout_for_dimension(system.output_layout, 2)
    assert layout == (("Ex", "Ey"), None, ("Ez", "Hx", "Hy", "Hz"))
    assert nek5000.layout_for_dimension(system.output_layout, 3) == system.output_layout
    assert nek5000.layout_for_dimension((("ux", "uy"), "p", ("T",), "T"), 2) == (("ux", "uy"), "p", ("T",), "T")
    velocity, pressure, scalars = layout
    nek5000.write_field_file(tmp_path / "m0.f00001", coords, dict(zip(NAMES, state)), 0.0, 0, ORDER,
                             velocity=velocity, pressure=pressure, scalars=scalars)
    assert nek5000.read_field_file(tmp_path / "m0.f00001")["rdcode"] == "XUS04"


def test_nek5000_2d_velocity_has_two_components(maxwell, tmp_path):
    _, coords, state = maxwell
    with pytest.raises(ValueError, match="velocity must name 2 fields on a 2-D mesh"):
        nek5000.write_field_file(tmp_path / "x0.f00001", coords, dict(zip(NAMES, state)), 0.0, 0, ORDER,
                                 velocity=("Ex", "Ey", "Ez"))
    nek5000.write_field_file(tmp_path / "u0.f00001", coords, list(state[:3]), 0.0, 0, ORDER)  # unnamed: 2 + 1
    assert nek5000.read_field_file(tmp_path / "u0.f00001")["rdcode"] == "XUS01"


# ---------------------------------------------------------------------------------- HDF5
def test_hdf5_2d_snapshot_and_virtual_parts(maxwell, tmp_path):
    h5py = pytest.importorskip("h5py")
    _, coords, state = maxwell
    n = ORDER + 1
    attrs = dict(time=0.5, step=9, order=ORDER, config_toml=CONFIG)
    hdf5.write_snapshot(tmp_path / "one.h5", coords, state, NAMES, **attrs)
    with h5py.File(tmp_path / "one.h5", "r") as f:
        assert f.attrs["dimension"] == 2 and f.attrs["config"] == CONFIG and f.attrs["layout"] == "E,t,s,r"
        assert f["mesh/x"].shape == f["fields/Hz"].shape == (6, 1, n, n) and np.all(f["mesh/z"][...] == 0)
        assert np.array_equal(f["fields/Ey"][...], state[1]) and np.array_equal(f["mesh/y"][...], coords[1])
    assert hdf5.read_snapshot(tmp_path / "one.h5")["dimension"] == 2
    hdf5.write_snapshot(tmp_path / "three.h5", np.zeros((3, 1, n, n, n)), np.zeros((1, 1, n, n, n)), ["p"], **attrs)
    assert hdf5.read_snapshot(tmp_path / "three.h5")["dimension"] == 3  # no attribute in 3-D files
    with h5py.File(tmp_path / "three.h5", "r") as f:
        assert "dimension" not in f.attrs
    # two ranks' parts (uneven: 2 and 4 elements) joined by a virtual snapshot
    owners = [np.array([5, 1]), np.array([0, 2, 3, 4])]
    snapshot = tmp_path / "te_000009.h5"
    for rank, ids in enumerate(owners):
        hdf5_parts.write_snapshot_part(snapshot, rank, coords[:, ids], state[:, ids], NAMES, ids, **attrs)
    hdf5_parts.write_virtual_snapshot(snapshot, [2, 4], ORDER, NAMES, np.float64,
                                      {"time": 0.5, "step": 9, "order": ORDER, "config": CONFIG,
                                       "field_names": list(NAMES)})
    with h5py.File(snapshot, "r") as f:
        ids = f["mesh/element_ids"][...]
        assert ids.tolist() == [5, 1, 0, 2, 3, 4] and f.attrs["dimension"] == 2
        assert f["fields/Ex"].shape == (6, 1, n, n)
        assert all(np.array_equal(f[f"fields/{name}"][...], state[c, ids]) for c, name in enumerate(NAMES))
        assert np.array_equal(f["mesh/x"][...], coords[0, ids])


# ---------------------------------------------------------------------------- checkpoints
def checkpoint_of(path, state, mesh: dict, order=ORDER, compression="none", history=None):
    """A checkpoint as runner.restart.save writes it: arrays element first."""
    arrays = {"state": np.moveaxis(state, 1, 0)}
    if history is not None:
        arrays["history/k0"] = np.moveaxis(history, 1, 0)
    ids = np.arange(state.shape[1])
    attrs = {"step": 12, "time": 0.3, "dt": 0.025, "order": order, "num_global_elements": state.shape[1],
             "mesh": mesh, "field_names": list(NAMES)}
    return Checkpoint(write_checkpoint(path, arrays, ids, attrs, compression))


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_checkpoint_keeps_the_thin_state_bit_for_bit(maxwell, tmp_path, compression):
    _, _, state = maxwell
    rng = np.random.default_rng(34)
    noisy = state + rng.standard_normal(state.shape)  # every bit pattern, not only smooth ones
    history = rng.standard_normal(state.shape)
    checkpoint = checkpoint_of(tmp_path / "ck", noisy, {"elements": [3, 2]}, compression=compression,
                               history=history)
    assert checkpoint.array_shape("state") == (6, 1, ORDER + 1, ORDER + 1) and state_dimension(checkpoint) == 2
    ids = np.array([4, 0, 5, 2])
    back = checkpoint.read(ids)
    assert back["state"].dtype == np.float64
    assert np.array_equal(back["state"], np.moveaxis(noisy[:, ids], 1, 0))
    assert np.array_equal(back["history/k0"], np.moveaxis(history[:, ids], 1, 0))


def test_restart_across_dimensions_is_refused_naming_both(maxwell, tmp_path):
    _, _, state = maxwell
    n = ORDER + 1
    two = checkpoint_of(tmp_path / "two", state, {"elements": [3, 2]})
    three = checkpoint_of(tmp_path / "three", np.zeros((6, 2, n, n, n)), {"elements": [2, 1, 1]})
    assert state_dimension(three) == 3
    with pytest.raises(InputError) as refused:
        check_dimension("case3d.toml", 3, {"elements": [3, 2, 1]}, two)
    text = str(refused.value)
    assert text.startswith("case3d.toml: cannot restart from ") and str(two.path) in text
    assert "a 2-D state" in text and '{"elements": [3, 2]}' in text and "3-D" in text and "[3, 2, 1]" in text
    with pytest.raises(InputError, match=r"holds a 3-D state .* the case's mesh is 2-D"):
        check_dimension("case2d.toml", 2, {"elements": [3, 2]}, three)
    check_dimension("case2d.toml", 2, {"elements": [3, 2]}, two)  # the same dimension: no error
    check_dimension("case3d.toml", 3, {"elements": [2, 1, 1]}, three)


def polynomial(x, y):
    """Degree 3 in x and in y: held exactly by elements of order 3 on an affine mesh."""
    return 1.0 + x ** 3 * y - 2 * x * y ** 3 + x ** 2 * y ** 2 + 0.5 * y


def test_2d_restart_onto_another_order_and_mesh_is_exact_for_the_old_polynomials(tmp_path):
    old_mesh = box_mesh((3, 2), lower=(0.0, 0.0), upper=(1.5, 1.0))  # affine: fields of x, y are of r, s
    old = compute_geometry(old_mesh, 3)
    x, y, _ = old.coords
    state = np.stack([polynomial(x, y) * (c + 1) for c in range(len(NAMES))])
    checkpoint = checkpoint_of(tmp_path / "ck", state, {"elements": [3, 2]}, order=3)
    # the same mesh at order 6: along i and j only
    new = compute_geometry(old_mesh, 6)
    out = onto_order(checkpoint, np.array([5, 0, 3]), 3, 6)
    expected = np.stack([polynomial(*new.coords[:2]) * (c + 1) for c in range(len(NAMES))])
    assert out["state"].shape == (3, 6, 1, 7, 7)
    assert np.abs(out["state"] - np.moveaxis(expected[:, [5, 0, 3]], 1, 0)).max() < 1e-13
    # another (curved) 2-D mesh at order 5, its points located in the old quads
    new_mesh = box_mesh((4, 3), lower=(0.0, 0.0), upper=(1.5, 1.0), deform=deform_xy)
    new = compute_geometry(new_mesh, 5)
    out, snapped = onto_points(checkpoint, old.coords, np.asarray(old_mesh.element_ids), 3, new.coords)
    expected = np.stack([polynomial(*new.coords[:2]) * (c + 1) for c in range(len(NAMES))])
    assert out["state"].shape == (12, 6, 1, 6, 6)
    assert np.abs(out["state"] - np.moveaxis(expected, 1, 0)).max() < 1e-12
    assert snapped == 0
    # a mesh beyond the old one's domain is refused, naming the checkpoint
    far = compute_geometry(box_mesh((2, 2), lower=(0.0, 0.0), upper=(3.0, 1.0)), 3)
    with pytest.raises(InputError, match=f"cannot interpolate from {checkpoint.path}: .* outside the checkpoint"):
        onto_points(checkpoint, old.coords, np.asarray(old_mesh.element_ids), 3, far.coords)


def test_2d_restart_onto_another_mesh_equals_the_extruded_3d_one(tmp_path):
    """Random values on a curved old mesh (no polynomial to be exact for): the 2-D slab
    location and r, s interpolation give what the 3-D path gives on the extruded twin
    (mesh.extrude.extrude_quads: each k plane the 2-D state) at the new points z = 0."""
    from lobatto.mesh.extrude import extrude_quads

    old_mesh = box_mesh((3, 2), lower=(0.0, 0.0), upper=(1.5, 1.0), deform=deform_xy)
    old2, old3 = compute_geometry(old_mesh, 3), compute_geometry(extrude_quads(old_mesh), 3)
    state = np.random.default_rng(5).standard_normal((len(NAMES),) + old2.coords.shape[1:])
    two = checkpoint_of(tmp_path / "two", state, {"elements": [3, 2]}, order=3)
    three = checkpoint_of(tmp_path / "three", np.repeat(state, 4, axis=2), {"elements": [3, 2, 1]}, order=3)
    new = compute_geometry(box_mesh((4, 3), lower=(0.0, 0.0), upper=(1.5, 1.0)), 4).coords
    ids = np.asarray(old_mesh.element_ids)
    out2, snapped2 = onto_points(two, old2.coords, ids, 3, new)
    out3, snapped3 = onto_points(three, old3.coords, ids, 3, new)
    assert out2["state"].shape == out3["state"].shape == (12, 6, 1, 5, 5) and snapped2 == snapped3 == 0
    assert np.abs(out2["state"] - out3["state"]).max() < 1e-12 * np.abs(out3["state"]).max()
