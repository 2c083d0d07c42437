"""Per-point media with volume_form = "galerkin" (systems/maxwell/galerkin_media.py).

A uniform medium given per point equals the scalar path; with eps jumping across an element face,
mu varying inside the elements, a diagonal (anisotropic) eps or a conductor, on a curved box, the
energy in the weight-adjusted masses M_{eps W}, M_{mu W} is conserved to round-off with the central
flux, decays with upwind, and a conductor removes exactly E . M_sigma E; a uniform conductor decays
a uniform field as exp(-sigma t / eps); a pulse at a dielectric interface reflects and transmits
Fresnel's energies; a dipole's work equals the energy's rate; a [material] case file runs."""

from __future__ import annotations

import numpy as np
import pytest

from analytic import build_system
from lobatto.api import case_from_dict, run
from lobatto.integrators import Stepper, get_scheme
from lobatto.systems.maxwell.system import MaxwellSystem


def deform(x, y, z):
    s = np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * z)
    return np.stack([0.15 * s, 0.12 * s, 0.1 * s])


KEYS = dict(elements=(2, 2, 2), order=4, boundary="pec", deform=deform, volume_form="galerkin")


def fields(system, epsilon, mu=1.0, sigma=0.0):
    """Per-point eps, mu, sigma: numbers, arrays, or functions of the coordinates."""
    x = system.geometry.coords

    def value(f):
        v = f(*x) if callable(f) else f
        return np.array(np.broadcast_to(v, (np.shape(v)[0],) + x.shape[1:] if np.ndim(v) == 5 else x.shape[1:]))

    return {"epsilon": value(epsilon), "mu": value(mu), "sigma": value(sigma)}


def two_media(system, sigma=0.0, anisotropic=False):
    """eps 1 | 4 across the element face x = 0.5, mu varying inside the elements, optionally a
    diagonal eps and a conductor."""
    x, y, z = system.geometry.coords
    right = (x.mean(axis=(1, 2, 3)) > 0.5)[:, None, None, None]
    eps = 1.0 + 3.0 * right + 0 * x
    if anisotropic:
        eps = np.stack([eps, 2.0 * eps, 1.0 + 0.5 * np.cos(y)])
    return fields(system, eps, 1.0 + 0.3 * np.sin(2 * np.pi * x) * np.cos(np.pi * y), sigma)


def rate(system, u):
    """d/dt of the system's energy along L u, relative: B(u, L u) / (2 sqrt(E(u) E(L u)))."""
    du = system.rhs(u, 0.0, np.empty_like(u))
    return 0.5 * (system.energy(u + du) - system.energy(u - du)) / (2 * np.sqrt(system.energy(u) * system.energy(du)))


@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_uniform_medium_per_point_equals_the_scalar_path(flux):
    scalar = build_system(MaxwellSystem, epsilon=2.0, mu=0.7, flux=flux, **KEYS)
    per_point = build_system(MaxwellSystem, material=fields(scalar, 2.0, 0.7), flux=flux, **KEYS)
    assert scalar.galerkin.medium is None and per_point.galerkin.medium is not None
    u = np.random.default_rng().standard_normal(scalar.allocate_state().shape)
    a, b = scalar.rhs(u, 0.0, np.empty_like(u)), per_point.rhs(u, 0.0, np.empty_like(u))
    assert np.max(np.abs(a - b)) < 1e-13 * np.max(np.abs(a))
    assert per_point.energy(u) == pytest.approx(scalar.energy(u), rel=1e-13)


@pytest.mark.parametrize("anisotropic", [False, True])
def test_energy_conserved_with_central_and_decays_with_upwind(anisotropic):
    probe = build_system(MaxwellSystem, **KEYS)
    medium = two_media(probe, anisotropic=anisotropic)
    u = np.random.default_rng().standard_normal(probe.allocate_state().shape)
    central = build_system(MaxwellSystem, material=medium, flux="central", **KEYS)
    assert abs(rate(central, u)) < 1e-13  # measured <= 5e-16
    assert rate(build_system(MaxwellSystem, material=medium, flux="upwind", **KEYS), u) < -1e-2  # -0.17


def test_conductor_removes_exactly_its_loss():
    """Central flux: the rate is -E . M_sigma E, M_sigma Gauss-integrated (w J sigma at the rule's points)."""
    probe = build_system(MaxwellSystem, **KEYS)
    sigma = lambda x, y, z: 0.5 + 0.3 * np.sin(3 * z)  # noqa: E731
    system = build_system(MaxwellSystem, material=two_media(probe, sigma=sigma), flux="central", **KEYS)
    u = np.random.default_rng().standard_normal(probe.allocate_state().shape)
    du = system.rhs(u, 0.0, np.empty_like(u))
    change = (system.energy(u + 1e-3 * du) - system.energy(u - 1e-3 * du)) / 2e-3  # u . M du, exact: quadratic
    op = system.galerkin
    gauss = np.einsum("ai,bj,ck,...ijk->...abc", op.v, op.v, op.v, u[0:3])
    loss = float(np.sum(op.medium.loss_weights * gauss**2))
    assert loss > 0 and abs(change + loss) < 1e-12 * loss


def test_uniform_conductor_decays_a_uniform_field_as_exp():
    eps, sigma, t_end, steps = 2.0, 0.6, 1.0, 50
    keys = dict(KEYS, boundary=None, periodic=[True, True, True])
    keys.pop("boundary")
    probe = build_system(MaxwellSystem, **keys)
    system = build_system(MaxwellSystem, material=fields(probe, eps, 1.5, sigma), **keys)
    u = system.allocate_state()
    u[0], u[2], u[4] = 1.0, -0.5, 0.3  # H is unaffected by sigma
    stepper = Stepper(system, get_scheme("lsrk45"))
    for n in range(steps):
        stepper.step(u, n * t_end / steps, t_end / steps)
    decay = np.exp(-sigma * t_end / eps)
    assert np.max(np.abs(u[0] - decay)) < 1e-10 and np.max(np.abs(u[2] + 0.5 * decay)) < 1e-10
    assert np.max(np.abs(u[4] - 0.3)) < 1e-12 and np.max(np.abs(u[[1, 3, 5]])) < 1e-12


PULSE = "exp(-((x-0.5)/0.15)**2)"  # in vacuum, moving to +x


@pytest.mark.parametrize("order", [5])
def test_dielectric_interface_reflects_and_transmits_fresnel_energy(order, tmp_path):
    """As test_maxwell_materials' (split form), with the Galerkin form's fluxes and masses."""
    n1, n2 = 1.0, 2.0
    reflected, transmitted = ((n1 - n2) / (n1 + n2)) ** 2, 4 * n1 * n2 / (n1 + n2) ** 2
    case = case_from_dict({
        "mesh": {"elements": [12, 1, 1], "upper": [1.5, 0.125, 0.125], "periodic": [False, True, True],
                 "boundary": "absorbing"},
        "discretization": {"order": order, "volume_form": "galerkin"}, "physics": {"equations": "maxwell"},
        "material": {"slab": {"where": "x - 1", "epsilon": n2**2, "sampling": "element"}},
        "initial": {"Ey": PULSE, "Hz": PULSE}, "time": {"t_end": 1.0, "cfl": 0.6}, "output": {"formats": []}})
    result = run(case, output_dir=tmp_path)
    system = result.simulation.system
    assert system.galerkin is not None and system.galerkin.medium is not None
    g, u = system.geometry, result.simulation.u
    left = (g.coords[0].mean(axis=(1, 2, 3)) < 1.0)
    eps = system.medium.epsilon
    density = 0.5 * g.mass * (eps * np.sum(u[0:3] ** 2, axis=0) + np.sum(u[3:6] ** 2, axis=0))
    start = np.exp(-((g.coords[0] - 0.5) / 0.15) ** 2)
    w0 = float(np.sum(g.mass * start**2))
    r, t = float(density[left].sum()) / w0, float(density[~left].sum()) / w0
    print(f"galerkin half-space N={order}: R {r:.7f} T {t:.7f}")
    assert abs(r - reflected) < 0.01 * reflected and abs(t - transmitted) < 0.01 * transmitted, (r, t)


def element_mass(operator, element, weights):
    """One element's M_{eps W} (dense), the inverse of its M_{eps W}^-1 columns."""
    n = operator.order + 1
    basis = np.eye(n ** 3).reshape(n ** 3, n, n, n)
    inverse = np.stack([operator.inverse_mass(np, b, element, weights).reshape(-1) for b in basis], axis=1)
    return np.linalg.inv(inverse)


DIPOLE = {"type": "electric_dipole", "position": [0.71, 0.43, 0.52], "direction": [0.3, 1.0, -0.2],
          "amplitude": 1.3, "waveform": "gaussian", "t0": 0.1, "width": 0.04}


def test_dipole_work_equals_the_energy_rate_in_a_medium(tmp_path):
    """Central flux, a dipole in an element of eps = 4 and mu varying (beside eps = 1): its delta
    is M_{eps_c W}^-1 phi(x0) per component (sources.py), so the energy's rate is exactly the
    source's work -amplitude w(t) d . E_h(x0) for any state."""
    from lobatto.api import Simulation
    from lobatto.systems.maxwell.waveforms import waveform_value

    case = case_from_dict({
        "mesh": {"elements": [2, 2, 2], "boundary": "pec", "deform": {"x": "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"}},
        "discretization": {"order": 3, "volume_form": "galerkin", "flux": "central"},
        "physics": {"equations": "maxwell"},
        "material": {"right": {"where": "x - 0.5", "epsilon": 4.0, "mu": "1 + 0.2*y", "sampling": "element"}},
        "source": {"d": dict(DIPOLE)}, "time": {"t_end": 0.2, "dt": 0.002}, "output": {"formats": []}})
    sim = Simulation(case, backend="cpu", output_dir=str(tmp_path), comm=None)
    system, operator = sim.system, sim.system.galerkin
    assert operator.medium is not None
    u = np.random.default_rng().standard_normal(sim.u.shape)
    t = 0.09
    du = system.rhs(u, t, np.empty_like(u))
    rate = 0.5 * (system.energy(u + du) - system.energy(u - du))
    scale = 2 * np.sqrt(system.energy(u) * system.energy(du))
    ((_, _, slot, profile),) = system.sources.dipoles
    element = int(system.sources.elements[slot])
    assert system.medium.epsilon[element].min() == 4.0
    d = np.array(DIPOLE["direction"]) / np.linalg.norm(DIPOLE["direction"])
    phis = [element_mass(operator, element, operator.medium.inverse_weights[c]) @ (
        np.asarray(profile)[c].reshape(-1) / (DIPOLE["amplitude"] * d[c])) for c in range(3)]
    assert max(np.abs(p - phis[0]).max() for p in phis) < 1e-10  # one phi(x0) for every component
    assert abs(phis[0].sum() - 1.0) < 1e-10  # a partition of unity
    e_h = u[0:3, element].reshape(3, -1) @ phis[0]
    expected = -DIPOLE["amplitude"] * waveform_value("gaussian", DIPOLE, t) * float(d @ e_h)
    assert abs(expected) > 1e-3 and abs(rate - expected) <= 1e-12 * scale, (rate, expected, scale)
    sim.close()


def test_case_with_material_regions_runs_and_keeps_energy_bounded(tmp_path):
    """A [material] case (a sphere given by where, sampled per point; a lossy film) on a curved
    box with the Galerkin form: it runs, takes the medium, and upwind energy does not grow."""
    case = case_from_dict({
        "mesh": {"elements": [3, 3, 3], "boundary": "pec", "deform": {"y": "0.05*sin(pi*x)*sin(pi*y)*sin(pi*z)"}},
        "discretization": {"order": 3, "volume_form": "galerkin"}, "physics": {"equations": "maxwell"},
        "material": {"ball": {"where": "0.09 - (x-0.5)**2 - (y-0.5)**2 - (z-0.5)**2", "epsilon": 2.5},
                     "film": {"where": "0.1 - x", "sigma": 0.4, "mu": 1.2}},
        "initial": {"Ez": "sin(pi*x)*sin(pi*y)", "Hx": "0.3*sin(pi*y)*sin(pi*z)"},
        "time": {"t_end": 0.3, "cfl": 0.4}, "output": {"formats": []}})
    result = run(case, output_dir=tmp_path)
    sim = result.simulation
    assert sim.system.galerkin.medium is not None and sim.system.galerkin.medium.loss_weights is not None
    summary = result.summary if hasattr(result, "summary") else None
    energy = sim.system.energy(sim.u)
    assert np.isfinite(energy) and 0 < energy
    if summary is not None and "energy" in summary:
        assert summary["energy"]["final"] <= summary["energy"]["initial"]


def test_bloch_pair_with_a_medium_integrates_its_real_part(tmp_path):
    """[output.integrals] energy with bloch_k and a medium under the Galerkin form: the real
    part's energy in its own norm (the densities' convention), not a broadcast of 12 fields."""
    from lobatto.api import Simulation

    case = case_from_dict({
        "mesh": {"elements": [2, 2, 2], "periodic": [True, True, True],
                 "deform": {"x": "0.05*sin(2*pi*x)*sin(2*pi*y)*sin(2*pi*z)"}},
        "discretization": {"order": 3, "flux": "central"}, "physics": {"equations": "maxwell", "bloch_k": [1.0, 0, 0]},
        "material": {"glass": {"where": "0.09 - (x-0.5)**2 - (y-0.5)**2 - (z-0.5)**2", "epsilon": 3.0}},
        "initial": {"Ez": "exp(-20*((x-0.5)**2+(y-0.5)**2+(z-0.5)**2))", "Ez_im": "0.5*sin(2*pi*y)"},
        "time": {"t_end": 0.02}, "output": {"formats": [], "integrals": {"every": 1, "volume": ["energy"]}}})
    sim = Simulation(case, backend="cpu", output_dir=str(tmp_path), comm=None)
    system = sim.system
    assert system.galerkin is not None and system.galerkin.medium is not None and sim.u.shape[0] == 12
    from lobatto.systems.maxwell import galerkin

    real = galerkin.energy_integral(system, sim.u, slice(None))
    assert real == pytest.approx(system.field_energy(sim.u[:6]), rel=1e-13)
    assert system.field_energy(sim.u) > 1.1 * real  # the pair's energy has the imaginary part too
    sim.run()
    sim.close()
