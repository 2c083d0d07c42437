"""Nek5000 files of one rank read by VTK's vtkNek5000Reader and by pymech give what was written.

Random coordinates and fields (float64 and float32 files, the Maxwell layout X U S03 and the
acoustics layout X U P, elements given in a random order) and a curved mesh from lobatto's
own geometry. VTK reads float32 whatever the file holds, so its values are compared with
the written ones rounded to float32; pymech's are compared exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.io import nek5000, nek5000_mpi
from lobatto.mesh import box_mesh, compute_geometry
from nek_readers import read_with_pymech, read_with_vtk

LAYOUTS = {
    "maxwell": {"velocity": ("Ex", "Ey", "Ez"), "scalars": ("Hx", "Hy", "Hz")},
    "acoustics": {"velocity": ("ux", "uy", "uz"), "pressure": "p"},
}


def layout_names(layout: dict) -> list[str]:
    return list(layout["velocity"]) + ([layout["pressure"]] if "pressure" in layout else []) + list(
        layout.get("scalars", ()))


def write_series(directory, coords, fields: dict, times, order, layout, wdsz=8, element_ids=None):
    """One field file per time (the fields scaled by 1, 2, ...) and the index; returns its path."""
    for k, t in enumerate(times):
        nek5000.write_field_file(directory / nek5000.field_file_name("case", k + 1), coords,
                                 {name: v * (k + 1) for name, v in fields.items()}, t, 7 * (k + 1), order,
                                 wdsz=wdsz, element_ids=element_ids, **layout)
    nek5000.write_index(directory / "case.nek5000", "case", 1, len(times))
    return directory / "case.nek5000"


def check_readers(index, coords, fields: dict, times, layout, real):
    """Both readers give, at every time, the coordinates and fields in global element order."""
    f32 = lambda a: np.asarray(a, dtype=real).astype(np.float32)  # noqa: E731  (what VTK shows)
    velocity = np.stack([fields[name] for name in layout["velocity"]])
    singles = ([("Pressure", layout["pressure"])] if "pressure" in layout else []) + [
        (f"S{s + 1:02d}", name) for s, name in enumerate(layout.get("scalars", ()))]
    for k, t in enumerate(times):
        scale = k + 1
        vtk = read_with_vtk(index, t)
        assert vtk["times"] == list(times) and vtk["time"] == t
        assert np.array_equal(vtk["coords"], f32(coords))
        assert np.array_equal(vtk["velocity"], f32(velocity * scale))
        magnitude = np.sqrt((f32(velocity * scale).astype(np.float64) ** 2).sum(axis=0))
        np.testing.assert_allclose(vtk["arrays"]["Velocity Magnitude"], magnitude, rtol=1e-6)
        assert sorted(vtk["arrays"]) == sorted(["Velocity Magnitude"] + [label for label, _ in singles])
        for label, name in singles:
            assert np.array_equal(vtk["arrays"][label], f32(fields[name] * scale)), label

        nek = read_with_pymech(index.parent / nek5000.field_file_name("case", k + 1))
        as_written = lambda a: np.asarray(a, dtype=real).astype(np.float64)  # noqa: E731
        assert nek["time"] == t and nek["step"] == 7 * scale and nek["nel"] == coords.shape[1]
        assert np.array_equal(nek["coords"], as_written(coords))
        assert np.array_equal(nek["velocity"], as_written(velocity * scale))
        if "pressure" in layout:
            assert np.array_equal(nek["pressure"], as_written(fields[layout["pressure"]] * scale))
        if "scalars" in layout:
            assert np.array_equal(nek["scalars"], as_written(np.stack([fields[name] * scale
                                                                       for name in layout["scalars"]])))
        else:
            assert nek["scalars"].size == 0


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("wdsz", [8, 4])
def test_random_data_read_by_vtk_and_pymech(tmp_path, layout, wdsz):
    rng = np.random.default_rng()
    order, nel = int(rng.integers(1, 6)), int(rng.integers(2, 9))
    n = order + 1
    coords = rng.uniform(-3, 3, (3, nel, n, n, n))
    fields = {name: rng.standard_normal((nel, n, n, n)) for name in layout_names(LAYOUTS[layout])}
    perm = rng.permutation(nel)  # array element b is global element perm[b]
    times = tuple(float(f"{t:.13E}") for t in np.sort(rng.uniform(0, 5, 3)))  # the header's 14 digits
    index = write_series(tmp_path, coords, fields, times, order, LAYOUTS[layout], wdsz, element_ids=perm + 1)
    # the file stores (and both readers give) elements in global order: array element inv[g] is element g
    inv = np.argsort(perm)
    real = np.float64 if wdsz == 8 else np.float32
    check_readers(index, coords[:, inv], {k: v[inv] for k, v in fields.items()}, times, LAYOUTS[layout], real)


def test_curved_mesh_read_by_vtk_and_pymech(tmp_path):
    """lobatto's GLL coordinates of a deformed box and fields given by formulas: both readers
    return them, VTK's hexahedra (GLL points joined by the reader) have positive volumes
    adding up to the box's, and the fields read match the formulas at the coordinates read."""
    order = 4
    bend = 0.12

    def deform(x, y, z):  # zero on the box's boundary: the volume stays 2 * 1 * 1
        s = np.sin(np.pi * x / 2) * np.sin(np.pi * y) * np.sin(np.pi * z)
        return bend * s, -bend * s, 0.5 * bend * s

    mesh = box_mesh((3, 2, 2), upper=(2.0, 1.0, 1.0), deform=deform)
    coords = compute_geometry(mesh, order).coords
    x, y, z = coords
    assert np.abs(coords - compute_geometry(box_mesh((3, 2, 2), upper=(2.0, 1.0, 1.0)), order).coords).max() > 0.05
    formulas = {"ux": lambda x, y, z: np.sin(x) * y, "uy": lambda x, y, z: z - x * y,
                "uz": lambda x, y, z: np.exp(-x * x), "p": lambda x, y, z: x + 2 * y + 3 * z}
    fields = {name: f(x, y, z) for name, f in formulas.items()}
    index = write_series(tmp_path, coords, fields, (0.0, 1.5), order, LAYOUTS["acoustics"],
                         element_ids=mesh.element_ids + 1)
    check_readers(index, coords, fields, (0.0, 1.5), LAYOUTS["acoustics"], np.float64)

    nek = read_with_pymech(tmp_path / nek5000.field_file_name("case", 1))
    np.testing.assert_array_equal(nek["pressure"], formulas["p"](*nek["coords"]))
    vtk = read_with_vtk(index, 0.0)
    np.testing.assert_allclose(vtk["arrays"]["Pressure"], formulas["p"](*vtk["coords"].astype(np.float64)),
                               rtol=0, atol=1e-5)

    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkFiltersVerdict import vtkCellSizeFilter

    sizes = vtkCellSizeFilter()
    sizes.SetInputData(vtk["grid"])
    sizes.Update()
    volumes = vtk_to_numpy(sizes.GetOutput().GetCellData().GetArray("Volume"))
    assert volumes.size == mesh.num_elements * order**3 and volumes.min() > 0
    assert abs(volumes.sum() - 2.0) < 2e-3  # straight-edged cells under a curved map: O(h^2) off


def test_serial_file_must_hold_every_element(tmp_path):
    rng = np.random.default_rng()
    coords, fields = rng.standard_normal((3, 3, 2, 2, 2)), rng.standard_normal((3, 3, 2, 2, 2))
    with pytest.raises(ValueError, match="1..3"):
        nek5000.write_field_file(tmp_path / "c0.f00001", coords, fields, 0.0, 0, 1, element_ids=[1, 2, 4])
    with pytest.raises(ValueError, match="repeat"):
        nek5000.write_field_file(tmp_path / "c0.f00001", coords, fields, 0.0, 0, 1, element_ids=[1, 2, 2])
    assert list(tmp_path.iterdir()) == []


def test_element_runs_cover_the_elements_in_ranges():
    rng = np.random.default_rng()
    ids = np.sort(rng.choice(200, size=90, replace=False))
    for element_bytes, cap in ((24, None), (1000, 3)):
        if cap is not None:
            element_bytes = nek5000_mpi._MAX_RUN_BYTES // cap
        offsets, lengths = nek5000_mpi.element_runs(ids, 136, element_bytes)
        assert (lengths > 0).all() and (lengths <= nek5000_mpi._MAX_RUN_BYTES).all()
        assert (offsets[1:] >= offsets[:-1] + lengths[:-1]).all()  # ascending, no overlap (an MPI file view)
        covered = np.concatenate([np.arange(o, o + n, element_bytes) for o, n in zip(offsets, lengths)])
        assert np.array_equal(covered, 136 + ids * element_bytes)
        if cap is not None:
            assert lengths.max() == cap * element_bytes
