"""Valid ranges of the Maxwell-physics keys (config/ranges.py and the tables' declarations):
values that overflow, underflow or make no sense are refused before any work with one line
naming the key; derived quantities (a direction's norm, a dipole's density, 2 pi f t) are
computed without overflow; sources and materials that touch nothing are refused; the
conductivity's decay rate is part of the stable step (systems/maxwell/loss.py)."""

from __future__ import annotations

import copy
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from lobatto.api import case_from_dict, run
from lobatto.config.ranges import Range, unit_vector
from lobatto.errors import InputError
from lobatto.systems.maxwell.loss import REACH_FRACTION, REAL_AXIS_REACH
from lobatto.systems.maxwell.system import SPEC

SRC = Path(__file__).resolve().parents[2] / "src"
BASE = {"mesh": {"elements": [2, 2, 2], "boundary": "pec"}, "discretization": {"order": 2},
        "physics": {"equations": "maxwell"}, "initial": {"Ez": "sin(pi*x)*sin(pi*y)"},
        "time": {"t_end": 0.05}, "output": {"formats": []}}
DIPOLE = {"type": "electric_dipole", "position": [0.4, 0.45, 0.5], "direction": [0, 0, 1], "waveform": "ricker",
          "frequency": 2.0, "t0": 0.02}
PLANE_WAVE = {"type": "plane_wave", "direction": [0, 0, 1], "polarization": [1, 0, 0],
              "waveform": "modulated_gaussian", "frequency": 0.35, "width": 1.0, "t0": 2.0,
              "lower": [0.5, 0.5, 0.5], "upper": [1.0, 1.0, 1.0]}
DRUDE = {"where": "x - 0.5", "model": "drude", "poles": [{"plasma_frequency": 1.0, "collision_frequency": 1.0}]}


def case(**changes) -> dict:
    """BASE with dotted keys ("physics.mu") set."""
    data = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        *path, key = dotted.split(".")
        table = data
        for p in path:
            table = table.setdefault(p, {})
        table[key] = value
    return data


def refused(data, *parts, tmp_path=None) -> str:
    """The one-line InputError of parsing and setting up ``data``, which must name ``parts``."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way
        with pytest.raises(InputError) as info:
            run(case_from_dict(data), output_dir=tmp_path)
    message = str(info.value)
    assert "\n" not in message and all(p in message for p in parts), message
    return message


# ----------------------------------------------------------------- values out of range
@pytest.mark.parametrize("value", [1e308, 1e160])
def test_a_huge_plasma_frequency_is_refused_naming_the_pole(value, tmp_path):
    """It gave a LinAlgError (1e308) or an OverflowError (1e160) traceback."""
    data = case(**{"material.m": {**DRUDE, "poles": [{"plasma_frequency": value, "collision_frequency": 1.0}]}})
    refused(data, "[material.m] poles[0].plasma_frequency must be a number from 1e-30 to 1e+30", tmp_path=tmp_path)


@pytest.mark.parametrize("changes, parts", [
    ({"physics.mu": 1e308}, ["[physics] mu must be a number from 1e-30 to 1e+30", "1e+308"]),
    ({"physics.epsilon": 1e-300}, ["[physics] epsilon must be a number from 1e-30 to 1e+30"]),
    ({"physics.sigma": 1e300}, ["[physics] sigma must be a number from 0 to 1e+30"]),
    ({"material.m": {"where": "x - 0.5", "mu": 1e31}}, ["[material.m] mu must be a number from 1e-30"]),
    ({"material.m": {"where": "x - 0.5", "epsilon": "1e40*x"}},
     ['[material.m] epsilon = "1e40*x" is ', "; its values must be from 1e-30 to 1e+30 (c = 1/sqrt(epsilon mu)"]),
    ({"source.d": {**DIPOLE, "amplitude": 1e308}}, ["[source.d] amplitude must be a number from -1e+30 to 1e+30"]),
    ({"source.d": {**DIPOLE, "frequency": 5e-324}}, ["[source.d] frequency must be a number from 1e-30"]),
    ({"source.p": {**PLANE_WAVE, "frequency": 5e-324}}, ["[source.p] frequency must be a number from 1e-30"]),
    ({"source.p": {**PLANE_WAVE, "width": 1e-320}}, ["[source.p] width must be a number from 1e-30"]),
    ({"source.d": {**DIPOLE, "position": [math.nan, 0, 0]}}, ["[source.d] position must be a list of 3 finite"]),
    ({"output.dft": {"frequencies": [1e308], "surfaces": ["xmin"]}},
     ["[output.dft] frequencies[0] must be a number from 0 to 1e+30"]),
    pytest.param({"output.dft": {"frequencies": [1e30], "surfaces": ["xmin"]}, "time.t_end": 1e280},
                 ["[time] t_end must be a number from 1e-100 to 1e+100", "got 1e+280"],
                 id="a_dft_run_longer_than_t_ends_range_is_refused_by_t_end"),
    ({"output.far_field": {"frequencies": [5e-324], "lower": [0, 0, 0], "upper": [0.5, 0.5, 0.5]}},
     ["[output.far_field] frequencies[0] must be a number from 1e-30"]),
    ({"output.far_field": {"frequencies": [0.5], "lower": [0, 0, 0], "upper": [0.5, 0.5, 0.5], "origin": [1e300, 0, 0]}},
     ["[output.far_field] origin must be a list of 3 finite numbers, each from -1e+100 to 1e+100 (products"]),
    ({"source.d": {**DIPOLE, "position": [0, 1e101, 0]}},
     ["[source.d] position must be a list of 3 finite numbers, each from -1e+100 to 1e+100 (products"]),
    ({"source.p": {**PLANE_WAVE, "origin": [0, 0, -1e101]}},
     ["[source.p] origin must be a list of 3 finite numbers, each from -1e+100 to 1e+100 (products"]),
    ({"source.c": {"type": "current", "Jz": "1", "lower": [0, 0, 0], "upper": [1, 1, 1e300]}},
     ["[source.c] upper must be a list of 3 finite numbers, each from -1e+100 to 1e+100 (products"]),
    ({"output.far_field": {"frequencies": [0.5], "lower": [0, 0, -1e101], "upper": [0.5, 0.5, 0.5]}},
     ["[output.far_field] lower must be a list of 3 finite numbers, each from -1e+100 to 1e+100 (products"]),
    ({"source.c": {"type": "current", "Jx": "-1e40"}}, ['[source.c] Jx = "-1e40" is -1e+40; its values must be from '
                                                       "-1e+30 to 1e+30 (J/epsilon is added to dE/dt"]),
    ({"source.c": {"type": "current", "Jy": "1e40*x"}}, ['[source.c] Jy = "1e40*x" is ', " at t = 0 at some points; "
                                                         "its values must be from -1e+30 to 1e+30 (J/epsilon"]),
    ({"source.c": {"type": "current", "Jz": "1e33*t*y"}}, ['[source.c] Jz = "1e33*t*y" is ', " at t = 0.05 at some "
                                                           "points; its values must be from -1e+30 to 1e+30"]),
    ({"pml": {"sides": ["xmax"], "elements": 101}},
     ["[pml] elements must be an integer from 1 to 100 (layers of elements at each face", "got 101"]),
    ({"pml": {"sides": ["xmax"], "elements": 10**400}}, ["[pml] elements must be an integer from 1 to 100"]),
    ({"pml": {"sides": ["xmax"], "grading_order": 1e308}}, ["[pml] grading_order must be a number from 0 to 20"]),
    ({"pml": {"sides": ["xmax"], "sigma_max": 1e300}}, ["[pml] sigma_max must be a number from 1e-30"]),
    ({"pml": {"sides": ["xmax"], "reflection": 1.0}}, ["[pml] reflection must be a number > 0 and < 1"]),
])
def test_values_out_of_range_are_refused_naming_the_key(changes, parts, tmp_path):
    refused(case(**changes), *parts, tmp_path=tmp_path)


def test_a_key_of_the_wrong_type_names_the_key():
    with pytest.raises(InputError, match=r"\[material.m\] poles\[0\].collision_frequency must be a number from 0"):
        case_from_dict(case(**{"material.m": {**DRUDE, "poles": [{"plasma_frequency": 1.0,
                                                                   "collision_frequency": "fast"}]}}))


def test_ranges_describe_and_contain():
    r = Range(0.0, 1.0, low_open=True, reason="why")
    assert r.text() == "> 0 and <= 1" and r.contains(1) and not r.contains(0.0)
    assert not r.contains(math.nan) and not r.contains(10**400)
    assert list(r.within(np.array([0.0, 0.5, math.nan, math.inf, 1.0]))) == [False, True, False, False, True]


# ------------------------------------------------------------- derived quantities
def test_a_direction_is_scaled_without_overflow():
    assert unit_vector([1e308, 1e308, 1e308]) == unit_vector([1, 1, 1])
    assert unit_vector([1e-320, 0, 0]) == (1.0, 0.0, 0.0) and unit_vector([0, 0, 0]) is None


@pytest.mark.parametrize("direction, same_as", [([1e308, 1e308, 1e308], [1, 1, 1]), ([1e-320, 0, 0], [1, 0, 0]),
                                                ([0, -5e-324, 0], [0, -1, 0])])
def test_a_dipole_direction_of_any_magnitude_drives_the_same_field(direction, same_as, tmp_path):
    """[1e308]*3 ran to exit 0 with the source silently zero (its norm overflowed); [1e-320, 0,
    0] printed RuntimeWarnings (division by a zero norm) and then blamed the cfl."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        given = run(case(**{"source.d": {**DIPOLE, "direction": direction}}), output_dir=tmp_path / "a")
    unit = run(case(**{"source.d": {**DIPOLE, "direction": same_as}}), output_dir=tmp_path / "b")
    alone = run(case(), output_dir=tmp_path / "c")
    assert all(np.array_equal(given.fields[k], unit.fields[k]) for k in unit.fields)
    assert max(np.max(np.abs(unit.fields[k] - alone.fields[k])) for k in unit.fields) > 1e-6


def test_a_dipole_too_strong_for_single_precision_names_its_amplitude(tmp_path):
    """The check of the currents named every current ("[source.sheet]") for a dipole's overflow."""
    data = case(**{"source.sheet": {"type": "current", "Jx": "1"}, "source.d": {**DIPOLE, "amplitude": 1e25},
                   "backend.precision": "float32"})
    message = refused(data, "[source.d] amplitude = 1e+25", "float32", tmp_path=tmp_path)
    assert "sheet" not in message


def test_a_dipole_run_longer_than_t_ends_range_is_refused_by_t_end(tmp_path):
    # [time] t_end's range (at most 1e100) keeps 2 pi f t_end far from overflow for any
    # frequency in [source] frequency's range: a longer run is refused by that key, before
    # the waveform's own check
    wave = {**{k: v for k, v in DIPOLE.items() if k != "t0"}, "waveform": "continuous", "frequency": 1e30, "ramp": 0}
    data = case(**{"source.d": wave, "time.t_end": 1e280, "time.dt": 1e279, "time.cfl_check": False})
    refused(data, "[time] t_end must be a number from 1e-100 to 1e+100", "got 1e+280", tmp_path=tmp_path)


def test_a_plane_wave_whose_delays_overflow_its_waveform_is_refused(tmp_path):
    """t - k . (x - origin) / c over the mesh reaches -1e125 (origin 1e100 away, c = 1e-25), and
    2 pi f there is beyond 1e150 (f = 1e30): plane_waves.check_run_delays refuses it. t and f alone
    cannot get there (t_end <= 1e100)."""
    wave = {**PLANE_WAVE, "waveform": "continuous", "frequency": 1e30, "ramp": 0.0, "origin": [0, 0, -1e100]}
    del wave["width"], wave["t0"]
    data = case(**{"source.p": wave, "physics.epsilon": 1e25, "physics.mu": 1e25})
    message = refused(data, "[source.p] the continuous waveform (frequency = 1e+30, ramp = 0) overflows at t = -1e+125",
                      "beyond 1e150", tmp_path=tmp_path)
    assert "t_end" not in message
    wave["origin"] = [0, 0, -1e50]  # 2 pi f t up to 6e105: accepted
    assert run(case(**{"source.p": wave, "physics.epsilon": 1e25, "physics.mu": 1e25}), output_dir=tmp_path / "near")


def test_a_key_out_of_range_reads_the_same_in_physics_and_in_a_material_table():
    """[physics] epsilon (schema's key_value) and [material.m] epsilon (ranges.check_number)
    worded the range and its reason in two orders."""
    messages = []
    for changes in ({"physics.epsilon": 1e40}, {"material.m": {"where": "x - 0.5", "epsilon": 1e40}}):
        with pytest.raises(InputError) as info:
            case_from_dict(case(**changes))
        messages.append(str(info.value).split("epsilon ", 1)[1])
    assert messages[0] == messages[1], messages
    assert messages[0].startswith("must be a number from 1e-30 to 1e+30 (c = 1/sqrt(epsilon mu)")
    assert messages[0].endswith("), got 1e+40"), messages[0]


# ------------------------------------------------------------- tables that touch nothing
def test_a_current_box_outside_the_mesh_is_refused(tmp_path):
    data = case(**{"source.c": {"type": "current", "Jz": "1", "lower": [5, 5, 5], "upper": [6, 6, 6]}})
    refused(data, "[source.c] the current's box lower = [5, 5, 5], upper = [6, 6, 6] holds no point of the mesh",
            tmp_path=tmp_path)


def test_a_current_box_between_the_points_is_refused(tmp_path):
    """Inside an element but holding none of its GLL points (order 1: its corners)."""
    data = case(**{"source.c": {"type": "current", "Jz": "1", "lower": [0.1, 0.1, 0.1], "upper": [0.2, 0.2, 0.2]},
                   "discretization.order": 1})
    refused(data, "[source.c] the current's box", "holds no point of the mesh", tmp_path=tmp_path)


@pytest.mark.parametrize("sampling", ["point", "element"])
def test_a_material_that_applies_nowhere_is_refused(sampling, tmp_path):
    data = case(**{"material.m": {"where": "x - 2", "epsilon": 2.0, "sampling": sampling}})
    refused(data, "[material.m] where = 'x - 2' is not > 0 at", "applies nowhere", tmp_path=tmp_path)


# ----------------------------------------------------------------- conductivity and dt
def test_conductivity_too_stiff_for_the_given_dt_is_refused_before_the_run(tmp_path):
    """sigma = 100 with dt = 0.05 passed the cfl check and failed at step 1 blaming the cfl."""
    message = refused(case(**{"physics.sigma": 100.0, "time.dt": 0.05}),
                      "[time] dt = 0.05 is too long for the conductivity", "sigma/epsilon = 100",
                      "([physics] sigma)", tmp_path=tmp_path)
    stable = float(message.split("the stable step is about ")[1].split(":")[0])
    below = run(case(**{"physics.sigma": 100.0, "time.dt": 0.99 * stable, "time.t_end": 100 * stable}),
                output_dir=tmp_path / "below")
    assert below.simulation.step_count >= 100


def test_conductivity_from_cfl_shortens_the_step(tmp_path):
    """From [time] cfl the step is fitted to sigma/eps: sigma = 100 runs and decays."""
    result = run(case(**{"physics.sigma": 100.0, "time.t_end": 0.2}), output_dir=tmp_path)
    sim = result.simulation
    bound = SPEC.cfl_bounds[("upwind", "lsrk45")]
    reach = REACH_FRACTION * REAL_AXIS_REACH["lsrk45"]
    cfl = sim.dt / sim.min_spacing
    assert cfl / bound + sim.dt * 100.0 / reach <= 0.5 / bound * (1 + 1e-12)
    assert np.max(np.abs(result.fields["Ez"])) < 1e-2  # E decays (its slow part as exp(-omega^2 t / 100))


def test_the_bound_on_dt_sigma_holds_near_the_edge_of_stability(tmp_path):
    """Just inside the bound a conducting box stays stable for 200 steps; just outside it the
    case is refused before the run."""
    bound = SPEC.cfl_bounds[("upwind", "lsrk45")]
    reach = REACH_FRACTION * REAL_AXIS_REACH["lsrk45"]
    periodic = {"mesh.periodic": [True, True, True], "mesh.boundary": "pec", "discretization.order": 2,
                "initial.Ez": "sin(2*pi*x)*cos(2*pi*y)", "initial.Hx": "cos(2*pi*z)"}
    spacing = run(case(**periodic, **{"time.t_end": 1e-3, "time.dt": 1e-3}), output_dir=tmp_path / "h").simulation
    h = spacing.min_spacing
    dt = 0.5 * bound * h
    limit = (1 - 0.5) * reach / dt  # cfl / bound + dt sigma / reach = 1
    inside = run(case(**periodic, **{"physics.sigma": 0.98 * limit, "time.dt": dt, "time.t_end": 200 * dt}),
                 output_dir=tmp_path / "in")
    assert all(np.all(np.isfinite(v)) and np.max(np.abs(v)) < 2 for v in inside.fields.values())
    with pytest.raises(InputError, match="too long for the conductivity"):
        run(case(**periodic, **{"physics.sigma": 1.02 * limit, "time.dt": dt, "time.t_end": 200 * dt}),
            output_dir=tmp_path / "refused")


def test_a_pole_faster_than_any_step_is_refused_naming_its_table(tmp_path):
    """plasma_frequency = 1e3 on a coarse mesh: dt * omega_p ~ 800; the run blew up and blamed
    the cfl."""
    data = case(**{"material.m": {**DRUDE, "poles": [{"plasma_frequency": 1e3, "collision_frequency": 1.0}]}})
    refused(data, "[material.m] poles: their fastest rate", "beyond the lsrk45 scheme's reach 3.34",
            tmp_path=tmp_path)


def test_a_far_field_frequency_the_mesh_cannot_carry_is_refused(tmp_path):
    """f = 1e30 (in range) asked the far field's quadrature for ~1e30 points: an OverflowError
    traceback from numpy's leggauss after the whole run."""
    data = case(**{"output.far_field": {"frequencies": [0.5, 1e30], "lower": [0, 0, 0], "upper": [0.5, 0.5, 0.5]}})
    refused(data, "[output.far_field] frequencies: f = 1e+30 is above", "the highest the mesh resolves",
            tmp_path=tmp_path)


# --------------------------------------------------------------------- the command line
@pytest.mark.parametrize("table", [
    '[material.m]\nwhere = "x - 0.5"\nmodel = "drude"\npoles = [{plasma_frequency = 1e308, collision_frequency = 1.0}]',
    '[output.dft]\nfrequencies = [1e308]\nsurfaces = ["xmin"]',
    '[source.d]\ntype = "electric_dipole"\nposition = [0.5, 0.5, 0.5]\ndirection = [1e-320, 0, 0]\nwaveform = "ricker"'
    '\nfrequency = 2.0\nt0 = 0.75\namplitude = 1e308',
])
def test_the_command_line_prints_one_line_and_exits_2(table, tmp_path):
    text = ('[mesh]\nelements = [2, 2, 2]\n[discretization]\norder = 2\n[physics]\nequations = "maxwell"\n'
            '[time]\nt_end = 0.05\n[output]\nformats = []\n' + table + "\n")
    (tmp_path / "case.toml").write_text(text)
    env = {**os.environ, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "lobatto", "run", "case.toml", "-o", "out", "--quiet"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("lobatto: error:"), result.stderr
