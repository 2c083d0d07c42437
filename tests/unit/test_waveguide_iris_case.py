"""The iris two-port's mesh and case (examples/meshes/waveguide_iris.py, .msh;
examples/waveguide_iris.toml): the committed mesh is the generator's, lobatto's gmsh reader
finds the groups, the diaphragm's faces are PEC boundary faces, and a plain Maxwell run of the
case (its [port.*] and [ports] tables left out) with [output.dft] planes at the ports' planes is
accepted and stable. The S-parameter run itself is benchmarks/waveguide_iris.py."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.mesh.geometry import element_coordinates
from lobatto.mesh.readers import mesh_from_file
from lobatto.mesh.topology import face_slice

ROOT = Path(__file__).resolve().parents[2]
MESH = ROOT / "examples" / "meshes" / "waveguide_iris.msh"
CASE = ROOT / "examples" / "waveguide_iris.toml"
pytest.importorskip("gmsh")


def centroids(mesh):
    return mesh.vertices[mesh.element_vertices].mean(axis=1)


def test_committed_mesh_is_the_generators(tmp_path):
    spec = importlib.util.spec_from_file_location("waveguide_iris_mesh", ROOT / "examples" / "meshes" / "waveguide_iris.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.build(tmp_path / "iris.msh") == 284
    ours, committed = (mesh_from_file("gmsh", p, 1) for p in (tmp_path / "iris.msh", MESH))
    a, b = centroids(ours), centroids(committed)
    assert np.allclose(a[np.lexsort(a.T)], b[np.lexsort(b.T)], atol=1e-12)


def test_mesh_groups_and_the_diaphragm():
    mesh = mesh_from_file("gmsh", MESH, 1, {}, "pec")
    assert mesh.num_elements == 284 and set(mesh.group_names) == {"zmin", "zmax", "walls", "iris"}
    assert mesh.boundary_names == ("pec",) and np.all(mesh.boundary_kind[mesh.face_neighbour < 0] == 0)
    centre = centroids(mesh)
    # no element inside the diaphragm; the window's elements are there
    inside = (centre[:, 2] > 2.75) & (centre[:, 2] < 2.875)
    assert np.all((centre[inside, 0] > 0.25) & (centre[inside, 0] < 0.75)) and inside.sum() == 4
    iris = mesh.group_names.index("iris")
    elements, faces = np.nonzero(mesh.face_group == iris)
    assert len(elements) == 10 and np.all(mesh.face_neighbour[elements, faces] < 0)
    # each iris face lies on a diaphragm side (z = 2.75, 2.875) or a window edge (x = 0.25, 0.75)
    coords = element_coordinates(mesh, 1)
    sides = 0
    for e, f in zip(elements, faces):
        points = coords[face_slice(f, 1)][:, e].reshape(3, -1)
        on_window = np.ptp(points[0]) == 0 and points[0, 0] in (0.25, 0.75)
        on_side = np.ptp(points[2]) == 0 and points[2, 0] in (2.75, 2.875)
        assert on_window != on_side
        sides += on_side
    assert sides == 8


def test_plain_run_with_planes_at_the_ports(tmp_path):
    data = tomllib.loads(CASE.read_text())
    ports = data.pop("port")
    data.pop("ports")
    planes = sorted({p[k] for p in ports.values() for k in ("plane", "source")})
    assert planes == ["z = 1.25", "z = 1.5", "z = 4.125", "z = 4.375"]
    data["mesh"]["file"] = str(MESH)
    data["discretization"]["order"] = 3
    data["time"] = {"t_end": 0.4}
    # a TE10 pulse on the diaphragm, moving to +z
    pulse = "sin(pi*x)*exp(-((z-2.8)/0.3)**2)"
    data["initial"] = {"Ey": pulse, "Hx": f"-{pulse}"}
    data["output"] = {"formats": [], "name": "iris", "dft": {"frequencies": [0.6, 0.95], "planes": planes}}
    sim = Simulation(case_from_dict(data, name="iris"), backend="cpu", output_dir=str(tmp_path), comm=None)
    assert sim.system.energy(sim.u) > 0
    energy = sim.system.energy(sim.u)
    sim.run()
    assert 0.5 * energy < sim.system.energy(sim.u) <= energy * (1 + 1e-9)
    import h5py

    with h5py.File(tmp_path / "iris_dft.h5", "r") as f:
        assert sorted(f["surfaces"]) == planes
        for name in planes:
            c = f["surfaces"][name]["coordinates"][()]
            assert c.shape[1] == 8 and np.ptp(c[0]) == pytest.approx(1.0) and np.ptp(c[1]) == pytest.approx(0.5)


@pytest.mark.parametrize("kind", ["absorbing", "pmc"])
def test_ports_refuse_a_file_mesh_whose_walls_are_not_pec(tmp_path, kind):
    """The modes of every shape are a PEC guide's: a file mesh's wall of another kind at a port
    plane is refused when the run is set up (a box mesh's sides are checked from the case)."""
    from lobatto.errors import InputError

    data = tomllib.loads(CASE.read_text())
    data["mesh"]["file"] = str(MESH)
    data["mesh"]["boundaries"] = {"walls": kind}
    data["discretization"]["order"] = 1
    for port in data["port"].values():
        port["shape"] = "any"
        port["mode"] = "TE1"
    with pytest.raises(InputError, match=rf"\[port.in\] plane \"z = 1.5\": the guide's wall at element \d+ is {kind}, "
                                         "not pec"):
        Simulation(case_from_dict(data, name="iris"), backend="cpu", output_dir=str(tmp_path), comm=None)
    data["mesh"]["boundaries"] = {"walls": "pec"}
    Simulation(case_from_dict(data, name="iris"), backend="cpu", output_dir=str(tmp_path / "pec"), comm=None).close()


def test_the_surface_example_resolves_to_the_explicit_planes(tmp_path):
    """examples/waveguide_iris_surface.toml: its device-only mesh is the generator's (164
    hexahedra, surfaces port1 and port2 at z = 1.5 and 4.125), its ports resolve to the explicit
    example's reference planes with sources one element (0.125) behind them and 8 + 2 layers
    grown, and a run of the resolved case is set up (order 1; the S run is benchmarks/waveguide_iris.py
    --surface)."""
    from lobatto.api import load_case
    from lobatto.systems.maxwell.port_surface import resolve

    spec = importlib.util.spec_from_file_location("waveguide_iris_mesh", ROOT / "examples" / "meshes" / "waveguide_iris.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.build(tmp_path / "device.msh", device_only=True) == 164
    ours, committed = (mesh_from_file("gmsh", p, 1) for p in (tmp_path / "device.msh",
                                                               ROOT / "examples" / "meshes" / "waveguide_iris_device.msh"))
    a, b = centroids(ours), centroids(committed)
    assert np.allclose(a[np.lexsort(a.T)], b[np.lexsort(b.T)], atol=1e-12)
    assert set(committed.group_names) == {"port1", "port2", "walls", "iris"}
    data, derived = resolve(load_case(ROOT / "examples" / "waveguide_iris_surface.toml"))
    assert [data["port"][p]["plane"] for p in ("in", "out")] == ["z = 1.5", "z = 4.125"]
    assert [data["port"][p]["source"] for p in ("in", "out")] == ["z = 1.375", "z = 4.25"]
    assert derived["in"]["layers"] == 10 and derived["in"]["extension"] == pytest.approx(1.25)
    assert data["pml"] == {"sides": ["zmin", "zmax"], "elements": 8, "reflection": 1e-8}
    data["discretization"]["order"] = 1
    data["ports"]["drive"] = ["in"]
    sim = Simulation(case_from_dict(data, name="iris"), backend="cpu", output_dir=str(tmp_path / "run"), comm=None)
    assert sim.system.mesh.num_elements == 164 + 2 * 10 * 8
    sim.close()
