"""Buoyancy (docs/navier-stokes.md, "Buoyancy"): a body force in the scalars, on the CPU.

The Boussinesq equations in thermal-diffusion units (lengths d, times d^2 / kappa, T from 1 on
the lower plate to 0 on the upper one): viscosity = Pr, diffusivity = 1, force_z = Ra Pr T.
Rayleigh–Bénard onset between rigid plates in a box of the critical wavelength 2 pi / 3.117:
a small perturbation decays at Ra = 0.9 Ra_c and grows at 1.1 Ra_c (Ra_c = 1707.76), the
zero of the growth rate between the two within 0.5 % of Ra_c. Conduction under gravity: the
fluid stays at rest and the pressure balances the force of the scalar at the new time level
(an exact solution). A sub-stepped restart equals the uninterrupted run; an unknown name in a
force and a scalar named as a coordinate are input errors naming the key.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.errors import InputError, SolverError

K = 3.117  # the critical wavenumber between rigid plates
LENGTH = 2 * math.pi / K
RA_C = 1707.76


def rbc_case(ra, pr=1.0, order=4, elements=(2, 1, 2), dt=0.02, t_end=0.64, amplitude=1e-3, **more):
    """A box of one critical wavelength in x (periodic x, y), plates at z = 0 (T = 1) and z = 1
    (T = 0), from the conduction profile with a perturbation of the critical mode."""
    data = {
        "physics": {"equations": "navier_stokes", "viscosity": pr, "scalars": ["temperature"],
                    "force_z": f"{ra * pr!r}*temperature"},
        "scalar": {"temperature": {"diffusivity": 1.0, "tolerance": 1e-9}},
        "mesh": {"elements": list(elements), "upper": [LENGTH, 0.25, 1.0], "periodic": [True, True, False],
                 "boundary": "wall"},
        "discretization": {"order": order},
        "time": {"integrator": "bdf2", "dt": dt, "t_end": t_end},
        "solver": {"pressure": {"tolerance": 1e-8}, "velocity": {"tolerance": 1e-9}},
        "boundary": {"zmin": {"temperature": 1}, "zmax": {"temperature": 0}},
        "initial": {"temperature": f"1 - z + {amplitude!r}*sin(pi*z)*cos({K}*x)"},
        "output": {"formats": [], "log_every": 0},
    }
    merge(data, more)
    return case_from_dict(data, name="rbc")


def merge(data: dict, more: dict) -> None:
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            merge(data[key], value)
        else:
            data[key] = value


def growth_rate(ra, tmp_path, steps=32) -> float:
    """The perturbation's growth rate: half the slope of log(kinetic energy) over the second
    half of the run (the faster modes have decayed by then)."""
    sim = Simulation(rbc_case(ra), backend="cpu", output_dir=tmp_path, comm=None)
    times, energies = [], []
    for _ in range(steps):
        sim.advance(1)
        times.append(sim.t)
        energies.append(sim.system.last_report["kinetic_energy"])
    half = steps // 2
    return float(np.polyfit(times[half:], np.log(energies[half:]), 1)[0]) / 2


def test_onset_between_rigid_plates(tmp_path):
    """N = 4, 2 x 2 elements, BDF2, dt = 0.02 to t = 0.64. Measured: growth rates -1.313 at
    0.9 Ra_c and +1.301 at 1.1 Ra_c (N = 6 gives -1.332, +1.271 and -8e-6 at Ra_c), zero at
    1708.5 (0.05 % above Ra_c)."""
    below = growth_rate(0.9 * RA_C, tmp_path / "below")
    above = growth_rate(1.1 * RA_C, tmp_path / "above")
    assert below < -1.0 and above > 1.0, (below, above)
    onset = RA_C * (0.9 + 0.2 * (-below) / (above - below))
    assert abs(onset / RA_C - 1) < 5e-3, (onset, below, above)


def test_conduction_under_gravity_is_at_rest(tmp_path):
    """T = 1 - z + exp(-pi^2 t) sin(pi z) (no motion): the pressure balances Ra Pr T,
    p = Ra Pr (z - z^2/2 - exp(-pi^2 t) cos(pi z) / pi) up to a constant. BDF3, dt = 0.01 to
    t = 0.1, N = 6, Ra Pr = 1000. Measured: |u| 3e-6 (the splitting's divergence), L2 errors
    T 3.9e-5 (its time error), p 1.2e-2 = 1.2e-5 Ra Pr; T^n in place of T^{n+1} in the force
    would put Ra Pr |T^{n+1} - T^n| ~ 10 into p. (The watch's divergence check is off: in this
    flow, uz(z) alone, |div u| = |grad u| whatever the size of u.)"""
    ra_pr = 1000.0
    temperature = "1 - z + exp(-pi**2*t)*sin(pi*z)"
    pressure = f"{ra_pr}*(z - z**2/2 - exp(-pi**2*t)*cos(pi*z)/pi)"
    case = rbc_case(ra_pr, order=6, elements=(1, 1, 2), dt=1e-2, t_end=0.1, physics={"diagnostics_every": 0},
                    scalar={"temperature": {"tolerance": 1e-12}}, time={"integrator": "bdf3"},
                    solver={"pressure": {"tolerance": 1e-12}, "velocity": {"tolerance": 1e-12}},
                    initial={"temperature": temperature}, exact={"temperature": temperature, "p": pressure})
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    sim.run()
    fields = sim.fields()
    assert max(np.abs(fields[c]).max() for c in ("ux", "uy", "uz")) < 1e-5
    errors = sim.errors()
    assert errors["temperature"]["l2"] < 1e-4, errors
    assert errors["p"]["l2"] < 5e-5 * ra_pr, errors


def test_substepped_restart_equals_uninterrupted(tmp_path):
    """Sub-stepped BDF3 at Ra = 5000 from a finite perturbation: 3 steps, a checkpoint, 3
    more, equal to 6 steps run at once (the force needs no history of its own)."""
    def case():
        return rbc_case(5000.0, order=3, dt=2e-3, amplitude=0.2, time={"integrator": "bdf3", "substeps": 2})

    whole = Simulation(case(), backend="cpu", output_dir=tmp_path / "a", comm=None)
    whole.advance(6)
    first = Simulation(case(), backend="cpu", output_dir=tmp_path / "b", comm=None)
    first.advance(3)
    path = first.checkpoint()
    second = Simulation(case(), backend="cpu", output_dir=tmp_path / "c", comm=None)
    second.restart(path)
    second.advance(3)
    for name, values in whole.fields().items():
        assert np.array_equal(values, second.fields()[name]), name
    assert np.abs(whole.fields()["uz"]).max() > 1e-2  # the force did move the fluid


@pytest.mark.parametrize("physics, message", [
    ({"force_z": "10*temp"}, "[physics] force_z: unknown name 'temp' (allowed: variables x, y, z, t, temperature"),
    ({"force_x": "T"}, "[physics] force_x: unknown name 'T'"),
])
def test_unknown_name_in_a_force(physics, message):
    with pytest.raises(InputError) as error:
        rbc_case(1000.0, physics=physics)
    assert message in str(error.value)


def test_scalar_named_as_a_variable_of_the_force():
    with pytest.raises(InputError, match=r"\[physics\] scalars: 't' is a name of the expressions"):
        rbc_case(1000.0, physics={"scalars": ["t"], "force_z": "0"})


def test_a_force_the_scalars_take_out_of_range_stops_the_run(tmp_path):
    """T^-400 at the cold plate (T = 0) is inf: the step stops (SolverError: exit 1) naming the
    key, before the solves meet the non-finite values."""
    case = rbc_case(1000.0, order=2, elements=(1, 1, 1), physics={"force_z": "temperature**-400"})
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    with pytest.raises(SolverError, match=r'\[physics\] force_z = "temperature\*\*-400" left its range .* at t = 0.02'):
        sim.advance(1)


def free_fall_case(rolls: float):
    """examples/rbc.toml made tiny (Ra = 1e5, Pr = 0.7 in free-fall units, force_z = T), at
    target CFL 2 with no initial_dt: from rest (rolls = 0) or from its rolls (rolls = 1)."""
    data = {
        "physics": {"equations": "navier_stokes", "viscosity": math.sqrt(0.7 / 1e5), "scalars": ["temperature"],
                    "force_z": "temperature"},
        "scalar": {"temperature": {"diffusivity": 1 / math.sqrt(0.7e5)}},
        "mesh": {"elements": [2, 2, 2], "upper": [2.0, 2.0, 1.0], "periodic": [True, True, False],
                 "boundary": "wall"},
        "discretization": {"order": 3},
        "time": {"integrator": "bdf2", "target_cfl": 2.0, "substeps": 2, "t_end": 4.0},
        "boundary": {"zmin": {"temperature": 1}, "zmax": {"temperature": 0}},
        "initial": {"ux": f"{0.05 * rolls!r}*pi*sin(pi*x)*sin(2*pi*z)",
                    "uz": f"{-0.05 * rolls!r}*pi*cos(pi*x)*sin(pi*z)**2",
                    "temperature": "1 - z + 0.05*sin(pi*z)*(cos(pi*x) + 0.5*cos(pi*y/2 + 0.3))"},
        "output": {"formats": [], "log_every": 0},
    }
    return case_from_dict(data, name="rbc")


@pytest.mark.parametrize("rolls", [0.0, 1.0])
def test_the_first_step_counts_the_buoyant_acceleration(tmp_path, rolls):
    """The first variable step bounds the CFL number at its end, (c_u + c_f dt) dt = target
    (integrators/step_size.py first_dt; c_f: the force's CFL number per unit dt^2). From rest
    the velocity alone gave no first step (an input error); from the example's slow rolls it
    gave dt = 1.76, and the flow, speeding up under buoyancy, took the second step to CFL 2.7
    and the fourth to sixth to 2.3, over the target (measured with force_courant set to 0). With
    the force: dt = 0.45, CFL 0.51, 0.63, 0.85, 0.98, 1.17, 1.57 on the first six steps."""
    sim = Simulation(free_fall_case(rolls), backend="cpu", output_dir=tmp_path, comm=None)
    c_u, c_f = sim.system.courant(sim.u, 1.0), sim.system.force_courant(sim.u)
    assert c_f > 0 and (c_u == 0) == (rolls == 0)
    dt = sim.dt
    assert math.isfinite(dt) and 0 < dt < 1.0 and (c_u + c_f * dt) * dt == pytest.approx(2.0, rel=1e-12)
    if rolls:
        assert dt < 2.0 / c_u  # shorter than the velocity's own
    cfl, dts = [], []
    for _ in range(6):  # stable first steps: the CFL number stays at or below the target, the step grows
        dts.append(sim.dt)
        sim.advance(1)
        cfl.append(sim.last_cfl)
    assert all(0 < c <= 2.0 for c in cfl), cfl
    assert dts[-1] > dts[0] and np.isfinite(sim.backend.to_host(sim.u)).all()
    assert sim.system.last_report["kinetic_energy"] < 0.05
