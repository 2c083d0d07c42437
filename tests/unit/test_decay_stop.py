"""[time] until_decayed (runner/decay_stop.py, docs/electromagnetics.md "Stopping when the fields
have decayed"): a pulse leaving a box through absorbing walls stops well before t_end, at a
check (a multiple of decay_interval), once the watched maximum of the last interval is below
the fraction of the largest, and its transforms equal those of a fixed run of that length;
an undamped PEC cavity mode never decays and runs to t_end; a continued run stops at the same
step; bad keys are refused with the key's name."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from lobatto.api import case_from_dict
from lobatto.errors import InputError
from lobatto.runner.simulation import Simulation

DT = 0.01


def pulse(t_end, probes=True, dft=True, **time):
    """A Gaussian pulse moving to +x in a box with absorbing ends, periodic in y and z (1-D)."""
    output = {"every": 0, "formats": []}
    if probes:
        output["probes"] = {"points": [[1.3, 0.1, 0.1]], "fields": ["Ey", "Hz"]}
    if dft:
        output["dft"] = {"frequencies": [0.5, 1.5], "surfaces": ["xmax"], "regions": ["all"], "fields": ["Ey"]}
    return case_from_dict({
        "mesh": {"elements": [6, 1, 1], "upper": [1.5, 0.25, 0.25], "periodic": [False, True, True],
                 "boundary": "absorbing"},
        "discretization": {"order": 4},
        "initial": {"Ey": "exp(-((x-0.5)/0.1)**2)", "Hz": "exp(-((x-0.5)/0.1)**2)"},
        "time": {"t_end": t_end, "dt": DT, **time},
        "output": output,
    }, name="pulse")


def dft_file(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: out.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset) else None)
        out["t_last"] = f.attrs["t_last"]
    return out


def test_a_pulse_stops_early_and_its_transforms_are_a_fixed_runs(tmp_path, capsys):
    summary = Simulation(pulse(10.0, until_decayed=1e-6, decay_interval=0.5), "cpu", tmp_path / "stop",
                         comm=None).run()
    assert "lobatto: fields decayed at step" in capsys.readouterr().out
    decay = summary["decay"]
    assert summary["stopped"] == "decayed" and decay["reached"] and decay["watch"] == "probes"
    # the pulse (peak 1 in Ey and Hz: 2, less on this coarse mesh) passes the probe by t = 1;
    # checks every 50 steps
    assert 1.5 < decay["maximum"] < 2.1 and decay["ratio"] <= 1e-6
    assert summary["steps"] % 50 == 0 and summary["steps"] <= 300 and decay["t"] == summary["t_final"]
    written = json.loads((tmp_path / "stop" / "summary.json").read_text())
    assert written["stopped"] == "decayed" and written["config"]["time"]["until_decayed"] == 1e-6
    assert written["config"]["time"]["decay_watch"] == "probes"
    fixed = Simulation(pulse(summary["t_final"]), "cpu", tmp_path / "fixed", comm=None).run()
    assert fixed["steps"] == summary["steps"] and "stopped" not in fixed
    a, b = dft_file(tmp_path / "stop" / "pulse_dft.h5"), dft_file(tmp_path / "fixed" / "pulse_dft.h5")
    assert a["t_last"] == pytest.approx(summary["t_final"], rel=1e-14) and sorted(a) == sorted(b)
    assert abs(a["surfaces/xmax/flux/poynting_flux"]).min() > 1e-4  # the pulse went out there (6e-4)
    for name, value in a.items():
        assert np.allclose(value, b[name], rtol=1e-12, atol=1e-14 * np.abs(value).max()), name


def test_the_energy_decays_too(tmp_path):
    summary = Simulation(pulse(10.0, probes=False, dft=False, until_decayed=1e-6, decay_interval=0.5), "cpu",
                         tmp_path, comm=None).run()
    assert summary["stopped"] == "decayed" and summary["decay"]["watch"] == "energy"  # the default without probes
    # the energy stays (the pulse is inside) until t ~ 1 and is gone by 2
    assert 100 <= summary["steps"] <= 250 and summary["energy"]["final"] <= 1e-6 * summary["energy"]["initial"]


def test_an_undamped_cavity_mode_runs_to_t_end(tmp_path):
    case = case_from_dict({
        "mesh": {"elements": [2, 2, 1], "boundary": "pec"}, "discretization": {"order": 3},
        "initial": {"Ez": "sin(pi*x)*sin(pi*y)"},
        "time": {"t_end": 3.0, "until_decayed": 1e-3, "decay_interval": 0.75},
        "output": {"every": 0, "formats": [], "probes": {"points": [[0.3, 0.4, 0.5]], "fields": ["Ez"]}},
    }, name="cavity")
    summary = Simulation(case, "cpu", tmp_path, comm=None).run()
    assert summary["stopped"] == "t_end" and summary["t_final"] == pytest.approx(3.0)
    assert not summary["decay"]["reached"] and summary["decay"]["checks"] == 4
    assert summary["decay"]["ratio"] > 0.9  # a whole period (1/sqrt(2) = 0.71) in every interval


def test_a_continued_run_stops_at_the_same_step(tmp_path):
    time = {"until_decayed": 1e-6, "decay_interval": 0.5}
    case = pulse(10.0, dft=False, **time)
    case = case_from_dict({**case.to_dict(), "checkpoint": {"every": 70, "keep": 10}}, name="pulse")
    whole = Simulation(case, "cpu", tmp_path / "whole", comm=None).run()
    assert whole["stopped"] == "decayed" and whole["steps"] > 140
    checkpoint = tmp_path / "whole" / "checkpoints" / "pulse_000140"  # inside the third interval
    summary = Simulation(case, "cpu", tmp_path / "again", comm=None).restart(checkpoint).run()
    assert summary["stopped"] == "decayed" and summary["steps"] == whole["steps"]
    assert summary["decay"] == whole["decay"]


@pytest.mark.parametrize("time, probes, message", [
    ({"until_decayed": 0.0, "decay_interval": 1.0}, True, "until_decayed"),
    ({"until_decayed": 1.0, "decay_interval": 1.0}, True, "until_decayed"),
    ({"until_decayed": "1e-6", "decay_interval": 1.0}, True, "until_decayed"),
    ({"until_decayed": 1e-6}, True, "decay_interval is required with until_decayed"),
    ({"until_decayed": 1e-6, "decay_interval": 6.0}, True, "at most t_end / 2"),
    ({"until_decayed": 1e-6, "decay_interval": -1.0}, True, "decay_interval"),
    ({"decay_interval": 1.0}, True, "applies with until_decayed only"),
    ({"decay_watch": "energy"}, True, "applies with until_decayed only"),
    ({"until_decayed": 1e-6, "decay_interval": 1.0, "decay_watch": "field"}, True, "decay_watch"),
    ({"until_decayed": 1e-6, "decay_interval": 1.0, "decay_watch": "probes"}, False, "needs \\[output.probes\\]"),
])
def test_bad_keys(time, probes, message):
    with pytest.raises(InputError, match=message):
        pulse(10.0, probes=probes, **time)


def test_t_end_stays_required():
    with pytest.raises(InputError, match="t_end is required.*until_decayed stops before it"):
        case_from_dict({"mesh": {"elements": [1, 1, 1]}, "time": {"until_decayed": 1e-6, "decay_interval": 1.0}})
