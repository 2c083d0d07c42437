"""The SEDG Maxwell operator and time stepping against exact solutions and invariants."""

import numpy as np
import pytest

from lobatto.integrators import Stepper, get_scheme, stable_time_step
from lobatto.systems.maxwell.system import MaxwellSystem

from analytic import CAVITY_TM110, PI, Fn, build_system, bump, integrate


def make_system(*args, **kwargs):
    return build_system(MaxwellSystem, *args, **kwargs)


def l2_error(system, u, exact, t):
    squares, _ = system.error_sums(u, system.evaluate_fields(exact, t))
    return float(np.sqrt(squares.sum()))


@pytest.mark.parametrize("deform", [None, bump], ids=["straight", "curved"])
def test_cavity_error_falls_spectrally(deform):
    errors = []
    for order in (3, 5, 7, 9):
        system = make_system(order=order, deform=deform)
        u, t = integrate(system, CAVITY_TM110, t_end=0.5, cfl=0.2)
        errors.append(l2_error(system, u, CAVITY_TM110, t))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all(ratios >= 10.0), (errors, ratios)
    assert errors[-1] < 1e-7


def test_constant_field_stays_constant_on_curved_periodic_mesh():
    rng = np.random.default_rng(7)
    system = make_system(elements=(3, 2, 2), order=6, deform=bump, periodic=[True, True, True])
    values = rng.standard_normal(6)
    u = system.allocate_state() + values[:, None, None, None, None]
    du = system.rhs(u, 0.0, np.empty_like(u))
    assert np.max(np.abs(du)) < 1e-10
    stepper = Stepper(system, get_scheme("lsrk45"))
    for _ in range(5):
        stepper.step(u, 0.0, 1e-2)
    assert np.max(np.abs(u - values[:, None, None, None, None])) < 1e-12


def test_plane_wave_in_periodic_box():
    wave = {
        "Ey": Fn(lambda x, y, z, t: np.sin(2 * PI * (x - t))),
        "Hz": Fn(lambda x, y, z, t: np.sin(2 * PI * (x - t))),
    }
    system = make_system(elements=(3, 2, 2), order=7, periodic=[True, True, True], deform=bump)
    u, t = integrate(system, wave, t_end=0.5, cfl=0.3)
    assert l2_error(system, u, wave, t) < 1e-5


def test_material_wave_speed():
    # In eps=4, mu=1 a wave travels at 1/2; E and H amplitudes differ by the impedance 1/2.
    wave = {
        "Ey": Fn(lambda x, y, z, t: np.sin(2 * PI * (x - 0.5 * t))),
        "Hz": Fn(lambda x, y, z, t: 2.0 * np.sin(2 * PI * (x - 0.5 * t))),
    }
    system = make_system(elements=(3, 1, 1), order=8, periodic=[True, True, True], epsilon=4.0, mu=1.0)
    u, t = integrate(system, wave, t_end=0.5, cfl=0.3)
    assert l2_error(system, u, wave, t) < 1e-6


@pytest.mark.parametrize("name,expected_order", [("lsrk45", 4), ("rk4", 4), ("ssprk3", 3)])
def test_temporal_convergence(name, expected_order):
    # Same spatial operator for every dt: compare against a fine-dt solution so only the
    # time error remains.
    system = make_system(elements=(2, 2, 2), order=6)
    t_end = 0.3
    reference, _ = integrate(system, CAVITY_TM110, t_end, dt=t_end / 400, scheme=name)
    errors = []
    for steps in (10, 20, 40):
        u, _ = integrate(system, CAVITY_TM110, t_end, dt=t_end / steps, scheme=name)
        errors.append(np.sqrt(np.sum(system.geometry.mass * np.sum((u - reference) ** 2, axis=0))))
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(rates > expected_order - 0.3), (errors, rates)


def energy_rate(system, u):
    du = system.rhs(u, 0.0, np.empty_like(u))
    m = system.geometry.mass
    return float(np.sum(m * (system.epsilon * np.sum(u[:3] * du[:3], 0) + system.mu * np.sum(u[3:] * du[3:], 0))))


@pytest.mark.parametrize("boundary", ["pec", "pmc", "absorbing"])
@pytest.mark.parametrize("periodic", [[False, False, False], [True, False, True]])
def test_central_flux_conserves_and_upwind_dissipates_energy(boundary, periodic):
    rng = np.random.default_rng(11)
    for flux in ("central", "upwind"):
        system = make_system(elements=(3, 2, 2), order=4, periodic=periodic, boundary=boundary,
                             upper=[1.0, 2.0, 1.5], epsilon=2.0, mu=0.7, flux=flux)
        u = rng.standard_normal(system.allocate_state().shape)
        rate, energy = energy_rate(system, u), system.energy(u)
        if flux == "central":
            assert abs(rate) < 1e-12 * energy * system.points
        else:
            assert rate < -1e-3 * energy


def test_upwind_energy_never_increases_over_steps_on_curved_mesh():
    rng = np.random.default_rng(5)
    system = make_system(elements=(2, 2, 2), order=5, deform=bump)
    u = rng.standard_normal(system.allocate_state().shape)
    stepper = Stepper(system, get_scheme("lsrk45"))
    dt = stable_time_step(0.5, system.geometry.min_spacing, 1.0)
    energies = [system.energy(u)]
    for n in range(20):
        stepper.step(u, n * dt, dt)
        energies.append(system.energy(u))
    assert np.all(np.diff(energies) <= 1e-14 * energies[0])
    assert energies[-1] < energies[0]


def test_absorbing_boundary_lets_a_pulse_leave():
    pulse = {
        "Ey": Fn(lambda x, y, z, t: np.exp(-((x - 0.5 - t) ** 2) / 0.01)),
        "Hz": Fn(lambda x, y, z, t: np.exp(-((x - 0.5 - t) ** 2) / 0.01)),
    }
    system = make_system(elements=(4, 1, 1), order=6, boundary="absorbing", periodic=[False, True, True])
    u0 = system.evaluate_fields(pulse, 0.0)
    u, _ = integrate(system, pulse, t_end=1.0, cfl=0.4)
    assert system.energy(u) < 1e-4 * system.energy(u0)
