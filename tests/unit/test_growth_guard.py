"""The growth guard (runner/growth_guard.py): an unstable Maxwell run with a PML, dispersive
poles or sources stops with exit 1 naming the step, early (W ~ 1e4 to 1e6 times the run's
scale, not 1e160); a continuous wave on a resonance (W ~ t^2), delayed pulses, a TF/SF plane
wave and the examples with layers, sources or poles do not trip it. ``closest`` is the largest
W_n / (P_a G(a, n)) the guard saw: a stable run stays far under RISE = 1e4."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict, load_case, with_changes
from lobatto.errors import SolverError
from lobatto.runner.growth_guard import JUMP, RISE, GrowthGuard

ROOT = Path(__file__).resolve().parents[2]
#: a line of elements, periodic across (1-D in effect), a pulse moving +x
LINE = {"mesh": {"elements": [6, 1, 1], "upper": [1.5, 0.25, 0.25], "periodic": [False, True, True],
                 "boundary": "pec"},
        "discretization": {"order": 3}, "physics": {"equations": "maxwell"}, "output": {"formats": []},
        "initial": {"Ey": "exp(-((x-0.75)/0.1)**2)", "Hz": "exp(-((x-0.75)/0.1)**2)"}}
LAYERS = {"sides": ["xmin", "xmax"], "elements": 1, "reflection": 1e-4}
#: the unit PEC cube, whose TE101 mode (Ey ~ sin(pi x) sin(pi z)) has f = 1/sqrt(2)
CAVITY = {"mesh": {"elements": [2, 2, 2], "boundary": "pec"}, "discretization": {"order": 3},
          "physics": {"equations": "maxwell"}, "time": {"t_end": 60.0}, "output": {"formats": []}}
RESONANCE = 1 / math.sqrt(2)


def drude(where, plasma, collision):
    return {"slab": {"where": where, "sampling": "element", "epsilon": 1.0, "model": "drude",
                     "poles": [{"plasma_frequency": plasma, "collision_frequency": collision}]}}


def dipole(**waveform):
    return {"a": {"type": "electric_dipole", "position": [0.43, 0.52, 0.47], "direction": [0, 1, 0], **waveform}}


def simulate(data, directory, steps=None, chunk=20):
    """(simulation, the SolverError that stopped it or None, energies after each chunk)."""
    sim = Simulation(case_from_dict(data), backend="cpu", output_dir=directory, comm=None)
    energies = [sim.energy_initial]
    try:
        while not sim.finished and (steps is None or sim.step_count < steps):
            sim.advance(chunk)
            energies.append(sim.system.energy(sim.u))
    except SolverError as error:
        return sim, error, np.array(energies + [sim.system.energy(sim.u)])
    return sim, None, np.array(energies)


def scale_of(sim) -> float:
    """The largest energy before the growth: the initial one here."""
    return sim.energy_initial


# It trips -----------------------------------------------------------------------------
def test_drude_medium_reaching_into_the_layer_never_grows_silently(tmp_path):
    """Issue 33's case, small: a Drude medium that reaches into the [pml] layer grew to 1e159
    and exited 0. Now it stops at the first check past RISE times its scale, or (once the
    medium is stable in the layer) runs to t_end without growing."""
    data = dict(LINE, material=drude("x - 1.0", 5.0, 0.1), pml=LAYERS, time={"t_end": 6.0},
                discretization={"order": 2})
    sim, error, energies = simulate(data, tmp_path)
    if error is None:  # the stable medium in the layer (its own tests measure how stable)
        assert sim.finished and energies.max() <= 2 * energies[0]
        return
    message = str(error)
    assert error.collective and f"at step {sim.step_count}," in message
    assert "grew exponentially" in message and "terms present: pml, dispersion.slab" in message
    assert "[material.slab] (dispersive) reaches into the [pml] layer on 1 element;" in message
    assert "[time] growth_check = false" in message
    assert RISE * scale_of(sim) <= energies[-1] <= 1e6 * scale_of(sim)
    assert np.all(energies[:-1] < RISE * scale_of(sim))  # not a check later than needed


def test_a_layer_stepped_too_long_stops_early(tmp_path):
    """The layer's rates over the step (dt 1.8 x the fitted one, cfl_check = false): the energy
    leaves its scale at about t = 7 and grows 1000-fold per check; stopped at the first check
    over RISE times the scale."""
    fitted = Simulation(case_from_dict(dict(LINE, pml=LAYERS, time={"t_end": 1.0})), backend="cpu",
                        output_dir=tmp_path / "fitted", comm=None).dt
    data = dict(LINE, pml=LAYERS, time={"t_end": 10.0, "dt": 1.8 * fitted, "cfl_check": False})
    sim, error, energies = simulate(data, tmp_path / "long")
    assert error is not None and f"at step {sim.step_count}," in str(error) and "terms present: pml" in str(error)
    assert 0.6 < sim.t / 10.0 < 0.9
    assert RISE * scale_of(sim) <= energies[-1] <= 1e7 * scale_of(sim)
    assert energies[-2] < RISE * scale_of(sim)


def test_a_stiff_pole_stepped_too_long_stops_early(tmp_path):
    """A Drude pole whose decay rate (collision frequency 22) times the wave's step is past
    lsrk45's reach: refused unless cfl_check = false; then stopped at the first check over
    RISE times the scale, and run on with growth_check = false."""
    data = dict(LINE, material=drude("x - 0.5", 1.0, 22.0), time={"t_end": 4.0, "cfl_check": False},
                mesh=dict(LINE["mesh"], boundary="absorbing"))
    sim, error, energies = simulate(data, tmp_path / "on")
    assert error is not None and "dispersion.slab" in str(error) and sim.step_count == 40
    assert RISE * scale_of(sim) <= energies[-1] <= 1e6 * scale_of(sim)
    off = dict(data, time=dict(data["time"], growth_check=False))
    sim, error, energies = simulate(off, tmp_path / "off", steps=60)
    assert error is None and sim.guard is None and energies[-1] > 1e6 * energies[0]


def test_a_dipole_stepped_too_long_stops(tmp_path):
    """A continuous dipole in a PEC cavity with dt 1.4 x the cfl one (cfl_check = false): the
    sources' allowance is a factor (t_n / t_a)^2, the instability's growth exponential."""
    stable = Simulation(case_from_dict(dict(CAVITY, source=dipole(waveform="continuous", frequency=RESONANCE,
                                                                  ramp=0.0))), backend="cpu",
                        output_dir=tmp_path / "stable", comm=None).dt
    data = dict(CAVITY, time={"t_end": 40.0, "dt": 1.4 * stable, "cfl_check": False},
                source=dipole(waveform="continuous", frequency=RESONANCE, ramp=0.0))
    sim, error, energies = simulate(data, tmp_path / "long")
    assert error is not None and "terms present: sources" in str(error) and "the sources explain" in str(error)
    assert sim.step_count <= 100 and np.isfinite(energies[-1]) and energies[-1] < 1e12


def test_the_command_line_exits_1_naming_the_step(tmp_path):
    text = """
[mesh]
elements = [6, 1, 1]
upper = [1.5, 0.25, 0.25]
periodic = [false, true, true]
boundary = "absorbing"
[discretization]
order = 3
[initial]
Ey = "exp(-((x-0.75)/0.1)**2)"
Hz = "exp(-((x-0.75)/0.1)**2)"
[time]
t_end = 4.0
cfl_check = false
[material.slab]
where = "x - 0.5"
sampling = "element"
model = "drude"
poles = [{plasma_frequency = 1.0, collision_frequency = 22.0}]
[output]
formats = []
"""
    (tmp_path / "case.toml").write_text(text)
    result = subprocess.run([sys.executable, "-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output",
                             str(tmp_path / "out"), "--quiet"], capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    assert result.returncode == 1, result.stderr
    assert "stopped at step 40, time" in result.stderr and "grew exponentially" in result.stderr
    assert "Traceback" not in result.stderr


# It does not trip -----------------------------------------------------------------------
@pytest.mark.parametrize("ramp", [0.0, 2.0])
def test_a_continuous_wave_on_a_resonance_grows_like_t_squared(tmp_path, ramp):
    """The dipole drives the TE101 mode: W grows like t^2 without bound (400 steps)."""
    data = dict(CAVITY, source=dipole(waveform="continuous", frequency=RESONANCE, ramp=ramp))
    sim, error, energies = simulate(data, tmp_path, steps=400)
    assert error is None and sim.step_count == 400
    late = energies[len(energies) // 3:]
    times = np.arange(len(energies))[len(energies) // 3:] * 20 * sim.dt
    power = np.polyfit(np.log(times), np.log(late), 1)[0]
    assert 1.5 < power < 2.5  # W ~ t^2: the resonance
    assert energies[-1] > 20 * energies[3] and sim.guard.closest < 10


@pytest.mark.parametrize("waveform", [
    {"waveform": "gaussian", "width": 1.2, "t0": 6.0},  # t0 = 5 widths: W rises from 1e-11 of its peak
    {"waveform": "modulated_gaussian", "width": 1.2, "t0": 6.0, "frequency": RESONANCE},
    {"waveform": "ricker", "frequency": 0.15, "t0": 10.0}])
def test_delayed_pulses_do_not_trip(tmp_path, waveform):
    """Pulses that rise over several checks (20 steps = 1.4 time units here) at a steady
    exponential rate, from far below their peak."""
    sim, error, energies = simulate(dict(CAVITY, source=dipole(amplitude=3.0, **waveform)), tmp_path, steps=160)
    assert error is None and energies.max() > 1e6 * energies[1] and sim.guard.closest < 10


def test_a_plane_wave_in_a_periodic_box_with_layers(tmp_path):
    """TF/SF: a continuous plane wave switched on over one period, then a Gaussian one."""
    wave = {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 1, 0], "waveform": "continuous",
            "frequency": 1.0, "ramp": 1.0, "lower": [0.5, 0.0, 0.0], "upper": [1.0, 0.25, 0.25]}
    data = dict(LINE, initial={}, pml=LAYERS, source={"inc": wave}, time={"t_end": 3.0})
    sim, error, energies = simulate(data, tmp_path / "cw")
    assert error is None and sim.finished and energies[-1] > 0.1 * energies.max() and sim.guard.closest < 10
    gaussian = dict(wave, waveform="gaussian", t0=1.0, width=0.15)
    del gaussian["frequency"], gaussian["ramp"]
    sim, error, energies = simulate(dict(data, source={"inc": gaussian}), tmp_path / "pulse", steps=160)
    assert error is None and energies[-1] < 1e-2 * energies.max() and sim.guard.closest < 10


def test_currents_sampled_at_the_checks_frequency(tmp_path):
    """A current whose frequency is one per check interval (zero at every check): its norm is
    sampled inside the intervals too, so its injection is not mistaken for none."""
    dt = Simulation(case_from_dict(CAVITY), backend="cpu", output_dir=tmp_path / "dt", comm=None).dt
    current = {"type": "current", "Jy": f"sin(2*pi*{1 / (20 * dt)!r}*t)", "lower": [0.4, 0.4, 0.4],
               "upper": [0.6, 0.6, 0.6]}
    sim, error, energies = simulate(dict(CAVITY, source={"j": current}), tmp_path / "run", steps=200)
    assert error is None and sim.guard.injection.high[-1] > 0 and sim.guard.closest < 10


@pytest.mark.parametrize("name", ["dipole_pml", "drude_slab", "sphere_scattering"])
def test_examples_with_layers_sources_or_poles(tmp_path, name):
    case = with_changes(load_case(ROOT / "examples" / f"{name}.toml"), {"time": {"t_end": 0.25}})
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    while not sim.finished:
        sim.advance(min(10, sim.steps - sim.step_count))
    assert sim.guard is not None and sim.guard.closest < 10 and len(sim.guard.history) > 2


# The test itself on given series --------------------------------------------------------
class Injection:
    """A source's integral of |w| (System.injection_measure's contract) for a given w."""

    def __init__(self, integral):
        self.integral = integral

    def __len__(self):
        return 1

    def start(self, t):
        pass

    def measure(self, t):
        value = np.array([self.integral(t)])
        return value, value


class Series:
    def growth_hints(self, comm=None):
        return ["terms present: none"]

    def __init__(self, integral=None):
        self.integral = integral

    def injection_measure(self, comm=None):
        return None if self.integral is None else Injection(self.integral)


def first_trip(energy, times, integral=None):
    guard = GrowthGuard(Series(integral))
    guard.start(0, times[0], energy(times[0]))
    for step, t in enumerate(times[1:], 1):
        if guard.observe(step, t, energy(t)) is not None:
            return t, guard
    return None, guard


def test_the_rules_on_given_series():
    times = np.linspace(0.0, 100.0, 2001)
    # exponential from the scale 1 at t = 10: stopped past 1e4, within a check or two
    t, _ = first_trip(lambda t: 1.0 if t < 10 else math.exp(0.5 * (t - 10)), times)
    assert t is not None and RISE <= math.exp(0.5 * (t - 10)) <= 1.1 * RISE
    # the same growth from a tiny start: its scale is the start
    t, _ = first_trip(lambda t: 1e-30 * math.exp(2.0 * t), times)
    assert t is not None and RISE <= math.exp(2.0 * t) <= 1.2 * RISE
    # t^2 and t^4 from a quiet start, no sources: polynomial, never
    for power in (2, 4):
        t, guard = first_trip(lambda t, p=power: 1e-3 + t ** p, times)
        assert t is None and guard.closest > RISE  # over RISE: only the rate test holds them
    # a Gaussian pulse's energy (~ the square of its integral), t0 = 10 widths: the source explains it
    width, t0 = 2.0, 20.0

    def integral(t):
        return width * math.sqrt(math.pi / 2) * (math.erf((t - t0) / (math.sqrt(2) * width))
                                                 + math.erf(t0 / (math.sqrt(2) * width)))

    t, guard = first_trip(lambda t: integral(t) ** 2, times, integral)
    assert t is None and guard.closest < 10
    t, _ = first_trip(lambda t: integral(t) ** 2, times)  # without the sources' allowance it would trip
    assert t is not None and t < t0
    # a jump past JUMP in one check stops at once
    t, _ = first_trip(lambda t: 1.0 if t < 50 else 2 * JUMP, times)
    assert t == times[np.searchsorted(times, 50)]


def test_the_key_round_trips_and_a_restart_starts_a_new_history(tmp_path):
    data = dict(LINE, pml=LAYERS, time={"t_end": 1.0, "growth_check": False})
    case = case_from_dict(data)
    assert case.to_dict()["time"]["growth_check"] is False and not case_from_dict(case.to_dict()).time.growth_check
    assert "growth_check" not in case_from_dict(dict(data, time={"t_end": 1.0})).to_dict()["time"]
    first = Simulation(case_from_dict(dict(data, time={"t_end": 1.0})), backend="cpu", output_dir=tmp_path / "a",
                       comm=None)
    first.advance(40)
    saved = first.checkpoint(tmp_path / "checkpoint")
    second = Simulation(case_from_dict(dict(data, time={"t_end": 1.0})), backend="cpu", output_dir=tmp_path / "b",
                        comm=None).restart(saved)
    step, t, energy = second.guard.history[0][:3]
    assert len(second.guard.history) == 1 and step == 40 and t == first.t and energy == first.system.energy(first.u)


def test_summary_json_holds_the_guards_record(tmp_path):
    import json

    data = dict(LINE, pml=LAYERS, time={"t_end": 0.5}, source=dict(dipole(waveform="ricker", frequency=2.0, t0=0.3),
                                                                   j={"type": "current", "Jy": "sin(3*t)"}))
    data["source"]["a"]["position"] = [0.7, 0.1, 0.1]
    Simulation(case_from_dict(data), backend="cpu", output_dir=tmp_path, comm=None).run()
    record = json.loads((tmp_path / "summary.json").read_text())["growth_check"]
    assert record["checks"] >= 3 and 0 < record["closest"] < 10 and record["rise"] == RISE
    assert record["sources"] == ["source.a", "currents"] and record["largest_energy"] > 0


def test_a_rank_that_did_not_trip_stops_with_the_others():
    """The verdict is reduced: where rounding lets one rank trip and not another, both stop."""

    class Tripped:  # a communicator on which another rank found the growth
        def allreduce(self, value, op=None):
            return 1

    guard = GrowthGuard(Series(), comm=Tripped())
    guard.start(0, 0.0, 1.0)
    message = guard.observe(20, 1.0, 2.0)
    assert message is not None and "at step 20 (t = 1)" in message
