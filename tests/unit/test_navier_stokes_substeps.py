"""Navier–Stokes with the advection term sub-stepped along the characteristics ([time]
substeps, systems/navier_stokes/substeps.py, docs/navier-stokes.md "Sub-stepping"), on the CPU:
temporal orders 2 and 3 kept at CFL 2 (Ethier–Steinman), the nested integration of the lagged
fields equal to integrating each alone, the Taylor–Green vortex's energy and dissipation as
with extrapolated advection, restart equal to the uninterrupted run, substeps = 0 unchanged,
passive scalars carried too, the key's errors, and a run gone unstable stopped with a hint."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.errors import InputError, SolverError
from test_navier_stokes import beltrami_case, tgv_case


def with_time(case, **time):
    data = case.to_dict()
    data["time"].update(time)
    data.setdefault("output", {})["log_every"] = 0
    return case_from_dict(data, name=case.name)


def variable(case, **time):
    """The case with dt varying to [time] target_cfl (and the other [time] keys given)."""
    data = case.to_dict()
    for key in ("dt", "cfl", "max_cfl"):
        data["time"].pop(key, None)
    data["time"].update(time)
    data.setdefault("output", {})["log_every"] = 0
    return case_from_dict(data, name=case.name)


def velocity_error(case, tmp_path):
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    sim.run()
    e = sim.errors()
    return math.sqrt(sum(e[c]["l2"] ** 2 for c in ("ux", "uy", "uz"))), sim


@pytest.mark.parametrize("integrator,order,bound", [("bdf2", 2, 1e-3), ("bdf3", 3, 1.5e-4)])
def test_temporal_order_at_cfl_two(integrator, order, bound, tmp_path):
    """Ethier–Steinman, 2^3 elements, N = 7, two sub-steps, t = 0.2: dt = 0.025 is CFL 1.97,
    dt = 0.0125 CFL 1.02. Measured: bdf2 5.9e-4, 7.9e-5 (slope 2.92; then 2.44, 2.21 at
    CFL 0.5, 0.26); bdf3 6.8e-5, 6.7e-6 (3.34; then 3.15). The slope approaches the order
    from above as dt falls (without sub-steps too: 2.83 at CFL 1 to 0.5)."""
    found = []
    for dt in (0.025, 0.0125):
        case = with_time(beltrami_case(order=7, dt=dt, t_end=0.2, integrator=integrator), substeps=2)
        error, sim = velocity_error(case, tmp_path / str(dt))
        found.append(error)
        if dt == 0.025:
            assert 1.8 < sim.largest_cfl < 2.2
    slope = math.log2(found[0] / found[1])
    assert order - 0.2 <= slope <= order + 1.2, (found, slope)
    assert found[0] < bound, found


def test_nested_integration_equals_each_field_carried_alone(tmp_path):
    """sum_j bdf_j u~^{n+1-j} by the nested integration (one w gaining each lagged field at its
    time level) equals the sum of each lagged field carried alone, to rounding; variable steps."""
    case = variable(tgv_case(order=4, elements=2, t_end=1.0), substeps=3, integrator="bdf3", target_cfl=1.5)
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    sim.advance(4)
    system = sim.system
    dts = sim.stepper.previous_dts
    assert dts[0] != dts[1]  # the steps vary
    dt = 0.8 * dts[0]
    bdf, _ = sim.stepper.coefficients(dt)
    sub = system.substepper
    sub.plan(dt, system.step_sizes, 3)
    lagged = [v + 0.1 * np.sin(3.0 * v) for v in system.velocities]  # not the advecting velocity itself
    nested = sub.advected_sum(lagged, bdf).copy()
    alone = sum(bdf[j] * sub.carry(lagged[j - 1], j) for j in range(1, 4))
    scale = np.abs(alone).max()
    assert np.abs(nested - alone).max() <= 1e-13 * scale
    # and the carried fields moved: the advection term is there
    assert np.abs(sub.carry(lagged[0], 1) - lagged[0]).max() > 1e-3 * np.abs(lagged[0]).max()


def test_a_uniform_flow_carries_a_field_exactly_in_time():
    """U constant: w' = -U . grad w carries w(x) to w(x - U (t^{n+1} - t^{n+1-j})); with a
    polynomial w of degree < N the only error is RK4's, ~ (U h / L)^5 per sub-step."""
    case = case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.01},
        "mesh": {"elements": [3, 1, 1], "upper": [1.0, 1.0, 1.0], "periodic": [True, True, True]},
        "discretization": {"order": 8},
        "time": {"integrator": "bdf2", "dt": 0.01, "t_end": 1.0, "substeps": 4},
        "initial": {"ux": "1"}, "output": {"formats": []},
    }, name="uniform")
    sim = Simulation(case, backend="cpu", output_dir=None, comm=None)
    sim.close()
    system = sim.system
    u = sim.u[:3].copy()
    system.substepper.push(u)
    system.substepper.push(u)
    system.substepper.plan(0.01, [0.02], 2)
    x = system.geometry.coords[0]
    field = np.stack([np.sin(2 * np.pi * x)] * 3)
    carried = system.substepper.carry(field, 2)  # from t^{n-1} to t^{n+1}: 0.03 back
    exact = np.sin(2 * np.pi * (x - 0.03))
    assert np.abs(carried[0] - exact).max() < 1e-6


def test_taylor_green_converges_to_the_extrapolated_solution(tmp_path):
    """A 3^3 x N = 5 curved periodic box (nu = 0.01) to t = 1: two sub-steps per step at dt =
    0.1 and 0.05 (CFL 0.38, 0.19) against extrapolated advection at dt = 0.025. Measured:
    kinetic energy off by 4.1e-3, 1.0e-3 (relative; the extrapolated run at dt = 0.1 is off by
    8.3e-4), dissipation 4.5e-3, 1.1e-3: second order, to the same solution. The sub-stepped
    step's error constant is about 5 times the extrapolated one's here (the splitting of the
    advection from the pressure that balances it); docs/navier-stokes.md says what that costs at
    CFL 2 on coarse meshes."""
    def final(dt, substeps):
        sim = Simulation(with_time(tgv_case(order=5, elements=3, dt=dt, t_end=1.0), substeps=substeps),
                         backend="cpu", output_dir=tmp_path / f"{dt}_{substeps}", comm=None)
        sim.run()
        return sim.system.step_report()

    reference = final(0.025, 0)
    errors = {}
    for dt in (0.1, 0.05):
        r = final(dt, 2)
        errors[dt] = [abs(r[q] / reference[q] - 1) for q in ("kinetic_energy", "dissipation")]
    for coarse, fine in zip(errors[0.1], errors[0.05]):
        assert 3.0 < coarse / fine < 5.5, errors
    assert max(errors[0.05]) < 2e-3, errors


def test_the_summary_counts_the_sub_steps(tmp_path):
    """BDF2 with two sub-steps: 4 * 2 * k convective evaluations per step, k = 1 then 2."""
    sim = Simulation(with_time(tgv_case(), substeps=2), backend="cpu", output_dir=tmp_path, comm=None)
    sim.advance(3)
    entry = sim.system.summary()["navier_stokes"]
    assert entry["substeps"] == 2
    assert entry["convective_evaluations_per_step"] == (8 + 16 + 16) / 3


def test_bdf1_sub_steps(tmp_path):
    """BDF1: one stored velocity, U(s) = u^n; first order at CFL 2 and 1 (Ethier–Steinman).
    Measured: 1.21e-2, 3.83e-3 (slope 1.66; extrapolated advection at CFL 1 and 0.5: 1.43)."""
    found = []
    for dt in (0.025, 0.0125):
        error, _ = velocity_error(with_time(beltrami_case(order=7, dt=dt, t_end=0.2, integrator="bdf1"),
                                            substeps=1), tmp_path / str(dt))
        found.append(error)
    assert 0.8 < math.log2(found[0] / found[1]) < 2.0, found


def test_substeps_zero_is_todays_step(tmp_path):
    """substeps = 0 takes the extrapolated path: the same fields as a case without the key."""
    fields = []
    for time in ({}, {"substeps": 0}):
        sim = Simulation(with_time(tgv_case(), **time), backend="cpu", output_dir=tmp_path / str(len(time)), comm=None)
        sim.advance(3)
        assert sim.system.substepper is None
        fields.append(sim.fields())
    for name in fields[0]:
        assert np.array_equal(fields[0][name], fields[1][name]), name


def test_restart_equals_uninterrupted(tmp_path):
    def case():
        return variable(beltrami_case(integrator="bdf3", t_end=0.1), substeps=2, target_cfl=1.5)

    whole = Simulation(case(), backend="cpu", output_dir=tmp_path / "a", comm=None)
    whole.advance(6)
    first = Simulation(case(), backend="cpu", output_dir=tmp_path / "b", comm=None)
    first.advance(3)
    path = first.checkpoint()
    second = Simulation(case(), backend="cpu", output_dir=tmp_path / "c", comm=None)
    second.restart(path)
    second.advance(3)
    assert second.t == whole.t
    for name, values in whole.fields().items():
        assert np.array_equal(values, second.fields()[name]), name
    other = Simulation(with_time(beltrami_case(integrator="bdf3", t_end=0.1)), backend="cpu",
                       output_dir=tmp_path / "d", comm=None)
    with pytest.raises(InputError, match=r"\[time\] substeps differs \(the case: 0; the checkpoint: 2\)"):
        other.restart(path)  # substeps may not change across a restart: 2 -> 0
    fewer = Simulation(variable(beltrami_case(integrator="bdf3", t_end=0.1), substeps=1, target_cfl=1.5),
                       backend="cpu", output_dir=tmp_path / "e", comm=None)
    with pytest.raises(InputError, match=r"\[time\] substeps differs \(the case: 1; the checkpoint: 2\)"):
        fewer.restart(path)  # nor 2 -> 1, whose history names are the same
    # the summary's per-step figures are this run's steps, not all since t = 0 (BDF3's first
    # step alone is 11 system steps)
    summary = second.system.summary()["navier_stokes"]
    assert second.system.steps_this_run == second.step_count - first.step_count >= 1
    assert second.system.steps_taken > second.system.steps_this_run
    assert summary["convective_evaluations_per_step"] == 4 * 2 * 3  # bdf3 (order 3 by now), 2 sub-steps


def test_filter_too_stiff_for_the_sub_steps_stops_with_a_hint(tmp_path):
    """The HPF-RT relaxation rides in the RK4 sub-steps, stable for filter_weight * dt / substeps
    up to 2.78: a step beyond stops (exit 1) naming the sub-steps it needs."""
    case = with_time(tgv_case(elements=2, order=4, dt=0.5, t_end=1.0, filter_modes=1, filter_weight=10.0),
                     substeps=1)
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    with pytest.raises(SolverError, match=r"raise \[time\] substeps to 2 or more"):
        sim.advance(1)


def test_passive_scalar_is_sub_stepped(tmp_path):
    """A sine carried by a uniform flow and diffused (docs/navier-stokes.md, "Passive
    scalars"), N = 8, t = 0.4: sub-stepped at dt = 0.1 (CFL 2) and 0.05 the L2 errors are
    1.39e-3 and 3.5e-4 (second order), below extrapolated advection's 8.2e-4 at dt = 0.01:
    the flow carries the scalar along exact characteristics, leaving BDF2's diffusion error."""
    def case(substeps, dt):
        return case_from_dict({
            "physics": {"equations": "navier_stokes", "viscosity": 0.01, "scalars": ["T"]},
            "mesh": {"elements": [2, 1, 1], "upper": [2.0, 1.0, 1.0], "periodic": [True, True, True]},
            "discretization": {"order": 8},
            "time": {"integrator": "bdf2", "dt": dt, "t_end": 0.4, "substeps": substeps},
            "scalar": {"T": {"diffusivity": 0.05}},
            "initial": {"ux": "1", "T": "sin(pi*x)"},
            "exact": {"ux": "1", "T": "exp(-pi**2*0.05*t)*sin(pi*(x - t))"},
            "output": {"formats": [], "log_every": 0},
        }, name="scalar")

    errors = {}
    for substeps, dt in ((0, 0.01), (2, 0.1), (2, 0.05)):
        sim = Simulation(case(substeps, dt), backend="cpu", output_dir=tmp_path / f"{substeps}_{dt}", comm=None)
        sim.run()
        errors[(substeps, dt)] = sim.errors()["T"]["l2"]
        if dt == 0.1:
            assert sim.largest_cfl > 1.9
    # BDF2's error of the scalar's diffusion; the uniform flow is carried without EXT error
    assert 3.5 < errors[(2, 0.1)] / errors[(2, 0.05)] < 4.5, errors
    assert errors[(2, 0.05)] < errors[(0, 0.01)], errors


def test_the_key_is_checked(tmp_path):
    base = {"physics": {"equations": "navier_stokes"}, "mesh": {"elements": [2, 2, 2]},
            "time": {"dt": 0.1, "t_end": 1.0}}
    for bad in (-1, 1.5, 101, "2", True):
        with pytest.raises(InputError, match=r"\[time\] substeps"):
            case_from_dict({**base, "time": {**base["time"], "substeps": bad}}, name="bad")
    acoustics = {"physics": {"equations": "acoustics"}, "mesh": {"elements": [2, 2, 2]},
                 "time": {"t_end": 1.0, "substeps": 2}}
    with pytest.raises(InputError, match=r"\[time\] substeps = 2: acoustics has no sub-stepped"):
        case_from_dict(acoustics, name="bad")
    with pytest.raises(InputError, match=r"\[time\] substeps needs \[physics\] dealias = true"):
        Simulation(case_from_dict({**base, "physics": {"equations": "navier_stokes", "dealias": False},
                                   "time": {**base["time"], "substeps": 1}}, name="bad"), backend="cpu",
                   output_dir=tmp_path, comm=None)
    # the default max_cfl grows with the sub-steps: CFL 4 runs with one, and 2.0 stays without
    ok = case_from_dict({**base, "time": {"target_cfl": 4.0, "t_end": 1.0, "substeps": 1}}, name="ok")
    assert ok.time.max_cfl >= 4.0 and ok.time.substeps == 1
    assert case_from_dict(base, name="ok").time.max_cfl == 2.0
    with pytest.raises(InputError,
                       match=r"target_cfl = 4\.0 is above max_cfl = 2\.0.*substeps = 1 admits target_cfl 4\.0 \(max_cfl 6\.0\)"):
        case_from_dict({**base, "time": {"target_cfl": 4.0, "t_end": 1.0}}, name="bad")


def unstable_tgv(target_cfl, substeps, t_end=3.0):
    """A 4^3 x N = 6 TGV at Re = 1600 (periodic: its kinetic energy can only fall)."""
    two_pi = 2 * math.pi
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 1 / 1600, "filter_modes": 1},
        "mesh": {"elements": [4, 4, 4], "upper": [two_pi] * 3, "periodic": [True] * 3},
        "discretization": {"order": 6},
        "time": {"integrator": "bdf2", "target_cfl": target_cfl, "t_end": t_end, "substeps": substeps,
                 "max_cfl": 10.0},
        "solver": {"pressure": {"tolerance": 1e-6, "coarse_tolerance": 0.1}, "velocity": {"tolerance": 1e-8}},
        "initial": {"ux": "sin(x)*cos(y)*cos(z)", "uy": "-cos(x)*sin(y)*cos(z)",
                    "p": "(cos(2*x) + cos(2*y))*(cos(2*z) + 2)/16"},
        "output": {"formats": [], "log_every": 0},
    }, name="tgv")


def test_a_run_gone_unstable_stops_with_a_hint(tmp_path):
    """Extrapolated advection at CFL 2.5 gains kinetic energy (measured: 0.1257 after the first
    step, 0.1320 at t = 3): the run stops with exit 1, naming substeps; with two sub-steps the
    same CFL number runs on, its energy falling."""
    sim = Simulation(unstable_tgv(2.5, 0), backend="cpu", output_dir=tmp_path / "a", comm=None)
    with pytest.raises(SolverError, match=r"went unstable by step \d+ .*kinetic energy rose.*raise \[time\] "
                                          r"substeps \(now 0"):
        sim.advance(20)
    assert sim.t < 3.0
    stable = Simulation(unstable_tgv(2.5, 2, t_end=1.5), backend="cpu", output_dir=tmp_path / "b", comm=None)
    stable.run()
    assert stable.system.step_report()["kinetic_energy"] < 0.125
