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
    ({"output": {"formats": ["hdf5"]}}, ('[output] formats: "hdf5" does not write a 2-D mesh', "formats = []")),
    ({"output": {"formats": [], "probes": {"points": [[0.5, 0.5, 0.0]]}}},
     ("[output.probes] is not built on a 2-D mesh yet",)),
    ({"output": {"formats": [], "dft": {"frequencies": [1.0], "regions": ["all"], "fields": ["p"]}}},
     ("[output.dft] is not built on a 2-D mesh yet",)),
    ({"checkpoint": {"every": 2}}, ("[checkpoint] is not built on a 2-D mesh yet",)),
])
def test_what_2d_does_not_build_yet_is_refused(extra, parts):
    refused({**case_dict(), **extra}, "<c2>: ", *parts, build=True)


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
