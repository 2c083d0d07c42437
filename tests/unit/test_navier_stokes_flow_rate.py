"""The constant flow rate's response (systems/navier_stokes/flow_rate.py) under a variable dt:
solved again only when dt changes, kept in checkpoints, and a continued run bitwise equal to
the uninterrupted one; a checkpoint without the kept sigma (written before it was kept) still
continues."""

from __future__ import annotations

import json

import h5py
import numpy as np

from lobatto.api import Simulation, case_from_dict
from lobatto.systems.navier_stokes import flow_rate


def channel(t_end: float = 4.0):
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.01, "flow_rate": 1.0},
        "mesh": {"elements": [2, 2, 2], "lower": [0.0, -1.0, 0.0], "upper": [6.283185307179586, 1.0, 3.14159],
                 "periodic": [True, False, True], "boundary": "wall"},
        "discretization": {"order": 4},
        "time": {"target_cfl": 0.5, "t_end": t_end},
        "initial": {"ux": "1.5*(1-y**2) + 0.2*(1-y**2)*sin(z)", "uy": "0.1*(1-y**2)**2*cos(x)"},
        "output": {"formats": []}}, name="ch")


def test_response_is_kept_while_dt_is_and_a_continued_run_is_bitwise(tmp_path, monkeypatch):
    solved = []
    respond = flow_rate.FlowRate._respond
    monkeypatch.setattr(flow_rate.FlowRate, "_respond", lambda self, sigma: (solved.append(sigma), respond(self, sigma)))
    first = Simulation(channel(), "cpu", tmp_path / "a", comm=None)
    first.advance(20)
    checkpoint = first.checkpoint()
    first.run()
    steps = first.step_count
    # the controller keeps dt for most steps; landing_dt's rounding alone does not re-solve
    assert steps > 20 and len(solved) <= steps // 4, (len(solved), steps)
    assert np.all(np.abs(np.diff(solved)) > flow_rate.SIGMA_TOLERANCE * np.abs(solved[1:]))
    continued = Simulation(channel(), "cpu", tmp_path / "b", comm=None)
    continued.restart(checkpoint)
    continued.run()
    a, b = first.fields(), continued.fields()
    assert continued.step_count == steps and all(np.array_equal(a[k], b[k]) for k in a)
    assert abs(first.system.flow_rate.mean(first.u[:3]) - 1.0) < 1e-12


def test_a_checkpoint_without_the_sigma_continues(tmp_path):
    first = Simulation(channel(1.0), "cpu", tmp_path / "a", comm=None)
    first.advance(5)
    checkpoint = first.checkpoint()
    with h5py.File(checkpoint / "index.h5", "r+") as f:  # as written before the sigma was kept
        numbers = json.loads(f.attrs["history_numbers"])
        assert numbers.pop("system/flow_rate_sigma") > 0
        f.attrs["history_numbers"] = json.dumps(numbers)
        if "index_sha256" in f.attrs:
            del f.attrs["index_sha256"]
    continued = Simulation(channel(1.0), "cpu", tmp_path / "b", comm=None)
    continued.restart(checkpoint)
    continued.run()
    first.run()
    a, b = first.fields(), continued.fields()
    assert all(np.allclose(a[k], b[k], rtol=0, atol=1e-9 * max(1.0, np.abs(a[k]).max())) for k in a)


def test_fields_are_a_copy_that_a_step_does_not_change(tmp_path):
    sim = Simulation(channel(1.0), "cpu", tmp_path / "a", comm=None)
    before = sim.fields()
    kept = {name: values.copy() for name, values in before.items()}
    sim.advance(1)
    assert all(np.array_equal(before[name], kept[name]) for name in kept)
    assert not np.array_equal(sim.fields()["uy"], kept["uy"])
