"""``[output.statistics]`` (systems/navier_stokes/statistics.py, docs/navier-stokes.md
"Statistics"): exact averages of a steady Poiseuille flow with a passive scalar, the
homogeneous (mass-weighted) averaging of a known field into profiles and planes, the time
weighting of samples, a continued run's averages equal to an uninterrupted run's (profiles
and 3-D sums, from a checkpoint written before a sample and from one written after), the
files read back by h5py and pymech, and bad keys refused. Several ranks: tests/mpi/
test_navier_stokes_statistics_ranks.py."""

from __future__ import annotations

import csv
import copy

import h5py
import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.errors import InputError
from lobatto.io.checkpoint_dir import checkpoint_path

POISEUILLE = {
    "physics": {"equations": "navier_stokes", "viscosity": 0.1, "force_x": "0.2", "scalars": ["T"]},
    "scalar": {"T": {"diffusivity": 0.1}},
    "mesh": {"elements": [2, 3, 2], "lower": [0.0, -1.0, 0.0], "upper": [1.0, 1.0, 1.0],
             "periodic": [True, False, True], "boundary": "wall"},
    "boundary": {"ymin": {"T": 1.0}, "ymax": {"T": 0.0}},
    "discretization": {"order": 3},
    "time": {"integrator": "bdf2", "dt": 0.01, "t_end": 0.05},
    "initial": {"ux": "1 - y**2", "T": "(1 - y)/2"},
    "output": {"formats": [], "every": 0, "name": "flow", "log_every": 0,
               "statistics": {"average": ["x", "z"], "every": 2, "start": 0.015}},
}

#: an unsteady flow: a channel at a constant flow rate with a decaying disturbance
CHANNEL = {
    "physics": {"equations": "navier_stokes", "viscosity": 0.05, "flow_rate": 2.0 / 3.0},
    "mesh": {"elements": [2, 2, 2], "lower": [0.0, -1.0, 0.0], "upper": [2.0, 1.0, 1.0],
             "periodic": [True, False, True], "boundary": "wall"},
    "discretization": {"order": 2},
    "time": {"integrator": "bdf2", "dt": 0.02, "t_end": 0.12},
    "solver": {"pressure": {"tolerance": 1e-10}, "velocity": {"tolerance": 1e-12}},
    "initial": {"ux": "0.9*(1 - y**2) + 0.2*sin(pi*x)*(1 - y**2)", "uz": "0.2*cos(pi*x)*sin(2*pi*z)*(1 - y**2)"},
    "output": {"formats": [], "every": 0, "name": "ch", "log_every": 0,
               "statistics": {"average": ["x", "z"], "every": 2, "start": 0.05}},
}


def run_case(data, out, restart=None, name="flow"):
    sim = Simulation(case_from_dict(copy.deepcopy(data), name=name), "cpu", out, comm=None)
    if restart is not None:
        sim.restart(restart)
    return sim, sim.run()


def means(path):
    with h5py.File(path, "r") as f:
        return {key: f[f"mean/{key}"][...] for key in f["mean"]}, dict(f.attrs)


def test_poiseuille_profiles_are_exact(tmp_path):
    """A steady flow: every sample is the same, so the averages are the field's values."""
    sim, summary = run_case(POISEUILLE, tmp_path)
    entry = summary["time_series"]["statistics"]
    assert entry["samples"] == 2 and entry["time"] == pytest.approx([0.02, 0.04])
    with h5py.File(tmp_path / "flow_statistics.h5", "r") as f:
        assert f.attrs["weight"] == pytest.approx(0.04 - 0.015)  # to the last sample, from start
        assert "[output.statistics]" in f.attrs["config"]
        y = f["coordinates/y"][...]
        assert y.shape == (3 * 3 + 1,) and y[0] == -1.0 and y[-1] == 1.0
        u, t = 1 - y**2, (1 - y) / 2
        exact = {"ux": u, "uy": 0 * y, "uz": 0 * y, "ux_ux": u * u, "T": t, "ux_T": u * t, "T_T": t * t,
                 "uy_uy": 0 * y, "ux_uy": 0 * y}
        for key, value in exact.items():
            np.testing.assert_allclose(f[f"mean/{key}"][...], value, atol=1e-12, err_msg=key)
        np.testing.assert_allclose(f["covariance/ux_ux"][...], 0.0, atol=1e-12)
        np.testing.assert_allclose(f["covariance/ux_T"][...], 0.0, atol=1e-12)
        h5_ux = f["mean/ux"][...]
    with open(tmp_path / "flow_statistics.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0].keys() >= {"y", "ux", "uy", "uz", "p", "ux_ux", "ux_uy", "T", "ux_T", "T_T", "cov_ux_ux"}
    np.testing.assert_array_equal([float(r["ux"]) for r in rows], h5_ux)


class FakeSystem:
    """What the monitor reads of a system, for fields given as arrays."""

    def __init__(self, sim):
        self.field_names, self.order, self.mesh = sim.system.field_names, sim.system.order, sim.system.mesh
        self.geometry, self.backend = sim.system.geometry, sim.system.backend
        self.quadrature_mass = sim.system.quadrature_mass


@pytest.fixture(scope="module")
def box():
    """A periodic 3 x 2 x 2 box at N = 4, [0, 1] x [-1, 1] x [0, 1]."""
    data = copy.deepcopy(POISEUILLE)
    data["mesh"].update(elements=[3, 2, 2], periodic=[True, True, True])
    data["discretization"]["order"] = 4
    data["physics"].pop("scalars")
    data.pop("scalar"), data.pop("boundary")
    data["initial"] = {}
    sim = Simulation(case_from_dict(data, name="box"), "cpu", None, comm=None)
    return sim


def monitor_for(sim, **settings):
    from lobatto.config.declared import DeclaredValues
    from lobatto.systems.navier_stokes.statistics import StatisticsMonitor
    from lobatto.systems.navier_stokes.statistics_table import STATISTICS

    values = {"start": 0.0, "every": 1, "average": [], "fields": None, **settings}
    return StatisticsMonitor(DeclaredValues(STATISTICS, values), FakeSystem(sim), None, sim.case.mesh)


def test_homogeneous_averages_of_a_known_field(box):
    """ux = y + (x - 1/2) z^3 averaged over x and z is y (GLL quadrature is exact for these
    degrees at N = 4), <ux ux> is y^2 + 1/12 * 1/7; over x only, the plane is y; over all
    three directions, one number. Time weights: the sample at t_n counts t_n - t_(n-1)."""
    x, y, z = box.system.geometry.coords
    rng = np.random.default_rng()
    a = float(rng.uniform(0.5, 2.0))
    u = np.zeros((4,) + x.shape)
    times = [0.3, 0.5, 1.1]  # start 0.2: weights 0.1, 0.2, 0.6
    for average, shape in ((["x", "z"], (9,)), (["x"], (9, 9)), (["x", "y", "z"], ())):
        monitor = monitor_for(box, average=average, start=0.2)
        for step, t in enumerate(times):
            u[0] = (1 + a * t) * (y + (x - 0.5) * z**3)
            u[3] = 2.0
            monitor.after_step(u, step, t, 10)
        values = monitor.averages()
        scale = float(np.dot([0.1, 0.2, 0.6], [1 + a * t for t in times]) / 0.9)
        scale2 = float(np.dot([0.1, 0.2, 0.6], [(1 + a * t) ** 2 for t in times]) / 0.9)
        assert monitor.weight == pytest.approx(0.9) and values["ux"].shape == shape
        yy = monitor.coordinates["y"] if "y" in monitor.coordinates else 0.0
        np.testing.assert_allclose(values["ux"], scale * yy + 0 * values["ux"], atol=1e-13)
        if "z" in monitor.coordinates:  # planes y-z: <ux ux> over x is y^2 + z^6 / 12
            expected = scale2 * (yy**2 + monitor.coordinates["z"] ** 6 / 12)
        elif "y" in monitor.coordinates:
            expected = scale2 * (yy**2 + 1 / 84)
        else:
            expected = scale2 * (1 / 3 + 1 / 84)
        np.testing.assert_allclose(values["ux_ux"], expected, atol=1e-13)
        np.testing.assert_allclose(values["p_p"], 4.0, atol=1e-13)


@pytest.mark.parametrize("average", [["x", "z"], []], ids=["profiles", "3d"])
def test_a_continued_run_equals_an_uninterrupted_one(tmp_path, average):
    """Profiles: continued from a checkpoint written every 2 steps, before that step's sample
(the first sample: nothing averaged yet);
    3-D sums (kept by element in the checkpoint): from a run's final checkpoint, written after
    its last sample. The averages are bitwise those of the uninterrupted run."""
    data = copy.deepcopy(CHANNEL)
    data["output"]["statistics"].update(average=average, start=0.03)
    data["time"]["t_end"] = 0.12
    data["checkpoint"] = {"every": 2, "keep": 5, "at_end": True}
    run_case(data, tmp_path / "whole", name="ch")  # 6 steps: samples at 2, 4 and 6 (t >= 0.03)
    whole, whole_attrs = means(tmp_path / "whole" / "ch_statistics.h5")
    assert whole_attrs["samples"] == 3 and whole_attrs["weight"] == pytest.approx(0.12 - 0.03)
    assert np.abs(whole["ux_ux"] - whole["ux"] ** 2).max() > 1e-6  # fluctuations: a real test
    if average:
        # step 2's checkpoint precedes the first sample: the restored state holds none yet
        run_case(data, tmp_path / "continued", restart=checkpoint_path(tmp_path / "whole", "ch", 2), name="ch")
    else:
        first = copy.deepcopy(data)
        first["time"]["t_end"] = 0.08
        run_case(first, tmp_path / "first", name="ch")
        run_case(data, tmp_path / "continued", restart=checkpoint_path(tmp_path / "first", "ch", 4), name="ch")
    values, attrs = means(tmp_path / "continued" / "ch_statistics.h5")
    assert attrs["samples"] == 3 and attrs["weight"] == whole_attrs["weight"]
    for key, value in whole.items():
        np.testing.assert_array_equal(values[key], value, err_msg=key)


def test_3d_files_read_back_by_pymech_and_vtk(tmp_path):
    pymech = pytest.importorskip("pymech")
    data = copy.deepcopy(POISEUILLE)
    data["output"]["statistics"] = {"every": 1, "start": 0.0}
    run_case(data, tmp_path)
    with h5py.File(tmp_path / "flow_statistics.h5", "r") as f:
        ids, coords = f["element_ids"][...], f["coordinates"][...]
        ux, uxt = f["mean/ux"][...], f["mean/ux_T"][...]
        assert np.array_equal(ids, np.arange(12))
        np.testing.assert_allclose(ux, 1 - coords[1] ** 2, atol=1e-12)
    avg = pymech.readnek(str(tmp_path / "avgflow0.f00001"))
    rms = pymech.readnek(str(tmp_path / "rmsflow0.f00001"))
    flx = pymech.readnek(str(tmp_path / "flxflow0.f00001"))
    for e in range(12):
        np.testing.assert_allclose(avg.elem[e].vel[0], ux[e], atol=1e-14)
        np.testing.assert_allclose(avg.elem[e].temp[0], (1 - coords[1, e]) / 2, atol=1e-12)
        np.testing.assert_allclose(rms.elem[e].vel[0], ux[e] ** 2, atol=1e-12)
        np.testing.assert_allclose(flx.elem[e].vel[0], uxt[e], atol=1e-14)
    assert (tmp_path / "rm2flow0.f00001").exists() and (tmp_path / "avgflow.nek5000").exists()
    from vtk.util.numpy_support import vtk_to_numpy

    from test_vtk_output import read_vtu

    grid = read_vtu(tmp_path / "flow_statistics.vtu")
    points = vtk_to_numpy(grid.GetPoints().GetData())
    u = vtk_to_numpy(grid.GetPointData().GetArray("u"))  # ux, uy, uz joined
    t = vtk_to_numpy(grid.GetPointData().GetArray("T"))
    np.testing.assert_allclose(u[:, 0], 1 - points[:, 1] ** 2, atol=1e-12)
    np.testing.assert_allclose(t, (1 - points[:, 1]) / 2, atol=1e-12)
    arrays = grid.GetPointData()
    names = {arrays.GetArrayName(i): arrays.GetArray(i).GetNumberOfComponents() for i in range(arrays.GetNumberOfArrays())}
    # only ux, uy, uz form a vector; the products stay scalars under their own names
    assert names["u"] == 3 and all(names[k] == 1 for k in ("ux_ux", "ux_uy", "ux_uz", "uy_uy", "uz_uz")), names
    # the VTK cell's points are equispaced: a degree-4 <u u> is interpolated there from order 3
    np.testing.assert_allclose(vtk_to_numpy(arrays.GetArray("ux_ux")), (1 - points[:, 1] ** 2) ** 2, atol=5e-3)


@pytest.mark.parametrize("change,message", [
    ({"average": ["q"]}, "average must be a list of distinct directions"),
    ({"average": ["x", "x"]}, "'x' is named twice"),
    ({"every": 0}, "every"),
    ({"start": -1.0}, "start"),
    ({"bogus": 1}, "bogus"),
])
def test_bad_keys_are_refused(change, message):
    data = copy.deepcopy(POISEUILLE)
    data["output"]["statistics"].update(change)
    with pytest.raises(InputError, match=message):
        case_from_dict(data, name="flow")


@pytest.mark.parametrize("change,message", [
    ({"average": ["y"]}, "not periodic along y"),
    ({"fields": ["ux", "q"]}, "'q' is not a field"),
])
def test_averaging_the_mesh_cannot_take_is_refused(tmp_path, change, message):
    data = copy.deepcopy(POISEUILLE)
    data["output"]["statistics"].update(change)
    with pytest.raises(InputError, match=message):
        Simulation(case_from_dict(data, name="flow"), "cpu", tmp_path, comm=None)


def test_a_deformed_mesh_is_refused_for_averaging(tmp_path):
    data = copy.deepcopy(POISEUILLE)
    data["mesh"]["deform"] = {"y": "0.05*sin(2*pi*x)*(1 - y**2)"}
    with pytest.raises(InputError, match="not aligned along x, z"):
        Simulation(case_from_dict(data, name="flow"), "cpu", tmp_path, comm=None)
