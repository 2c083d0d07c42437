"""gmsh meshes: files written by gmsh itself (committed under tests/data/meshes and made here
with the SDK by examples/meshes/gmsh_meshes.py), read by lobatto and checked against exact
volumes and areas, gmsh's own node positions, and lobatto's box."""

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

gmsh = pytest.importorskip("gmsh")

from mesh_checks import check_face_pairs, face_areas  # noqa: E402
from lobatto.api import case_from_dict  # noqa: E402
from lobatto.backends import get_backend  # noqa: E402
from lobatto.discretization import derivative_matrix, interpolation_matrix  # noqa: E402
from lobatto.discretization.tensor import physical_gradient  # noqa: E402
from lobatto.runner.build import build_system  # noqa: E402
from lobatto.runner.simulation import Simulation  # noqa: E402
from lobatto.errors import InputError  # noqa: E402
from lobatto.mesh import box_mesh, compute_geometry  # noqa: E402
from lobatto.mesh.readers import mesh_from_file, read_mesh  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "meshes"
_spec = importlib.util.spec_from_file_location("gmsh_meshes", ROOT / "examples" / "meshes" / "gmsh_meshes.py")
gm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gm)


@pytest.fixture(autouse=True, scope="module")
def _gmsh_session():
    gmsh.initialize(readConfigFiles=False, interruptible=False)
    gmsh.option.setNumber("General.Terminal", 0)
    yield
    gmsh.finalize()


def sorted_points(coords):
    return np.sort(np.round(coords.reshape(3, -1).T, 12), axis=0)


@pytest.mark.parametrize("name, version", [("box_msh22.msh", "2.2"), ("box_msh41.msh", "4.1")])
def test_committed_boxes_in_both_versions_are_lobattos_box(name, version):
    imported = read_mesh("gmsh", DATA / name, 4)
    assert imported.info["version"] == version and imported.geometry_order == 1
    assert imported.region_names == ("box",)
    mesh = mesh_from_file("gmsh", DATA / name, 4, {"zmax": "absorbing"}, "pec")
    assert mesh.group_names == ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")
    geo, _ = check_face_pairs(mesh, 4)
    box = compute_geometry(box_mesh((3, 2, 2)), 4)
    assert np.array_equal(sorted_points(geo.coords), sorted_points(box.coords))
    areas = face_areas(geo, 4)
    for g, name in enumerate(mesh.group_names):
        assert abs(areas[mesh.face_group == g].sum() - 1.0) < 1e-14, name
    assert np.all(mesh.boundary_kind[mesh.face_group == 5] == mesh.boundary_names.index("absorbing"))


@pytest.mark.parametrize("order, serendipity, nodes", [(1, False, 8), (2, True, 20), (2, False, 27), (3, False, 64),
                                                       (4, False, 125)])
def test_every_hexahedron_order_reproduces_gmshs_own_nodes(tmp_path, order, serendipity, nodes):
    # lobatto's nodes at GLL points, interpolated back to gmsh's reference node positions,
    # give gmsh's node coordinates: no assumption about gmsh's node numbering is made
    path = gm.coaxial(tmp_path / "coax.msh", divisions=1, layers=1, order=order, serendipity=serendipity,
                      version=2.2 if order == 3 else 4.1)
    imported = read_mesh("gmsh", path, 7)
    gmsh.open(str(path))
    (element_type,) = gmsh.model.mesh.getElementTypes(3)
    _, _, _, count, local, _ = gmsh.model.mesh.getElementProperties(element_type)
    assert count == nodes
    local = np.reshape(local, (count, 3))
    tags, node_tags = gmsh.model.mesh.getElementsByType(element_type)
    node_tags = np.reshape(node_tags, (len(tags), count))
    all_tags, xyz, _ = gmsh.model.mesh.getNodes()
    xyz = np.reshape(xyz, (-1, 3))[np.argsort(all_tags)][np.searchsorted(np.sort(all_tags), node_tags)]
    q = imported.geometry_order
    assert q == order
    basis = [interpolation_matrix(q, local[:, a]) for a in range(3)]
    row = {int(t): e for e, t in enumerate(imported.info["element_numbers"])}
    for k, tag in enumerate(tags):
        ours = np.einsum("pi,pj,pk,ckji->pc", *basis, imported.element_nodes[row[int(tag)]])
        assert np.abs(ours - xyz[k]).max() < 1e-12


def test_sphere_volume_converges_much_faster_with_second_order_geometry(tmp_path):
    order, exact = 6, 4 / 3 * math.pi * 0.5**3
    errors = {}
    for q in (1, 2):
        for n in (1, 2):
            path = gm.sphere_in_box(tmp_path / f"s{q}{n}.msh", radius=0.5, divisions=n, order=q)
            mesh = mesh_from_file("gmsh", path, order)
            assert mesh.num_elements == 13 * n**3 and mesh.region_names == ("sphere", "air")
            geo = compute_geometry(mesh, order)
            assert abs(geo.mass.sum() - 8.0) < 1e-12  # the box is exact
            errors[q, n] = abs(geo.mass[mesh.regions == 0].sum() - exact)
            walls = face_areas(geo, order)[mesh.face_group == mesh.group_names.index("walls")]
            assert abs(walls.sum() - 24.0) < 1e-12
    # measured: q = 1: 0.33, 0.12 (ratio 2.7); q = 2: 0.014, 0.00095 (ratio 14.7)
    assert errors[1, 1] / errors[1, 2] < 4 and errors[2, 1] / errors[2, 2] > 12
    assert errors[2, 2] < errors[1, 2] / 100


def test_coax_volume_areas_and_face_points(tmp_path):
    mesh = mesh_from_file("gmsh", DATA / "coax_order2.msh", 5, {"inner": "pec", "outer": "pec", "ends": "pmc"})
    assert mesh.geometry_order == 2 and mesh.num_elements == 16
    geo, _ = check_face_pairs(mesh, 5, tol=1e-13)
    areas = face_areas(geo, 5)
    a, b, length = 0.5, 1.0, 1.0
    measured = {name: areas[mesh.face_group == g].sum() for g, name in enumerate(mesh.group_names)}
    exact = {"inner": 2 * math.pi * a * length, "outer": 2 * math.pi * b * length, "ends": 2 * math.pi * (b * b - a * a)}
    for name in exact:  # second-order arcs, two per quarter: about 1e-3 relative
        assert abs(measured[name] / exact[name] - 1) < 2e-3, name
    assert abs(geo.mass.sum() / (math.pi * (b * b - a * a) * length) - 1) < 1e-3
    assert set(mesh.boundary_names) == {"pec", "pmc"}


def test_polynomial_field_differentiates_exactly_on_the_curved_sphere_mesh():
    order = 6
    mesh = mesh_from_file("gmsh", DATA / "sphere_in_box_order2.msh", order)
    geo, _ = check_face_pairs(mesh, order, tol=1e-13)
    assert not geo.affine.all()
    x, y, z = geo.coords
    u = x * x * y + z**3 - 2 * x * z  # cubic: degree 6 in the reference coordinates of a quadratic element
    grad = physical_gradient(np, u, derivative_matrix(order), geo.metrics)
    exact = np.stack([2 * x * y - 2 * z, x * x, 3 * z * z - 2 * x])
    assert np.abs(grad - exact).max() < 1e-10


def _final_fields_by_position(case, directory):
    """A case's fields after its steps, per element ordered by element centre and per point by
    coordinates, so that meshes with other element numbers and local axes compare."""
    sim = Simulation(case, backend="cpu", output_dir=directory, comm=None)
    sim.advance(sim.steps)
    coords, state = sim.coordinates(), np.stack(list(sim.fields().values()))
    centre = np.round(coords.mean(axis=(2, 3, 4)), 12).T
    per_element = []
    for e in np.lexsort(centre.T[::-1]):
        points = np.round(coords[:, e].reshape(3, -1), 12)
        per_element.append(state[:, e].reshape(len(state), -1)[:, np.lexsort(points[::-1])])
    return np.array(per_element)


@pytest.mark.parametrize("periodic", [False, True])
def test_maxwell_on_the_gmsh_box_equals_lobattos_box(tmp_path, periodic):
    fields = {"Ez": "sin(pi*y)*cos(2*pi*x)", "Hx": "sin(pi*y)*sin(pi*z)*exp(sin(2*pi*x))", "Ey": "cos(2*pi*x)*sin(pi*z)"}
    common = {"discretization": {"order": 4}, "initial": fields, "time": {"t_end": 0.1},
              "physics": {"equations": "maxwell"}}
    if periodic:  # x sides joined by gmsh's setPeriodic: the periodic pairs come from the file
        path = gm.box(tmp_path / "periodic.msh", (3, 2, 2), periodic=(True, False, False))
        assert read_mesh("gmsh", path, 4).periodic_faces.shape == (4, 4)
    else:
        path = DATA / "box_msh41.msh"
    gmsh_case = case_from_dict({"mesh": {"generator": "gmsh", "file": str(path), "boundary": "pec",
                                         "boundaries": {"zmax": "absorbing"}}, **common})
    box_case = case_from_dict({"mesh": {"elements": [3, 2, 2], "boundary": "pec", "periodic": [periodic, False, False],
                                        "boundaries": {"zmax": "absorbing"}}, **common})
    ours = _final_fields_by_position(gmsh_case, tmp_path / "gmsh")
    theirs = _final_fields_by_position(box_case, tmp_path / "box")
    assert ours.shape == theirs.shape
    assert np.abs(ours - theirs).max() < 1e-12 * np.abs(theirs).max()


def test_the_example_case_builds_on_its_committed_mesh():
    from lobatto.api import load_case

    case = load_case(ROOT / "examples" / "sphere_in_box.toml")
    assert case.mesh.file == str(ROOT / "examples" / "meshes" / "sphere_in_box.msh")
    assert "file = " in case.to_toml()
    system = build_system(case, get_backend("cpu"))
    mesh = system.mesh
    assert mesh.num_elements == 104 and mesh.region_names == ("sphere", "air")
    assert mesh.group_names == ("walls", "sphere_surface") and mesh.boundary_names == ("pec",)
    assert abs(system.geometry.mass.sum() - 8.0) < 1e-12


def test_mirrored_hexahedra_are_turned_right_handed(tmp_path):
    # MSH 2.2 is text: reverse one hexahedron's node order (a mirror image, negative volume)
    lines = (DATA / "box_msh22.msh").read_text().splitlines()
    start = lines.index("$Elements") + 2
    for i in range(start, len(lines)):
        parts = lines[i].split()
        if len(parts) > 3 and parts[1] == "5":  # the first hexahedron
            tags = 3 + int(parts[2])
            nodes = parts[tags:]
            parts[tags:] = [nodes[k] for k in (1, 0, 3, 2, 5, 4, 7, 6)]
            lines[i] = " ".join(parts)
            break
    path = tmp_path / "mirrored.msh"
    path.write_text("\n".join(lines) + "\n")
    assert read_mesh("gmsh", path, 3).info["mirrored_elements"] == 1
    geo = compute_geometry(mesh_from_file("gmsh", path, 3), 3)
    assert np.all(geo.jacobian > 0) and abs(geo.mass.sum() - 1.0) < 1e-14


def test_reading_keeps_the_callers_gmsh_model():
    gmsh.model.add("mine")
    gmsh.model.occ.addBox(0, 0, 0, 1, 1, 1)
    read_mesh("gmsh", DATA / "box_msh41.msh", 2)
    assert gmsh.isInitialized() and gmsh.model.getCurrent() == "mine"
    assert len(gmsh.model.occ.getEntities(3)) == 1


def _tet_box(path):
    gmsh.clear()
    gmsh.model.add("tets")
    gmsh.model.occ.addBox(0, 0, 0, 1, 1, 1)
    gmsh.model.occ.synchronize()
    gmsh.option.setNumber("Mesh.MeshSizeMax", 0.5)
    gmsh.model.mesh.generate(3)
    gmsh.write(str(path))
    return path


def test_bad_files_are_refused_with_what_was_expected(tmp_path):
    with pytest.raises(InputError, match=r"nothing\.msh: no such mesh file"):
        read_mesh("gmsh", tmp_path / "nothing.msh", 2)
    (tmp_path / "notes.msh").write_text("hello\n")
    with pytest.raises(InputError, match=r"notes\.msh: not a gmsh MSH file"):
        read_mesh("gmsh", tmp_path / "notes.msh", 2)
    with pytest.raises(InputError, match=r"tets\.msh: the mesh has 3-D elements other than hexahedra \(\d+ Tetrahedron "
                                         r"4; 0 hexahedra\): .*Mesh\.SubdivisionAlgorithm = 2"):
        read_mesh("gmsh", _tet_box(tmp_path / "tets.msh"), 2)
    # physical surfaces only: gmsh saves no volume elements
    gm.box(tmp_path / "box.msh", (1, 1, 1))
    gmsh.model.removePhysicalGroups([(3, tag) for _, tag in gmsh.model.getPhysicalGroups(3)])
    gmsh.write(str(tmp_path / "surfaces.msh"))
    with pytest.raises(InputError, match=r"surfaces\.msh: the file has no hexahedra .* add a physical volume group"):
        read_mesh("gmsh", tmp_path / "surfaces.msh", 2)
    # a side left out of every group
    gm.box(tmp_path / "open.msh", (2, 1, 1))
    gmsh.model.removePhysicalGroups([g for g in gmsh.model.getPhysicalGroups(2) if gmsh.model.getPhysicalName(*g) == "ymax"])
    gmsh.write(str(tmp_path / "open.msh"))
    with pytest.raises(InputError, match=r"open\.msh: element \d \(number \d+ in the file\) centred at .* face \d is on the "
                                         r"boundary but in no named surface group \(2 such faces\).*'xmin', 'xmax'"):
        mesh_from_file("gmsh", tmp_path / "open.msh", 2)


def _case_text(mesh_lines):
    return f"[mesh]\n{mesh_lines}\n[discretization]\norder = 2\n[initial]\nEz = \"x\"\n[time]\nt_end = 0.01\n"


def test_case_file_keys_of_file_meshes(tmp_path):
    (tmp_path / "mesh").mkdir()
    target = tmp_path / "mesh" / "box.msh"
    target.write_bytes((DATA / "box_msh41.msh").read_bytes())
    case_path = tmp_path / "case.toml"
    case_path.write_text(_case_text('generator = "gmsh"\nfile = "mesh/box.msh"\n[mesh.boundaries]\nzmax = "absorbing"'))
    from lobatto.api import load_case

    case = load_case(case_path)
    assert case.mesh.file == str(target) and case.mesh.boundaries == {"zmax": "absorbing"}
    assert case.mesh.elements is None and case.mesh.num_elements is None
    assert load_case(case_path).to_dict() == case.to_dict()
    for lines, message in [
        ('generator = "gmsh"\nfile = "mesh/missing.msh"', r"\[mesh\] file = \"mesh/missing\.msh\": no such file "),
        ('generator = "gmsh"', r"\[mesh\] file is required with generator = \"gmsh\""),
        ('generator = "gmsh"\nfile = "mesh/box.msh"\nelements = [2, 2, 2]', r"\[mesh\] elements is a key of generator"),
        ('elements = [2, 2, 2]\nfile = "mesh/box.msh"', r"\[mesh\] file is read by the file generators"),
        ('generator = "gmsh"\nfile = "mesh/box.msh"\n[mesh.boundaries]\nzmax = "wall"',
         r"\[mesh\.boundaries\] zmax must be one of \"pec\""),
    ]:
        case_path.write_text(_case_text(lines))
        with pytest.raises(InputError, match=message):
            load_case(case_path)


def test_cli_reports_an_unknown_group_in_one_line(tmp_path):
    case_path = tmp_path / "case.toml"
    case_path.write_text(_case_text(f'generator = "gmsh"\nfile = "{DATA / "box_msh41.msh"}"\n'
                                    '[mesh.boundaries]\ninlet = "pec"'))
    result = subprocess.run([sys.executable, "-m", "lobatto", "run", str(case_path), "--output", str(tmp_path / "o"),
                             "--quiet"], capture_output=True, text=True, cwd=tmp_path,
                            env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "case.toml: " in lines[0] and "box_msh41.msh" in lines[0]
    assert "names the group 'inlet', which the mesh does not have (its surface groups: 'xmin', 'xmax'" in lines[0]


def test_memory_is_estimated_from_the_files_elements_before_the_geometry(monkeypatch):
    import lobatto.runner.build as driver
    from lobatto.systems.registry import get_system

    case = case_from_dict({"mesh": {"generator": "gmsh", "file": str(DATA / "sphere_in_box_order2.msh")},
                           "discretization": {"order": 3}, "time": {"t_end": 0.1}})
    whole = driver.read_mesh_file(case)
    estimate = driver.check_memory(case, get_system("maxwell"), get_backend("cpu"), None, whole)
    assert estimate["elements_per_rank"] == 13
    monkeypatch.setattr(driver, "available_host_memory", lambda: 1 << 20)
    monkeypatch.setattr(driver, "compute_geometry", lambda *args: pytest.fail("the geometry was computed"))
    with pytest.raises(InputError, match=r"\[mesh\] file .*sphere_in_box_order2\.msh \(13 elements\) at order 3"):
        driver.build_system(case, get_backend("cpu"))


def test_an_inverted_element_is_named_by_its_number_in_the_file(tmp_path):
    lines = (DATA / "box_msh22.msh").read_text().splitlines()
    start = lines.index("$Nodes") + 2
    for i in range(start, lines.index("$EndNodes")):
        tag, x, y, z = lines[i].split()
        if all(0 < float(v) < 1 for v in (x, y, z)):  # an interior node, pulled out through a face
            lines[i] = f"{tag} -3 {y} {z}"
            break
    path = tmp_path / "pulled.msh"
    path.write_text("\n".join(lines) + "\n")
    mesh = mesh_from_file("gmsh", path, 3)
    with pytest.raises(InputError, match=r"\[mesh\] element \d+ \(number \d+ in .*pulled\.msh\) centred at .* is "
                                         r"(inverted|degenerate)"):
        compute_geometry(mesh, 3)
