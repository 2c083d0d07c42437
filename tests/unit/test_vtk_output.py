"""VTK output (io/vtk.py) read back with VTK's own Python readers: Lagrange hexahedra of the
run's order whose interpolant is lobatto's GLL polynomial, arrays, field data, the .pvd."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import numpy as np
import pytest

vtk = pytest.importorskip("vtk")
from vtk.util.numpy_support import vtk_to_numpy  # noqa: E402

from lobatto.discretization.gll import gll_points  # noqa: E402
from lobatto.errors import OutputError  # noqa: E402
from lobatto.io import vtk as vtk_io  # noqa: E402

MAXWELL = ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz")
ACOUSTICS = ("p", "ux", "uy", "uz")
# [k, j, i] indices of the 8 corners in VTK's order (counter-clockwise at k = 0, then k = N)
CORNER_K, CORNER_J, CORNER_I = [0] * 4 + [-1] * 4, [0, 0, -1, -1] * 2, [0, -1, -1, 0] * 2


def read_vtu(path):
    reader = vtk.vtkXMLUnstructuredGridReader()
    reader.SetFileName(str(path))
    reader.Update()
    grid = reader.GetOutput()
    assert grid.GetNumberOfCells() > 0, f"VTK read no cells from {path}"
    return grid


def lagrange_at(nodes: np.ndarray, x: float) -> np.ndarray:
    """Values at x of the Lagrange basis polynomials of `nodes` (the textbook product)."""
    return np.array([np.prod([(x - nodes[m]) / (nodes[j] - nodes[m]) for m in range(len(nodes)) if m != j])
                     for j in range(len(nodes))])


def gll_values_at(values: np.ndarray, order: int, r: float, s: float, t: float) -> np.ndarray:
    """(..., n, n, n) [k, j, i] GLL nodal values -> (...) the polynomial at (r, s, t) in [-1, 1]^3."""
    x = gll_points(order)
    return np.einsum("...kji,i,j,k->...", values, lagrange_at(x, r), lagrange_at(x, s), lagrange_at(x, t))


def cell_weights(cell, order: int) -> np.ndarray:
    """(n**3 GLL points [k, j, i] in C order, cell points): the cell's interpolation weights at
    lobatto's GLL points, VTK's parametric [0, 1] being (r + 1) / 2."""
    r = (gll_points(order) + 1) / 2
    n = order + 1
    weights = np.empty((n ** 3, cell.GetNumberOfPoints()))
    for row, (k, j, i) in enumerate(itertools.product(range(n), repeat=3)):
        w = [0.0] * cell.GetNumberOfPoints()
        cell.InterpolateFunctions([r[i], r[j], r[k]], w)
        weights[row] = w
    return weights


def curved_coords(rng, order: int, elements: int) -> np.ndarray:
    """Random smooth curved elements, shape (3, E, n, n, n), with GLL-nodal coordinates."""
    x = gll_points(order)
    t, s, r = np.meshgrid(x, x, x, indexing="ij")
    coords = np.empty((3, elements, order + 1, order + 1, order + 1))
    for e in range(elements):
        a = rng.uniform(-0.2, 0.2, size=6)
        coords[0, e] = 2 * e + r + a[0] * s * t + a[1] * np.sin(s)
        coords[1, e] = s + a[2] * r ** 2 + a[3] * np.cos(t)
        coords[2, e] = t + a[4] * r * s + a[5] * np.exp(r)
    return coords


# --------------------------------------------------------------------- the node layout
@pytest.mark.parametrize("order", range(1, 9))
def test_point_numbering_is_vtks(order):
    n = order + 1
    numbers = [vtk_io.lagrange_hex_index(i, j, k, order) for k, j, i in itertools.product(range(n), repeat=3)]
    assert sorted(numbers) == list(range(n ** 3))
    for (k, j, i), number in zip(itertools.product(range(n), repeat=3), numbers):
        assert number == vtk.vtkLagrangeHexahedron.PointIndexFromIJK(i, j, k, [order] * 3), (i, j, k)


def test_vector_groups_follow_field_triples():
    assert vtk_io.vector_groups(MAXWELL) == [("E", MAXWELL[:3]), ("H", MAXWELL[3:])]
    assert vtk_io.vector_groups(ACOUSTICS) == [("p", ("p",)), ("u", ACOUSTICS[1:])]
    # no triple (out of order, incomplete, or a name clash with the vector's name)
    assert vtk_io.vector_groups(("ax", "az", "ay")) == [(n, (n,)) for n in ("ax", "az", "ay")]
    assert vtk_io.vector_groups(("x", "y", "z", "bx", "by")) == [(n, (n,)) for n in ("x", "y", "z", "bx", "by")]
    assert vtk_io.vector_groups(("q", "qx", "qy", "qz")) == [(n, (n,)) for n in ("q", "qx", "qy", "qz")]


# --------------------------------------------------------------------- one piece
@pytest.mark.parametrize("names, int64", [(MAXWELL, False), (ACOUSTICS, False), (MAXWELL, True)])
def test_piece_round_trip_on_random_data(names, int64, tmp_path, monkeypatch):
    if int64:  # the connectivity of pieces of 2**31 points or more
        monkeypatch.setattr(vtk_io, "INT32_POINTS", 1)
    rng = np.random.default_rng()
    order, elements = int(rng.integers(1, 7)), int(rng.integers(1, 6))
    n = order + 1
    coords = curved_coords(rng, order, elements)
    fields = rng.standard_normal((len(names), elements, n, n, n))
    ids = rng.permutation(100)[:elements]
    regions = rng.integers(0, 3, size=elements)
    t, step = float(rng.uniform(0, 10)), int(rng.integers(0, 10 ** 6))
    config = '[mesh]\nelements = [1, 2, 3]\n# "quoted" <&> \u00e9\n'
    path = tmp_path / "piece.vtu"
    vtk_io.write_piece(path, coords, fields, names, order, time=t, step=step, config_toml=config,
                       element_ids=ids, rank=5, regions=regions, region_names=("all", "inner", "outer"))
    assert [p.name for p in tmp_path.iterdir()] == ["piece.vtu"]  # no temporary left
    assert (b'type="Int64" Name="connectivity"' in path.read_bytes()) == int64

    grid = read_vtu(path)
    assert grid.GetNumberOfCells() == elements and grid.GetNumberOfPoints() == elements * n ** 3
    assert {grid.GetCellType(e) for e in range(elements)} == {72}
    assert all(grid.GetCell(e).GetOrder(a) == order for e in range(elements) for a in range(3))

    fd = grid.GetFieldData()
    assert fd.GetArray("TimeValue").GetValue(0) == t and fd.GetArray("step").GetValue(0) == step
    assert fd.GetAbstractArray("config").GetValue(0) == config
    region_names = fd.GetAbstractArray("region_names")
    assert [region_names.GetValue(i) for i in range(region_names.GetNumberOfValues())] == ["all", "inner", "outer"]
    cd = grid.GetCellData()
    assert np.array_equal(vtk_to_numpy(cd.GetArray("element_id")), ids)
    assert np.array_equal(vtk_to_numpy(cd.GetArray("region")), regions)
    assert np.array_equal(vtk_to_numpy(cd.GetArray("rank")), np.full(elements, 5))

    groups = vtk_io.vector_groups(names)
    pd = grid.GetPointData()
    assert sorted(pd.GetArrayName(a) for a in range(pd.GetNumberOfArrays())) == sorted(g for g, _ in groups)
    point_values = {}
    for group, parts in groups:
        array = pd.GetArray(group)
        assert array.GetNumberOfComponents() == len(parts)
        if len(parts) == 3:
            assert [array.GetComponentName(c) for c in range(3)] == list(parts)
        values = vtk_to_numpy(array).reshape(elements * n ** 3, -1)
        for c, part in enumerate(parts):
            point_values[part] = values[:, c]
    points = vtk_to_numpy(grid.GetPoints().GetData())
    assert points.dtype == np.float64 and point_values[names[0]].dtype == np.float64

    # Every VTK node (numbered by VTK's own PointIndexFromIJK) holds lobatto's polynomial at
    # the equispaced parametric point; corners are the GLL corners unchanged.
    stack = np.concatenate([coords, fields])
    for e in range(elements):
        cell = grid.GetCell(e)
        for i, j, k in itertools.product(range(n), repeat=3):
            point = cell.GetPointId(vtk.vtkLagrangeHexahedron.PointIndexFromIJK(i, j, k, [order] * 3))
            expected = gll_values_at(stack[:, e], order, *(2 * np.array([i, j, k]) / order - 1))
            got = np.concatenate([points[point], [point_values[name][point] for name in names]])
            assert np.allclose(got, expected, rtol=0, atol=1e-12 * (1 + np.abs(stack).max())), (e, i, j, k)
            if {i, j, k} <= {0, order}:
                assert np.array_equal(points[point], coords[:, e, k, j, i])


def test_vtk_interpolation_is_lobattos_polynomial_on_a_curved_run(tmp_path):
    """The strongest check: VTK's own Lagrange interpolation of the written cell, evaluated at
    lobatto's GLL points, gives lobatto's coordinates and fields there, to round-off."""
    from lobatto.api import case_from_dict
    from lobatto.runner.simulation import Simulation

    order = 5
    case = case_from_dict({
        "mesh": {"elements": [2, 2, 1], "deform": {"x": "0.08*sin(pi*x)*sin(pi*y)*sin(pi*z)",
                                                   "z": "0.05*cos(pi*x)*sin(2*y)"}},
        "discretization": {"order": order},
        "initial": {"Ez": "sin(pi*x)*sin(pi*y)", "Hx": "exp(x)*cos(3*y)*z"},
        "time": {"t_end": 0.05},
        "output": {"formats": ["vtk"]},
    }, name="curved")
    sim = Simulation(case, "cpu", tmp_path, comm=None)
    summary = sim.run()
    (final,) = summary["outputs"][-1]["files"]
    assert final == f"curved_{summary['steps']:06d}.vtu"
    grid = read_vtu(tmp_path / final)
    coords, fields = sim.coordinates(), sim.fields()
    pd = grid.GetPointData()
    values = np.concatenate([vtk_to_numpy(grid.GetPoints().GetData()),
                             vtk_to_numpy(pd.GetArray("E")), vtk_to_numpy(pd.GetArray("H"))], axis=1)
    ids = vtk_to_numpy(grid.GetCellData().GetArray("element_id"))
    assert sorted(ids) == list(range(4))
    weights = cell_weights(grid.GetCell(0), order)  # the same for every cell of this order
    n = order + 1
    for e in range(grid.GetNumberOfCells()):
        cell = grid.GetCell(e)
        at_gll = weights @ values[[cell.GetPointId(v) for v in range(n ** 3)]]
        local = int(np.flatnonzero(sim.system.mesh.element_ids == ids[e])[0])
        expected = np.concatenate([coords[:, local].reshape(3, -1),
                                   np.stack([fields[name][local].reshape(-1) for name in MAXWELL])]).T
        assert np.abs(at_gll[:, :3] - expected[:, :3]).max() < 1e-13 * np.abs(expected[:, :3]).max()
        assert np.abs(at_gll[:, 3:] - expected[:, 3:]).max() < 1e-13 * np.abs(expected[:, 3:]).max()
        # and through the cell's own map: parametric (r + 1)/2 -> the GLL node's coordinates
        r = (gll_points(order) + 1) / 2
        for i, j, k in [(1, 2, 3), (0, 4, 5), (3, 3, 1)]:
            x, w = [0.0] * 3, [0.0] * n ** 3
            cell.EvaluateLocation(vtk.reference(0), [r[i], r[j], r[k]], x, w)
            assert np.allclose(x, coords[:, local, k, j, i], rtol=0, atol=1e-14)
    assert np.abs(fields["Ez"]).max() > 0.5  # a real field, not zeros


def test_old_file_version_would_renumber_the_edges(tmp_path):
    """Why the files say version 2.2: VTK renumbers a Lagrange hexahedron's edges along k in
    older files, which would scramble order >= 2 cells."""
    rng = np.random.default_rng()
    order, n = 2, 3
    coords = curved_coords(rng, order, 1)
    path = tmp_path / "one.vtu"
    vtk_io.write_piece(path, coords, rng.standard_normal((1, 1, n, n, n)), ("p",), order, time=0.0, step=0,
                       config_toml="")
    ours = vtk_to_numpy(read_vtu(path).GetPoints().GetData())
    data = path.read_bytes()
    path.write_bytes(data.replace(b'version="2.2"', b'version="1.0"', 1))
    cell = read_vtu(path).GetCell(0)
    assert [cell.GetPointId(v) for v in range(n ** 3)] != list(range(n ** 3))
    assert np.array_equal(ours[:8], coords[:, 0][:, CORNER_K, CORNER_J,
                                                  CORNER_I].T)


def test_failed_write_names_the_file(tmp_path):
    rng = np.random.default_rng()
    path = tmp_path / "missing" / "piece.vtu"
    with pytest.raises(OutputError, match=f"^{path}: cannot write"):
        vtk_io.write_piece(path, curved_coords(rng, 1, 1), rng.standard_normal((1, 1, 2, 2, 2)), ("p",), 1,
                           time=0.0, step=0, config_toml="")
    with pytest.raises(ValueError, match="coords must have shape"):
        vtk_io.write_piece(tmp_path / "x.vtu", np.zeros((3, 1, 2, 2, 2)), np.zeros((1, 1, 2, 2, 2)), ("p",), 2,
                           time=0.0, step=0, config_toml="")


# --------------------------------------------------------------------- the time series
def test_pvd_lists_every_snapshot_with_its_time(tmp_path):
    from lobatto.api import case_from_dict
    from lobatto.runner.simulation import run_case

    case = case_from_dict({
        "mesh": {"elements": [2, 1, 1]},
        "discretization": {"order": 2},
        "physics": {"equations": "acoustics"},
        "initial": {"p": "sin(pi*x)"},
        "time": {"t_end": 1.0},
        "output": {"every": 3, "formats": ["vtk", "hdf5"]},
    }, name="series")
    summary = run_case(case, "cpu", tmp_path, comm=None)
    assert len(summary["outputs"]) >= 3
    collection = ET.parse(tmp_path / "series.pvd").getroot()
    assert collection.get("type") == "Collection"
    listed = [(float(d.get("timestep")), d.get("file")) for d in collection.iter("DataSet")]
    assert listed == [(o["time"], f"series_{o['step']:06d}.vtu") for o in summary["outputs"]]
    assert all(o["files"] == [f"series_{o['step']:06d}.h5", f"series_{o['step']:06d}.vtu"]
               for o in summary["outputs"])
    from lobatto.io.hdf5 import read_snapshot

    for (t, name), output in zip(listed, summary["outputs"]):
        grid = read_vtu(tmp_path / name)
        assert grid.GetFieldData().GetArray("TimeValue").GetValue(0) == t
        assert grid.GetFieldData().GetArray("step").GetValue(0) == output["step"]
        assert "[physics]" in grid.GetFieldData().GetAbstractArray("config").GetValue(0)
        # the corner values of each cell are the HDF5 snapshot's, bit for bit
        h5 = read_snapshot(tmp_path / output["files"][0])
        p = vtk_to_numpy(grid.GetPointData().GetArray("p")).reshape(2, -1)[:, :8]
        assert np.array_equal(p, h5["fields"]["p"][:, CORNER_K, CORNER_J,
                                                   CORNER_I])
    assert not [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_output_dir_knows_the_vtk_files(tmp_path):
    from lobatto.io.output_dir import (MAX_OUTPUT_NAME_LENGTH, NAME_MAX, find_outputs, longest_output_file_name,
                                       prepare_output_dir)

    series = vtk_io.VtkSeries(tmp_path, "q" * MAX_OUTPUT_NAME_LENGTH, rank=999999, size=10 ** 6)
    assert len(series.piece_name(9999999999, 999999) + ".tmp-9999999") <= NAME_MAX
    assert len(longest_output_file_name("q" * MAX_OUTPUT_NAME_LENGTH)) == NAME_MAX
    mine = ["cav.pvd", "cav_000010.vtu", "cav_000010.pvtu", "cav_000010_p0.vtu", "cav_0000100_p12.vtu"]
    others = ["cav2.pvd", "cav_10.vtu", "cav_000010_p.vtu", "cav_000010.vtk", "other_000010.vtu"]
    for name in mine + others:
        (tmp_path / name).write_text("x")
    (tmp_path / "cav_000020.vtu.tmp-123").write_text("x")
    assert sorted(p.name for p in find_outputs(tmp_path, "cav")) == sorted(mine)
    report = prepare_output_dir(tmp_path, "cav", overwrite=True)
    assert report["removed_temporaries"] == ["cav_000020.vtu.tmp-123"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(others)


def test_series_without_regions_and_a_step_written_again(tmp_path):
    """A mesh without regions (getattr) writes no region arrays; the .pvtu names the pieces;
    rewriting a step replaces its .pvd entry instead of listing it twice."""
    from types import SimpleNamespace

    rng = np.random.default_rng()
    mesh = SimpleNamespace(element_ids=np.array([3, 1]))
    coords, fields = curved_coords(rng, 2, 2), rng.standard_normal((4, 2, 3, 3, 3))
    pieces = [vtk_io.VtkSeries(tmp_path, "run", rank=r, size=2) for r in range(2)]
    for step, t in ((4, 0.5), (8, 1.0), (8, 1.25)):
        for series in pieces:
            series.write_piece(step, t, coords, fields, ACOUSTICS, 2, mesh, "x = 1\n")
        pieces[0].write_index(step, t, ACOUSTICS, mesh)
    listed = [(float(d.get("timestep")), d.get("file")) for d in ET.parse(tmp_path / "run.pvd").iter("DataSet")]
    assert listed == [(0.5, "run_000004.pvtu"), (1.25, "run_000008.pvtu")]
    reader = vtk.vtkXMLPUnstructuredGridReader()
    reader.SetFileName(str(tmp_path / "run_000008.pvtu"))
    reader.Update()
    grid = reader.GetOutput()
    assert grid.GetNumberOfCells() == 4 and grid.GetCellData().GetArray("region") is None
    assert grid.GetFieldData().GetAbstractArray("region_names") is None
    assert vtk_to_numpy(grid.GetCellData().GetArray("element_id")).tolist() == [3, 1, 3, 1]
    assert vtk_to_numpy(grid.GetCellData().GetArray("rank")).tolist() == [0, 0, 1, 1]
    assert grid.GetFieldData().GetArray("TimeValue").GetValue(0) == 1.25
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "run.pvd", "run_000004.pvtu", "run_000004_p0.vtu", "run_000004_p1.vtu",
        "run_000008.pvtu", "run_000008_p0.vtu", "run_000008_p1.vtu"]
