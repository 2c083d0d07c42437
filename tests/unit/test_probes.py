"""Probes, integrals and their time series (docs/probes.md): point location by Newton's method
on curved elements, exact interpolation, the cavity mode in time, energy and flux integrals
against the system's energy and its rate of change, the files, restarts, errors and
``lobatto plot``."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import lobatto
from lobatto.cli import main
from lobatto.config.schema import tomllib  # tomli on Python 3.10
from lobatto.discretization import gll_points
from lobatto.errors import InputError
from lobatto.io.timeseries import read_csv
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.locate import candidates, element_boxes, newton, tensor_weights

SRC = Path(__file__).resolve().parents[2] / "src"
SIDES = ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"]
#: a strong interior curving of the unit cube that keeps its sides (docs: [mesh.deform])
CURVED = {"x": "0.06*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.05*sin(pi*x)*sin(2*pi*y)*sin(pi*z)",
          "z": "0.04*sin(2*pi*x)*sin(pi*y)*sin(pi*z)"}
CAVITY = {"Ez": "sin(pi*x)*sin(pi*y)*cos(sqrt(2)*pi*t)", "Hx": "-sin(pi*x)*cos(pi*y)*sin(sqrt(2)*pi*t)/sqrt(2)",
          "Hy": "cos(pi*x)*sin(pi*y)*sin(sqrt(2)*pi*t)/sqrt(2)"}


def rng():
    seed = int(np.random.SeedSequence().entropy % 2**32)
    return np.random.default_rng(seed), seed


def case(name="probes", **sections):
    data = {"mesh": {"elements": [2, 2, 2]}, "discretization": {"order": 4}, "time": {"t_end": 0.05}}
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value}
    return lobatto.case_from_dict(data, name=name)


def run(tmp_path, name="probes", **sections):
    result = lobatto.run(case(name, **sections), output_dir=tmp_path / name, backend="cpu")
    return result, read_csv(tmp_path / name / f"{name}_probes.csv")


def curved_geometry(order):
    def deform(x, y, z):
        s = np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * z)
        return 0.12 * s, 0.1 * s * np.cos(np.pi * z), 0.08 * np.sin(2 * np.pi * x) * s
    return compute_geometry(box_mesh((2, 2, 2), deform=deform), order)


# --------------------------------------------------------------------- Newton, interpolation
@pytest.mark.parametrize("order", [3, 6])
def test_newton_finds_random_points_of_curved_elements(order):
    generator, seed = rng()
    geometry = curved_geometry(order)
    coords = geometry.coords
    assert not geometry.affine.any()
    boxes = element_boxes(coords)
    for _ in range(20):
        element = int(generator.integers(coords.shape[1]))
        reference = generator.uniform(-0.98, 0.98, 3)
        point = np.einsum("xkji,kji->x", coords[:, element], tensor_weights(order, reference)[0])
        assert element in candidates(boxes, point)
        found = newton(coords, np.array([element]), point)
        assert found.inside[0], (seed, reference, found)
        assert np.abs(found.reference[0] - reference).max() < 1e-12, seed
        assert found.residual[0] < 1e-14 and found.steps <= 8, (seed, found)
        # the same point seen from another element: Newton ends outside its cube
        other = (element + 1) % coords.shape[1]
        assert not newton(coords, np.array([other]), point).inside[0]


def test_probes_interpolate_polynomials_of_the_reference_cube_exactly(tmp_path):
    """A field that is a random polynomial of degree <= N in each of r, s, t of its element
    is returned exactly at random points of curved elements."""
    generator, seed = rng()
    order = 5
    sim_case = case(mesh={"deform": CURVED}, discretization={"order": order},
                    output={"probes": {"points": [[0.5, 0.5, 0.5]]}})
    sim = lobatto.Simulation(sim_case, backend="cpu", output_dir=tmp_path, comm=None)
    sim.close()  # only its coordinates are needed: the next run uses the directory
    coords = sim.coordinates()
    elements = generator.integers(coords.shape[1], size=6)
    references = generator.uniform(-0.95, 0.95, (6, 3))
    points = [np.einsum("xkji,kji->x", coords[:, e], w) for e, w in zip(elements, tensor_weights(order, references))]
    sim_case = case(mesh={"deform": CURVED}, discretization={"order": order},
                    output={"probes": {"points": [list(p) for p in points]}})
    sim = lobatto.Simulation(sim_case, backend="cpu", output_dir=tmp_path, comm=None)
    probes = sim.series.probes
    assert list(probes.element_ids) == list(elements), seed

    xi = gll_points(order)
    coefficients = generator.normal(size=(6, order + 1, order + 1, order + 1))  # per field: c[a, b, c] r^a s^b t^c
    powers = np.arange(order + 1)

    def poly(c, r, s, t):
        r, s, t = (np.asarray(v)[..., None] ** powers for v in (r, s, t))
        return np.einsum("abc,...a,...b,...c->...", c, r, s, t)

    t3, s3, r3 = np.meshgrid(xi, xi, xi, indexing="ij")  # nodal layout [k, j, i]
    u = generator.normal(size=(6,) + coords.shape[1:])  # other elements: noise
    for f in range(6):
        for e in set(elements.tolist()):
            u[f, e] = poly(coefficients[f], r3, s3, t3)
    values = probes.values(u)
    exact = np.array([[poly(coefficients[f], *references[p]) for p in range(6)] for f in range(6)])
    assert np.abs(values - exact).max() < 1e-12 * np.abs(exact).max(), seed


def test_probes_of_polynomial_initial_fields_through_a_run(tmp_path):
    """End to end (case file -> CSV): a linear field on a curved mesh (degree N in r, s, t
    there) and a degree-N field on an affine box are exact at step 0."""
    generator, seed = rng()
    points = generator.uniform(0.02, 0.98, (5, 3)).round(6).tolist()
    _, curved = run(tmp_path, "curved", mesh={"deform": CURVED}, initial={"Ex": "1 + 2*x - 3*y + 0.5*z"},
                    output={"probes": {"points": points, "fields": ["Ex", "Hy"], "every": 3}})
    x, y, z = np.array(points).T
    got = np.array([curved["values"][f"Ex@p{i}"][0] for i in range(5)])
    assert np.abs(got - (1 + 2 * x - 3 * y + 0.5 * z)).max() < 1e-13, seed
    assert all(curved["values"][f"Hy@p{i}"][0] == 0 for i in range(5))

    lower, upper = [-1.0, 0.5, 2.0], [1.5, 1.25, 3.0]
    box_points = (np.array(lower) + generator.uniform(0, 1, (5, 3)) * (np.array(upper) - np.array(lower))).tolist()
    _, affine = run(tmp_path, "affine", mesh={"elements": [3, 2, 2], "lower": lower, "upper": upper},
                    initial={"Hz": "x**4*y**3 - 2*z**4*x + y**2*z**3 - 0.5"},
                    output={"probes": {"points": box_points, "fields": ["Hz"]}})
    x, y, z = np.array(box_points).T
    exact = x**4 * y**3 - 2 * z**4 * x + y**2 * z**3 - 0.5
    got = np.array([affine["values"][f"Hz@p{i}"][0] for i in range(5)])
    assert np.abs(got - exact).max() < 1e-12 * np.abs(exact).max(), seed


def test_a_point_on_a_shared_face_belongs_to_the_lowest_element_id(tmp_path):
    # box 2 x 2 x 2: element e = ix + 2 iy + 4 iz; the deformation keeps the planes x, y, z = 0.5
    points = [[0.5, 0.5, 0.5], [0.5, 0.75, 0.25], [0.25, 0.75, 0.5], [0.75, 0.5, 0.75], [1.0, 1.0, 1.0]]
    result, series = run(tmp_path, mesh={"deform": {"x": "0.05*sin(2*pi*x)*sin(pi*y)*sin(pi*z)"}},
                         initial={"Ez": "x + y"}, output={"probes": {"points": points}})
    assert result.summary["time_series"]["probes"]["element_ids"] == [0, 2, 2, 5, 7]
    assert [series["values"][f"Ez@p{i}"][0] for i in range(5)] == pytest.approx([1.0, 1.25, 1.0, 1.25, 2.0],
                                                                                 abs=1e-14)


# ---------------------------------------------------------------- the cavity mode in time
@pytest.fixture(scope="module")
def cavity_runs(tmp_path_factory):
    """The TM110 mode of the PEC cube on a curved mesh at N = 4 and 6, probes and integrals."""
    generator, seed = rng()
    points = generator.uniform(0.1, 0.9, (3, 3)).round(6).tolist()
    runs = {}
    for order in (4, 6):
        directory = tmp_path_factory.mktemp(f"cavity{order}")
        result, series = run(directory, "cavity", mesh={"deform": CURVED}, discretization={"order": order},
                             initial=CAVITY, exact=CAVITY, time={"t_end": 0.6},
                             output={"probes": {"points": points, "every": 2, "fields": ["Ez", "Hx", "Hy"]},
                                     "integrals": {"every": 3, "volume": ["energy", "electric_energy",
                                                                          "magnetic_energy"],
                                                   "surfaces": SIDES}})
        runs[order] = result, series, directory / "cavity"
    return runs, np.array(points), seed


def test_cavity_probes_follow_the_exact_mode_to_the_discretization_error(cavity_runs):
    runs, points, seed = cavity_runs
    x, y, _ = points.T
    worst = {}
    for order, (result, series, _) in runs.items():
        probed = ~np.isnan(series["values"]["Ez@p0"])
        t = series["time"][probed][:, None]
        w = np.sqrt(2) * np.pi
        exact = {"Ez": np.sin(np.pi * x) * np.sin(np.pi * y) * np.cos(w * t),
                 "Hx": -np.sin(np.pi * x) * np.cos(np.pi * y) * np.sin(w * t) / np.sqrt(2),
                 "Hy": np.cos(np.pi * x) * np.sin(np.pi * y) * np.sin(w * t) / np.sqrt(2)}
        assert probed.sum() >= 10 and series["step"][probed][-1] == result.summary["steps"]
        worst[order] = max(np.abs(np.stack([series["values"][f"{f}@p{i}"][probed] for i in range(3)], axis=1)
                                  - exact[f]).max() for f in exact)
        # as small as the run's own nodal error against [exact] at the end
        assert worst[order] < 3 * result.summary["errors"]["all"]["max"], (seed, worst)
    # the probe points are random: 5.3e-4 at N = 6 turned up (seed 917672671), so the absolute
    # bound is 1e-3; the convergence (N = 4 to 6: more than 8 times smaller) is the sharper check
    assert worst[6] < 1e-3 and worst[6] < worst[4] / 8, (seed, worst)


def test_energy_integral_is_the_systems_energy(cavity_runs):
    runs, _, _ = cavity_runs
    for result, series, _ in runs.values():
        energy = series["values"]["energy@all"]
        sampled = ~np.isnan(energy)
        assert energy[0] == pytest.approx(result.summary["energy"]["initial"], rel=1e-13)
        assert energy[sampled][-1] == pytest.approx(result.summary["energy"]["final"], rel=1e-13)
        parts = series["values"]["electric_energy@all"] + series["values"]["magnetic_energy@all"]
        assert np.allclose(parts[sampled], energy[sampled], rtol=1e-13, atol=0)
        # the mode trades electric for magnetic energy: cos^2 and sin^2 of omega t
        assert series["values"]["magnetic_energy@all"][sampled].max() > 0.3 * energy[0]


def test_poynting_flux_through_pec_walls_vanishes_with_resolution(cavity_runs):
    runs, _, _ = cavity_runs
    largest = {}
    for order, (_, series, _) in runs.items():
        fluxes = np.stack([series["values"][f"poynting_flux@{side}"] for side in SIDES])
        largest[order] = np.nanmax(np.abs(fluxes)) / series["values"]["energy@all"][0]
    assert largest[6] < 1e-3 and largest[6] < largest[4] / 5, largest


@pytest.mark.parametrize("equations, field, flux", [("maxwell", "Ez", "poynting_flux"),
                                                    ("acoustics", "p", "intensity_flux")])
def test_outflow_through_absorbing_sides_balances_the_energy_loss(tmp_path, equations, field, flux):
    """dE/dt = -(flux out through the closed boundary), to the discretization error, which
    falls fast with N; the pulse loses most of its energy."""
    mismatch = {}
    for order in (4, 6):
        name = f"{equations}{order}"
        result, series = run(tmp_path, name, physics={"equations": equations},
                             mesh={"boundary": "absorbing", "deform": CURVED}, discretization={"order": order},
                             initial={field: "exp(-25*((x-0.5)**2 + (y-0.45)**2 + (z-0.55)**2))"},
                             time={"t_end": 0.8, "cfl": 0.45},
                             output={"integrals": {"surfaces": SIDES}})
        t, energy = series["time"], series["values"]["energy@all"]
        outflow = sum(series["values"][f"{flux}@{side}"] for side in SIDES)
        rate = (energy[2:] - energy[:-2]) / (t[2:] - t[:-2])
        mismatch[order] = np.abs(rate + outflow[1:-1]).max() / np.abs(outflow).max()
        assert energy[-1] < 0.5 * energy[0] and energy[-1] == pytest.approx(result.summary["energy"]["final"],
                                                                             rel=1e-13)
    assert mismatch[6] < 1e-2 and mismatch[6] < mismatch[4] / 4, mismatch


# ---------------------------------------------------------------------------- the files
def test_hdf5_file_holds_what_the_csv_holds(cavity_runs):
    runs, points, _ = cavity_runs
    result, _, directory = runs[4]
    with open(directory / "cavity_probes.csv", newline="") as fh:  # the csv module, not lobatto's reader
        rows = list(csv.DictReader(fh))
    with h5py.File(directory / "cavity_probes.h5", "r") as f:
        assert f.attrs["equations"] == "maxwell" and "[output.probes]" in f.attrs["config"]
        assert np.array_equal(f["probes/points"][:], points)
        probe_rows = [r for r in rows if r["Ez@p0"]]
        assert np.array_equal(f["probes/step"][:], [int(r["step"]) for r in probe_rows])
        assert np.array_equal(f["probes/time"][:], [float(r["time"]) for r in probe_rows])
        for field in ("Ez", "Hx", "Hy"):
            assert np.array_equal(f[f"probes/{field}"][:],
                                  [[float(r[f"{field}@p{i}"]) for i in range(3)] for r in probe_rows])
        integral_rows = [r for r in rows if r["energy@all"]]
        assert np.array_equal(f["integrals/step"][:], [int(r["step"]) for r in integral_rows])
        for side in SIDES:
            data = f[f"integrals/poynting_flux/{side}"]
            assert data.attrs["kind"] == "surface"
            assert np.array_equal(data[:], [float(r[f"poynting_flux@{side}"]) for r in integral_rows])
    steps = [int(r["step"]) for r in rows]
    every = sorted(set(range(0, result.summary["steps"] + 1, 2)) | set(range(0, result.summary["steps"] + 1, 3))
                   | {result.summary["steps"]})
    assert steps == every
    assert result.summary["time_series"]["files"] == ["cavity_probes.csv", "cavity_probes.h5"]
    assert result.summary["time_series"]["samples"] == len(rows)


def test_a_line_cut_short_by_a_crash_is_dropped(cavity_runs, tmp_path):
    _, _, directory = cavity_runs[0][4]
    text = (directory / "cavity_probes.csv").read_text()
    cut = tmp_path / "cut.csv"
    cut.write_text(text[: len(text) - 7])
    full, partial = read_csv(directory / "cavity_probes.csv"), read_csv(cut)
    assert len(partial["step"]) == len(full["step"]) - 1
    assert np.array_equal(partial["values"]["energy@all"], full["values"]["energy@all"][:-1], equal_nan=True)


def test_a_continued_run_gives_the_same_time_series(tmp_path):
    sections = dict(mesh={"deform": CURVED}, initial=CAVITY, time={"t_end": 0.3},
                    checkpoint={"every": 4, "keep": 5},
                    output={"probes": {"points": [[0.3, 0.4, 0.6]], "every": 5},
                            "integrals": {"every": 3, "surfaces": ["xmin"]}})
    full = lobatto.run(case("cont", **sections), output_dir=tmp_path / "full", backend="cpu")
    sim = lobatto.Simulation(case("cont", **sections), backend="cpu", output_dir=tmp_path / "full", comm=None)
    sim.restart(tmp_path / "full" / "checkpoints" / "cont_000008")
    continued = sim.run()
    again = read_csv(tmp_path / "full" / "cont_probes.csv")
    # the summary counts the rows of the files, the earlier run's included
    assert continued["time_series"]["samples"] == full.summary["time_series"]["samples"] == len(again["step"])
    assert full.summary["steps"] > 8
    with h5py.File(tmp_path / "full" / "cont_probes.h5") as f:  # the earlier samples are in memory again
        assert np.array_equal(f["integrals/step"][:], again["step"][~np.isnan(again["values"]["energy@all"])])
    reference = lobatto.run(case("cont", **sections), output_dir=tmp_path / "reference", backend="cpu")
    expected = read_csv(tmp_path / "reference" / "cont_probes.csv")
    assert reference.summary["steps"] == full.summary["steps"]
    assert np.array_equal(again["step"], expected["step"])
    for column in expected["columns"]:
        assert np.array_equal(again["values"][column], expected["values"][column], equal_nan=True), column


# --------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("output, fragments", [
    ({"probes": {"points": [[0.5, 0.5, 0.5], [1.2, 0.5, 0.5]]}}, ["[output.probes] points[1]", "outside the mesh"]),
    ({"integrals": {"regions": ["left"]}}, ["[output.integrals] regions", "'left'", "regions: all"]),
    ({"integrals": {"surfaces": ["inlet"]}}, ["[output.integrals] surfaces", "'inlet'", "xmin"]),
])
def test_names_and_points_the_mesh_does_not_have(tmp_path, output, fragments):
    with pytest.raises(InputError) as error:
        lobatto.Simulation(case(output=output), backend="cpu", output_dir=tmp_path, comm=None)
    assert str(error.value).startswith("<probes>: ")
    for fragment in fragments:
        assert fragment in str(error.value)


def test_a_side_of_a_periodic_axis_has_no_faces(tmp_path):
    with pytest.raises(InputError, match=r"surfaces: 'xmin' has no boundary faces"):
        lobatto.Simulation(case(mesh={"periodic": [True, False, False]}, output={"integrals": {"surfaces": ["xmin"]}}),
                           backend="cpu", output_dir=tmp_path, comm=None)


@pytest.mark.parametrize("output, fragment", [
    ({"probes": {"points": [[0.5]]}}, "[output.probes] points[0] must be a point [x, y, z]"),
    ({"probes": {"points": []}}, "[output.probes] points must be a non-empty list"),
    ({"probes": {"every": 5}}, "[output.probes] points is required"),
    ({"probes": {"points": [[0.5, 0.5, 0.5]], "every": 0}}, "[output.probes] every must be an integer >= 1"),
    ({"probes": {"points": [[0.5, 0.5, 0.5]], "fields": ["Eq"]}}, "unknown field of maxwell \"Eq\" (did you mean 'Ez'?"),
    ({"probes": {"points": [[0.5, 0.5, 0.5]], "fields": ["p"]}}, "unknown field of maxwell \"p\""),
    ({"probes": {"pionts": []}}, "unknown key 'output.probes.pionts' (did you mean 'output.probes.points'?)"),
    ({"integrals": {"volume": ["enrgy"]}}, "unknown volume integrand of maxwell \"enrgy\" (did you mean 'energy'?"),
    ({"integrals": {"volume": ["poynting_flux"]}}, "'poynting_flux' is a surface integrand: list it in"),
    ({"integrals": {"surface": ["energy"], "surfaces": ["xmin"]}}, "'energy' is a volume integrand"),
    ({"integrals": {"volume": []}}, "[output.integrals] has nothing to integrate"),
])
def test_bad_sections_are_refused_when_the_case_is_read(output, fragment):
    with pytest.raises(InputError) as error:
        case(output=output)
    assert fragment in str(error.value)


def test_the_command_line_reports_a_point_outside_in_one_line(tmp_path):
    text = ("[mesh]\nelements = [2, 2, 2]\n[time]\nt_end = 0.05\n"
            "[output.probes]\npoints = [[0.5, 0.5, 0.5], [0.5, -0.25, 0.5]]\n")
    (tmp_path / "outside.toml").write_text(text)
    proc = lobatto_command("run", str(tmp_path / "outside.toml"), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "outside.toml: [output.probes] points[1] = [0.5, -0.25, 0.5] is outside" in lines[0]


def test_acoustics_integrands_and_schema_round_trip():
    sections = dict(physics={"equations": "acoustics"},
                    output={"probes": {"points": [[0.1, 0.2, 0.3]], "fields": ["uz", "p"]},
                            "integrals": {"volume": ["kinetic_energy", "energy"], "surfaces": ["zmax"]}})
    checked = case(**sections)
    assert checked.output.probes.fields == ("p", "uz")  # in the system's order
    assert checked.output.integrals.surface == ("intensity_flux",)
    again = lobatto.case_from_dict(tomllib.loads(checked.to_toml()), name="probes")
    assert again.output == checked.output


# ---------------------------------------------------------------------------- lobatto plot
def lobatto_command(*args):
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("LOBATTO_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "lobatto", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_plot_writes_a_png_of_the_right_size(cavity_runs, tmp_path):
    import matplotlib.image

    from lobatto.io.plot import figure_pixels

    _, _, directory = cavity_runs[0][4]
    proc = lobatto_command("plot", str(directory))
    assert proc.returncode == 0, proc.stderr
    image = matplotlib.image.imread(directory / "cavity_probes.png")
    width, height = figure_pixels(7)  # Ez, Hx, Hy, energy, electric_energy, magnetic_energy, poynting_flux
    assert image.shape[:2] == (height, width) and image[..., :3].std() > 0.05

    png = tmp_path / "two.png"  # the same command in this process, from here on
    assert main(["plot", str(directory / "cavity_probes.csv"), "--output", str(png),
                 "--quantities", "Ez@p1", "energy"]) == 0
    width, height = figure_pixels(2)
    assert matplotlib.image.imread(png).shape[:2] == (height, width)

    from lobatto.io.output_dir import find_outputs  # a later run into the directory is refused, or removes them

    names = {path.name for path in find_outputs(directory, "cavity")}
    assert {"cavity_probes.csv", "cavity_probes.h5", "cavity_probes.png", "summary.json"} <= names


@pytest.mark.parametrize("where, quantities, message", [
    ("run", ["Bz"], "--quantities: 'Bz' is not in the time series (quantities: Ez, Hx, Hy, electric_energy"),
    ("empty", [], "no time series (*_probes.csv) in it"),
    ("missing", [], "not a directory"),
])
def test_plot_errors_name_what_is_missing(cavity_runs, tmp_path, capsys, where, quantities, message):
    directory = {"run": cavity_runs[0][4][2], "empty": tmp_path, "missing": tmp_path / "nothing"}[where]
    assert main(["plot", str(directory)] + (["--quantities", *quantities] if quantities else [])) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def test_plot_without_matplotlib_says_what_to_install(cavity_runs, tmp_path, monkeypatch):
    from lobatto.io.plot import plot_time_series

    _, _, directory = cavity_runs[0][4]
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(InputError, match=r"needs matplotlib.*pip install 'lobatto\[plot\]'"):
        plot_time_series(directory / "cavity_probes.csv", tmp_path / "x.png")
