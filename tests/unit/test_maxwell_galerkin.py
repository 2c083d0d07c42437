"""[discretization] volume_form = "galerkin" (systems/maxwell/galerkin.py) on curved elements.

The weight-adjusted Galerkin form (skew-symmetric volume term, Q = N + 1) must be energy-stable in its own
norm (central flux: conserved to round-off; upwind: never gains) like the split form, and as
accurate as the chain rule, which the split form is not: on the O-grid cylinder waveguide of
tests/cylwave.py (a .rea with circle sides) the TM01 error at t = 0.5 was, relative L2,
chain 1.36e-3 / split 2.12e-3 / galerkin 7.30e-4 at N = 5 and 1.69e-5 / 5.41e-5 / 8.58e-6 at
N = 7 (the first Galerkin operator, strong form at Q = 2N; benchmarks/curved_accuracy.py and
benchmarks/notes-curved-maxwell.md, section 11 for the skew form).
"""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

from cylwave import cylinder_rea, tm01
from lobatto.api import Simulation, case_from_dict
from lobatto.errors import InputError
from lobatto.systems.maxwell import galerkin

ROOT = Path(__file__).resolve().parents[2]

DEFORM = {"x": "0.15*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.12*sin(pi*x)*sin(pi*y)*sin(pi*z)",
          "z": "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"}
BOX = {"elements": [2, 2, 2], "boundary": "pec", "deform": DEFORM}
PERIODIC = {"elements": [2, 2, 2], "periodic": [True, True, True],
            "deform": {"x": "0.1*sin(2*pi*y)*sin(2*pi*z)", "y": "0.08*sin(2*pi*x)*sin(2*pi*z)",
                       "z": "0.06*sin(2*pi*x)*sin(2*pi*y)"}}


def simulation(tmp_path, mesh, order, form="galerkin", flux="upwind", t_end=0.5, extra=None):
    data = {"mesh": mesh, "discretization": {"order": order, "flux": flux, "volume_form": form},
            "physics": {"equations": "maxwell"}, "time": {"t_end": t_end, "cfl": 0.3}, "output": {"formats": []}}
    data.update(extra or {})
    return Simulation(case_from_dict(data, name="galerkin"), backend="cpu", output_dir=str(tmp_path / form), comm=None)


@pytest.fixture(scope="module")
def cylinder(tmp_path_factory):
    path = tmp_path_factory.mktemp("cylwave") / "cylwave.rea"
    assert cylinder_rea(path, m=1, layers=2, length=4.0) == 10
    return {"generator": "nek", "file": str(path), "boundaries": {"PEC": "pec"}}


def energy_rate(sim, rng):
    """B(u, L u) / (2 sqrt(E(u) E(L u))) in the system's own energy, by polarisation."""
    system = sim.system
    u = rng.standard_normal(sim.u.shape)
    du = system.rhs(u, 0.0, np.empty_like(u))
    rate = 0.5 * (system.energy(u + du) - system.energy(u - du))
    return rate / (2 * np.sqrt(system.energy(u) * system.energy(du)))


def relative_error(sim):
    g = sim.system.geometry
    exact = tm01(g.coords, sim.t)[0]
    return float(np.sqrt((g.mass * (sim.u - exact) ** 2).sum() / (g.mass * exact**2).sum()))


def test_cylinder_waveguide_at_least_as_accurate_as_the_chain_rule(tmp_path, cylinder):
    errors = {}
    for form in ("chain", "split", "galerkin"):
        sim = simulation(tmp_path, cylinder, 4, form, t_end=0.3)
        g = sim.system.geometry
        assert (~g.affine).sum() == 8  # the ring's elements are curved, the middle ones not
        sim.u[...] = tm01(g.coords, 0.0)[0]
        sim.energy_initial = sim.system.energy(sim.u)
        sim.advance(sim.steps)
        errors[form] = relative_error(sim)
        sim.close()
    # measured (N = 4, t = 0.3): chain 4.85e-3, split 1.25e-2, galerkin 3.76e-3 (the skew form at
    # Q = N + 1; the strong form at Q = 6 gave 3.75e-3, with the exact cofactors and Q = 2N
    # 3.48e-3; deterministic: the exact mode, no random data)
    assert errors["galerkin"] < 0.85 * errors["chain"], errors
    assert errors["split"] > 2 * errors["chain"], errors  # what the Galerkin form repairs
    assert errors["galerkin"] < 4e-3


@pytest.mark.parametrize("order", [2, 3])
def test_central_flux_conserves_and_upwind_dissipates(tmp_path, cylinder, order):
    rng = np.random.default_rng()
    for mesh in (BOX, PERIODIC, cylinder):
        central = energy_rate(simulation(tmp_path, mesh, order, flux="central"), rng)
        upwind = energy_rate(simulation(tmp_path, mesh, order, flux="upwind"), rng)
        assert abs(central) < 1e-13, central
        assert -1.0 < upwind < -1e-3, upwind


GENERAL = {**BOX, "deform": {"x": DEFORM["x"], "y": f"({DEFORM['y']})*(1+x)", "z": f"({DEFORM['z']})*(1+y*y)"}}


@pytest.mark.parametrize("order", [3, 4])
def test_the_skew_form_conserves_with_any_rule(tmp_path, order):
    """The skew-symmetric volume term conserves the energy to round-off at the default
    Q = N + 1, at Q = N + 2 and even with the map's exact cofactors (its identity is algebraic,
    per quadrature point), on a map whose components differ (the box's c g(x, y, z) map is too
    special); the strong form alone breaks it at Q = N + 1 (benchmarks/galerkin_energy_rule.py:
    5.2e-5 at N = 3, 2.8e-5 at N = 4 on this map) and holds it only from strong_points(N) =
    max(ceil(3N / 2), N + 1) with the curl-form cofactors."""
    rng = np.random.default_rng()
    sim = simulation(tmp_path, GENERAL, order, flux="central")
    assert sim.system.galerkin.points == order + 1 and sim.system.galerkin.volume == "skew"
    assert abs(energy_rate(sim, rng)) < 1e-13
    for variant in ({"points": order + 2}, {"cofactors": "exact"}, {"points": order + 2, "cofactors": "exact"}):
        galerkin.attach(sim.system, **variant)
        assert abs(energy_rate(sim, rng)) < 1e-13, variant
    galerkin.attach(sim.system, volume="strong")
    assert abs(energy_rate(sim, rng)) > 1e-9
    galerkin.attach(sim.system, points=galerkin.strong_points(order), volume="strong")
    assert galerkin.strong_points(order) == {3: 5, 4: 6}[order]
    assert abs(energy_rate(sim, rng)) < 1e-13
    sim.close()


def test_imported_gmsh_mesh(tmp_path):
    """examples/meshes/sphere_in_box.msh (104 hexahedra, geometry order 2) at N = 3: central
    conserves to round-off (the strong form at the same Q = 4 does not: 6.8e-6 by
    benchmarks/galerkin_energy_rule.py), upwind dissipates."""
    pytest.importorskip("gmsh")
    mesh = {"generator": "gmsh", "file": str(ROOT / "examples" / "meshes" / "sphere_in_box.msh"), "boundary": "pec"}
    rng = np.random.default_rng()
    sim = simulation(tmp_path, mesh, 3, flux="central")
    assert abs(energy_rate(sim, rng)) < 1e-13
    galerkin.attach(sim.system, volume="strong")
    assert abs(energy_rate(sim, rng)) > 1e-9
    sim.close()
    assert -1.0 < energy_rate(simulation(tmp_path, mesh, 3), rng) < -1e-3


def test_uniform_field_stays_uniform(tmp_path):
    sim = simulation(tmp_path, PERIODIC, 4)
    values = np.random.default_rng().uniform(-1.0, 1.0, 6)
    u = np.broadcast_to(values[:, None, None, None, None], sim.u.shape).copy()
    du = sim.system.rhs(u, 0.0, np.empty_like(u))
    assert np.abs(du).max() < 1e-12 * np.abs(values).max() * 4**3


def test_upwind_energy_never_grows_in_time(tmp_path):
    sim = simulation(tmp_path, BOX, 3, t_end=2.0)
    sim.u[...] = np.random.default_rng().standard_normal(sim.u.shape)
    energies = [sim.system.energy(sim.u)]
    for n in range(sim.steps):
        sim.stepper.step(sim.u, n * sim.dt, sim.dt)
        energies.append(sim.system.energy(sim.u))
    assert np.all(np.diff(energies) <= 1e-13 * energies[0])
    assert energies[-1] < 0.5 * energies[0]


def test_unsupported_combinations_are_input_errors(tmp_path):
    # a refused term is named by its case-file table
    assert [galerkin.table_of(t) for t in ("pml", "port.in", "dispersion.gold", "plane_wave.inc")] == [
        "[pml]", "[port.in]", "[material.gold] (dispersive)", "[source.inc] (plane_wave)"]
    # every term kind is taken now (ports: test_maxwell_galerkin_ports.py, poles:
    # test_maxwell_galerkin_dispersive.py); a kind it does not know is refused by its table's name
    taken = types.SimpleNamespace(terms=[types.SimpleNamespace(name=n) for n in
                                         ("sources", "pml", "pml_im", "plane_wave.a", "port.in", "dispersion.gold")])
    galerkin.check_supported(taken)
    with pytest.raises(InputError, match=r"volume_form = \"galerkin\" does not take future.x yet"):
        galerkin.check_supported(types.SimpleNamespace(terms=[types.SimpleNamespace(name="future.x")]))
    with pytest.raises(InputError, match="volume_form"):
        data = {"mesh": {**BOX, "boundary": "wall"}, "discretization": {"order": 2, "volume_form": "galerkin"},
                "physics": {"equations": "acoustics"}, "time": {"t_end": 0.1}, "output": {"formats": []}}
        Simulation(case_from_dict(data, name="acoustics"), backend="cpu", output_dir=str(tmp_path / "a"), comm=None)
    # the case's tables, not internal names (the PML and currents/dipoles it takes: test_maxwell_galerkin_pml.py)
    # plane waves with the analytic incident field it takes (test_maxwell_galerkin_tfsf.py), the discrete one not
    with pytest.raises(InputError, match=r'\[source.inc\] incident_field = "discrete" is not taken'):
        simulation(tmp_path, {"elements": [4, 1, 1], "periodic": [False, True, True], "boundary": "absorbing"}, 2,
                   extra={"source": {"inc": {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 1, 0],
                                             "waveform": "gaussian", "t0": 0.6, "width": 0.2, "incident_field": "discrete",
                                             "lower": [0.25, 0.0, 0.0], "upper": [0.75, 1.0, 1.0]}}})
    with pytest.raises(InputError, match=r"equations = 'acoustics'"):
        data = {"mesh": {**BOX, "boundary": "wall"}, "discretization": {"order": 2, "volume_form": "galerkin"},
                "physics": {"equations": "acoustics"}, "time": {"t_end": 0.1}, "output": {"formats": []}}
        Simulation(case_from_dict(data, name="acoustics"), backend="cpu", output_dir=str(tmp_path / "b"), comm=None)


def test_float32_follows_float64(tmp_path):
    results = {}
    for precision in ("float64", "float32"):
        sim = simulation(tmp_path / precision, BOX, 3, t_end=0.2,
                         extra={"backend": {"precision": precision}, "initial": {"Ez": "sin(pi*x)*sin(pi*y)"}})
        sim.advance(sim.steps)
        results[precision] = (np.array(sim.u, dtype=np.float64), sim.system.energy(sim.u))
        sim.close()
    (u64, e64), (u32, e32) = results["float64"], results["float32"]
    assert np.abs(u32 - u64).max() < 1e-5 * np.abs(u64).max()
    assert abs(e32 - e64) < 1e-5 * e64


@pytest.mark.parametrize("order", [1, 2, 4, 6, 9])
def test_stable_at_the_accepted_cfl_on_a_flat_box(tmp_path, order):
    """The operator's spectral radius is 2.8x (N = 1), 2.0x (N = 2) and (N + 2) / N (from N = 3)
    the collocated forms' on a flat box, where the set-up's spectral check does not run: at the
    largest cfl the case file accepts (lsrk45, upwind: 0.63) the step factor must keep random
    data from growing (0.6 for every order let it grow at N = 1, 2)."""
    flat = {"elements": [2, 2, 2], "boundary": "pec"}
    sim = simulation(tmp_path, flat, order, extra={"time": {"t_end": 3.0, "cfl": 0.63, "integrator": "lsrk45"}})
    sim.u[...] = np.random.default_rng().standard_normal(sim.u.shape)
    energies = [sim.system.energy(sim.u)]
    for n in range(sim.steps):
        sim.stepper.step(sim.u, n * sim.dt, sim.dt)
        energies.append(sim.system.energy(sim.u))
    assert sim.steps >= 20 and np.all(np.diff(energies) <= 1e-13 * energies[0]), max(np.diff(energies))


def test_no_fused_cuda_stage(tmp_path):
    """The fused CUDA stage computes the collocated forms: a Galerkin system never offers it."""
    sim = simulation(tmp_path, BOX, 2)
    system = sim.system
    real = system.backend
    try:
        system.backend = types.SimpleNamespace(name="cuda")  # what whole_step asks first
        assert system.whole_step(sim.stepper) is None
    finally:
        system.backend = real


def test_a_restart_may_not_switch_the_volume_form(tmp_path):
    sim = simulation(tmp_path, BOX, 2, form="split", t_end=0.05, extra={"checkpoint": {"at_end": True}})
    sim.run()
    checkpoint = sorted((tmp_path / "split" / "checkpoints").iterdir())[-1]
    other = simulation(tmp_path, BOX, 2, t_end=0.1)
    with pytest.raises(InputError, match="volume_form"):
        other.restart(checkpoint)


def test_a_restart_compares_the_form_that_runs(tmp_path):
    """The checkpoint stores the form that ran ("auto" resolved): "auto" on a curved box continues
    as "galerkin" and the reverse; "auto" on an affine box (split) continues as "split", not as
    "galerkin"."""
    affine = {"elements": [2, 2, 2], "boundary": "pec"}
    for mesh, first, then, accepted in ((BOX, "auto", "galerkin", True), (BOX, "galerkin", "auto", True),
                                        (affine, "auto", "split", True), (affine, "auto", "galerkin", False)):
        where = tmp_path / f"{first}-{then}-{accepted}-{len(mesh)}"
        sim = simulation(where, mesh, 2, form=first, t_end=0.05, extra={"checkpoint": {"at_end": True}})
        sim.run()
        checkpoint = sorted((where / first / "checkpoints").iterdir())[-1]
        other = simulation(where, mesh, 2, form=then, t_end=0.1)
        if accepted:
            other.restart(checkpoint)
            other.run()
            assert other.t == pytest.approx(0.1)
        else:
            with pytest.raises(InputError, match=r"volume_form \(the form that runs\) differs \(the case: galerkin; the "
                                                 r"checkpoint: split\)"):
                other.restart(checkpoint)
        other.close()


@pytest.mark.parametrize("order", [2, 5])
def test_square_rule_energy_in_closed_form(tmp_path, cylinder, order):
    """At Q = N + 1, M_W = V^T diag(w J) V: the energy's products are sum_q w J (V u)^2, equal to
    the conjugate-gradient products (the other rules' path) to round-off on fresh random data,
    and a run uses the closed form (no C conjugate gradients installed)."""
    sim = simulation(tmp_path, cylinder, order)
    operator = sim.system.galerkin
    assert operator.points == order + 1
    assert operator.energy_products.__func__ is galerkin.WeightAdjustedOperator.energy_products
    u = np.random.default_rng().standard_normal(sim.u.shape)
    closed = operator.energy_products(np, u)
    assert np.all(closed > 0)
    same = galerkin.WeightAdjustedOperator(sim.system.geometry)
    same.order = -1  # not "square" any more: the conjugate-gradient path on the same arrays
    assert np.abs(same.energy_products(np, u) - closed).max() < 1e-12 * closed.max()
    sim.close()


def test_curved_cavity_example(tmp_path):
    """examples/cavity_curved_galerkin.toml as it is, and with the two collocated forms: the
    Galerkin form's error at t = 2 is below both (measured, L2 of all fields: galerkin 2.57e-5,
    chain 5.01e-5, split 6.41e-5), its energy does not grow, and it took 0.66 of their step."""
    from lobatto.api import load_case

    path = ROOT / "examples" / "cavity_curved_galerkin.toml"
    errors, steps = {}, {}
    for form in ("galerkin", "chain", "split"):
        case = load_case(path)
        assert case.discretization.volume_form == "galerkin"
        text = path.read_text().replace('volume_form = "galerkin"', f'volume_form = "{form}"')
        variant = tmp_path / f"{form}.toml"
        variant.write_text(text)
        sim = Simulation(load_case(variant), backend="cpu", output_dir=str(tmp_path / form), comm=None)
        energy = sim.system.energy(sim.u)
        sim.advance(sim.steps)
        errors[form], steps[form] = sim.errors()["all"]["l2"], sim.steps
        if form == "galerkin":
            assert sim.system.energy(sim.u) <= energy
        sim.close()
    assert errors["galerkin"] < 0.6 * errors["chain"] and errors["chain"] < errors["split"], errors
    assert abs(steps["split"] / steps["galerkin"] - 0.66) < 0.01, steps



DIPOLE = {"type": "electric_dipole", "position": [0.43, 0.58, 0.37], "direction": [0.3, -0.5, 0.8],
          "amplitude": 1.7, "waveform": "gaussian", "t0": 0.2, "width": 0.05}


@pytest.mark.parametrize("order", [2, 4])
def test_dipole_energy_balance(tmp_path, order):
    """A dipole's delta is M_W^-1 phi(x0) in the Galerkin form (sources.py), so with the central
    flux (L conserves) the energy's rate is exactly the source's work on the discrete field,
    -amplitude w(t) d . E_h(x0), for any state (random here); the collocated forms' lumped delta
    phi(x0) / M_p would miss it by O(1) in this norm."""
    from lobatto.systems.maxwell.waveforms import waveform_value

    sim = simulation(tmp_path, GENERAL, order, flux="central", extra={"source": {"d": dict(DIPOLE)}})
    system, operator = sim.system, sim.system.galerkin
    u = np.random.default_rng().standard_normal(sim.u.shape)
    t = 0.18
    du = system.rhs(u, t, np.empty_like(u))
    rate = 0.5 * (system.energy(u + du) - system.energy(u - du))  # the energy's bilinear form B(u, du)
    scale = 2 * np.sqrt(system.energy(u) * system.energy(du))
    ((_, _, slot, profile),) = system.sources.dipoles
    element = int(system.sources.elements[slot])
    d = np.array(DIPOLE["direction"]) / np.linalg.norm(DIPOLE["direction"])
    unit = np.asarray(profile)[2] / (DIPOLE["amplitude"] * d[2])  # M_W^-1 phi(x0) (eps = 1)
    phi = element_mass(operator, element) @ unit.reshape(-1)  # phi_p(x0): the point's Lagrange weights
    assert abs(phi.sum() - 1.0) < 1e-12  # a partition of unity
    e_h = u[0:3, element].reshape(3, -1) @ phi  # E_h(x0)
    expected = -DIPOLE["amplitude"] * waveform_value("gaussian", DIPOLE, t) * float(d @ e_h)
    assert abs(expected) > 1e-3 and abs(rate - expected) <= 1e-13 * scale, (rate, expected, scale)
    lumped = phi / system.geometry.mass[element].reshape(-1)  # what the collocated forms take
    assert np.abs(lumped - unit.reshape(-1)).max() > 0.1 * np.abs(unit).max()
    sim.close()


def element_mass(operator, element):
    """One element's M_W (dense, n^3 x n^3), the inverse of its M_W^-1 columns."""
    n = operator.order + 1
    basis = np.eye(n ** 3).reshape(n ** 3, n, n, n)
    inverse = np.stack([operator.inverse_mass(np, b, element).reshape(-1) for b in basis], axis=1)
    return np.linalg.inv(inverse)


def test_current_source_manufactured_solution(tmp_path):
    """A [source] current drives a manufactured solution on the general deformed box (PEC walls
    flat): E_z = sin(pi x) sin(pi y) sin t, H from dH/dt = -curl E with H(0) = 0, J_z = (curl H
    - dE/dt)_z. The Galerkin form takes the current's nodal values as its rate (as the collocated
    forms do) and keeps its accuracy: measured, the L2 error of all fields at t = 0.5: N = 3
    galerkin 5.5e-3, chain 9.2e-3, split 9.9e-3; N = 5 1.96e-4, 3.31e-4, 4.53e-4."""
    current = {"type": "current", "Jz": "-sin(pi*x)*sin(pi*y)*(2*pi**2*(1-cos(t)) + cos(t))"}
    exact = {"Ez": "sin(pi*x)*sin(pi*y)*sin(t)", "Hx": "-pi*sin(pi*x)*cos(pi*y)*(1-cos(t))",
             "Hy": "pi*cos(pi*x)*sin(pi*y)*(1-cos(t))"}
    errors = {}
    for order in (3, 5):
        for form in ("galerkin", "chain"):
            sim = simulation(tmp_path / f"{form}{order}", GENERAL, order, form=form, t_end=0.5,
                             extra={"source": {"j": current}, "exact": exact})
            sim.advance(sim.steps)
            errors[form, order] = sim.errors()["all"]["l2"]
            sim.close()
    assert errors["galerkin", 3] < 0.7 * errors["chain", 3] and errors["galerkin", 5] < 0.7 * errors["chain", 5]
    assert errors["galerkin", 5] < errors["galerkin", 3] / 20 and errors["galerkin", 5] < 3e-4, errors
