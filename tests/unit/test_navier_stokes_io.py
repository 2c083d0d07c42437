"""A Navier–Stokes run's outputs read by independent readers (docs/navier-stokes.md,
docs/output.md): pymech reads the Nek5000 file (velocity in ``vel``, pressure in ``pres``),
VTK's XML reader the Lagrange cells (``u`` = ux, uy, uz and ``p``, interpolated back to the
GLL points by VTK), h5py the HDF5 snapshot and its configuration; ``steps.jsonl`` and
``summary.json`` parse and hold each step's numbers.

The flow is fresh each time: a curved duct with a random inflow profile on xmin, an outflow
on xmax, walls elsewhere, and a random initial disturbance.
"""

from __future__ import annotations

import json
import tomllib

import numpy as np
import pytest

from lobatto.api import case_from_dict
from lobatto.runner.simulation import Simulation
from nek_readers import read_with_pymech

vtk = pytest.importorskip("vtk")
h5py = pytest.importorskip("h5py")
from test_vtk_output import cell_weights, read_vtu  # noqa: E402
from vtk.util.numpy_support import vtk_to_numpy  # noqa: E402

ORDER = 4
STEPS = 3
FIELDS = ("ux", "uy", "uz", "p")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    rng = np.random.default_rng()
    a, b, c, d = (float(v) for v in rng.uniform(0.5, 1.5, 4))
    inflow = f"{a:.6f}*(1 - y**2)*(1 - z**2)*(1 + {b - 1:.6f}*y)"
    case = case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.05},
        "mesh": {"elements": [3, 2, 2], "lower": [0.0, -1.0, -1.0], "upper": [3.0, 1.0, 1.0],
                 "boundaries": {"xmax": "outflow"},
                 "deform": {"y": f"{0.05 * c:.6f}*sin(pi*x/3)*(1 - y**2)*cos(pi*z/2)"}},
        "discretization": {"order": ORDER},
        "time": {"integrator": "bdf2", "dt": 0.02, "t_end": STEPS * 0.02},
        "boundary": {"xmin": {"ux": inflow}},
        "initial": {"ux": inflow, "uy": f"{0.1 * d:.6f}*sin(pi*x/3)*(1 - y**2)*(1 - z**2)",
                    "p": f"{0.1 * c:.6f}*(3 - x)"},
        "output": {"formats": ["hdf5", "nek", "vtk"], "every": 2, "name": "duct"},
    }, name="duct")
    out = tmp_path_factory.mktemp("io")
    sim = Simulation(case, "cpu", out, comm=None)
    summary = sim.run()
    fields = sim.fields()
    assert np.abs(fields["ux"]).max() > 0.3 and np.abs(fields["p"]).max() > 1e-3  # a real flow
    return sim, summary, fields, out


def test_pymech_reads_velocity_and_pressure(run):
    sim, summary, fields, out = run
    nek_files = [f for f in summary["outputs"][-1]["files"] if f.startswith("duct0.f")]
    assert len(nek_files) == 1 and len(summary["outputs"]) == 2  # steps 2 and 3
    nek = read_with_pymech(out / nek_files[0])
    ids = sim.system.mesh.element_ids  # pymech places elements by global id
    assert nek["step"] == STEPS and nek["time"] == pytest.approx(sim.t, rel=1e-13)
    assert nek["nel"] == sim.system.num_elements and nek["scalars"].size == 0
    assert np.array_equal(nek["coords"][:, ids], sim.coordinates())  # float64 file: exact
    assert np.array_equal(nek["velocity"][:, ids], np.stack([fields[c] for c in ("ux", "uy", "uz")]))
    assert np.array_equal(nek["pressure"][ids], fields["p"])
    index = (out / "duct.nek5000").read_text()
    assert "numtimesteps: 2" in index, index


def test_vtk_reads_u_and_p_at_the_gll_points(run):
    sim, summary, fields, out = run
    vtu = [f for f in summary["outputs"][-1]["files"] if f.endswith(".vtu")]
    assert vtu == [f"duct_{STEPS:06d}.vtu"]
    grid = read_vtu(out / vtu[0])
    pd = grid.GetPointData()
    names = sorted(pd.GetArrayName(i) for i in range(pd.GetNumberOfArrays()))
    assert names == ["p", "u"] and pd.GetArray("u").GetNumberOfComponents() == 3
    values = np.concatenate([vtk_to_numpy(pd.GetArray("u")), vtk_to_numpy(pd.GetArray("p"))[:, None]], axis=1)
    ids = vtk_to_numpy(grid.GetCellData().GetArray("element_id"))
    weights = cell_weights(grid.GetCell(0), ORDER)
    n = ORDER + 1
    scale = np.array([np.abs(fields[name]).max() for name in FIELDS])
    for e in range(grid.GetNumberOfCells()):
        cell = grid.GetCell(e)
        at_gll = weights @ values[[cell.GetPointId(v) for v in range(n ** 3)]]  # VTK's interpolation
        local = int(np.flatnonzero(sim.system.mesh.element_ids == ids[e])[0])
        expected = np.stack([fields[name][local].reshape(-1) for name in FIELDS], axis=1)
        assert (np.abs(at_gll - expected).max(axis=0) <= 1e-12 * scale).all(), e
    assert grid.GetFieldData().GetArray("TimeValue").GetValue(0) == pytest.approx(sim.t, rel=1e-15)
    pvd = (out / "duct.pvd").read_text()
    assert "duct_000002.vtu" in pvd and "duct_000003.vtu" in pvd


def test_h5py_reads_the_snapshot_and_its_configuration(run):
    sim, summary, fields, out = run
    (h5,) = [f for f in summary["outputs"][-1]["files"] if f.endswith(".h5")]
    with h5py.File(out / h5, "r") as f:
        assert [str(n) for n in f.attrs["field_names"]] == list(FIELDS)
        assert f.attrs["step"] == STEPS and f.attrs["time"] == sim.t and f.attrs["order"] == ORDER
        assert f.attrs["equations"] == "navier_stokes"
        for name in FIELDS:
            assert np.array_equal(f[f"fields/{name}"][:], fields[name]), name
        coords = sim.coordinates()
        for a, axis in enumerate("xyz"):
            assert np.array_equal(f[f"mesh/{axis}"][:], coords[a]), axis
        config = tomllib.loads(str(f.attrs["config"]))
    # the stored configuration is the case: parsed again, it is the same run
    assert config["physics"]["equations"] == "navier_stokes" and config["physics"]["viscosity"] == 0.05
    assert config["mesh"]["boundaries"]["xmax"] == "outflow"
    assert config["boundary"]["xmin"]["ux"] == sim.case.to_dict()["boundary"]["xmin"]["ux"]
    assert case_from_dict(config, name="duct").to_dict() == sim.case.to_dict()


def test_steps_jsonl_and_summary(run):
    sim, summary, fields, out = run
    rows = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    assert [r["t"] for r in rows] == pytest.approx([0.02 * k for k in range(1, STEPS + 1)], rel=1e-14)
    for r in rows:
        assert r["dt"] == pytest.approx(0.02, rel=1e-14) and 0 < r["cfl"] < 1
        assert isinstance(r["pressure_iterations"], int) and r["pressure_iterations"] >= 1
        assert isinstance(r["velocity_iterations"], int) and r["velocity_iterations"] >= 1
        assert r["pressure_residual"] >= 0 and r["velocity_residual"] >= 0 and r["seconds"] > 0
        assert {"kinetic_energy", "enstrophy", "dissipation", "divergence"} <= set(r)
    last = sim.system.step_report()
    assert rows[-1]["pressure_iterations"] == last["pressure_iterations"]
    assert rows[-1]["kinetic_energy"] == last["kinetic_energy"]
    saved = json.loads((out / "summary.json").read_text())
    ns = saved["navier_stokes"]
    assert saved["steps"] == STEPS and not ns["pressure_null_space"]  # the outflow fixes p
    assert set(ns["parts"]) >= {"advection", "pressure", "velocity", "diagnostics"}
    assert all(part["seconds"] >= 0 for part in ns["parts"].values())
    assert sum(part["share"] for part in ns["parts"].values()) == pytest.approx(1.0)
    assert ns["pressure_iterations_per_step"] == pytest.approx(np.mean([r["pressure_iterations"] for r in rows]))
    assert ns["velocity_iterations_per_step"] == pytest.approx(np.mean([r["velocity_iterations"] for r in rows]))
