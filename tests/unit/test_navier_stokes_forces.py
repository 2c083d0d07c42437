"""``[output.forces.<name>]`` (systems/navier_stokes/forces.py, docs/navier-stokes.md "Forces
and moments"): the force and moment on named surfaces against exact flows, the files read
back by the csv module and h5py, a continued run, and bad tables (exit 2, one line).

* plane Poiseuille flow (walls at y = +-1, periodic x and z, constant flow rate, started on
  the exact profile u = 1 - y^2): the viscous drag on a wall is nu * 2 * area, the pressure
  has no x part, the moment about a point is r x F of the uniform wall shear;
* fluid at rest in a closed box under gravity (force_y = -1): the pressure is -y + c, so the
  force on all six sides is the weight (0, -1, 0) acting at the centroid, whatever c is.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import lobatto
from lobatto.cli import main
from lobatto.errors import InputError
from lobatto.io.timeseries import read_csv

ROOT = Path(__file__).resolve().parents[2]
NU = 0.05
SOLVERS = {"pressure": {"tolerance": 1e-12}, "velocity": {"tolerance": 1e-13}}


def channel(name="channel", forces=None, **sections):
    data = {"physics": {"equations": "navier_stokes", "viscosity": NU, "flow_rate": 2.0 / 3.0},
            "mesh": {"elements": [2, 2, 1], "lower": [0.0, -1.0, 0.0], "upper": [2.0, 1.0, 1.0],
                     "periodic": [True, False, True], "boundary": "wall"},
            "discretization": {"order": 3}, "solver": SOLVERS,
            "time": {"integrator": "bdf2", "dt": 0.05, "t_end": 0.1},
            "initial": {"ux": "1 - y**2"}, "output": {"formats": []}}
    data["output"]["forces"] = forces if forces is not None else {
        "bottom": {"surfaces": ["ymin"], "center": [1.0, 0.5, 0.0], "reference_area": 2.0, "reference_velocity": 1.0,
                   "density": 3.0},
        "walls": {"surfaces": ["ymin", "ymax"], "every": 2}}
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value}
    return lobatto.case_from_dict(data, name=name)


def read_rows(path):
    """The CSV file by the csv module alone: {column: [floats]}."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return {name: np.array([float(row[i]) if row[i] else np.nan for row in rows[1:]]) for i, name in enumerate(rows[0])}


def test_poiseuille_wall_shear_and_its_moment_are_exact(tmp_path):
    result = lobatto.run(channel(), output_dir=tmp_path, backend="cpu")
    rows = read_rows(tmp_path / "channel_forces.csv")
    assert list(rows)[:3] == ["step", "time", "Fx@bottom"] and list(rows["step"]) == [0, 1, 2]
    rho, area, shear = 3.0, 2.0, NU * 2.0  # nu du/dy at the wall, u = 1 - y^2
    drag = rho * shear * area
    assert np.allclose(rows["Fx@bottom"], drag, rtol=1e-10, atol=0)
    assert np.allclose(rows["Fvx@bottom"], drag, rtol=1e-10, atol=0)
    assert np.max(np.abs(rows["Fpx@bottom"])) < 1e-14  # the pressure pushes along the normal only
    assert np.max(np.abs(rows["Fvy@bottom"])) < 1e-10 and np.max(np.abs(rows["Fz@bottom"])) < 1e-10
    assert np.allclose(rows["Fpy@bottom"] + rows["Fvy@bottom"], rows["Fy@bottom"], rtol=0, atol=1e-15)
    # r x F about (1, 0.5, 0) of the uniform shear on y = -1, z in [0, 1]: My = rho tau A <z>, Mz = -rho tau A (-1.5)
    assert np.allclose(rows["My@bottom"], drag * 0.5, rtol=1e-10, atol=0)
    assert np.allclose(rows["Mz@bottom"], drag * 1.5, rtol=1e-10, atol=0)
    assert np.max(np.abs(rows["Mx@bottom"])) < 1e-10
    assert np.allclose(rows["Cx@bottom"], drag / (0.5 * rho * 1.0 * area), rtol=1e-10, atol=0)
    # both walls, every second step (NaN between): twice the drag, the normal forces cancel
    walls = rows["Fx@walls"]
    assert np.isnan(walls[1]) and np.allclose(walls[[0, 2]], 2 * shear * area, rtol=1e-10, atol=0)
    assert np.max(np.abs(rows["Fy@walls"][[0, 2]])) < 1e-10
    assert "Cx@walls" not in rows  # no reference values: no coefficients
    # the HDF5 file holds the same series and the effective configuration
    with h5py.File(tmp_path / "channel_forces.h5") as f:
        assert np.array_equal(f["forces/Fx/bottom"][:], rows["Fx@bottom"])
        assert np.array_equal(f["forces/step"][:], [0, 1, 2])
        assert "[output.forces.bottom]" in f.attrs["config"] and "reference_area = 2.0" in f.attrs["config"]
        assert "density" in f["forces/Fx/bottom"].attrs["doc"]
    entry = result.summary["time_series"]["forces"]
    assert entry["files"] == ["channel_forces.csv", "channel_forces.h5"] and entry["samples"] == 3
    assert entry["groups"]["bottom"]["faces"] == 2 and entry["groups"]["walls"]["faces"] == 4
    assert entry["groups"]["bottom"]["last"]["Fx"] == rows["Fx@bottom"][-1]
    series = read_csv(tmp_path / "channel_forces.csv")  # lobatto's reader, which `lobatto plot` uses
    assert series["columns"][0] == "Fx@bottom" and np.array_equal(series["step"], [0, 1, 2])
    if importlib.util.find_spec("matplotlib") is not None:  # the run directory's only series: the forces
        assert main(["plot", str(tmp_path), "--quantities", "Fx", "Cx"]) == 0
        assert (tmp_path / "channel_forces.png").stat().st_size > 1000


def test_a_fluid_at_rest_weighs_its_volume_at_its_centroid(tmp_path):
    data = {"physics": {"equations": "navier_stokes", "viscosity": 0.1, "force_y": "-1"},
            "mesh": {"elements": [1, 2, 1]}, "discretization": {"order": 2}, "solver": SOLVERS,
            "time": {"integrator": "bdf1", "dt": 0.1, "t_end": 0.1},
            "output": {"formats": [], "forces": {
                "box": {"surfaces": ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"]},
                "floor": {"surfaces": ["ymin"], "center": [0.5, 0.0, 0.5]}}}}
    lobatto.run(lobatto.case_from_dict(data, name="rest"), output_dir=tmp_path, backend="cpu")
    rows = read_rows(tmp_path / "rest_forces.csv")
    last = {key: value[-1] for key, value in rows.items()}
    # the unit box's weight (rho g V = 1) down, its moment about the origin (0.5, 0.5, 0.5) x (0, -1, 0)
    assert np.allclose([last[f"F{c}@box"] for c in "xyz"], [0.0, -1.0, 0.0], rtol=0, atol=1e-10)
    assert np.allclose([last[f"M{c}@box"] for c in "xyz"], [0.5, 0.0, -0.5], rtol=0, atol=1e-10)
    assert max(abs(last[f"Fv{c}@box"]) for c in "xyz") < 1e-10
    # the floor: pressure along -y only, no moment about its own centre
    assert abs(last["Fx@floor"]) < 1e-12 and last["Fy@floor"] < -0.1
    assert np.allclose([last[f"M{c}@floor"] for c in "xyz"], 0.0, atol=1e-10)


def test_a_continued_run_gives_the_same_series(tmp_path):
    sections = {"time": {"t_end": 0.3}, "checkpoint": {"every": 2, "keep": 5}}
    full = lobatto.run(channel("cont", **sections), output_dir=tmp_path / "full", backend="cpu")
    reference = read_rows(tmp_path / "full" / "cont_forces.csv")
    sim = lobatto.Simulation(channel("cont", **sections), backend="cpu", output_dir=tmp_path / "full", comm=None)
    sim.restart(tmp_path / "full" / "checkpoints" / "cont_000004")
    continued = sim.run()
    again = read_rows(tmp_path / "full" / "cont_forces.csv")
    assert list(again["step"]) == list(range(7))
    for column, values in reference.items():
        assert np.array_equal(again[column], values, equal_nan=True), column
    assert continued["time_series"]["forces"]["samples"] == full.summary["time_series"]["forces"]["samples"] == 7
    with h5py.File(tmp_path / "full" / "cont_forces.h5") as f:  # the earlier rows are in it again
        assert np.array_equal(f["forces/Fx/bottom"][:], reference["Fx@bottom"])


@pytest.mark.parametrize("forces, fragment", [
    ({"b": {"surfaces": ["cylinder"]}}, "[output.forces.b] surfaces: no surface 'cylinder' in the mesh (its named "
     "surfaces: xmin, xmax, ymin, ymax, zmin, zmax)"),
    ({"b": {"surfaces": ["xmin"]}}, "[output.forces.b] surfaces: 'xmin' has no boundary faces"),
])
def test_surfaces_the_mesh_does_not_have(tmp_path, forces, fragment):
    with pytest.raises(InputError) as error:
        lobatto.Simulation(channel(forces=forces), backend="cpu", output_dir=tmp_path, comm=None)
    assert fragment in str(error.value) and str(error.value).startswith("<channel>: ")


@pytest.mark.parametrize("forces, fragment", [
    ({"b": {"surfaces": ["ymin"], "reference_area": -1.0, "reference_velocity": 1.0}},
     "[output.forces.b] reference_area must be a positive number"),
    ({"b": {"surfaces": ["ymin"], "reference_area": 1e40, "reference_velocity": 1.0}},
     "[output.forces.b] reference_area must be a number from 1e-30 to 1e+30"),
    ({"b": {"surfaces": ["ymin"], "reference_velocity": 1.0}}, "reference_velocity needs reference_area too"),
    ({"b": {"surfaces": []}}, "[output.forces.b] surfaces must be a non-empty list"),
    # a surface listed twice would read as counted twice: refused, not merged
    ({"b": {"surfaces": ["ymin", "ymax", "ymin"]}}, '[output.forces.b] surfaces: "ymin" is given 2 times'),
    ({"b": {"center": [0, 0, 0]}}, "[output.forces.b] surfaces is required"),
    ({"b": {"surfaces": ["ymin"], "centre": [0, 0, 0]}}, "unknown key 'output.forces.b.centre' (did you mean "
     "'output.forces.b.center'?)"),
    ({"b": {"surfaces": ["ymin"], "every": 0}}, "[output.forces.b] every must be an integer >= 1"),
    ({"b": {"surfaces": ["ymin"], "center": [0, "x", 0]}}, "[output.forces.b] center must be a list of 3"),
    ({"surfaces": ["ymin"]}, "[output.forces] surfaces: each entry is a named table"),
    ({"2b": {"surfaces": ["ymin"]}}, "[output.forces.2b]: a group's name is letters"),
    ({}, "[output.forces] has no [output.forces.<name>] table"),
])
def test_bad_tables_are_refused_when_the_case_is_read(forces, fragment):
    with pytest.raises(InputError) as error:
        channel(forces=forces)
    assert fragment in str(error.value)


def test_the_command_line_refuses_an_unknown_surface_in_one_line(tmp_path):
    case = channel(forces={"body": {"surfaces": ["cylinder"]}}).to_toml()
    (tmp_path / "bad.toml").write_text(case)
    proc = subprocess.run([sys.executable, "-m", "lobatto", "run", str(tmp_path / "bad.toml"), "-o",
                           str(tmp_path / "out"), "--quiet"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "no surface 'cylinder' in the mesh" in lines[0] and "ymin" in lines[0]


def test_another_system_is_told_forces_need_a_flow(tmp_path):
    data = {"mesh": {"elements": [1, 1, 1]}, "discretization": {"order": 1}, "time": {"t_end": 0.01},
            "physics": {"equations": "acoustics"}, "output": {"formats": [], "forces": {"b": {"surfaces": ["xmin"]}}}}
    with pytest.raises(InputError, match=r"\[output.forces\] needs an incompressible flow"):
        lobatto.Simulation(lobatto.case_from_dict(data, name="sound"), backend="cpu", output_dir=tmp_path, comm=None)
