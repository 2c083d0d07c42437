"""``[output.dft]`` planes and boxes: interior surfaces of element faces (monitors/planes.py,
docs/electromagnetics.md "Frequency-domain monitors"). A plane wave fed to the monitor: its flux
through interior planes is the analytic one and the boundary face's, through a closed box 0;
a run: a pulse's flux through interior planes equals the boundary's (to the discretisation
error), and through a closed box it is 0 (likewise); planes between faces and boxes cutting
elements are refused naming the nearest face planes; bad keys. (The dipole's power through a
closed interior box: tests/unit/test_nearfar.py.)"""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import lobatto
from lobatto.api import case_from_dict
from lobatto.config.dft import DftSection
from lobatto.errors import InputError
from lobatto.mesh.topology import face_slice
from lobatto.monitors.dft import DftMonitor
from lobatto.runner.simulation import Simulation


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    """Maxwell on 2 x 3 x 2 elements of [0, 1] x [0, 1.5] x [0, 0.8], periodic in y and z."""
    case = lobatto.case_from_dict({"mesh": {"elements": [2, 3, 2], "periodic": [False, True, True],
                                            "upper": [1.0, 1.5, 0.8]}, "discretization": {"order": 4},
                                   "time": {"t_end": 0.01}, "output": {"every": 0, "formats": []}}, name="pw")
    return lobatto.run(case, output_dir=tmp_path_factory.mktemp("pw"), backend="cpu").simulation.system


def test_a_plane_waves_flux_through_interior_planes_is_the_analytic_one(system):
    seed = int(np.random.SeedSequence().entropy % 2**32)
    generator = np.random.default_rng(seed)
    amplitude, phase, f = generator.uniform(0.5, 2.0), generator.uniform(-np.pi, np.pi), 1.0
    box = ((0.0, 0.0, 0.0), (0.5, 1.5, 0.8))
    section = DftSection(frequencies=(f,), fields=("Ey",), surfaces=("xmax",), regions=(), flux=("poynting_flux",),
                         planes=((0, 0.5), (0, 0.0), (0, 1.0), (1, 0.5), (1, 0.0)), boxes=(box,))
    monitor = DftMonitor(section, system)
    x, names = system.geometry.coords[0], system.field_names
    duration, steps = 6 / f, 240
    for k in range(steps + 1):
        t = k * duration / steps
        u = np.zeros((len(names),) + x.shape)
        u[names.index("Ey")] = u[names.index("Hz")] = amplitude * np.cos(2 * np.pi * f * (t - x) + phase)
        monitor.accumulate(u, t)
    results = monitor.results()
    flux = {name: results[("surface", name)]["flux"]["poynting_flux"][0] * (2 / duration) ** 2
            for _, name in results}
    expected = 0.5 * amplitude**2 * 1.5 * 0.8
    for name in ("x = 0.5", "x = 0", "x = 1", "xmax"):  # along +x, also on the mesh's own sides
        assert flux[name] == pytest.approx(expected, rel=1e-12), (seed, name)
    assert abs(flux["y = 0.5"]) < 1e-12 * expected and abs(flux["box [0, 0, 0] to [0.5, 1.5, 0.8]"]) < 1e-12 * expected
    seam = results[("surface", "y = 0")]  # on the periodic axis: the faces of the elements above it
    assert abs(flux["y = 0"]) < 1e-12 * expected and len(seam["ids"]) == 4 and np.allclose(seam["coordinates"][1], 0)
    plane = results[("surface", "x = 0.5")]
    assert len(plane["ids"]) == 6 and np.allclose(plane["coordinates"][0], 0.5)  # each face once
    assert len(results[("surface", "box [0, 0, 0] to [0.5, 1.5, 0.8]")]["ids"]) == 6 + 6 + 4 + 6


def pulse(order=4, **dft):
    """A Gaussian pulse moving to +x through a box with absorbing ends, periodic in y and z."""
    return case_from_dict({
        "mesh": {"elements": [6, 1, 1], "upper": [1.5, 0.25, 0.25], "periodic": [False, True, True],
                 "boundary": "absorbing"},
        "discretization": {"order": order},
        "initial": {"Ey": "exp(-((x-0.3)/0.1)**2)", "Hz": "exp(-((x-0.3)/0.1)**2)"},
        "time": {"t_end": 2.0, "dt": 0.005},
        "output": {"every": 0, "formats": [], "dft": {"frequencies": [0.5, 1.0, 1.5], "surfaces": ["xmax"],
                                                      "fields": ["Ey"], **dft}},
    }, name="p")


BOX = "box [0.75, 0, 0] to [1.25, 0.25, 0.25]"


def test_a_pulses_flux_through_interior_planes_and_a_closed_box(tmp_path):
    dft = {"planes": ["x = 0.75", "x=1.25"], "boxes": [{"lower": [0.75, 0, 0], "upper": [1.25, 0.25, 0.25]}]}
    summary = Simulation(pulse(**dft), "cpu", tmp_path, comm=None).run()
    assert summary["config"]["output"]["dft"]["planes"] == ["x = 0.75", "x = 1.25"]
    with h5py.File(tmp_path / "p_dft.h5", "r") as f:
        side = f["surfaces/xmax/flux/poynting_flux"][()]
        planes = [f[f"surfaces/{name}/flux/poynting_flux"][()] for name in ("x = 0.75", "x = 1.25")]
        box = f[f"surfaces/{BOX}/flux/poynting_flux"][()]
        assert f[f"surfaces/{BOX}/Ey"].shape == (3, 10, 5, 5)  # 2 elements: 2 x faces, 4 y, 4 z; and "planes" in f.attrs["config"]
    # analytic: 1/2 |s sqrt(pi) exp(-(pi f s)^2)|^2 times the area 1/16; measured at N = 4: the
    # planes within 2.7e-4 of the side's flux and 5.4e-3 of the analytic one, the box's net 1.9 %
    analytic = 0.5 * (0.1 * np.sqrt(np.pi) * np.exp(-(np.pi * np.array([0.5, 1.0, 1.5]) * 0.1) ** 2)) ** 2 / 16
    for plane in planes:
        assert np.abs(plane / side - 1).max() < 1e-3 and np.abs(plane / analytic - 1).max() < 1e-2
    assert np.abs(box).max() < 0.05 * side.min()


@pytest.mark.parametrize("dft, message", [
    ({"planes": ["x = 0.3"]}, r'"x = 0.3" lies on no element face.*nearest face planes: "x = 0.25" and "x = 0.5"'),
    ({"planes": ["x = 2"]}, r'nearest face planes: "x = 1.5"'),
    ({"boxes": [{"lower": [0.6, 0, 0], "upper": [1.25, 0.25, 0.25]}]},
     r'cuts element 2: its sides must lie on element faces \(x = 0.6 lies between the face planes "x = 0.5" and '
     r'"x = 0.75"\)'),
    ({"boxes": [{"lower": [0.75, 0, 0], "upper": [1.25, 0.2, 0.25]}]},
     r'cuts element 3: .*\(y = 0.2 lies between the face planes "y = 0" and "y = 0.25"\)'),
    ({"boxes": [{"lower": [0.75, 0, 0], "upper": [1.25, 0.25, 0.5]}]},
     r"side x = 0.75 .* not made of element faces \(their area 0.0625, the side's 0.125\)"),
])
def test_set_up_errors(tmp_path, dft, message):
    with pytest.raises(InputError, match=message):
        Simulation(pulse(order=2, **dft), "cpu", tmp_path, comm=None)


@pytest.mark.parametrize("dft, message", [
    ({"planes": "x = 0.5"}, r"planes must be a list"),
    ({"planes": ["x == 0.5"]}, r"planes\[0\] must be a plane"),
    ({"planes": ["w = 0.5"]}, r"planes\[0\] must be a plane"),
    ({"planes": [0.5]}, r"planes\[0\] must be a plane"),
    ({"planes": ["x = 1e999"]}, r"planes\[0\] must be a number"),
    ({"planes": ["x = 0.5", "x=0.5"]}, r'"x = 0.5" is given twice'),
    ({"planes": ["x = 0.1234561", "x = 0.1234562"]}, r'"x = 0.123456" is given twice \(planes are named'),
    ({"boxes": [{"lower": [0, 0, 0], "upper": [1, 1, 0.1234561]}, {"lower": [0, 0, 0], "upper": [1, 1, 0.1234562]}]},
     r"is given twice \(boxes are named"),
    ({"boxes": [{"lower": [0, 0, 0]}]}, r"boxes\[0\] must be a table"),
    ({"boxes": [[0, 0, 0, 1, 1, 1]]}, r"boxes\[0\] must be a table"),
    ({"boxes": [{"lower": [0, 0], "upper": [1, 1, 1]}]}, r"boxes\[0\].lower must be a list of 3"),
    ({"boxes": [{"lower": [1, 0, 0], "upper": [1, 1, 1]}]}, r"lower < upper"),
    ({"boxes": [{"lower": [0, 0, 0], "upper": [1, 1, float("nan")]}]}, r"boxes\[0\].upper"),
])
def test_bad_keys(dft, message):
    with pytest.raises(InputError, match=message):
        pulse(**dft)


def test_planes_and_boxes_on_a_gmsh_mesh(tmp_path):
    """examples/meshes/sphere_scatterer.msh (a ball in cubes of curved blocks, the box +-2.25):
    the plane x = 0.75 is the whole cross section of the mesh and the cube +-0.75 a closed box
    of element faces, as is the file's interior surface "cube"; its "sphere_surface" is seen
    from inside the ball; a plane or box between faces is refused naming the face planes."""
    pytest.importorskip("gmsh")
    from pathlib import Path

    from lobatto.backends import get_backend
    from lobatto.runner.build import build_system

    path = Path(__file__).resolve().parents[2] / "examples" / "meshes" / "sphere_scatterer.msh"
    case = case_from_dict({"mesh": {"generator": "gmsh", "file": str(path), "boundary": "absorbing"},
                           "discretization": {"order": 2}, "time": {"t_end": 0.1}, "output": {"formats": []}})
    system = build_system(case, get_backend("cpu"))

    def areas(**where):
        section = DftSection(frequencies=(1.0,), fields=("Ez",), surfaces=(), regions=(), flux=("poynting_flux",),
                             **where)
        out = {}
        for _, name, _, _, _, normals, weights in DftMonitor(section, system).parts:
            out[name] = out.get(name, 0.0) + float(weights.sum())
        return out

    found = areas(planes=((0, 0.75),), boxes=(((-0.75,) * 3, (0.75,) * 3),))
    assert found["x = 0.75"] == pytest.approx(4.5**2, rel=1e-12)
    assert found["box [-0.75, -0.75, -0.75] to [0.75, 0.75, 0.75]"] == pytest.approx(6 * 1.5**2, rel=1e-12)
    # the file's physical surfaces inside the mesh (mesh/enclosed.py): "cube" is the box's faces,
    # seen from inside; "sphere_surface" the ball's shell with outward (radial) normals
    section = DftSection(frequencies=(1.0,), fields=("Ez",), surfaces=("cube", "sphere_surface"), regions=(),
                         flux=("poynting_flux",), boxes=(((-0.75,) * 3, (0.75,) * 3),))
    faces, area = {}, 0.0
    for _, name, face, chosen, _, normals, weights in DftMonitor(section, system).parts:
        faces.setdefault(name, set()).update((int(e), face) for e in chosen)
        if name == "sphere_surface":
            x = system.geometry.coords[:, chosen][face_slice(face, system.order)]
            assert np.min(np.sum(normals * x, axis=0) / np.linalg.norm(x, axis=0)) > 0.99  # outward
            area += float(weights.sum())
    assert faces["cube"] == faces["box [-0.75, -0.75, -0.75] to [0.75, 0.75, 0.75]"]
    # 6 quadratic patches of the sphere r = 0.5 (area pi): measured 3.018 at N = 2 (3.088 at N = 4)
    assert len(faces["sphere_surface"]) == 6 and area == pytest.approx(np.pi, rel=0.05)
    with pytest.raises(InputError, match=r'"x = 0.5" lies on no element face.*"x = 0.15" and "x = 0.75"'):
        areas(planes=((0, 0.5),))
    with pytest.raises(InputError, match=r'cuts element .*x = -0.5 lies between the face planes "x = -0.75" and'):
        areas(boxes=(((-0.5,) * 3, (0.5,) * 3),))


def test_the_enclosed_side_of_an_interior_surface():
    """mesh/enclosed.py on 3 x 3 x 3 elements: the six faces around the centre element, given
    from outside, are seen from the centre element; an open sheet (the plane x = 1/3) has no
    enclosed side, nor has a closed surface around a part that reaches the mesh's boundary."""
    from lobatto.mesh import box_mesh
    from lobatto.mesh.enclosed import enclosed_sides

    mesh = box_mesh((3, 3, 3))
    centre = 13  # ix + 3 iy + 9 iz = 1 + 3 + 9
    outside = mesh.face_neighbour[centre]  # the six neighbours, and their faces towards the centre
    rows = enclosed_sides(mesh.face_neighbour, mesh.neighbour_face, outside, mesh.neighbour_face[centre])
    assert rows.tolist() == [[centre, f] for f in range(6)]
    sheet = np.array([e for e in range(27) if e % 3 == 0])  # the elements below x = 1/3, face 1 (r = +1)
    assert enclosed_sides(mesh.face_neighbour, mesh.neighbour_face, sheet, np.ones_like(sheet)) is None
    # the interior faces around element 0, a corner element: both parts touch the boundary
    assert enclosed_sides(mesh.face_neighbour, mesh.neighbour_face, np.zeros(3, int), np.array([1, 3, 5])) is None


def test_planes_on_a_mesh_in_nanometres(tmp_path):
    """The tolerance is relative to the mesh: on [0, 4e-9] (elements of 1e-9) the plane
    x = 2e-9 takes the faces at 2e-9 only, not those at 1e-9 or 3e-9 (an absolute 1e-9 did)."""
    from lobatto.backends import get_backend
    from lobatto.runner.build import build_system

    case = case_from_dict({"mesh": {"elements": [4, 1, 1], "upper": [4e-9, 1e-9, 1e-9], "boundary": "absorbing"},
                           "discretization": {"order": 2}, "time": {"t_end": 1e-12}, "output": {"formats": []}})
    system = build_system(case, get_backend("cpu"))
    section = DftSection(frequencies=(1.0,), fields=("Ez",), surfaces=(), regions=(), flux=("poynting_flux",),
                         planes=((0, 2e-9),))
    parts = DftMonitor(section, system).parts
    assert sum(part[3].size for part in parts) == 1  # one face: of element 1, below the plane
    assert sum(float(part[6].sum()) for part in parts) == pytest.approx(1e-18, rel=1e-9)
