"""The Python API (lobatto.api): cases from dicts, changed copies, runs and step-by-step control."""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest

import lobatto
from lobatto.api import Simulation, available_systems, case_from_dict, load_case, run, with_changes
from lobatto.errors import InputError

CAVITY = {
    "mesh": {"elements": [2, 2, 2]},
    "discretization": {"order": 5},
    "initial": {"Ez": "sin(pi*x)*sin(pi*y)"},
    "exact": {"Ez": "sin(pi*x)*sin(pi*y)*cos(sqrt(2)*pi*t)",
              "Hx": "-sin(pi*x)*cos(pi*y)*sin(sqrt(2)*pi*t)/sqrt(2)",
              "Hy": "cos(pi*x)*sin(pi*y)*sin(sqrt(2)*pi*t)/sqrt(2)"},
    "time": {"t_end": 0.25, "cfl": 0.4},
    "output": {"formats": ["hdf5"]},
}


def test_top_level_names_are_the_api():
    assert lobatto.run is run and lobatto.case_from_dict is case_from_dict and lobatto.Simulation is Simulation
    assert set(available_systems()) == {"maxwell", "acoustics", "poisson", "navier_stokes"}
    with pytest.raises(AttributeError):
        lobatto.no_such_function  # noqa: B018


def test_run_from_dict_gives_arrays_that_match_the_exact_solution(tmp_path):
    result = run(CAVITY, backend="cpu", output_dir=tmp_path)
    assert result.summary["equations"] == "maxwell"
    assert set(result.fields) == {"Ex", "Ey", "Ez", "Hx", "Hy", "Hz"}
    x, y = result.coordinates[0], result.coordinates[1]
    t = result.summary["t_final"]
    exact = np.sin(np.pi * x) * np.sin(np.pi * y) * np.cos(math.sqrt(2) * np.pi * t)
    assert np.abs(result.fields["Ez"] - exact).max() < 1e-4
    assert result.errors["all"]["l2"] < 1e-4
    # what the API returned is what the run wrote, read back with h5py
    snapshot = tmp_path / result.summary["outputs"][-1]["files"][0]
    with h5py.File(snapshot, "r") as f:
        assert np.array_equal(f["fields/Ez"][...], result.fields["Ez"])
        assert f.attrs["equations"] == "maxwell"


def test_with_changes_rechecks_and_keeps_the_rest():
    case = case_from_dict(CAVITY, name="study")
    finer = with_changes(case, {"discretization.order": 7, "physics.epsilon": 2.0})
    assert finer.discretization.order == 7 and finer.physics.epsilon == 2.0
    assert finer.mesh.elements == case.mesh.elements and finer.name == "study"
    assert case.discretization.order == 5  # the original is untouched
    with pytest.raises(InputError, match=r"\[discretization\] order must be an integer from 1 to"):
        with_changes(case, {"discretization.order": 0})
    with pytest.raises(InputError, match="did you mean 'physics.epsilon'"):
        with_changes(case, {"physics.epsilonn": 2.0})


def test_simulation_steps_by_hand_equal_a_whole_run(tmp_path):
    case = case_from_dict(CAVITY)
    whole = run(case, backend="cpu", output_dir=tmp_path / "a")
    sim = Simulation(case, backend="cpu", output_dir=tmp_path / "b", comm=None)
    sim.advance(3)
    assert sim.step_count == 3 and sim.t == pytest.approx(3 * sim.dt)
    assert not np.array_equal(sim.fields()["Ez"], whole.fields["Ez"])
    summary = sim.run()  # the remaining steps
    assert summary["steps"] == whole.summary["steps"]
    for name, values in whole.fields.items():
        assert np.array_equal(sim.fields()[name], values), name


def test_bad_dict_names_the_key():
    with pytest.raises(InputError, match=r"<mine>: missing required section \[mesh\]"):
        case_from_dict({"time": {"t_end": 1.0}}, name="mine")
    with pytest.raises(InputError, match=r"<mine>: \[mesh\] elements is required"):
        case_from_dict({"mesh": {}, "time": {"t_end": 1.0}}, name="mine")


def test_load_case_reads_the_examples():
    """Every example parses, examples/2d/ too: those are 2-D boxes (two entries of [mesh]
    elements) that the 2-D checks of the runner and of their system accept, each listed in
    examples/2d/README.md."""
    from pathlib import Path

    from lobatto.runner.dimension import check_dimension
    from lobatto.systems.registry import get_system

    examples = Path(__file__).resolve().parents[2] / "examples"
    for path in sorted(examples.glob("*.toml")):
        case = load_case(path)
        assert case.physics.equations in available_systems()
    planar = sorted((examples / "2d").glob("*.toml"))
    assert len(planar) >= 3
    listed = (examples / "2d" / "README.md").read_text()
    for path in planar:
        case = load_case(path)
        assert case.physics.equations in available_systems(), path.name
        assert f"examples/2d/{path.name}" in listed, f"{path.name} is not in examples/2d/README.md"
        if not case.mesh.from_file:
            assert len(case.mesh.elements) == 2, path.name
            system = get_system(case.physics.equations)
            system.check_dimension(case, 2)
            check_dimension(case, system.spec.for_case(case.physics.values, InputError), 2)
