"""VTK output of `mpiexec -n P lobatto run`, P = 2, 3: VTK's parallel reader opens each
snapshot's .pvtu as one dataset with the same cells, points and values as the 1-rank .vtu,
and the .pvd lists every snapshot with its time."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run

vtk = pytest.importorskip("vtk")
from vtk.util.numpy_support import vtk_to_numpy  # noqa: E402

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

ORDER = 4
ELEMENTS = 18
# curved, non-periodic along x: every rank of 2 or 3 holds several elements
CASE = """
[mesh]
elements = [3, 3, 2]
periodic = [false, true, false]
[mesh.deform]
x = "0.04*sin(pi*x)*sin(pi*y)*sin(pi*z)"
z = "0.03*cos(pi*x)*sin(2*pi*y)"
[discretization]
order = 4
[initial]
Ez = "sin(pi*x)*cos(2*pi*y)"
Hx = "exp(-10*((x-0.5)**2 + (z-0.5)**2))"
[time]
t_end = 0.3
[output]
every = 3
formats = ["vtk"]
"""


def run_vtk(directory, nprocs):
    """(summary, pvd entries [(time, file)]) of the case on nprocs ranks."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "case.toml").write_text(CASE)
    result = run(nprocs, ["-m", "lobatto", "run", str(directory / "case.toml"), "--output", str(directory / "out"),
                          "--quiet"])
    assert result.returncode == 0, describe(result)
    summary = json.loads((directory / "out" / "summary.json").read_text())
    root = ET.parse(directory / "out" / "case.pvd").getroot()
    return summary, [(float(d.get("timestep")), d.get("file")) for d in root.iter("DataSet")]


def read(path):
    """(grid, {element id: (points (n**3, 3), E (n**3, 3), H (n**3, 3))}, ranks per cell)."""
    reader = vtk.vtkXMLPUnstructuredGridReader() if path.suffix == ".pvtu" else vtk.vtkXMLUnstructuredGridReader()
    reader.SetFileName(str(path))
    reader.Update()
    grid = reader.GetOutput()
    points = vtk_to_numpy(grid.GetPoints().GetData())
    e_field = vtk_to_numpy(grid.GetPointData().GetArray("E"))
    h_field = vtk_to_numpy(grid.GetPointData().GetArray("H"))
    ids = vtk_to_numpy(grid.GetCellData().GetArray("element_id"))
    cells = {}
    for c in range(grid.GetNumberOfCells()):
        cell = grid.GetCell(c)
        assert grid.GetCellType(c) == 72 and cell.GetOrder(0) == ORDER
        take = [cell.GetPointId(v) for v in range(cell.GetNumberOfPoints())]
        cells[int(ids[c])] = (points[take], e_field[take], h_field[take])
    return grid, cells, vtk_to_numpy(grid.GetCellData().GetArray("rank"))


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    directory = tmp_path_factory.mktemp("serial")
    summary, entries = run_vtk(directory, 1)
    return directory / "out", summary, entries


@pytest.mark.parametrize("nprocs", [2, 3])
def test_pvtu_of_several_ranks_is_the_serial_dataset(serial, nprocs, tmp_path):
    serial_out, serial_summary, serial_entries = serial
    summary, entries = run_vtk(tmp_path, nprocs)
    out = tmp_path / "out"
    assert summary["ranks"] == nprocs and len(entries) == len(summary["outputs"]) >= 3
    # the .pvd lists every snapshot's .pvtu with the summary's time
    assert entries == [(o["time"], f"case_{o['step']:06d}.pvtu") for o in summary["outputs"]]
    assert [o["files"] for o in summary["outputs"]] == [[name] for _, name in entries]
    assert serial_entries == [(t, name.replace(".pvtu", ".vtu")) for t, name in entries]
    for step in (o["step"] for o in summary["outputs"]):
        assert sorted(p.name for p in out.glob(f"case_{step:06d}_p*.vtu")) == \
            sorted(f"case_{step:06d}_p{r}.vtu" for r in range(nprocs))
    assert not [p.name for p in out.iterdir() if ".tmp-" in p.name]

    for (t, name), (_, serial_name) in zip(entries, serial_entries):
        grid, cells, ranks = read(out / name)
        _, serial_cells, _ = read(serial_out / serial_name)
        assert grid.GetNumberOfCells() == ELEMENTS and sorted(cells) == list(range(ELEMENTS))
        assert sorted(set(ranks.tolist())) == list(range(nprocs))
        assert grid.GetFieldData().GetArray("TimeValue").GetValue(0) == t
        assert "[mesh.deform]" in grid.GetFieldData().GetAbstractArray("config").GetValue(0)
        scale = max(np.abs(c[1]).max() for c in serial_cells.values())
        for element, (points, e_field, h_field) in cells.items():
            serial_points, serial_e, serial_h = serial_cells[element]
            assert np.abs(points - serial_points).max() <= 1e-14
            assert np.abs(e_field - serial_e).max() <= 1e-13 * scale
            assert np.abs(h_field - serial_h).max() <= 1e-13 * scale
    assert scale > 0.5  # real fields, not zeros
