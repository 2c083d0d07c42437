"""What trying 2-D lobatto as a user found (issue 34, trial2d; benchmarks/notes-2d-trial2d.md):
points and boxes as [x, y] on a 2-D mesh (a line source's position, a current's, a plane
wave's and a far field's box, a force group's centre; refused on a 3-D mesh), the effective
configuration of a 2-D run with ``[pml] sides = "all"`` running again, ``lobatto resonances
--start`` fitting only the ring-down after a source (Meep's ``until_after_sources``), the
forces in the printed summary, and no 3-D work model's GFLOP/s for a 2-D Maxwell run."""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest

import lobatto
from lobatto.api import case_from_dict, load_case
from lobatto.cli import main
from lobatto.errors import InputError


def cavity(position, t_end=12.0):
    """A PEC unit square, a z line current (TM) off every symmetry line, a probe sampling Ez."""
    return {"mesh": {"elements": [2, 2], "boundary": "pec"}, "discretization": {"order": 5},
            "physics": {"equations": "maxwell"}, "time": {"t_end": t_end, "dt": 0.01},
            "source": {"line": {"type": "electric_dipole", "position": position, "direction": [0, 0, 1],
                                "waveform": "gaussian", "t0": 1.0, "width": 0.25}},
            "output": {"every": 0, "formats": [], "probes": {"points": [[0.31, 0.43]], "fields": ["Ez"]}}}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for name, position in (("xy", [0.37, 0.29]), ("xyz", [0.37, 0.29, 0.0])):
        path = tmp_path_factory.mktemp(name)
        lobatto.run(case_from_dict(cavity(position), name="cav"), output_dir=path, backend="cpu")
        out[name] = path
    return out


def test_a_line_sources_position_may_be_x_y(runs):
    with h5py.File(runs["xy"] / "cav_probes.h5") as a, h5py.File(runs["xyz"] / "cav_probes.h5") as b:
        ez, ez3 = a["probes/Ez"][()], b["probes/Ez"][()]
    assert np.abs(ez).max() > 1e-3 and np.array_equal(ez, ez3)


def test_x_y_position_is_refused_on_a_3d_mesh(tmp_path):
    data = cavity([0.37, 0.29])
    data["mesh"]["elements"] = [2, 2, 1]
    data["output"]["probes"]["points"] = [[0.31, 0.43, 0.5]]
    with pytest.raises(InputError, match=r"\[source.line\] position = \[0.37, 0.29\]: the mesh is 3-D"):
        lobatto.run(case_from_dict(data, name="cav"), output_dir=tmp_path, backend="cpu")


def test_resonances_start_fits_the_ring_down_only(runs, capsys):
    # the TM modes of the unit square: f = sqrt(m^2 + n^2) / 2; (1, 1) and (2, 1) in the band
    assert main(["resonances", str(runs["xy"]), "--band", "0.6", "1.2", "--start", "2.5"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert "from t = 2.5" in rows[0]
    found = sorted(float(r.split()[2]) for r in rows[4:])
    for exact in (math.sqrt(2) / 2, math.sqrt(5) / 2):
        assert min(abs(f - exact) for f in found) < 1e-5 * exact, found
    assert main(["resonances", str(runs["xy"]), "--start", "99"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lobatto: error: --start 99:") and "no sample at t >= 99" in err and err.count("\n") == 1


def test_the_effective_configuration_of_a_2d_pml_all_runs_again(tmp_path):
    data = cavity([0.37, 0.29], t_end=0.05)
    data["mesh"].update(boundary="absorbing", elements=[4, 4])
    data["pml"] = {"sides": "all", "elements": 1}
    lobatto.run(case_from_dict(data, name="cav"), output_dir=tmp_path / "a", backend="cpu")
    with h5py.File(tmp_path / "a" / "cav_probes.h5") as f:
        text = f.attrs["config"]
    assert 'sides = "all"' in text
    again = tmp_path / "again.toml"
    again.write_text(text)
    lobatto.run(load_case(again), output_dir=tmp_path / "b", backend="cpu")  # a list of six sides was refused


def channel(elements, center, tmp_path, name):
    """A few steps of a 2-D (or 3-D) channel with the force and moment on its bottom wall."""
    lower, upper = [0.0, 0.0, -0.5][:len(elements)], [2.0, 1.0, 0.5][:len(elements)]
    data = {"physics": {"equations": "navier_stokes", "viscosity": 0.05},
            "mesh": {"elements": elements, "lower": lower, "upper": upper, "boundaries": {"xmax": "outflow"},
                     "periodic": [False, False, True][:len(elements)]},
            "discretization": {"order": 3}, "time": {"integrator": "bdf2", "dt": 0.01, "t_end": 0.03},
            "boundary": {"xmin": {"ux": "4*y*(1 - y)"}}, "initial": {"ux": "4*y*(1 - y)"},
            "output": {"formats": [], "forces": {"floor": {"surfaces": ["ymin"], "center": center}}}}
    lobatto.run(case_from_dict(data, name=name), output_dir=tmp_path / name, backend="cpu")
    return (tmp_path / name / f"{name}_forces.csv").read_text()


def test_a_2d_forces_center_may_be_x_y(tmp_path):
    given = channel([4, 2], [0.7, 0.3], tmp_path, "xy")
    padded = channel([4, 2], [0.7, 0.3, 0.0], tmp_path, "xyz")
    header, *rows = given.splitlines()
    mz = [float(r.split(",")[header.split(",").index("Mz@floor")]) for r in rows]
    assert given == padded and abs(mz[-1]) > 1e-3, mz  # the moment about (0.7, 0.3) is not 0
    with pytest.raises(InputError, match=r"\[output.forces.floor\] center = \[0.7, 0.3\]: the mesh is 3-D"):
        channel([4, 2, 1], [0.7, 0.3], tmp_path, "three")


def test_the_printed_summary_names_the_forces_files_and_last_values():
    from lobatto.io.summary import format_summary_table

    last = {"step": 40, "t": 0.2, "Fx": 0.0107, "Fy": 8.7e-6, "Fz": 0.0, "Cx": 5.3456, "Cy": 0.004333, "Cz": 0.0}
    series = {"forces": {"files": ["c_forces.csv", "c_forces.h5"], "samples": 3,
                         "groups": {"cylinder": {"last": last}, "wall": {"last": {"t": 0.2, "Fx": 1.5, "Fy": 2.0,
                                                                                  "Fz": 0.25}}}}}
    text = format_summary_table({"time_series": series})
    assert "  forces: c_forces.csv, c_forces.h5 (3 samples)" in text
    assert "    cylinder at t = 0.2: Cx 5.3456, Cy 0.004333" in text  # Cz 0 (2-D) left out
    assert "    wall at t = 0.2: Fx 1.5, Fy 2, Fz 0.25" in text


@pytest.mark.parametrize("source", [
    {"type": "current", "Jz": "sin(7*t)*x", "Jx": "cos(5*t)*y"},
    {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 1, 1], "waveform": "gaussian", "t0": 0.2,
     "width": 0.15},
])
def test_a_2d_sources_box_may_be_x_y(source, tmp_path):
    """A current's box and a plane wave's total-field box as [x, y] (2-D rectangles) give the
    fields of the same boxes with a z range holding z = 0; [x, y] on a 3-D mesh is refused."""
    series = {}
    for name, (lower, upper) in {"xy": ([0.5, 0.25], [1.5, 0.75]), "xyz": ([0.5, 0.25, -1.0], [1.5, 0.75, 1.0])}.items():
        data = cavity([0.37, 0.29], t_end=1.0)
        data["mesh"].update(elements=[4, 4], upper=[2.0, 1.0])
        data["output"]["probes"] = {"points": [[1.1, 0.6], [1.7, 0.2]], "fields": ["Ex", "Ey", "Ez"]}
        data["source"] = {"s": dict(source, lower=lower, upper=upper)}
        lobatto.run(case_from_dict(data, name="box"), output_dir=tmp_path / name, backend="cpu")
        with h5py.File(tmp_path / name / "box_probes.h5") as f:
            series[name] = np.stack([f["probes"][c][()] for c in ("Ex", "Ey", "Ez")])
    assert np.abs(series["xy"]).max() > 1e-3 and np.array_equal(series["xy"], series["xyz"])
    data["mesh"].update(elements=[4, 4, 1], lower=[0.0, 0.0, 0.0], upper=[2.0, 1.0, 1.0])
    data["source"] = {"s": dict(source, lower=[0.5, 0.25], upper=[1.5, 0.75])}
    data["output"]["probes"]["points"] = [[1.1, 0.6, 0.5]]
    with pytest.raises(InputError, match=r"\[source.s\] lower = \[0.5, 0.25\]: the mesh is 3-D: give \[x, y, z\]"):
        lobatto.run(case_from_dict(data, name="box"), output_dir=tmp_path / "three", backend="cpu")


def test_a_2d_far_field_contour_may_be_x_y(tmp_path):
    widths = {}
    for name, (lower, upper) in {"xy": ([-1.0, -1.0], [1.0, 1.0]), "xyz": ([-1.0, -1.0, -5.0], [1.0, 1.0, 5.0])}.items():
        data = cavity([0.1, 0.15], t_end=2.0)
        data["mesh"].update(elements=[4, 4], lower=[-2.0, -2.0], upper=[2.0, 2.0], boundary="absorbing")
        data["output"] = {"every": 0, "formats": [], "far_field": {"frequencies": [0.5], "lower": lower,
                                                                    "upper": upper, "phi": [0.0, 60.0]}}
        lobatto.run(case_from_dict(data, name="ff"), output_dir=tmp_path / name, backend="cpu")
        with h5py.File(tmp_path / name / "ff_farfield.h5") as f:
            widths[name] = {k: f[k][()] for k in ("E_theta", "E_phi") if k in f}
    assert widths["xy"] and all(np.abs(v).max() > 0 for v in widths["xy"].values())
    for key, value in widths["xy"].items():
        assert np.array_equal(value, widths["xyz"][key]), key
    data["mesh"].update(elements=[4, 4, 1], lower=[-2.0, -2.0, 0.0], upper=[2.0, 2.0, 1.0])
    data["source"]["line"]["position"] = [0.1, 0.15, 0.5]
    data["output"]["far_field"].update(lower=[-1.0, -1.0], upper=[1.0, 1.0])
    with pytest.raises(InputError, match=r"\[output.far_field\] lower = \[-1.0, -1.0\]: the mesh is 3-D"):
        lobatto.run(case_from_dict(data, name="ff"), output_dir=tmp_path / "three", backend="cpu")


@pytest.mark.parametrize("section", ["current", "plane_wave", "far_field"])
def test_a_box_of_2_and_3_entries_is_one_clear_error(section):
    data = cavity([0.37, 0.29])
    box = {"lower": [0.5, 0.25], "upper": [1.5, 0.75, 1.0]}
    if section == "far_field":
        data["output"]["far_field"] = {"frequencies": [0.5], **box}
        where = "output.far_field"
    else:
        data["source"] = {"s": {"type": section, "Jz": "1"} if section == "current" else
                          {"type": section, "direction": [1, 0, 0], "polarization": [0, 0, 1],
                           "waveform": "gaussian", "t0": 0.2, "width": 0.1}}
        data["source"]["s"].update(box)
        where = "source.s"
    with pytest.raises(InputError, match=rf"\[{where}\] lower has 2 entries and upper 3: give 2 each"):
        case_from_dict(data, name="mixed")


def test_a_2d_maxwell_summary_reports_no_3d_flop_model(runs):
    import json

    summary = json.loads((runs["xy"] / "summary.json").read_text())
    assert "gflops" not in summary and summary["point_steps_per_second"] > 0
