"""Ports on named boundary surfaces (systems/maxwell/port_surface.py) and the extrusion behind them
(mesh/extrude.py): the grown elements against a longer box and an O-grid's translated curved
nodes, their connectivity, boundary groups and volume; the S-matrix of a device-only mesh with
``surface`` ports equal to that of the long mesh with explicit planes, source planes and [pml]
(a box, and gmsh files); a circular guide's TE11 two-port through curved extensions; the errors."""

from __future__ import annotations

import copy
import sys
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np
import pytest

import lobatto
from lobatto.api import case_from_dict
from lobatto.errors import InputError
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.extrude import extrude_surface, surface_plane
from lobatto.mesh.readers import mesh_from_file
from lobatto.mesh.topology import FACE_CORNERS, face_slice

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cylwave import cylinder_rea  # noqa: E402

#: a 1 x 0.5 guide along z, TE10 over 0.6 - 1.4 (a wide band: a short pulse), port "in" driven;
#: the long mesh (z = -2 .. 3, elements 0.5 deep) with explicit planes and [pml], as the
#: device-only mesh z = 0 .. 1 with surface ports grows it (2 PML layers and 2 more behind each)
EXPLICIT = {
    "mesh": {"elements": [2, 1, 10], "lower": [0.0, 0.0, -2.0], "upper": [1.0, 0.5, 3.0], "boundary": "pec"},
    "discretization": {"order": 2},
    "physics": {"equations": "maxwell"},
    "time": {"t_end": 8.0},  # past the pulse (t0 + 3 widths = 7.2); the S are rough, but the same
    "pml": {"sides": ["zmin", "zmax"], "elements": 2, "reflection": 1e-8},
    "port": {"in": {"plane": "z = 0", "source": "z = -0.5", "direction": "+", "mode": "TE10"},
             "out": {"plane": "z = 1", "source": "z = 1.5", "direction": "-", "mode": "TE10"}},
    "ports": {"fmin": 0.6, "fmax": 1.4, "count": 3, "drive": ["in"]},
    "output": {"formats": [], "name": "guide"},
}
SURFACE = {**copy.deepcopy(EXPLICIT),
           "mesh": {"elements": [2, 1, 2], "lower": [0.0, 0.0, 0.0], "upper": [1.0, 0.5, 1.0], "boundary": "pec"},
           "port": {"in": {"surface": "zmin", "mode": "TE10"}, "out": {"surface": "zmax", "mode": "TE10"}},
           "ports": {"fmin": 0.6, "fmax": 1.4, "count": 3, "drive": ["in"], "pml_elements": 2}}
del SURFACE["pml"]


def s_matrix(directory) -> np.ndarray:
    with h5py.File(Path(directory) / "guide_sparams.h5", "r") as h5:
        return h5["S"][()]


# ---------------------------------------------------------------------------------- extrusion
def test_box_extrusion_is_the_longer_box():
    mesh = box_mesh((2, 3, 2), (0.0, 0.0, 0.0), (1.0, 0.5, 2.0), boundary="pec")
    out, plane = extrude_surface(mesh, "zmin", 3)
    assert (plane.axis, plane.coordinate, plane.outward, plane.depth) == (2, 0.0, -1.0, 1.0)
    out.check()
    long = box_mesh((2, 3, 5), (0.0, 0.0, -3.0), (1.0, 0.5, 2.0), boundary="pec")

    def centres(m):
        c = compute_geometry(m, 2).coords.reshape(3, m.num_elements, -1).mean(axis=-1).T
        return c[np.lexsort(c.T)]

    assert np.abs(centres(out) - centres(long)).max() < 1e-14
    geometry = compute_geometry(out, 2)
    assert geometry.jacobian.min() > 0 and geometry.mass.sum() == pytest.approx(1.0 * 0.5 * 5.0, rel=1e-13)
    # the old surface's faces are interior now, facing the first layer's elements
    first = np.arange(mesh.num_elements, mesh.num_elements + len(plane.elements))
    assert np.array_equal(out.face_neighbour[plane.elements, plane.faces], first)
    assert np.all(out.face_neighbour[first, 4] == plane.elements)
    # every boundary face of the grown elements lies on the side its group names (xmin..zmax)
    x = compute_geometry(out, 1).coords
    for e in range(mesh.num_elements, out.num_elements):
        for f in range(6):
            if out.face_neighbour[e, f] >= 0:
                assert out.face_group[e, f] == -1
                continue
            name = out.group_names[out.face_group[e, f]]
            axis = "xyz".index(name[0])
            value = (0.0, 0.0, -3.0)[axis] if name.endswith("min") else (1.0, 0.5, 2.0)[axis]
            assert np.allclose(x[axis][e][face_slice(f, 1)[1:]], value, atol=1e-14), (e, f, name)
            assert out.boundary_names[out.boundary_kind[e, f]] == "pec"


def _disc_mesh(tmp_path, ends=("I", "O"), order=3):
    path = tmp_path / "cyl.rea"
    cylinder_rea(path, m=1, layers=2, length=1.0, ends=ends)
    return mesh_from_file("nek", path, order, {"PEC": "pec"}), path


def test_curved_extrusion_translates_the_surface_nodes(tmp_path):
    mesh, _ = _disc_mesh(tmp_path)
    out, plane = extrude_surface(mesh, "O", 2, 0.3)
    out.check()
    q = mesh.geometry_order
    for k, (e, f) in enumerate(zip(plane.elements, plane.faces)):
        face = mesh.curved_nodes[e][face_slice(int(f), q)]  # (3, a, b) on z = 1
        for layer in range(2):
            new = out.curved_nodes[mesh.num_elements + layer * len(plane.elements) + k]  # (3, k, j, i)
            for level, shift in ((0, 0.3 * layer), (q, 0.3 * (layer + 1))):
                got = new[:, level].reshape(3, -1).T
                want = (face + np.array([0, 0, shift])[:, None, None]).reshape(3, -1).T
                got, want = got[np.lexsort(got.T)], want[np.lexsort(want.T)]
                assert np.array_equal(got, want)  # exactly the surface's points, translated
            assert np.array_equal(new[:2, 0], new[:2, q])  # x, y the same at every level
    # the volume: the disc's (as the geometry order resolves it) times the grown length
    geometry, old = compute_geometry(out, 3), compute_geometry(mesh, 3)
    assert geometry.jacobian.min() > 0
    assert geometry.mass.sum() == pytest.approx(old.mass.sum() * 1.6, rel=1e-12)
    # the side faces continue the wall: pec on the curved rim, interior inside the O-grid
    grown = slice(mesh.num_elements, out.num_elements)
    walls = out.boundary_kind[grown, :4][out.face_neighbour[grown, :4] < 0]
    assert walls.size == 2 * 4 and set(walls.tolist()) == {out.boundary_names.index("pec")}
    assert set(out.face_group[grown, 5][out.face_neighbour[grown, 5] < 0].tolist()) == {out.group_names.index("O")}


def test_surface_plane_errors(tmp_path):
    mesh, _ = _disc_mesh(tmp_path, ends="O")
    with pytest.raises(InputError, match=r"\"O\" is not a plane normal to x, y or z"):  # both ends
        surface_plane(mesh, "O")
    # a slit: the faces on either side of z = 0.5, cut apart and named one surface
    box = box_mesh((1, 1, 2), boundary="pec")
    cut = (np.array([0, 1]), np.array([5, 4]))
    neighbour, kind, group = box.face_neighbour.copy(), box.boundary_kind.copy(), box.face_group.copy()
    neighbour[cut], kind[cut], group[cut] = -1, 0, len(box.group_names)
    slit = replace(box, face_neighbour=neighbour, boundary_kind=kind, face_group=group,
                   group_names=box.group_names + ("slit",))
    with pytest.raises(InputError, match=r"faces of both outward normals, \+z and -z"):
        surface_plane(slit, "slit")
    with pytest.raises(InputError, match=r"no boundary surface named \"port9\" in the mesh \(its surfaces: O, PEC\)"):
        surface_plane(mesh, "port9")
    with pytest.raises(InputError, match=r"\"PEC\" is not a plane normal to x, y or z"):
        surface_plane(mesh, "PEC")
    box = box_mesh((2, 2, 2), boundary="pec")
    tilted = replace(box, vertices=box.vertices + np.outer(box.vertices[:, 0], [0, 0, 0.1]))
    with pytest.raises(InputError, match=r"\"zmax\" is not a plane normal"):
        surface_plane(tilted, "zmax")  # zmax tilts along x; xmax stays flat
    assert surface_plane(tilted, "xmax").axis == 0


# ------------------------------------------------------------------------------ equivalence
@pytest.fixture(scope="module")
def explicit_s(tmp_path_factory):
    """S of the long box with explicit ports (a gmsh file of the same elements gives it too)."""
    out = tmp_path_factory.mktemp("explicit")
    lobatto.run(copy.deepcopy(EXPLICIT), output_dir=out)
    return s_matrix(out)


def test_box_surface_ports_equal_explicit_ports(tmp_path, explicit_s):
    surface = lobatto.run(copy.deepcopy(SURFACE), output_dir=tmp_path / "surface")
    a, b = explicit_s, s_matrix(tmp_path / "surface")
    assert np.all(np.isfinite(a[:, :, 0])) and np.abs(a[:, :, 0] - b[:, :, 0]).max() < 1e-10
    derived = surface.summary["ports"]["surfaces"]
    assert derived["in"] == {"surface": "zmin", "plane": "z = 0.0", "source": "z = -0.5", "direction": "+",
                             "pml_side": "zmin", "element_depth": 0.5, "layers": 4, "pml_layers": 2,
                             "extension": 2.0}
    assert derived["out"]["source"] == "z = 1.5" and derived["out"]["direction"] == "-"
    from lobatto.io.summary import format_summary_table

    assert "surface zmin: source z = -0.5, 4 layers of 0.5 grown (2 [pml] zmin)" in format_summary_table(surface.summary)
    # the effective configuration is the explicit one: planes, sources, [pml] and the longer box
    with h5py.File(tmp_path / "surface" / "guide_sparams.h5", "r") as h5:
        config = h5.attrs["config"]
    assert 'source = "z = -0.5"' in config and "surface" not in config and "reflection = 1e-08" in config
    assert "elements = [2, 1, 10]" in config and "lower = [0.0, 0.0, -2.0]" in config


gmsh = None


def guide_msh(path, z0: float, z1: float, hz: float, names=("port1", "port2")):
    """A 1 x 0.5 guide from z0 to z1 (2 x 1 elements across, hz along), surfaces names[0] at z0,
    names[1] at z1 and "walls"; hexahedra, first order."""
    global gmsh
    gmsh = pytest.importorskip("gmsh")
    gmsh.initialize()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("guide")
        occ = gmsh.model.occ
        box = occ.addBox(0.0, 0.0, z0, 1.0, 0.5, z1 - z0)
        occ.synchronize()
        for _, curve in gmsh.model.getEntities(1):
            x0, _, c0, x1, _, c1 = gmsh.model.getBoundingBox(1, curve)
            count = 2 if x1 - x0 > 1e-6 else round((c1 - c0) / hz) if c1 - c0 > 1e-6 else 1
            gmsh.model.mesh.setTransfiniteCurve(curve, count + 1)
        groups = {names[0]: [], names[1]: [], "walls": []}
        for _, surface in gmsh.model.getEntities(2):
            gmsh.model.mesh.setTransfiniteSurface(surface)
            gmsh.model.mesh.setRecombine(2, surface)
            _, _, c0, _, _, c1 = gmsh.model.getBoundingBox(2, surface)
            key = names[0] if c1 - c0 < 1e-6 and abs(c0 - z0) < 1e-6 else (
                names[1] if c1 - c0 < 1e-6 and abs(c0 - z1) < 1e-6 else "walls")
            groups[key].append(surface)
        gmsh.model.mesh.setTransfiniteVolume(box)
        for name, surfaces in groups.items():
            gmsh.model.addPhysicalGroup(2, surfaces, name=name)
        gmsh.model.addPhysicalGroup(3, [box], name="guide")
        gmsh.model.mesh.generate(3)
        gmsh.write(str(path))
    finally:
        gmsh.finalize()
    return path


def test_gmsh_surface_ports_equal_explicit_ports(tmp_path, explicit_s):
    """The device-only gmsh file with surface ports against the long box (the same elements as a
    long gmsh file: its S equal to 1e-10 too, checked when this was written)."""
    short = guide_msh(tmp_path / "short.msh", 0.0, 1.0, 0.5)
    surface = {**copy.deepcopy(SURFACE), "mesh": {"generator": "gmsh", "file": str(short), "boundary": "pec"},
               "port": {"in": {"surface": "port1", "mode": "TE10"}, "out": {"surface": "port2", "mode": "TE10"}}}
    result = lobatto.run(surface, output_dir=tmp_path / "surface")
    a, b = explicit_s, s_matrix(tmp_path / "surface")
    assert np.all(np.isfinite(a[:, :, 0])) and np.abs(a[:, :, 0] - b[:, :, 0]).max() < 1e-10
    with h5py.File(tmp_path / "surface" / "guide_sparams.h5", "r") as h5:
        config = h5.attrs["config"]
    assert 'extrude = [{surface = "port1", layers = 4, thickness = 0.5}' in config
    assert result.summary["ports"]["surfaces"]["out"]["plane"] == "z = 1.0"


def test_gmsh_surface_errors(tmp_path):
    short = guide_msh(tmp_path / "short.msh", 0.0, 1.0, 0.5)
    base = {**copy.deepcopy(SURFACE), "mesh": {"generator": "gmsh", "file": str(short), "boundary": "pec"},
            "port": {"in": {"surface": "port1", "mode": "TE10"}, "out": {"surface": "port2", "mode": "TE10"}}}
    for change, message in (
            ({"in": {"surface": "port3", "mode": "TE10"}}, r"\[port.in\] surface: no boundary surface named "
                                                           r"\"port3\" in the mesh \(its surfaces: port1, port2, walls\)"),
            ({"in": {"surface": "walls", "mode": "TE10"}}, r"\[port.in\] surface: the surface \"walls\" is not a plane"),
            ({"out": {"surface": "port1", "mode": "TE10"}}, r"\[port.out\] surface = \"port1\" lies on side zmin, as "
                                                            r"\[port.in\]"),
            ({"deform": {"x": "0.01 * z"}}, r"\[port.in\] surface cannot go with \[mesh.deform\]")):
        data = copy.deepcopy(base)
        if "deform" in change:
            data["mesh"]["deform"] = change["deform"]
        else:
            data["port"].update(change)
        with pytest.raises(InputError, match=message):
            lobatto.run(data, output_dir=tmp_path / "x")


# ----------------------------------------------------------------------------------- errors
SURFACE_ERRORS = [
    ({"port": {"in": {"surface": "zmin", "plane": "z = 0", "mode": "TE10"}}},
     r"\[port.in\] surface goes without plane"),
    ({"port": {"in": {"surface": "zmin", "source": "z = 0", "direction": "+", "mode": "TE10"}}},
     r"\[port.in\] surface goes without source, direction"),
    ({"port": {"in": {"surface": 3, "mode": "TE10"}}}, r"\[port.in\] surface must be a boundary surface's name"),
    ({"port": {"in": {"mode": "TE10"}}}, r"\[port.in\] needs surface .* or plane and direction"),
    ({"ports": {"fmin": 0.6, "fmax": 1.4, "count": 3, "pml_elements": 0}}, r"\[ports\] pml_elements"),
]


@pytest.mark.parametrize("changes, message", SURFACE_ERRORS)
def test_parse_errors(changes, message):
    data = copy.deepcopy(SURFACE)
    data.update(changes)
    with pytest.raises(InputError, match=message):
        case_from_dict(data)


SETUP_ERRORS = [
    ({"port": {"in": {"surface": "top", "mode": "TE10"}}}, r"surface = \"top\" is no surface of the box \(its "
                                                            r"surfaces: xmin, xmax"),
    ({"pml": {"sides": ["zmin"], "elements": 2}}, r"\[ports\] pml_elements is the layer grown"),
    ({"pml": {"sides": ["zmin", "xmax"], "elements": 2}, "ports": {"fmin": 0.6, "fmax": 1.4, "count": 3}},
     r"\[pml\] sides includes \"zmin\", where \[port.in\] surface = \"zmin\" grows its own layer"),
    ({"pml": {"sides": ["xmax"], "thickness": 0.3}, "ports": {"fmin": 0.6, "fmax": 1.4, "count": 3}},
     r"\[pml\] thickness = 0.3 is not a whole number of the elements \(0.5 deep\)"),
    ({"pml": {"sides": ["xmax"], "thickness": 60.0}, "ports": {"fmin": 0.6, "fmax": 1.4, "count": 3}},
     r"\[pml\] thickness = 60 makes 120 PML layers of the elements behind \[port.in\] surface = \"zmin\" \(0.5 deep\); "
     r"surface ports grow at most 98"),
    ({"output": {"formats": [], "name": "guide", "integrals": {"every": 10, "surface": ["poynting_flux"],
                                                               "surfaces": ["zmax"]}}},
     r"\[output.integrals\] surfaces names \"zmax\", the surface of \[port.out\]"),
    ({"mesh": {**SURFACE["mesh"], "periodic": [False, False, True]}}, r"the z axis is periodic"),
    ({"mesh": {**SURFACE["mesh"], "deform": {"x": "0.01 * z"}}}, r"surface cannot go with \[mesh.deform\]"),
]


@pytest.mark.parametrize("changes, message", SETUP_ERRORS)
def test_setup_errors(tmp_path, changes, message):
    data = copy.deepcopy(SURFACE)
    data.update(changes)
    with pytest.raises(InputError, match=message):
        lobatto.run(data, output_dir=tmp_path)


def test_a_single_simulation_refuses_surface_ports(tmp_path):
    from lobatto.runner.simulation import Simulation

    with pytest.raises(InputError, match=r"surface = \"zmin\" is resolved by the port runs"):
        Simulation(case_from_dict(copy.deepcopy(SURFACE)), backend="cpu", output_dir=tmp_path, comm=None)


def cylinder_surface_case(tmp_path) -> dict:
    """The O-grid cylinder of tests/cylwave.py (radius 1, 0.5 long, geometry order 3) written to
    tmp_path, with TE11 ports on its end surfaces "I" and "O" (also the GPU test's case)."""
    path = tmp_path / "cyl.rea"
    cylinder_rea(path, m=1, layers=1, length=0.5, ends=("I", "O"))
    return {"mesh": {"generator": "nek", "file": str(path), "boundary": "pec", "boundaries": {"PEC": "pec"}},
            "discretization": {"order": 3}, "physics": {"equations": "maxwell"}, "time": {"t_end": 14.0},
            "port": {"a": {"surface": "I", "shape": "circle", "mode": "TE11"},
                     "b": {"surface": "O", "shape": "circle", "mode": "TE11"}},
            "ports": {"fmin": 0.5, "fmax": 1.0, "count": 3, "pml_elements": 2},
            "output": {"formats": [], "name": "guide"}}


def test_circular_guide_te11_through_curved_extensions(tmp_path):
    """The O-grid cylinder (radius 1, 0.5 long, geometry order 3) with TE11 ports on its two end
    surfaces, both driven: the extensions (2 PML layers + 2, curved rims translated) give a
    passive, reciprocal two-port at N = 3 (an empty guide: |S21| near 1). Loose tolerances: a
    coarse O-grid, short run; TE21 and TM01 propagate in the band (warned), so a little power
    converted by the discrete rim shows as loss at the top."""
    result = lobatto.run(cylinder_surface_case(tmp_path), output_dir=tmp_path / "out")
    s = s_matrix(tmp_path / "out")
    power = np.abs(s[:, 0, 0]) ** 2 + np.abs(s[:, 1, 0]) ** 2  # measured 0.995, 0.994, 0.964
    assert np.all(power < 1.005) and np.all(power > 0.95)
    assert np.abs(s[:, 1, 0] - s[:, 0, 1]).max() < 3e-3  # measured 1.1e-3
    assert np.abs(s[:, 1, 0]).min() > 0.95
    assert result.summary["ports"]["surfaces"]["b"]["extension"] == pytest.approx(2.0)


def test_lobatto_run_refuses_with_exit_2(tmp_path):
    """The command line: exit 2, one line naming the file, table and key, no traceback."""
    import os
    import subprocess

    from lobatto.config.toml_text import to_toml

    data = copy.deepcopy(SURFACE)
    data["port"]["in"]["surface"] = "top"
    path = tmp_path / "case.toml"
    path.write_text(to_toml(data))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-m", "lobatto", "run", str(path), "-o", str(tmp_path / "out"), "-q"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "[port.in] surface = \"top\" is no surface of the box" in lines[0]


def test_a_recessed_surface_is_refused(tmp_path):
    """A step: the guide 0 <= z <= 1 with a side block 0 <= z <= 0.5 beside it; the block's top
    "step" (z = 0.5, outward +z) is no end of the mesh (z reaches 1), so the [pml] lining the
    bounding box could not hold its layer."""
    gmsh = pytest.importorskip("gmsh")
    path = tmp_path / "step.msh"
    gmsh.initialize()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        occ = gmsh.model.occ
        boxes = [occ.addBox(0, 0, 0, 1, 0.5, 0.5), occ.addBox(0, 0, 0.5, 1, 0.5, 0.5), occ.addBox(1, 0, 0, 0.5, 0.5, 0.5)]
        occ.fragment([(3, b) for b in boxes], [])
        occ.synchronize()
        for _, curve in gmsh.model.getEntities(1):
            gmsh.model.mesh.setTransfiniteCurve(curve, 2)
        step, walls = [], []
        for _, surface in gmsh.model.getEntities(2):
            gmsh.model.mesh.setTransfiniteSurface(surface)
            gmsh.model.mesh.setRecombine(2, surface)
            up, _ = gmsh.model.getAdjacencies(2, surface)
            x0, _, z0, x1, _, z1 = gmsh.model.getBoundingBox(2, surface)
            if len(up) == 1:
                (step if z1 - z0 < 1e-6 and abs(z0 - 0.5) < 1e-6 and x0 > 1 - 1e-6 else walls).append(surface)
        for volume in gmsh.model.getEntities(3):
            gmsh.model.mesh.setTransfiniteVolume(volume[1])
        gmsh.model.addPhysicalGroup(2, step, name="step")
        gmsh.model.addPhysicalGroup(2, walls, name="walls")
        gmsh.model.addPhysicalGroup(3, [v for _, v in gmsh.model.getEntities(3)], name="guide")
        gmsh.model.mesh.generate(3)
        gmsh.write(str(path))
    finally:
        gmsh.finalize()
    data = {**copy.deepcopy(SURFACE), "mesh": {"generator": "gmsh", "file": str(path), "boundary": "pec"},
            "port": {"in": {"surface": "step", "mode": "TE10"}}}
    with pytest.raises(InputError, match=r"\[port.in\] surface = \"step\" at z = 0.5 is not the mesh's zmax end"):
        lobatto.run(data, output_dir=tmp_path / "out")


def test_a_pml_table_of_the_case_is_followed():
    """With a [pml] on other sides, the grown layers take its elements and reflection, and its
    sides gain the ports' (the case is only rewritten here: no run)."""
    from lobatto.systems.maxwell.port_surface import resolve

    data = copy.deepcopy(SURFACE)
    data["ports"].pop("pml_elements")
    data["pml"] = {"sides": ["xmin", "xmax"], "elements": 3, "reflection": 1e-6}
    resolved, derived = resolve(case_from_dict(data))
    assert resolved["pml"]["sides"] == ["xmin", "xmax", "zmin", "zmax"] and resolved["pml"]["elements"] == 3
    assert resolved["pml"]["reflection"] == 1e-6 and derived["in"]["layers"] == 5
    assert resolved["mesh"]["elements"] == [2, 1, 12] and resolved["mesh"]["upper"][2] == 3.5
    assert resolved["port"]["out"] == {"plane": "z = 1.0", "source": "z = 1.5", "direction": "-",
                                       "shape": "rectangle", "mode": "TE10"}
    data["pml"] = {"sides": ["xmin"], "thickness": 1.0}  # two elements of 0.5 behind the surfaces
    assert resolve(case_from_dict(data))[1]["in"]["pml_layers"] == 2


@pytest.mark.parametrize("extrude, message", [
    ("zmin", r"\[mesh\] extrude must be a list of tables"),
    ([{"surface": "port1", "layers": 0, "thickness": 0.5}], r"layers = 0"),
    ([{"surface": "port1", "layers": 2}], r"exactly surface, layers and thickness"),
    ([{"surface": "port1", "layers": 2, "thickness": -1.0}], r"thickness = -1"),
])
def test_mesh_extrude_parse_errors(tmp_path, extrude, message):
    path = tmp_path / "m.msh"
    path.write_text("")  # parsed, not read
    data = {**copy.deepcopy(EXPLICIT), "mesh": {"generator": "gmsh", "file": str(path), "extrude": extrude}}
    with pytest.raises(InputError, match=message):
        case_from_dict(data)
    with pytest.raises(InputError, match=r"\[mesh\] extrude grows layers on a mesh file's surfaces"):
        case_from_dict({**copy.deepcopy(EXPLICIT), "mesh": {**EXPLICIT["mesh"], "extrude": extrude}})


def test_a_surface_beside_a_periodic_pair_is_refused_and_grown_elements_are_named():
    """A periodic x axis: the grown side faces would need periodic links of their own (without
    them they were closed walls of the surface's kind, in no group), so the surface is refused.
    Messages name a grown element as grown, not by a number the file does not have."""
    periodic = box_mesh((2, 1, 2), (0.0, 0.0, 0.0), (1.0, 0.5, 1.0), periodic=(True, False, False), boundary="pec")
    with pytest.raises(InputError, match=r"case: the surface \"zmin\" borders a periodic side \(element 0 .*face 0 "
                                         r"is joined periodically\)"):
        extrude_surface(periodic, "zmin", 2, where="case")
    out, _ = extrude_surface(box_mesh((2, 1, 2), boundary="pec"), "zmax", 1)
    assert "box index 1,0,1" in out.describe_element(3) and "grown behind a surface" in out.describe_element(4)
    numbered = replace(box_mesh((1, 1, 2), boundary="pec"), element_labels=None, source="guide.msh",
                       element_numbers=np.array([7, 9]))
    out, _ = extrude_surface(numbered, "zmin", 1)
    assert list(out.element_numbers) == [7, 9, -1]
    assert "(number 9 in guide.msh)" in out.describe_element(1)
    assert "(grown behind a surface: not in guide.msh)" in out.describe_element(2)


def test_a_surface_curved_out_of_its_plane_is_refused():
    """Corners on the plane z = 1 but a geometry node of the face bulging out of it."""
    box = box_mesh((1, 1, 1), boundary="pec")
    nodes = np.ascontiguousarray(np.moveaxis(compute_geometry(box, 2).coords, 1, 0))  # (E, 3, 3, 3, 3) [k, j, i]
    flat = replace(box, element_labels=None, curved_nodes=nodes.copy())
    assert surface_plane(flat, "zmax").coordinate == pytest.approx(1.0)
    nodes[0, 2, 2, 1, 1] += 0.05  # z of the zmax face's middle node
    with pytest.raises(InputError, match=r"where: the surface \"zmax\" is curved: its geometry nodes leave the plane "
                                         r"z = 1"):
        surface_plane(replace(flat, curved_nodes=nodes), "zmax", "where")


def test_extrusion_of_faces_of_mixed_local_numbering():
    """A box whose second element is numbered with its axes turned (r, s, t) -> (t, r, s), so
    the surface zmin is local face 4 of one element and face 0 of the other (as in a file whose
    elements come in any orientation): the grown elements are right-handed, the longer box's,
    and every interior face's points agree from both sides under the stored orientation."""
    from lobatto.mesh.connectivity import connectivity_from_vertices
    from lobatto.mesh.mesh import INTERIOR
    from lobatto.mesh.topology import reorient

    box = box_mesh((2, 1, 1), (0.0, 0.0, 0.0), (1.0, 0.5, 0.5), boundary="pec")
    ev = box.element_vertices.copy()
    ev[1] = [box.element_vertices[1][q + 2 * l + 4 * p] for l in (0, 1) for q in (0, 1) for p in (0, 1)]
    neighbour, neighbour_face, orientation = connectivity_from_vertices(ev)
    group = np.full((2, 6), -1)
    for e in range(2):
        for f in range(6):
            if neighbour[e, f] < 0:
                centre = box.vertices[ev[e][list(FACE_CORNERS[f])]].mean(axis=0)
                side = next(2 * a + (centre[a] > 0.2) for a in range(3)
                            if np.isclose(centre[a], (0.0, 0.0, 0.0)[a]) or np.isclose(centre[a], (1.0, 0.5, 0.5)[a]))
                group[e, f] = side
    mixed = replace(box, element_vertices=ev, face_neighbour=neighbour, neighbour_face=neighbour_face,
                    face_orientation=orientation, face_group=group, element_labels=None,
                    boundary_kind=np.where(neighbour < 0, 0, INTERIOR))
    out, plane = extrude_surface(mixed, "zmin", 2)
    assert sorted(plane.faces.tolist()) == [0, 4]
    out.check()
    geometry = compute_geometry(out, 3)
    assert geometry.jacobian.min() > 0 and geometry.mass.sum() == pytest.approx(1.0 * 0.5 * 1.5, rel=1e-13)
    x = geometry.coords  # (3, E, 4, 4, 4)
    for e, f in zip(*np.nonzero(out.face_neighbour >= 0)):
        n, g = out.face_neighbour[e, f], out.neighbour_face[e, f]
        ours = x[:, e][face_slice(int(f), 3)]
        theirs = reorient(x[:, n][face_slice(int(g), 3)], int(out.face_orientation[e, f]))
        assert np.abs(ours - theirs).max() < 1e-14, (e, f)
    grown = range(mixed.num_elements, out.num_elements)
    for e in grown:  # each grown boundary face lies on the side its group names
        for f in np.nonzero(out.face_neighbour[e] < 0)[0]:
            name = out.group_names[out.face_group[e, f]]
            axis = "xyz".index(name[0])
            value = (0.0, 0.0, -1.0)[axis] if name.endswith("min") else (1.0, 0.5, 0.5)[axis]
            assert np.allclose(x[axis, e][face_slice(int(f), 3)], value, atol=1e-14), (e, f, name)
    ends = [(e, f) for e in grown for f in range(6) if out.face_group[e, f] == out.group_names.index("zmin")]
    assert len(ends) == 2 and all(f == 5 for _, f in ends)
    z = np.array([x[2, e][face_slice(f, 3)].mean() for e, f in ends])
    assert np.allclose(z, -1.0, atol=1e-14)  # two layers of the 0.5 deep elements behind z = 0
