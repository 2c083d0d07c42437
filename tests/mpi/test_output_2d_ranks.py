"""2-D outputs written on 1, 2 and 3 ranks (uneven partitions, each rank's elements scattered
and unordered: output_2d_ranks.py) equal what the serial writers write: the Nek5000 files byte
for byte (float64 and float32), the HDF5 virtual snapshot read by h5py and the VTK pieces
joined by the .pvtu read by VTK, element by element in global order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import output_2d_ranks as job
from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """The serial writers' files, written in this process (no MPI)."""
    out = tmp_path_factory.mktemp("serial-2d")
    job.main(out)
    return out


def vtk_cells(out: Path, name: str):
    """(element ids, {array: (E, points, components)}, cell types) of a .vtu or .pvtu, cells in global order."""
    vtk = pytest.importorskip("vtk")
    from vtk.util.numpy_support import vtk_to_numpy

    reader = vtk.vtkXMLPUnstructuredGridReader() if name.endswith(".pvtu") else vtk.vtkXMLUnstructuredGridReader()
    reader.SetFileName(str(out / name))
    reader.Update()
    grid = reader.GetOutput()
    cells = grid.GetNumberOfCells()
    ids = vtk_to_numpy(grid.GetCellData().GetArray("element_id"))
    order = np.argsort(ids)
    arrays = {"Points": vtk_to_numpy(grid.GetPoints().GetData())}
    data = grid.GetPointData()
    arrays.update({data.GetArrayName(a): vtk_to_numpy(data.GetArray(a)) for a in range(data.GetNumberOfArrays())})
    arrays = {key: value.reshape(cells, -1, value.shape[-1] if value.ndim == 2 else 1)[order]
              for key, value in arrays.items()}
    return ids[order], arrays, {grid.GetCellType(c) for c in range(cells)}


@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_2d_outputs_on_ranks_equal_the_serial_ones(serial, tmp_path, nprocs):
    h5py = pytest.importorskip("h5py")
    result = run(nprocs, [str(HERE / "output_2d_ranks.py"), str(tmp_path)], timeout=120)
    assert result.returncode == 0, describe(result)
    coords, fields = job.global_data()
    n = job.ORDER + 1
    # Nek5000: one file for all ranks, the serial writer's bytes
    for wdsz in (8, 4):
        name = f"te{wdsz}_0.f00001"
        assert (tmp_path / name).read_bytes() == (serial / name).read_bytes(), f"{nprocs} ranks: {name}"
        assert (tmp_path / name).read_bytes()[:132].split()[2:5] == [b"4", b"4", b"1"]
    # HDF5: the (virtual) snapshot holds every element once, (E, 1, n, n), dimension 2
    with h5py.File(tmp_path / f"te_{job.STEP:06d}.h5", "r") as f:
        ids = f["mesh/element_ids"][...] if nprocs > 1 else np.arange(coords.shape[1])
        assert sorted(ids.tolist()) == list(range(12)) and f.attrs["dimension"] == 2
        for c, name in enumerate(job.NAMES):
            assert f[f"fields/{name}"].shape == (12, 1, n, n)
            assert np.array_equal(f[f"fields/{name}"][...], fields[c, ids])
        assert np.array_equal(np.stack([f[f"mesh/{a}"][...] for a in "xyz"]), coords[:, ids])
    # VTK: the pieces joined by the .pvtu read as the serial .vtu, cell by cell
    dataset = f"te_{job.STEP:06d}.{'vtu' if nprocs == 1 else 'pvtu'}"
    ids, arrays, types = vtk_cells(tmp_path, dataset)
    ids1, arrays1, types1 = vtk_cells(serial, f"te_{job.STEP:06d}.vtu")
    assert types == types1 == {70} and ids.tolist() == ids1.tolist() == list(range(12))
    assert arrays.keys() == arrays1.keys() == {"Points", "E", "H"}
    for key in arrays:
        assert np.array_equal(arrays[key], arrays1[key]), f"{nprocs} ranks: VTK {key}"
    assert (tmp_path / "te.pvd").exists()
