"""2-D case files: [mesh] with two entries, what the runner refuses on a 2-D mesh (a system
that does not run in 2-D, fields and keys that do not exist there, outputs not built yet),
and the memory model's points per element n**dim."""

from __future__ import annotations

import dataclasses
import math

import pytest

import lobatto.api as api
from lobatto.backends import get_backend
from lobatto.errors import InputError
from lobatto.machine.memory_items import RunLayout
from lobatto.machine.resources import estimate_run_memory
from lobatto.mesh import box_mesh
from lobatto.runner.build import build_system
from lobatto.runner.dimension import check_dimension
from lobatto.systems.acoustics.system import AcousticsSystem


def case_dict(**mesh):
    return {"mesh": {"elements": [3, 2], **mesh}, "discretization": {"order": 3},
            "physics": {"equations": "acoustics"}, "initial": {"p": "sin(pi*x)*cos(pi*y)"},
            "time": {"t_end": 0.1, "dt": 0.01}, "output": {"formats": []}}


def refused(data, *parts, build=False):
    with pytest.raises(InputError) as info:
        case = api.case_from_dict(data, name="c2")
        if build:
            build_system(case, get_backend("cpu"))
    message = str(info.value)
    assert "\n" not in message
    for part in parts:
        assert part in message, message
    return message


def test_a_two_entry_box_reads_as_2d_with_four_sides():
    case = api.case_from_dict(case_dict(lower=[0, -1], upper=[2, 1], periodic=[True, False], boundary="wall",
                                        boundaries={"ymax": "absorbing"}))
    m = case.mesh
    assert (m.elements, m.lower, m.upper, m.periodic) == ((3, 2), (0.0, -1.0), (2.0, 1.0), (True, False))
    assert m.dim == 2 and m.num_elements == 6
    assert m.boundaries == {"xmin": "periodic", "xmax": "periodic", "ymin": "wall", "ymax": "absorbing"}
    again = api.case_from_dict(api.schema.tomllib.loads(case.to_toml()))  # the effective configuration reads back
    assert again.mesh == m
    defaults = api.case_from_dict(case_dict()).mesh
    assert (defaults.lower, defaults.upper, defaults.periodic) == ((0.0, 0.0), (1.0, 1.0), (False, False))
    assert api.case_from_dict({**case_dict(), "mesh": {"elements": [3, 2, 1]}}).mesh.dim == 3


@pytest.mark.parametrize("key, value", [("lower", [0, 0, 0]), ("upper", [1, 1, 1]), ("periodic", [True, False, False])])
def test_lengths_must_agree_with_elements(key, value):
    refused(case_dict(**{key: value}), f"[mesh] {key} has 3 entries but elements = [3, 2] has 2")
    data = case_dict(**{key: value[:2]})
    data["mesh"]["elements"] = [3, 2, 2]
    refused(data, f"[mesh] {key} has 2 entries but elements = [3, 2, 2] has 3")


def test_bad_entries_are_refused_by_kind():
    refused({**case_dict(), "mesh": {"elements": [3]}}, "[mesh] elements must be a list of 2 or 3 positive integers")
    refused({**case_dict(), "mesh": {"elements": [3, 2, 2, 2]}}, "list of 2 or 3 positive integers")
    refused(case_dict(lower=[0, "a"]), "[mesh] lower must be a list of 2 finite numbers")
    refused(case_dict(periodic=[1, 0]), "[mesh] periodic must be a list of 2 booleans")
    refused(case_dict(lower=[0, 2], upper=[1, 1]), "[mesh] upper must be greater than lower", "(y axis)")


def test_z_keys_of_a_2d_box_are_refused():
    refused(case_dict(deform={"x": "0.1*y", "z": "0.1*x"}), "[mesh.deform] z: a 2-D box", "remove it")
    refused(case_dict(boundaries={"zmax": "wall"}), "[mesh.boundaries] zmax: a 2-D box", "xmin, xmax, ymin, ymax only")


def test_a_system_without_2d_is_refused_at_build(monkeypatch):
    three_d_only = dataclasses.replace(AcousticsSystem.spec, dimensions=(3,), fields_2d=None)
    monkeypatch.setattr(AcousticsSystem, "spec", three_d_only)
    message = refused(case_dict(), "<c2>: [mesh] elements = [3, 2] is a 2-D mesh", '"acoustics"', "2-D",
                      "elements = [3, 2, 1] with periodic z", build=True)
    assert "runs in 3-D" in message


def test_the_spec_declares_its_2d_fields():
    spec = AcousticsSystem.spec
    assert spec.dimensions == (2, 3) and spec.fields_in(2) == ("p", "ux", "uy") and spec.fields_in(3) == spec.fields
    with pytest.raises(ValueError, match="fields_2d"):
        dataclasses.replace(spec, fields_2d=None)
    with pytest.raises(ValueError, match="must be names of fields"):
        dataclasses.replace(spec, fields_2d=("p", "vx"))
    with pytest.raises(ValueError, match="dimensions"):
        dataclasses.replace(spec, dimensions=(1,))


@pytest.mark.parametrize("section", ["initial", "exact"])
def test_a_field_that_does_not_exist_in_2d_is_refused(section):
    data = case_dict()
    data[section] = {"p": "x", "uz": "y"}
    refused(data, f"<c2>: [{section}] uz: acoustics on a 2-D mesh has the fields p, ux, uy only", build=True)


@pytest.mark.parametrize("extra, parts", [
    ({"output": {"formats": [], "dft": {"frequencies": [1.0], "planes": ["z = 0"], "fields": ["p"]}}},
     ("[output.dft] planes: \"z = 0\": the mesh is 2-D",)),
    ({"output": {"formats": [], "probes": {"points": [[0.5, 0.5]], "fields": ["p", "uz"]}}},
     ("[output.probes] fields: uz does not exist in 2-D",)),
])
def test_what_2d_does_not_build_yet_is_refused(extra, parts):
    refused({**case_dict(), **extra}, "<c2>: ", *parts, build=True)


def test_a_2d_probe_point_on_a_3d_mesh_is_refused():
    data = {**case_dict(), "mesh": {"elements": [3, 2, 1]}, "output": {"formats": [], "probes": {"points": [[0.5, 0.5]]}}}
    refused(data, "<c2>: [output.probes] points[0] = [0.5, 0.5]: the mesh is 3-D", build=True)


def test_a_file_mesh_z_deformation_is_refused_once_the_mesh_is_2d():
    # a file mesh's dimension is known once read: the schema takes z, the runner refuses it
    case = api.case_from_dict({**case_dict(), "mesh": {"elements": [3, 2, 1], "deform": {"z": "0.1*x"}}})
    with pytest.raises(InputError, match=r"\[mesh.deform\] z: the mesh is 2-D"):
        check_dimension(case, AcousticsSystem.spec, 2, whole=box_mesh((3, 2)))
    check_dimension(case, AcousticsSystem.spec, 3)  # 3-D: nothing to refuse


def test_the_2d_run_builds_thin_arrays_and_integrals_are_allowed():
    data = {**case_dict(), "output": {"formats": [], "integrals": {"volume": ["energy"]}}}
    system = build_system(api.case_from_dict(data), get_backend("cpu"))
    assert system.mesh.dim == 2 and system.field_names == ("p", "ux", "uy")
    assert system.allocate_state().shape == (3, 6, 1, 4, 4) and system.points == 6 * 16


def test_memory_model_counts_n_to_the_dim_points():
    three = estimate_run_memory(100, 5, 4, 2)
    assert three == estimate_run_memory(100, 5, 4, 2, dim=3)  # 3-D unchanged
    two = estimate_run_memory(100, 5, 3, 2, dim=2)
    assert three["points_per_rank"] == 100 * 6**3 and two["points_per_rank"] == 100 * 6**2
    assert two["host_bytes"] < three["host_bytes"]
    assert RunLayout(elements=10, total_elements=10, order=4, fields=3, dim=2).points == 10 * 25
    assert RunLayout(elements=10, total_elements=10, order=4, fields=3).points == 10 * 125
    with pytest.raises(ValueError, match="dim"):
        estimate_run_memory(1, 1, 1, 1, dim=1)
    assert math.isclose(two["points_per_rank"] / three["points_per_rank"], 1 / 6)


def test_boundary_tables_of_a_2d_box_name_its_four_sides():
    data = {"mesh": {"elements": [3, 2], "periodic": [True, False]}, "physics": {"equations": "poisson"},
            "boundary": {"zmin": {"value": "0"}}}
    refused(data, "[boundary.zmin]: 'zmin' is not one of the sides of the 2-D box", "xmin, xmax, ymin, ymax")
    data["boundary"] = {"xmin": {"value": "0"}}
    refused(data, "[boundary.xmin]: the x axis is periodic")
    data["boundary"] = {"ymax": {"value": "x"}}
    assert set(api.case_from_dict(data).tables["boundary"]) == {"ymax"}


def test_a_2d_run_writes_every_format_probes_and_checkpoints_that_restart_exactly(tmp_path, capsys):
    """The whole 2-D route through `lobatto run`: Nek5000 (read by pymech), HDF5 (h5py, the
    dimension attribute) and VTK (Lagrange quadrilaterals) snapshots, probes at [x, y] points
    against the exact mode, and a restart from a 2-D checkpoint equal to the straight run bit
    for bit; a 3-D checkpoint is refused for the 2-D case (exit 2, one line)."""
    import h5py
    import numpy as np
    import pymech
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    from lobatto.cli import main

    omega = math.pi * math.sqrt(5.0)
    data = {"mesh": {"elements": [4, 3], "boundary": "wall", "deform": {"x": "0.05*sin(pi*x)*sin(pi*y)"}},
            "discretization": {"order": 6}, "physics": {"equations": "acoustics"},
            "initial": {"p": "cos(2*pi*x)*cos(pi*y)"}, "time": {"t_end": 0.2, "dt": 0.008},
            "output": {"formats": ["nek", "hdf5", "vtk"], "every": 10,
                       "probes": {"points": [[0.3, 0.4], [0.9, 0.1, 5.0]], "fields": ["p"], "every": 20}},
            "checkpoint": {"every": 10, "at_end": False}}
    (tmp_path / "a.toml").write_text(api.case_from_dict(data, name="a").to_toml())
    assert main(["run", str(tmp_path / "a.toml"), "-o", str(tmp_path / "one"), "-q"]) == 0
    one = tmp_path / "one"
    nek = pymech.readnek(str(one / "a0.f00002"))
    assert nek.ndim == 2 and nek.nel == 12 and tuple(nek.lr1) == (7, 7, 1)
    with h5py.File(one / "a_000020.h5") as f:
        assert f.attrs["dimension"] == 2 and f["fields/p"].shape == (12, 1, 7, 7)
        p_h5 = f["fields/p"][()]
    p_nek = np.array([e.pres[0, 0] for e in nek.elem])  # (E, n, n): the k = 0 plane
    assert np.abs(p_nek - p_h5[:, 0]).max() < 1e-14
    reader = vtk.vtkXMLUnstructuredGridReader()
    reader.SetFileName(str(one / "a_000020.vtu"))
    reader.Update()
    grid = reader.GetOutput()
    assert grid.GetNumberOfCells() == 12 and grid.GetCellType(0) == 70  # VTK_LAGRANGE_QUADRILATERAL
    assert np.isclose(np.abs(vtk_to_numpy(grid.GetPointData().GetArray("p"))).max(), np.abs(p_h5).max(), rtol=1e-14)
    # probes: the exact (2, 1) mode, cos(omega t) in time; the second point's z is ignored
    with h5py.File(one / "a_probes.h5") as f:
        names = list(f.keys())
    rows = np.loadtxt(one / "a_probes.csv", delimiter=",", skiprows=1)
    t = rows[-1, 1]
    exact = [math.cos(2 * math.pi * x) * math.cos(math.pi * y) * math.cos(omega * t) for x, y in ((0.3, 0.4), (0.9, 0.1))]
    assert names and np.abs(rows[-1, 2:] - exact).max() < 1e-5
    # the restart from the step-10 checkpoint ends where the straight run does, bit for bit
    checkpoint = one / "checkpoints" / "a_000010"
    assert main(["run", str(tmp_path / "a.toml"), "-o", str(tmp_path / "two"), "-q", "--restart", str(checkpoint)]) == 0
    with h5py.File(tmp_path / "two" / "a_000020.h5") as f:
        assert np.array_equal(f["fields/p"][()], p_h5)
    # a 3-D checkpoint (the same plane extruded one layer) is refused for the 2-D case
    three = {**data, "mesh": {**data["mesh"], "elements": [4, 3, 1], "periodic": [False, False, True]},
             "output": {"formats": []}}
    (tmp_path / "b.toml").write_text(api.case_from_dict(three, name="b").to_toml())
    assert main(["run", str(tmp_path / "b.toml"), "-o", str(tmp_path / "three"), "-q"]) == 0
    capsys.readouterr()
    code = main(["run", str(tmp_path / "a.toml"), "-o", str(tmp_path / "four"), "-q", "--restart",
                 str(tmp_path / "three" / "checkpoints" / "b_000010")])
    err = capsys.readouterr().err
    assert code == 2 and "holds a 3-D state" in err and "Traceback" not in err and err.count("\n") == 1
