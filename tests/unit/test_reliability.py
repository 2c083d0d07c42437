"""Runs that cannot succeed stop early with one line and the right exit code: an unstable time
step (refused up front, or stopped when the energy grows), fields that are not finite, a wave
speed that is not a number, a mesh that cannot fit in memory. Runs the real command."""

from __future__ import annotations

import json
import time

import pytest

from lobatto.integrators import RUNGE_KUTTA
from lobatto.systems.acoustics.system import AcousticsSystem
from lobatto.systems.maxwell.system import MaxwellSystem
from test_cli_errors import GOOD, assert_one_line_error, run_cli, write_case


def run(tmp_path, text, *extra):
    path = write_case(tmp_path, text)
    return run_cli("run", str(path), "--output", str(tmp_path / "out"), "--quiet", *extra)


SPECS = {"maxwell": MaxwellSystem.spec, "acoustics": AcousticsSystem.spec}


@pytest.mark.parametrize("equations", sorted(SPECS))
def test_every_flux_and_integrator_has_a_bound_above_the_default_cfl(equations):
    from lobatto.api import case_from_dict

    spec = SPECS[equations]
    for flux in spec.fluxes:
        for integrator in spec.integrators:
            bound = spec.cfl_bounds[(flux, integrator)]
            case = case_from_dict({"physics": {"equations": equations}, "mesh": {"elements": [1, 1, 1]},
                                   "discretization": {"flux": flux},
                                   "time": {"t_end": 1.0, "integrator": integrator}})
            assert 0 < case.time.cfl <= 0.9 * bound + 1e-12, (flux, integrator, case.time.cfl, bound)


@pytest.mark.parametrize("integrator", sorted(RUNGE_KUTTA))
def test_cfl_over_the_bound_is_refused_up_front(tmp_path, integrator):
    bound = MaxwellSystem.spec.cfl_bounds[("upwind", integrator)]
    text = GOOD.replace("t_end = 0.1", f"t_end = 0.1\nintegrator = \"{integrator}\"\ncfl = {bound * 1.05}")
    proc = run(tmp_path, text)
    line = assert_one_line_error(proc, "cavity.toml", f"stability bound cfl {bound}", integrator, "cfl_check = false")
    assert "[time] cfl" in line
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.parametrize("equations", sorted(SPECS))
def test_just_below_the_bound_is_stable_for_a_thousand_steps(equations):
    """At 0.99 of the stated bound, upwind lsrk45 (the default) keeps the energy of random
    fields bounded at a high order; the bound is not far too generous."""
    import numpy as np

    from lobatto.backends import get_backend
    from lobatto.integrators import Stepper, get_scheme
    from lobatto.mesh import box_mesh

    cls = MaxwellSystem if equations == "maxwell" else AcousticsSystem
    system = cls(box_mesh((1, 1, 2), periodic=(True, True, True)), 9, get_backend("cpu"))
    u = np.random.default_rng(7).standard_normal((len(system.field_names), system.num_elements, 10, 10, 10))
    stepper = Stepper(system, get_scheme("lsrk45"))
    dt = system.stable_time_step(0.99 * cls.spec.cfl_bounds[("upwind", "lsrk45")], system.geometry.min_spacing)
    e0 = system.energy(u)
    for _ in range(1000):
        stepper.step(u, 0.0, dt)
    assert system.energy(u) <= e0


def test_cfl_at_the_bound_runs(tmp_path):
    bound = MaxwellSystem.spec.cfl_bounds[("upwind", "lsrk45")]
    proc = run(tmp_path, GOOD.replace("t_end = 0.1", f"t_end = 0.5\ncfl = {bound}"))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    energy = summary["energy"]
    assert energy["final"] <= energy["initial"] * (1 + 1e-12)  # upwind, closed cavity: no growth


def test_dt_over_the_bound_is_refused_naming_dt(tmp_path):
    proc = run(tmp_path, GOOD.replace("t_end = 0.1", "t_end = 1.0\ndt = 0.2").replace("[mesh]", "[mesh]\n")
               + "[discretization]\norder = 5\n")
    assert_one_line_error(proc, "[time] dt = 0.2", "stability bound")


def test_unstable_run_with_the_check_off_stops_when_the_energy_grows(tmp_path):
    text = GOOD.replace("t_end = 0.1", "t_end = 20.0\ncfl = 1.5\ncfl_check = false")
    proc = run(tmp_path, text)
    line = assert_one_line_error(proc, "energy grew", "step", "time", "lower [time] cfl", code=1)
    assert "inf" not in line.lower().split("grew")[1][:40]  # stopped long before an overflow
    assert "the fields are largest (|u| = " in line and "centred at (" in line  # where it starts
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.parametrize("expression", ["exp(1000*x)", "1/x", "log(x - 2)"])
def test_initial_field_that_is_not_finite_names_the_field(tmp_path, expression):
    proc = run(tmp_path, GOOD.replace('Ez = "sin(pi*x)*sin(pi*y)"', f'Ez = "{expression}"'))
    line = assert_one_line_error(proc, "cavity.toml", "[initial] Ez is", "(x, y, z) =")
    assert "time step" not in line  # not blamed on dt


def test_exact_field_that_is_not_finite_is_refused_before_running(tmp_path):
    proc = run(tmp_path, GOOD + '\n[exact]\nHx = "1/y"\n')
    assert_one_line_error(proc, "[exact] Hx is", "t = 0")


def test_physics_values_whose_wave_speed_underflows_are_refused_by_their_range(tmp_path):
    proc = run(tmp_path, GOOD + "\n[physics]\nepsilon = 1e300\nmu = 1e300\n")  # c = 1/sqrt(eps mu) = 0
    assert_one_line_error(proc, "cavity.toml", "[physics] epsilon must be a number from 1e-30 to 1e+30")


def test_mesh_too_large_for_memory_is_refused_at_once(tmp_path):
    start = time.monotonic()
    proc = run(tmp_path, GOOD.replace("elements = [2, 2, 2]", "elements = [1000, 1000, 1000]"))
    assert_one_line_error(proc, "cavity.toml", "[mesh] elements = [1000, 1000, 1000]", "GiB of host memory",
                          "available")
    assert time.monotonic() - start < 20  # no minutes in box_mesh first (interpreter start-up included)


def test_summary_records_threads(tmp_path):
    proc = run(tmp_path, GOOD)
    assert proc.returncode == 0, proc.stderr
    threads = json.loads((tmp_path / "out" / "summary.json").read_text())["threads"]
    assert threads["set_by"] and "per_rank" in threads
