"""BDF/EXT multistep stepping through Simulation: the variable-step coefficients, temporal
orders 1-3 on a test system (multistep_system.py), variable dt from [time] target_cfl,
max_cfl, bitwise restarts, the per-step lines and steps.jsonl, and the schema's checks."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import multistep_system as ms
from lobatto.api import parse_case
from lobatto.runner.simulation import Simulation
from lobatto.errors import InputError, SolverError
from lobatto.integrators import SCHEMES, MultistepScheme, Stepper, bdf_ext_coefficients
from lobatto.integrators.step_size import KEEP_BELOW, MAX_GROWTH, first_dt
from lobatto.integrators.tables import BDF_CONSTANT, EXT_CONSTANT

SRC = Path(__file__).resolve().parent.parent.parent / "src"


@pytest.fixture(autouse=True)
def test_system():
    cls = ms.registered()
    yield cls
    ms.unregister(ms.NAME)


def simulation(tmp_path, name="out", progress=None, log_every=0, speed=20.0, **time):
    data = ms.case_dict(**time)
    data["physics"]["speed"] = speed
    data["output"]["log_every"] = log_every
    return Simulation(parse_case(data), "cpu", tmp_path / name, comm=None, progress=progress)


# Coefficients -------------------------------------------------------------------------------
@pytest.mark.parametrize("order", [1, 2, 3])
def test_coefficients_are_exact_for_polynomials_on_random_steps(order):
    rng = np.random.default_rng(order)
    for _ in range(20):
        dts = rng.uniform(0.2, 2.0, size=order) * 10.0 ** rng.uniform(-3, 1)
        bdf, ext = bdf_ext_coefficients(order, dts)
        times = np.concatenate([[0.0], -np.cumsum(dts)]) + rng.uniform(-5, 5)  # t^{n+1}, t^n, ...
        for degree in range(order + 1):
            c = rng.standard_normal(degree + 1)
            p, dp = np.polynomial.Polynomial(c), np.polynomial.Polynomial(c).deriv()
            scale = max(abs(p(times)).max(), 1.0) / dts[0]
            derivative = sum(b * p(t) for b, t in zip(bdf, times)) / dts[0]
            assert abs(derivative - dp(times[0])) < 1e-10 * scale, (order, degree, dts)
            if degree < order:
                extrapolated = sum(e * p(t) for e, t in zip(ext, times[1:]))
                assert abs(extrapolated - p(times[0])) < 1e-10 * max(abs(p(times)).max(), 1.0)
        # one degree more is not exact (the test above could fail): (t - t^{n+1})^(k+1) has
        # derivative 0 at t^{n+1}, the formula gives about dt^k
        miss = abs(sum(b * (t - times[0]) ** (order + 1) for b, t in zip(bdf, times))) / dts[0]
        assert miss > 1e-2 * dts[0] ** order


def test_constant_steps_give_the_tables():
    assert BDF_CONSTANT[2] == (1.5, -2.0, 0.5) and EXT_CONSTANT[2] == (2.0, -1.0)
    assert BDF_CONSTANT[3] == (11 / 6, -3.0, 1.5, -1 / 3) and EXT_CONSTANT[3] == (3.0, -3.0, 1.0)
    for order in (1, 2, 3):
        assert bdf_ext_coefficients(order, [0.3] * order) == (BDF_CONSTANT[order], EXT_CONSTANT[order])
        # the computed (variable-step) path agrees with the tables as the steps become equal
        bdf, ext = bdf_ext_coefficients(order, [0.3] + [0.3 * (1 + 1e-9)] * (order - 1))
        assert np.allclose(bdf, BDF_CONSTANT[order], atol=1e-7) and np.allclose(ext, EXT_CONSTANT[order], atol=1e-7)
        assert isinstance(SCHEMES[f"bdf{order}"], MultistepScheme) and SCHEMES[f"bdf{order}"].stages == 1
    # a known variable-step case: BDF2 with the step ratio w = dt_n / dt_{n-1} = 2
    bdf, ext = bdf_ext_coefficients(2, [0.2, 0.1])
    assert np.allclose(bdf, [(1 + 4) / 3, -3, 4 / 3]) and np.allclose(ext, [3, -2])


# Temporal orders ----------------------------------------------------------------------------
def final_error(tmp_path, name, speed=20.0, **time):
    sim = simulation(tmp_path, name, speed=speed, **time)
    sim.advance(10**6 if sim.variable_dt else sim.steps)  # fixed dt: advance does not stop at t_end
    assert sim.t == pytest.approx(2.0, abs=1e-12)
    return sim.errors()["all"]["max"], sim


@pytest.mark.parametrize("order", [1, 2, 3])
def test_fixed_dt_converges_at_the_scheme_order(tmp_path, order):
    dts = (0.04, 0.02, 0.01)
    errors = [final_error(tmp_path, f"o{order}_{i}", integrator=f"bdf{order}", dt=dt, speed=1.0)[0]
              for i, dt in enumerate(dts)]
    slopes = [math.log2(errors[i] / errors[i + 1]) for i in range(2)]
    assert all(abs(s - order) < 0.3 for s in slopes), (order, errors, slopes)


@pytest.mark.parametrize("order", [2, 3])
def test_variable_dt_converges_at_the_scheme_order(tmp_path, order):
    """The steps vary by a factor 3 over the run: constant-step coefficients would drop to first order."""
    targets = (0.4, 0.2, 0.1)
    runs = [final_error(tmp_path, f"v{order}_{i}", integrator=f"bdf{order}", target_cfl=c) for i, c in enumerate(targets)]
    low, high = runs[-1][1].dt_range
    assert high / low > 2.5
    slopes = [math.log(runs[i][0] / runs[i + 1][0]) / math.log(runs[i + 1][1].steps / runs[i][1].steps)
              for i in range(2)]
    assert all(abs(s - order) < 0.3 for s in slopes), (order, [r[0] for r in runs], slopes)


# Variable dt --------------------------------------------------------------------------------
def records(path) -> list[dict]:
    return [json.loads(line) for line in (path / "steps.jsonl").read_text().splitlines()]


def test_target_cfl_is_followed_and_the_run_lands_on_t_end(tmp_path):
    sim = simulation(tmp_path, integrator="bdf3", target_cfl=0.3)
    summary = sim.run()
    rows = records(tmp_path / "out")
    assert sim.t == 2.0 and summary["t_final"] == 2.0 and rows[-1]["t"] == 2.0
    assert [r["step"] for r in rows] == list(range(1, sim.step_count + 1))
    assert math.isclose(sum(r["dt"] for r in rows), 2.0, rel_tol=1e-12)
    ts = np.cumsum([r["dt"] for r in rows])
    assert np.allclose([r["t"] for r in rows], ts, rtol=1e-13, atol=0)
    # the first step from the initial state: CFL per unit dt = speed * max|u| / spacing
    x = sim.coordinates()[0]
    assert rows[0]["dt"] == pytest.approx(0.3 / (20.0 * np.abs(1 + x / 2).max() / sim.min_spacing), rel=1e-12)
    cfl = np.array([r["cfl"] for r in rows])
    dt = np.array([r["dt"] for r in rows])
    # each step is the time left divided evenly into whole steps (step_size.landing_dt): at most the
    # controller's, at least (n - 1) / n of it with n steps left, so no short last step; the
    # controller keeps dt while the CFL number stays within [KEEP_BELOW, 1] x target
    left = np.arange(len(cfl), 0, -1)
    assert np.all(cfl > KEEP_BELOW * 0.3 * (left - 1) / left - 0.03) and np.all(cfl < 0.3 + 0.03), cfl
    changed = np.abs(dt[1:] / dt[:-1] - 1) > 1e-9
    assert changed.sum() < 0.25 * len(dt), changed.sum()  # dt is kept for most steps
    assert cfl.max() < 0.33 and np.all(dt[1:] / dt[:-1] <= MAX_GROWTH * (1 + 1e-12))
    assert dt.max() / dt.min() > 2.5
    assert summary["dt_range"] == [dt.min(), dt.max()] and summary["cfl"]["max"] == cfl.max()


def test_first_dt_bounds_the_cfl_number_at_the_end_of_the_step():
    """(c_u + c_f dt) dt = target: the velocity's own step without a force, sqrt(target / c_f)
    from rest, shorter than both together; none without either."""
    rng = np.random.default_rng()
    target, c_u, c_f = rng.uniform(0.1, 4.0), rng.uniform(0.1, 10.0), rng.uniform(0.1, 100.0)
    assert first_dt(target, c_u) == pytest.approx(target / c_u, rel=1e-15)
    assert first_dt(target, 0.0, c_f) == pytest.approx(np.sqrt(target / c_f), rel=1e-15)
    dt = first_dt(target, c_u, c_f)
    assert (c_u + c_f * dt) * dt == pytest.approx(target, rel=1e-13)
    assert dt < min(target / c_u, np.sqrt(target / c_f))
    assert first_dt(target, 0.0, 0.0) is None and first_dt(target, -0.0) is None


def test_the_first_dt_needs_a_flow_or_initial_dt(tmp_path):
    data = ms.case_dict(integrator="bdf2", target_cfl=0.3)
    data["initial"] = {"u": "0"}
    with pytest.raises(InputError, match=r"target_cfl = 0.3 gives no first step.*CFL number 0 per unit dt.*"
                                         r"set \[time\] initial_dt"):
        Simulation(parse_case(data), "cpu", tmp_path / "out", comm=None)
    data["time"]["initial_dt"] = 0.001
    sim = Simulation(parse_case(data), "cpu", tmp_path / "out", comm=None)
    sim.advance(3)
    assert sim.dt == pytest.approx(0.001 * MAX_GROWTH**3, rel=1e-12) or sim.dt < 0.001 * MAX_GROWTH**3


def test_max_cfl_stops_the_run(tmp_path):
    sim = simulation(tmp_path, integrator="bdf2", dt=0.05)  # CFL 20 * 0.05 * 1.5 / 0.5 = 3 > 2 (the default)
    with pytest.raises(SolverError) as caught:
        sim.run()
    message = str(caught.value)
    assert caught.value.collective
    assert "CFL number of step 1 (t = 0.05, dt = 0.05) is 3" in message
    assert "above [time] max_cfl = 2.0: lower [time] dt (now 0.05)" in message
    # through the command line: one line, exit 1
    case = tmp_path / "fast.toml"
    case.write_text(f'[physics]\nequations = "{ms.NAME}"\nspeed = 20.0\n[mesh]\nelements = [1, 1, 1]\n'
                    'periodic = [true, true, true]\n[discretization]\norder = 2\n[initial]\nu = "1 + x/2"\n'
                    '[time]\nt_end = 1.0\ntarget_cfl = 1.0\nmax_cfl = 1.2\ninitial_dt = 0.1\n[output]\nformats = []\n')
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import multistep_system as m; m.registered(); "
            "from lobatto.cli import main; sys.exit(main(sys.argv[2:]))")
    proc = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), "run", str(case), "-o",
                           str(tmp_path / "cli"), "-q"], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(SRC)))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "CFL number of step 1 (t = 0.1, dt = 0.1) is 6" in lines[0]
    assert "max_cfl = 1.2: lower [time] target_cfl (now 1.0)" in lines[0]


# Restart ------------------------------------------------------------------------------------
@pytest.mark.parametrize("time", [{"integrator": "bdf3", "dt": 0.005}, {"integrator": "bdf3", "target_cfl": 0.4},
                                  {"integrator": "bdf2", "target_cfl": 0.4}])
def test_restart_in_the_middle_equals_the_uninterrupted_run(tmp_path, time):
    whole = simulation(tmp_path, "whole", **time)
    whole.run()
    first = simulation(tmp_path, "parts", **time)
    first.advance(2)  # still in the start-up (lower orders): the restart must carry it
    early, early_taken = first.checkpoint(), first.stepper.steps_taken
    first.advance(35)
    path, taken = first.checkpoint(), first.stepper.steps_taken
    first.close()  # one live run per directory: the continued runs write there
    for checkpoint, step, steps_taken in ((early, 2, early_taken), (path, 37, taken)):
        later = simulation(tmp_path, "parts", **time).restart(checkpoint)
        # (BDF3's first step is several sub-steps: steps_taken counts those)
        assert later.step_count == step and later.stepper.steps_taken == steps_taken
        later.run()
        assert later.step_count == whole.step_count and later.t == whole.t
        assert np.array_equal(later.u, whole.u)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    assert strip(records(tmp_path / "parts")) == strip(records(tmp_path / "whole"))


# Step reports -------------------------------------------------------------------------------
LINE = re.compile(r"^step (\d+)  t (\S+)  dt (\S+)  C (\d\.\d\d)  U 1 (\d\.\de[-+]\d\d)  order=([123])  "
                  r"(\d+\.\d{3}) s/step$")


def test_step_lines_and_steps_jsonl(tmp_path, capsys):
    calls = []
    sim = simulation(tmp_path, log_every=3, progress=lambda *a: calls.append(a), integrator="bdf3", dt=0.1, speed=1.0)
    sim.run()
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    rows = records(tmp_path / "out")
    assert calls == []  # the step lines replace the progress bar
    assert len(rows) == sim.step_count == 20
    assert [int(LINE.match(line).group(1)) for line in printed] == [3, 6, 9, 12, 15, 18, 20]
    for line in printed:
        step, t, dt, cfl, residual, order, seconds = LINE.match(line).groups()
        row = rows[int(step) - 1]
        assert float(t) == pytest.approx(row["t"], rel=1e-4) and float(dt) == pytest.approx(row["dt"], rel=1e-2)
        assert cfl == f"{row['cfl']:.2f}" and int(order) == row["order"] == 3
        assert float(residual) == pytest.approx(row["velocity_residual"], rel=0.06, abs=1e-99)
    # BDF3's first step is its start-up sub-steps (orders 1, 2, 3, ...), reported by the last
    assert [r["order"] for r in rows[:4]] == [3, 3, 3, 3]
    assert all(set(r) == {"step", "t", "dt", "seconds", "cfl", "velocity_iterations", "velocity_residual", "order"}
               for r in rows)
    x = sim.coordinates()[0]
    u_final = ms.exact(x, 2.0)
    assert rows[-1]["cfl"] == pytest.approx(1.0 * 0.1 * np.abs(sim.fields()["u"]).max() / sim.min_spacing, rel=1e-12)
    assert np.abs(sim.fields()["u"] - u_final).max() < 2e-2
    # log_every = 0: no lines, the progress bar is back; the records are still written
    calls.clear()
    simulation(tmp_path, "quiet", log_every=0, progress=lambda *a: calls.append(a), integrator="bdf1", dt=0.1,
               speed=1.0).run()
    assert len(calls) == 20 and not [l for l in capsys.readouterr().out.splitlines() if l.startswith("step ")]
    assert len(records(tmp_path / "quiet")) == 20


def test_line_format_of_every_known_key():
    from lobatto.integrators.step_log import format_step_line

    line = format_step_line(10, 0.1, 0.01, 0.152, {"cfl": 0.31, "pressure_iterations": 12, "pressure_residual": 1.2e-7,
                                                   "velocity_iterations": 5, "velocity_residual": 3e-9,
                                                   "divergence": 1e-6, "energy": 0.5})
    assert line == ("step 10  t 1.0000e-01  dt 1.00e-02  C 0.31  P 12 1.2e-07  U 5 3.0e-09  div 1.0e-06  "
                    "energy=0.5  0.152 s/step")


# Which system takes which integrator ---------------------------------------------------------
def test_schema_checks_the_integrator_and_the_dt_keys():
    def error(**time):
        data = ms.case_dict(**time)
        with pytest.raises(InputError) as caught:
            parse_case(data)
        return str(caught.value)

    assert parse_case(ms.case_dict()).time.integrator == "bdf2"  # the system's default
    assert parse_case(ms.case_dict()).time.max_cfl == 2.0
    assert 'integrator "rk4" is not available for test_multistep: it takes "bdf2", "bdf1", "bdf3"' in error(
        integrator="rk4")
    assert "[time] integrator must be one of" in error(integrator="bdf4")
    assert "[time] dt and target_cfl are both set" in error(dt=0.1, target_cfl=0.5)
    assert "[time] cfl and target_cfl are both set" in error(cfl=0.1, target_cfl=0.5)
    assert "initial_dt is the first step of a variable-dt run and needs target_cfl" in error(initial_dt=0.1)
    assert "target_cfl = 3.0 is above max_cfl = 2.0" in error(target_cfl=3.0)
    maxwell = {"mesh": {"elements": [1, 1, 1]}, "time": {"t_end": 1.0, "integrator": "bdf2"}}
    with pytest.raises(InputError, match='integrator "bdf2" is not available for maxwell: it takes "lsrk45", "rk4"'):
        parse_case(maxwell)
    case = parse_case(ms.case_dict(target_cfl=0.5, initial_dt=0.01))  # the effective configuration parses back
    again = parse_case(__import__("tomllib").loads(case.to_toml()))
    assert again.time == case.time


def test_a_system_without_multistep_step_is_refused():
    from lobatto.backends import get_backend

    plain = SimpleNamespace(backend=get_backend("cpu"), name="plain", spec=SimpleNamespace(integrators=("lsrk45",)))
    with pytest.raises(InputError, match="integrator 'bdf2' is a multistep scheme, which plain does not implement.*"
                                         "systems that take it: .*test_multistep.*plain takes lsrk45"):
        Stepper(plain, SCHEMES["bdf2"])
