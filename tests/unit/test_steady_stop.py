"""[time] steady_tolerance (runner/steady_stop.py, docs/navier-stokes.md "Steady state"): a
channel at constant flow rate started from rest converges to Poiseuille flow (ux = 1 - y^2:
measured, the change per unit time falls from 20 after the first step to 6e-2 at step 4, 1e-3
at step 8, 5e-6 at step 15); the run stops before t_end once the relative change per unit time
is below the tolerance, at a step that is a multiple of steady_every, writes its final
snapshot and checkpoint at that step and says so; a run too short to get there ends at t_end
as before."""

from __future__ import annotations

import json
import h5py
import numpy as np
import pytest

from lobatto.api import case_from_dict
from lobatto.errors import InputError
from lobatto.runner.simulation import Simulation

NU = 2.0
TOLERANCE = 1e-3


def channel(t_end, **time):
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": NU, "flow_rate": 2.0 / 3.0},
        "mesh": {"elements": [1, 2, 1], "lower": [0.0, -1.0, 0.0], "upper": [1.0, 1.0, 1.0],
                 "periodic": [True, False, True], "boundary": "wall"},
        "discretization": {"order": 4},
        "time": {"integrator": "bdf2", "dt": 0.05, "t_end": t_end, **time},
        "exact": {"ux": "1 - y**2"},
        "checkpoint": {"every": 100000},
        "output": {"formats": ["hdf5"], "name": "channel", "log_every": 1000},
    }, name="channel")


def test_stops_at_the_steady_state(tmp_path, capsys):
    sim = Simulation(channel(50.0, steady_tolerance=TOLERANCE, steady_every=4), "cpu", tmp_path, comm=None)
    summary = sim.run()
    assert "lobatto: steady at step" in capsys.readouterr().out
    steady = summary["steady"]
    assert summary["stopped"] == "steady" and steady["reached"] and steady["change"] < TOLERANCE
    assert summary["steps"] % 4 == 0 and 8 < summary["steps"] <= 16 and steady["t"] == summary["t_final"]
    assert summary["errors"]["ux"]["max"] < TOLERANCE  # Poiseuille flow
    final = summary["outputs"][-1]
    assert final["step"] == summary["steps"]
    with h5py.File(tmp_path / final["files"][0], "r") as f:
        assert float(f.attrs["time"]) == pytest.approx(summary["t_final"], rel=1e-14)
    assert (tmp_path / "checkpoints" / f"channel_{summary['steps']:06d}").is_dir()
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["stopped"] == "steady" and written["config"]["time"]["steady_tolerance"] == TOLERANCE


def test_memory_estimate_counts_two_states():
    from lobatto.backends import get_backend
    from lobatto.runner.build import memory_items, run_layout
    from lobatto.systems.registry import get_system

    case, system_class = channel(1.0, steady_tolerance=1e-3), get_system("navier_stokes")
    layout = run_layout(case, system_class, get_backend("cpu"), 1, 2)
    items = [item for item in memory_items(case, system_class, layout) if "steady_tolerance" in item.what]
    assert len(items) == 1 and items[0].host == 2 * 4 * 2 * 5 ** 3 * 8
    assert not [item for item in memory_items(channel(1.0), system_class, layout) if "steady" in item.what]


def test_a_run_that_does_not_get_there_ends_at_t_end(tmp_path):
    summary = Simulation(channel(0.2, steady_tolerance=TOLERANCE, steady_every=1), "cpu", tmp_path,
                         comm=None).run()
    assert summary["stopped"] == "t_end" and summary["steps"] == 4 and summary["t_final"] == pytest.approx(0.2)
    assert summary["steady"]["change"] > TOLERANCE and not summary["steady"]["reached"]


@pytest.mark.parametrize("time, message", [
    ({"steady_tolerance": 0.0}, "steady_tolerance"),
    ({"steady_tolerance": 1e-3, "steady_every": 0}, "steady_every"),
    ({"steady_every": 5}, "applies with steady_tolerance only"),
])
def test_bad_keys(time, message):
    with pytest.raises(InputError, match=message):
        channel(1.0, **time)


def test_a_continued_run_stops_where_the_uninterrupted_one_does(tmp_path, capsys):
    """The reference of the steady-state test (the state at the last check) is in the
    checkpoint: continued from step 6 (between the checks at 4 and 8, so the checkpoint holds
    the state of step 4) or from step 8 (a check: the checkpoint's own state), the run stops
    at step 12 with the same change, bit for bit, and says the same. Without it the run from
    step 6 compared step 8 with step 6 (change 5.6e-3 against 2.7e-2 over steps 4 to 8) and
    stopped at step 8 under this tolerance."""
    case = channel(50.0, steady_tolerance=1e-2, steady_every=4)
    data = {**case.to_dict(), "checkpoint": {"every": 2, "keep": 10}}
    data["output"] = {**data["output"], "formats": []}
    case = case_from_dict(data, name="channel")
    full = Simulation(case, "cpu", tmp_path / "full", comm=None).run()
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("lobatto: steady")]
    assert full["stopped"] == "steady" and full["steps"] == 12 and len(said) == 1
    checkpoints = tmp_path / "full" / "checkpoints"
    with h5py.File(checkpoints / "channel_000006" / "rank00000.h5", "r") as between, \
            h5py.File(checkpoints / "channel_000008" / "rank00000.h5", "r") as at_check, \
            h5py.File(checkpoints / "channel_000004" / "rank00000.h5", "r") as step4:
        assert np.array_equal(between["outputs/steady/previous"][...], step4["state"][...])
        assert "outputs/steady" not in at_check
    for step in (6, 8):
        rest = Simulation(case, "cpu", tmp_path / f"from{step}", comm=None).restart(checkpoints / f"channel_{step:06d}")
        summary = rest.run()
        again = [line for line in capsys.readouterr().out.splitlines() if line.startswith("lobatto: steady")]
        assert summary["steps"] == full["steps"] and summary["t_final"] == full["t_final"], step
        assert summary["steady"] == full["steady"] and again == said, (step, summary["steady"], full["steady"])


def test_a_simulation_that_has_run_forgets_its_reference_on_restart(tmp_path, capsys):
    """A Simulation keeps its SteadyStop across runs; restored from a checkpoint at a check
    (step 8, no reference array in it), it must compare against that state, not against the
    state its own earlier run ended with (step 12), and stop at step 12 again."""
    case = channel(50.0, steady_tolerance=1e-2, steady_every=4)
    data = {**case.to_dict(), "checkpoint": {"every": 4, "keep": 10}}
    data["output"] = {**data["output"], "formats": []}
    case = case_from_dict(data, name="channel")
    sim = Simulation(case, "cpu", tmp_path / "run", comm=None)
    full = sim.run()
    assert full["stopped"] == "steady" and full["steps"] == 12
    capsys.readouterr()
    again = sim.restart(tmp_path / "run" / "checkpoints" / "channel_000008").run()
    assert again["steps"] == 12 and again["steady"] == full["steady"], (again["steady"], full["steady"])
