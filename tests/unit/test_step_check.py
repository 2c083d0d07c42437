"""The time step checked against the operator's spectral radius (runner/step_check.py): the
stability regions' reach (integrators/stability.py, tables.STABILITY_RADII), the shortened
step on a strongly deformed low-order mesh where cfl alone grows without bound, flat boxes
left alone, an explicit dt over the stable one refused, a restart taking the same step."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.errors import InputError
from lobatto.integrators.stability import reach, stability_polynomial
from lobatto.integrators.tables import SCHEMES, STABILITY_RADII
from lobatto.runner.step_check import MARGIN, start_fields
from test_cli_errors import GOOD, assert_one_line_error, run_cli, write_case

#: the deformed 2^3 box of benchmarks/split_form_low_order_check.py (notes-stability.md)
DEFORM = {"x": "0.15*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.12*sin(pi*x)*sin(pi*y)*sin(pi*z)",
          "z": "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"}
BOUNDS = {"upwind": 0.63, "central": 0.74}  # maxwell, lsrk45


def case(flux="upwind", deform=True, order=2, t_end=1.0, **time):
    mesh = {"elements": [2, 2, 2], "boundary": "pec", **({"deform": DEFORM} if deform else {})}
    # the split form named: these check the collocated forms' step on curved elements ("auto" runs galerkin there)
    data = {"mesh": mesh, "discretization": {"order": order, "flux": flux, "volume_form": "split"},
            "physics": {"equations": "maxwell"},
            "time": {"t_end": t_end, "integrator": "lsrk45", **time}, "output": {"formats": []}}
    return case_from_dict(data, name="step_check")


def simulation(tmp_path, name, *args, **kwargs):
    return Simulation(case(*args, **kwargs), backend="cpu", output_dir=tmp_path / name, comm=None)


def test_radii_table_is_the_stability_polynomials():
    for name, (imaginary, real, half_disk) in STABILITY_RADII.items():
        scheme = SCHEMES[name]
        coefficients = stability_polynomial(scheme)  # e^z's Taylor series to the scheme's order
        assert len(coefficients) == scheme.stages + 1
        assert np.allclose(coefficients[:scheme.order + 1], [1 / math.factorial(k) for k in range(scheme.order + 1)])
        assert 0 <= reach(scheme, math.pi / 2) - imaginary < 1e-4
        assert 0 <= reach(scheme, math.pi) - real < 1e-4
        sampled = min(reach(scheme, math.radians(a)) for a in np.arange(90.0, 180.01, 0.5))
        assert 0 <= sampled - half_disk < 1e-4
    # textbook values: RK4 reaches 2 sqrt(2) along the imaginary axis, SSPRK3 sqrt(3)
    assert abs(reach(SCHEMES["rk4"], math.pi / 2) - 2 * math.sqrt(2)) < 1e-9
    assert abs(reach(SCHEMES["ssprk3"], math.pi / 2) - math.sqrt(3)) < 1e-9


def test_start_fields_follow_the_element_not_its_rank():
    a, b = start_fields(6, [5, 2, 9], 27), start_fields(6, [9, 5], 27)
    assert np.array_equal(a[:, 0], b[:, 1]) and np.array_equal(a[:, 2], b[:, 0])
    assert a.min() >= -1 and a.max() < 1 and abs(a.mean()) < 0.1 and a.std() > 0.5
    assert not np.array_equal(a[0, 0], a[1, 0])  # fields differ


@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_deformed_low_order_box_gets_a_stable_step(tmp_path, flux):
    """N = 2 at the enforced cfl: the step is shortened and fields made of the operator's
    largest modes (L^30 of random fields) do not grow over 40 steps of cfl's dt; with the
    check off these steps grow them by orders of magnitude."""
    ratios = {}
    t_end = 40 * BOUNDS[flux] * simulation(tmp_path, "h", flux).min_spacing  # 40 steps of cfl's dt
    for check in (True, False):
        sim = simulation(tmp_path, f"{check}", flux, t_end=t_end, cfl=BOUNDS[flux], cfl_check=check)
        u, w = np.random.default_rng(3).standard_normal(sim.u.shape), np.empty(sim.u.shape)
        for _ in range(30):
            u = sim.system.rhs(u, 0.0, w) / np.abs(w).max()
        sim.u[...] = u
        start = sim.system.energy(sim.u)
        for n in range(sim.steps):
            sim.stepper.step(sim.u, n * sim.dt, sim.dt)
        ratios[check] = sim.system.energy(sim.u) / start
        if check:
            record, cfl_dt = sim.step_check, BOUNDS[flux] * sim.min_spacing
            assert record["shortened"] and sim.dt < cfl_dt * (1 - MARGIN / 2)
            assert record["dt_checked"] == pytest.approx(cfl_dt)
            assert record["dt_rho"] <= (1 - MARGIN) * record["reach"] * (1 + 1e-9)
            assert record["direction_degrees"] == (180.0 if flux == "upwind" else 90.0)
        else:
            assert sim.step_check == {"skipped": "[time] cfl_check = false"} and sim.dt == pytest.approx(cfl_dt) and sim.steps == 40
    assert ratios[True] <= (1 + 1e-12 if flux == "upwind" else 1.02)  # central: energy kept (curved: to 1e-2)
    assert ratios[False] > 10.0


def test_flat_box_keeps_its_step(tmp_path):
    for flux in ("upwind", "central"):
        sim = simulation(tmp_path, flux, flux, deform=False, cfl=BOUNDS[flux])
        assert sim.step_check is None  # cubes: the bounds were calibrated on them
        assert sim.dt == 1.0 / math.ceil(1.0 / (BOUNDS[flux] * sim.min_spacing) - 1e-12)


def test_gentle_curved_mesh_keeps_its_step_and_records_the_check(tmp_path):
    sim = Simulation(case_from_dict({"mesh": {"elements": [2, 2, 2], "deform": {"x": "0.03*sin(pi*x)*sin(pi*y)"}},
                                     "discretization": {"order": 3, "volume_form": "split"},
                                     "time": {"t_end": 1.0, "cfl": 0.63},
                                     "output": {"formats": []}}, name="gentle"),
                     backend="cpu", output_dir=tmp_path / "gentle", comm=None)
    record = sim.step_check
    assert record is not None and not record["shortened"] and record["dt_rho"] < record["reach"]
    assert sim.dt == 1.0 / math.ceil(1.0 / (0.63 * sim.min_spacing) - 1e-12)


def test_galerkin_step_factors_are_within_the_reach(tmp_path):
    """The Galerkin form's fixed step factors (galerkin.STEP_FACTORS) keep dt rho within the
    reach on the deformed box: the check passes them unchanged."""
    for order in (1, 2, 4, 7):
        data = {"mesh": {"elements": [2, 2, 2], "boundary": "pec", "deform": DEFORM},
                "discretization": {"order": order, "volume_form": "galerkin"},
                "time": {"t_end": 1.0, "cfl": 0.63}, "output": {"formats": []}}
        sim = Simulation(case_from_dict(data, name="g"), backend="cpu", output_dir=tmp_path / f"g{order}", comm=None)
        record = sim.step_check
        assert record is not None and not record["shortened"], record


def test_restart_takes_the_shortened_step(tmp_path, capsys):
    first = simulation(tmp_path, "a", t_end=1.0, cfl=0.63)
    assert first.step_check["shortened"]
    first.advance(3)
    path = first.checkpoint()
    capsys.readouterr()
    second = simulation(tmp_path, "b", t_end=1.0, cfl=0.63).restart(path)
    assert second.dt == first.dt and second.steps == first.steps
    # the set-up's note spoke of the cfl step; the restart says which step goes on
    assert f"goes on with the checkpoint's dt = {first.dt:.4g}" in capsys.readouterr().out
    assert second.step_check["kept_from_checkpoint"] and not second.step_check["shortened"]


def test_restart_with_a_faster_wave_refuses_the_kept_step(tmp_path):
    """A restart keeps the checkpoint's dt: where a changed [physics] value makes it over the
    operator's stable step (though within the cfl bound), the restart is refused (it used to go
    on and blow up)."""
    h = simulation(tmp_path, "probe", flux="central").min_spacing
    dt = 0.68 * h  # under the shortened step (cfl 0.685) of this mesh
    first = simulation(tmp_path, "a", flux="central", t_end=10 * dt, dt=dt)
    first.advance(2)
    path = first.checkpoint()

    def restarted(name, epsilon):
        data = {"mesh": {"elements": [2, 2, 2], "boundary": "pec", "deform": DEFORM},
                "discretization": {"order": 2, "flux": "central", "volume_form": "split"},
                "physics": {"equations": "maxwell", "epsilon": epsilon},
                "time": {"t_end": 10 * dt, "cfl": 0.6}, "output": {"formats": []}}
        sim = Simulation(case_from_dict(data, name="step_check"), backend="cpu", output_dir=tmp_path / name, comm=None)
        return sim.restart(path)

    with pytest.raises(InputError, match="checkpoint's dt = .* over the stable step"):
        restarted("b", 0.85)  # c = 1.085: cfl 0.738, within 0.74, but dt rho over the reach
    same = restarted("c", 1.0)
    assert same.step_check["kept_from_checkpoint"] and same.step_check["dt_checked"] == first.dt


def test_galerkin_explicit_dt_is_checked_against_its_own_bound(tmp_path):
    """volume_form = "galerkin" steps at 0.61 (N = 4) of the collocated forms' bound: an explicit dt is
    checked against that (on a box, where the spectral-radius check does not run)."""
    def data(**time):
        return {"mesh": {"elements": [2, 2, 2], "boundary": "pec"},
                "discretization": {"order": 4, "volume_form": "galerkin"},
                "time": {"t_end": 1.0, **time}, "output": {"formats": []}}
    probe = Simulation(case_from_dict(data(cfl=0.5), name="g"), backend="cpu", output_dir=tmp_path / "p", comm=None)
    dt = 0.6 * probe.min_spacing  # cfl 0.6: within the split form's 0.63, over the Galerkin form's 0.3843
    with pytest.raises(InputError, match=r"bound cfl 0.3843 \(0.63 x 0.61 for \[discretization\] volume_form"):
        Simulation(case_from_dict(data(dt=dt), name="g"), backend="cpu", output_dir=tmp_path / "g", comm=None)


def test_explicit_dt_over_the_stable_step_is_refused(tmp_path):
    deform = "".join(f'{axis} = "{value}"\n' for axis, value in DEFORM.items())
    text = (GOOD.replace("t_end = 0.1", "t_end = 0.5\ndt = 0.114") + "[discretization]\norder = 2\nvolume_form = \"split\"\n"
            + "[mesh.deform]\n" + deform)
    proc = run_cli("run", str(write_case(tmp_path, text)), "--output", str(tmp_path / "out"), "--quiet")
    line = assert_one_line_error(proc, "cavity.toml", "[time] dt = 0.114", "stable dt <=", "cfl_check = false")
    stable = float(line.split("stable dt <= ")[1].split(")")[0])
    assert 0.09 < stable < 0.114
