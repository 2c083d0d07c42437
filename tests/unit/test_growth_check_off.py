"""``[time] growth_check = false`` (runner/simulation.py): the run says once, at its start, that
the growth guard is off, and the finite-value check still stops it with exit 1 (a blow-up
that overflows the energy, and NaN in the fields); with the guard on, no such line."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.cli import main
from lobatto.errors import SolverError

#: a line of elements with a [pml] (the energy is not bounded: the guard's case), periodic across
LINE = {"mesh": {"elements": [6, 1, 1], "upper": [1.5, 0.25, 0.25], "periodic": [False, True, True],
                 "boundary": "pec"},
        "discretization": {"order": 2}, "physics": {"equations": "maxwell"}, "output": {"formats": []},
        "initial": {"Ey": "exp(-((x-0.75)/0.1)**2)", "Hz": "exp(-((x-0.75)/0.1)**2)"},
        "pml": {"sides": ["xmin", "xmax"], "elements": 1, "reflection": 1e-4}}
WARNING = "lobatto: warning: [time] growth_check = false"


def build(tmp_path, **time):
    return Simulation(case_from_dict(dict(LINE, time={"t_end": 20.0, **time})), backend="cpu",
                      output_dir=tmp_path, comm=None)


def test_the_guard_off_is_said_once_and_a_blow_up_still_stops(tmp_path, capsys):
    # cfl 4: far past the stable step (cfl_check off), so the fields overflow in some 50 steps
    sim = build(tmp_path / "off", cfl=4.0, cfl_check=False, growth_check=False)
    out = capsys.readouterr().out
    assert sim.guard is None and out.count(WARNING) == 1 and out.count("\n") == 1, out
    with pytest.raises(SolverError) as error:
        while not sim.finished:
            sim.advance(20)
    assert error.value.collective and "too large to square at step" in str(error.value)
    assert sim.step_count < 200
    assert WARNING not in capsys.readouterr().out  # said at the start only
    sim = build(tmp_path / "on", cfl=4.0, cfl_check=False)
    assert sim.guard is not None and WARNING not in capsys.readouterr().out


def test_nan_in_the_fields_stops_the_run_with_the_guard_off(tmp_path, capsys):
    sim = build(tmp_path, growth_check=False)
    sim.advance(3)
    u = sim.backend.to_host(sim.u)
    point = tuple(np.random.default_rng().integers(0, n) for n in u.shape)
    sim.u[point] = np.nan  # (the CPU backend's state is the host array)
    with pytest.raises(SolverError) as error:
        sim.advance(20)
    assert "non-finite field values (NaN/Inf) at step" in str(error.value)


def test_the_command_line_exits_1(tmp_path, capsys):
    case = tmp_path / "off.toml"
    case.write_text(case_from_dict(dict(LINE, time={"t_end": 20.0, "cfl": 4.0, "cfl_check": False,
                                                    "growth_check": False})).to_toml())
    assert main(["run", str(case), "--output", str(tmp_path / "out"), "--quiet"]) == 1
    captured = capsys.readouterr()
    assert captured.out.count(WARNING) == 1
    assert captured.err.count("\n") == 1 and "too large to square" in captured.err, captured.err
