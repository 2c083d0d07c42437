"""Terms around the Maxwell stage kernel (systems/maxwell/terms.py): a term on a subset of
elements steps like the same physics built into the operator, auxiliary fields step with the
2N-storage scheme to its order, checkpoints carry them, and Butcher schemes are refused."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.errors import InputError
from lobatto.integrators import Stepper, get_scheme
from lobatto.systems.maxwell.system import MaxwellSystem
from lobatto.systems.maxwell.terms import StageTerm

from analytic import build_system

KEYS = dict(elements=(3, 2, 2), order=3, periodic=[False, True, False], boundary="pec", upper=[1.0, 1.0, 0.8])


class Conduction(StageTerm):
    """S_E = -(sigma/eps) E on some elements, no auxiliary fields."""

    name = "conduction"

    def __init__(self, system, elements, sigma):
        self.setup_storage(system, elements)
        self.sigma = sigma

    def rates(self, u, t, s_out, r_out):
        s_out[0:3] = -(self.sigma / self.system.epsilon) * self.take(u)[0:3]
        s_out[3:6] = 0


class Relaxation(StageTerm):
    """A Debye-like pole on some elements: dP/dt = (g E - P) / tau, S_E = -dP/dt / eps."""

    name = "relaxation"
    aux_count = 3

    def __init__(self, system, elements, gain, tau):
        self.setup_storage(system, elements)
        self.gain, self.tau = gain, tau

    def rates(self, u, t, s_out, r_out):
        r_out[...] = (self.gain * self.take(u)[0:3] - self.aux) / self.tau
        s_out[0:3] = -r_out / self.system.epsilon
        s_out[3:6] = 0


def centroid_x(system):
    return system.geometry.coords[0].mean(axis=(1, 2, 3))


def run(system, u, dt, steps, scheme="lsrk45"):
    stepper = Stepper(system, get_scheme(scheme))
    for n in range(steps):
        stepper.step(u, n * dt, dt)
    return u


def test_conduction_term_equals_the_material_path():
    plain = build_system(MaxwellSystem, **KEYS)
    elements = np.nonzero(centroid_x(plain) > 0.5)[0]
    plain.add_term(Conduction(plain, elements, 2.5))
    sigma = np.zeros(plain.geometry.coords.shape[1:])
    sigma[elements] = 2.5
    ones = np.ones_like(sigma)
    medium = build_system(MaxwellSystem, material={"epsilon": ones, "mu": ones, "sigma": sigma}, **KEYS)
    u0 = np.random.default_rng(7).standard_normal(plain.allocate_state().shape)
    a = run(plain, u0.copy(), 0.01, 20)
    b = run(medium, u0.copy(), 0.01, 20)
    assert np.max(np.abs(a - b)) < 1e-12 * np.max(np.abs(a))
    assert np.max(np.abs(a - u0)) > 1e-2  # it moved


def test_auxiliary_field_converges_at_fourth_order():
    """Uniform E, H = 0 on a periodic box with the pole everywhere: curl = 0, so
    E' = -(g E - P)/(tau eps), P' = (g E - P)/tau, a linear ODE with exact solution."""
    keys = dict(KEYS, periodic=[True, True, True])
    gain, tau, t_end = 3.0, 0.2, 0.6
    errors = []
    for steps in (10, 20):
        system = build_system(MaxwellSystem, **keys)
        system.add_term(Relaxation(system, np.arange(system.num_elements), gain, tau))
        u = system.allocate_state()
        u[0] = 1.0
        run(system, u, t_end / steps, steps)
        a = np.array([[-gain, 1.0], [gain, -1.0]]) / tau
        w, v = np.linalg.eig(a)
        exact = (v @ np.diag(np.exp(w * t_end)) @ np.linalg.inv(v) @ np.array([1.0, 0.0])).real
        errors.append(max(np.max(np.abs(u[0] - exact[0])), np.max(np.abs(system.terms[0].aux[0] - exact[1]))))
        assert np.max(np.abs(u[1:])) < 1e-13
    assert errors[0] / errors[1] > 2 ** 3.7


def test_history_round_trip_and_butcher_refused():
    system = build_system(MaxwellSystem, **KEYS)
    elements = np.nonzero(centroid_x(system) < 0.5)[0]
    term = Relaxation(system, elements, 1.0, 0.5)
    system.add_term(term)
    term.aux[...] = np.random.default_rng(1).standard_normal(term.aux.shape)
    saved = system.history()
    assert set(saved) == {"relaxation/aux"} and saved["relaxation/aux"].shape[1] == system.num_elements
    expected = term.aux.copy()
    term.aux[...] = 0
    system.restore_history(saved)
    assert np.array_equal(term.aux, expected)
    with pytest.raises(InputError, match="lsrk45"):
        system.check_integrator("rk4", "case.toml")
    system.check_integrator("lsrk45")
    with pytest.raises(InputError, match="2N-storage"):
        run(system, system.allocate_state(), 0.01, 1, scheme="rk4")
