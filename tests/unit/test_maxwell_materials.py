"""Maxwell in heterogeneous media (systems/maxwell/materials.py): the per-point path equals
the scalar one for a uniform medium, the interface flux is the exact Riemann solution, the
discrete energy identities with per-point eps and mu on a two-material box, conductive decay,
Fresnel reflection and transmission at a dielectric interface and through a slab, a gmsh
volume group as a region, and the [material.<name>] case tables."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.api import case_from_dict, run
from lobatto.errors import InputError
from lobatto.integrators import Stepper, get_scheme, stable_time_step
from lobatto.mesh.topology import face_slice
from lobatto.systems.maxwell.system import MaxwellSystem

from analytic import build_system


def material(system, epsilon, mu, sigma=0.0):
    """Per-point fields from functions of the coordinates (or numbers)."""
    x = system.geometry.coords
    value = (lambda f: np.broadcast_to(f(*x) if callable(f) else float(f), x.shape[1:]).copy())
    return {"epsilon": value(epsilon), "mu": value(mu), "sigma": value(sigma)}


def two_materials(flux="upwind", boundary="pec", periodic=(False, True, False), order=4, sigma=0.0):
    """eps 1 | 4 across x = 0.5 (element-wise: the interface is an element face) and mu
    varying smoothly point by point."""
    mesh_keys = dict(elements=(4, 2, 2), order=order, periodic=list(periodic), boundary=boundary,
                     upper=[1.0, 1.0, 0.8])
    probe = build_system(MaxwellSystem, **mesh_keys)
    centroid_x = probe.geometry.coords[0].mean(axis=(1, 2, 3))[:, None, None, None]
    fields = material(probe, lambda x, y, z: 1.0 + 3.0 * (centroid_x > 0.5) + 0 * x,
                      lambda x, y, z: 1.0 + 0.3 * np.sin(2 * np.pi * x) * np.cos(np.pi * y), sigma)
    return build_system(MaxwellSystem, flux=flux, material=fields, **mesh_keys)


def energy_rate(system, u):
    du = system.rhs(u, 0.0, np.empty_like(u))
    m = system.geometry.mass
    eps, mu = system.medium.epsilon, system.medium.mu
    return float(np.sum(m * (eps * np.sum(u[:3] * du[:3], 0) + mu * np.sum(u[3:] * du[3:], 0))))


@pytest.mark.parametrize("flux", ["upwind", "central"])
@pytest.mark.parametrize("boundary", ["pec", "pmc", "absorbing"])
def test_uniform_material_per_point_equals_scalar_path(flux, boundary):
    keys = dict(elements=(3, 2, 2), order=4, periodic=[False, True, False], boundary=boundary,
                upper=[1.0, 2.0, 1.5], flux=flux)
    scalar = build_system(MaxwellSystem, epsilon=2.0, mu=0.7, **keys)
    per_point = build_system(MaxwellSystem, material=material(scalar, 2.0, 0.7), **keys)
    assert scalar.medium is None and per_point.medium is not None and per_point.stage_kernel is None
    u = np.random.default_rng(3).standard_normal(scalar.allocate_state().shape)
    a, b = scalar.rhs(u, 0.0, np.empty_like(u)), per_point.rhs(u, 0.0, np.empty_like(u))
    assert np.max(np.abs(a - b)) < 1e-12 * np.max(np.abs(a))
    assert per_point.energy(u) == pytest.approx(scalar.energy(u), rel=1e-14)
    assert per_point.wave_speed == pytest.approx(scalar.wave_speed, rel=1e-15)


def test_uniform_region_table_runs_the_scalar_path(tmp_path):
    case = case_from_dict({"mesh": {"elements": [2, 1, 1]}, "discretization": {"order": 2},
                           "physics": {"equations": "maxwell"}, "time": {"t_end": 0.01},
                           "material": {"all": {"epsilon": 2.5, "mu": 1.5}}})
    system = run(case, output_dir=tmp_path).simulation.system
    assert system.medium is None and (system.epsilon, system.mu) == (2.5, 1.5)
    assert case.to_dict()["material"] == {"all": {"epsilon": 2.5, "mu": 1.5, "sampling": "point"}}


def star_state(q_left, q_right, a_left, a_right):
    """The interface state of the 1-D linear Riemann problem q_t + A q_x = 0 with A = a_left
    for x < 0 and a_right for x > 0, from the eigenvectors (independent of materials.py):
    q* = q_left + alpha r-(A_left) = q_right - beta r+(A_right)."""
    def eigenvector(a, sign):
        values, vectors = np.linalg.eig(a)
        return vectors[:, np.argmax(sign * values.real)].real

    r_left, r_right = eigenvector(a_left, -1), eigenvector(a_right, +1)
    alpha, _ = np.linalg.solve(np.column_stack([r_left, r_right]), q_right - q_left)
    return q_left + alpha * r_left


def test_upwind_flux_is_the_exact_riemann_solution_at_material_interfaces():
    """Piecewise-constant states in two elements of different eps, mu, periodic: du/dt is
    zero off the x faces and at them lift * (n x (H* - H-)) / eps, -lift * (n x (E* - E-)) / mu
    with (E*, H*) the exact Riemann solution, at both interfaces (1 -> 2 and 2 -> 1)."""
    eps, mu = (1.0, 3.5), (1.3, 0.8)
    keys = dict(elements=(2, 1, 1), order=3, periodic=[True, True, True], upper=[1.0, 0.5, 0.5])
    probe = build_system(MaxwellSystem, **keys)
    left = probe.geometry.coords[0].mean(axis=(1, 2, 3)) < 0.5
    per_element = lambda values: np.where(left, *values)[:, None, None, None] * np.ones(probe.geometry.coords.shape[1:])
    system = build_system(MaxwellSystem, material={"epsilon": per_element(eps), "mu": per_element(mu),
                                                   "sigma": 0.0 * per_element(mu)}, **keys)
    states = np.random.default_rng(4).standard_normal((2, 6))  # element 0 (left), element 1
    u = np.empty(system.allocate_state().shape)
    for e in range(2):
        u[:, e] = states[e][:, None, None, None]
    du = system.rhs(u, 0.0, np.empty_like(u))

    def pairs(m):  # (Ey, Hz) and (Ez, Hy) along x: q_t + A q_x = 0
        return (np.array([[0, 1 / eps[m]], [1 / mu[m], 0]]), np.array([[0, -1 / eps[m]], [-1 / mu[m], 0]]))

    def interface(m_left, m_right):  # (E*, H*) between element m_left (x <) and m_right (x >)
        ql, qr = states[m_left], states[m_right]
        ey, hz = star_state(ql[[1, 5]], qr[[1, 5]], pairs(m_left)[0], pairs(m_right)[0])
        ez, hy = star_state(ql[[2, 4]], qr[[2, 4]], pairs(m_left)[1], pairs(m_right)[1])
        return np.array([0.0, ey, ez]), np.array([0.0, hy, hz])

    cross = lambda a, b: np.cross(a, b)
    expected = np.zeros_like(du)
    for e in range(2):
        m = 0 if left[e] else 1
        for f in range(6):
            n = system.geometry.normals[:, e, f].mean(axis=(1, 2))
            if abs(n[0]) < 0.5:
                continue
            e_star, h_star = interface(m, 1 - m) if n[0] > 0 else interface(1 - m, m)
            lift = system.geometry.lift[e, f]
            for c in range(3):
                sl = (c, e) + face_slice(f, 3)[1:]
                expected[sl] += lift * cross(n, h_star - states[e][3:6])[c] / eps[m]
                expected[(c + 3, e) + face_slice(f, 3)[1:]] -= lift * cross(n, e_star - states[e][0:3])[c] / mu[m]
    assert np.max(np.abs(du - expected)) < 1e-12 * np.max(np.abs(expected))


@pytest.mark.parametrize("boundary", ["pec", "pmc", "absorbing"])
def test_energy_rate_two_materials(boundary):
    """Central: d/dt of the per-point-weighted energy is zero to round-off (affine mesh, any
    impedances on the two sides); upwind: negative."""
    u = np.random.default_rng(7).standard_normal((6, 16) + (5,) * 3)
    central = two_materials("central", boundary)
    assert np.unique(central.medium.epsilon).tolist() == [1.0, 4.0]
    assert abs(energy_rate(central, u)) < 1e-12 * central.energy(u) * central.points
    assert energy_rate(two_materials("upwind", boundary), u) < -1e-3 * central.energy(u)


@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_energy_over_steps_two_materials(flux):
    system = two_materials(flux, periodic=(True, True, True))
    u = np.random.default_rng(1).standard_normal(system.allocate_state().shape)
    stepper = Stepper(system, get_scheme("lsrk45"))
    dt = stable_time_step(0.3, system.geometry.min_spacing, system.wave_speed)
    energies = [system.energy(u)]
    for n in range(30):
        stepper.step(u, n * dt, dt)
        energies.append(system.energy(u))
    change = np.diff(energies) / energies[0]
    assert np.all(change <= 1e-14)
    if flux == "upwind":
        assert energies[-1] < 0.9 * energies[0]  # random data: the jumps are damped
    else:  # lsrk45's own damping of the resolved and unresolved modes, at this dt
        assert abs(energies[-1] / energies[0] - 1) < 2e-3


def test_central_energy_change_is_the_time_error():
    """Smooth data on the two-material box, central flux: the energy change over t = 0.5 is
    lsrk45's, falling as dt^5 (measured 9.2e-7, 2.9e-8, 9.0e-10 at dt, dt/2, dt/4)."""
    system = two_materials("central", periodic=(True, True, True))
    x, y, z = system.geometry.coords
    u0 = np.zeros(system.allocate_state().shape)
    u0[1], u0[2], u0[5] = np.sin(2 * np.pi * x), np.cos(2 * np.pi * y), np.cos(2 * np.pi * z) * np.sin(2 * np.pi * x)
    changes = []
    for fraction in (1, 2):
        u, stepper = u0.copy(), Stepper(system, get_scheme("lsrk45"))
        dt = stable_time_step(0.4, system.geometry.min_spacing, system.wave_speed) / fraction
        steps = int(round(0.5 / dt))
        for n in range(steps):
            stepper.step(u, n * dt, dt)
        changes.append(abs(system.energy(u) / system.energy(u0) - 1))
    assert changes[0] < 5e-6 and changes[1] < changes[0] / 16, changes


def test_conductivity_decays_a_uniform_field_as_exp():
    eps, sigma, t_end = 2.0, 0.6, 1.0
    keys = dict(elements=(2, 2, 2), order=3, periodic=[True, True, True])
    probe = build_system(MaxwellSystem, **keys)
    system = build_system(MaxwellSystem, material=material(probe, eps, 1.5, sigma), **keys)
    u = system.allocate_state()
    u[0], u[2], u[4] = 1.0, -0.5, 0.3  # H is unaffected by sigma
    stepper = Stepper(system, get_scheme("lsrk45"))
    steps = 50
    for n in range(steps):
        stepper.step(u, n * t_end / steps, t_end / steps)
    decay = np.exp(-sigma * t_end / eps)
    assert np.max(np.abs(u[0] - decay)) < 1e-10 and np.max(np.abs(u[2] + 0.5 * decay)) < 1e-10
    assert np.max(np.abs(u[4] - 0.3)) < 1e-14 and np.max(np.abs(u[[1, 3, 5]])) < 1e-14


def test_conductivity_from_the_case_file(tmp_path):
    """[physics] sigma alone takes the material path; the field decays as exp(-sigma t / eps)."""
    case = case_from_dict({"mesh": {"elements": [2, 1, 1], "periodic": [True, True, True]},
                           "discretization": {"order": 2},
                           "physics": {"equations": "maxwell", "epsilon": 4.0, "sigma": 2.0},
                           "initial": {"Ez": "1"}, "time": {"t_end": 0.5, "dt": 0.01}})
    result = run(case, output_dir=tmp_path)
    assert result.simulation.system.medium is not None
    assert np.max(np.abs(result.fields["Ez"] - np.exp(-0.25))) < 1e-10


def energy_split(system, fields, x0):
    m = system.geometry.mass
    left = system.geometry.coords[0].mean(axis=(1, 2, 3)) < x0
    eps, mu = system.medium.epsilon, system.medium.mu
    density = 0.5 * m * (eps * sum(fields[c] ** 2 for c in ("Ex", "Ey", "Ez"))
                         + mu * sum(fields[c] ** 2 for c in ("Hx", "Hy", "Hz")))
    return float(density[left].sum()), float(density[~left].sum())


PULSE = "exp(-((x-0.5)/0.15)**2)"  # in vacuum, moving to +x; width 0.15, 0.075 in the dielectric


@pytest.mark.parametrize("order", [5, 6, 7])
def test_dielectric_interface_reflects_and_transmits_fresnel_energy(order, tmp_path):
    n1, n2 = 1.0, 2.0
    reflected, transmitted = ((n1 - n2) / (n1 + n2)) ** 2, 4 * n1 * n2 / (n1 + n2) ** 2
    case = case_from_dict({
        "mesh": {"elements": [12, 1, 1], "upper": [1.5, 0.125, 0.125], "periodic": [False, True, True],
                 "boundary": "absorbing"},
        "discretization": {"order": order}, "physics": {"equations": "maxwell"},
        "material": {"slab": {"where": "x - 1", "epsilon": n2**2, "sampling": "element"}},
        "initial": {"Ey": PULSE, "Hz": PULSE}, "time": {"t_end": 1.0, "cfl": 0.6}})
    result = run(case, output_dir=tmp_path)
    system = result.simulation.system
    x = system.geometry.coords[0]
    start = np.exp(-((x - 0.5) / 0.15) ** 2)
    w0 = float(np.sum(system.geometry.mass * start**2))  # 1/2 (|E|^2 + |H|^2), eps = mu = 1
    left, right = energy_split(system, result.fields, 1.0)
    print(f"half-space N={order}: R {left / w0:.7f} T {right / w0:.7f}")
    assert abs(left / w0 - reflected) < 0.01 * reflected, (left / w0, reflected)
    assert abs(right / w0 - transmitted) < 0.01 * transmitted, (right / w0, transmitted)


@pytest.mark.parametrize("order", [6])
def test_dielectric_slab_splits_a_pulse_by_fresnel_coefficients(order, tmp_path):
    """A slab of eps = 4 on 0.8 < x < 1.175: the pulse reflected at the front (r^2), the one
    reflected back inside at the back face (t r^2 with t = 1 - r^2) and the one through
    (t^2), once separated, each against the energies of the normal-incidence coefficients.
    N = 6 only (docs/electromagnetics.md has N = 5 and 7; each costs 10-50 s here)."""
    r2 = ((1.0 - 2.0) / (1.0 + 2.0)) ** 2
    t2 = 1 - r2
    pulse = "exp(-((x-0.5)/0.1)**2)"
    case = case_from_dict({
        "mesh": {"elements": [20, 1, 1], "lower": [-0.575, 0.0, 0.0], "upper": [1.925, 0.125, 0.125],
                 "periodic": [False, True, True], "boundary": "absorbing"},
        "discretization": {"order": order}, "physics": {"equations": "maxwell"},
        "material": {"slab": {"where": "(x - 0.8)*(1.175 - x)", "epsilon": 4.0, "sampling": "element"}},
        "initial": {"Ey": pulse, "Hz": pulse}, "time": {"t_end": 1.35, "cfl": 0.6}})
    result = run(case, output_dir=tmp_path)
    system = result.simulation.system
    x = system.geometry.coords[0]
    w0 = float(np.sum(system.geometry.mass * np.exp(-((x - 0.5) / 0.1) ** 2) ** 2))
    front, rest = energy_split(system, result.fields, 0.8)
    inside, _ = energy_split(system, result.fields, 1.175)
    measured = np.array([front, inside - front, rest - (inside - front)]) / w0
    expected = np.array([r2, t2 * r2, t2 * t2])
    print(f"slab N={order}: measured / Fresnel - 1 = {measured / expected - 1}")
    assert np.all(np.abs(measured / expected - 1) < 0.01), (measured / expected - 1)


@pytest.mark.parametrize("table, message", [
    ({"glass": {"epsilon": 2.0}}, "no region 'glass'"),
    ({"all": {"epsilon": -1.0}}, "[material.all] epsilon must be a number from 1e-30 to 1e+30"),
    ({"all": {"epsilon": 2.0, "muu": 1.0}}, "did you mean 'mu'"),
    ({"all": {"sampling": "cell", "mu": 2.0}}, "[material.all] sampling must be one of"),
    ({"all": {"where": "x - 0.5"}}, "sets none of epsilon, mu, sigma"),
    ({"lens": {"where": "x - 0.5", "epsilon": "1 - 4*x"}}, "[material.lens] epsilon = "),
    ({"lens": {"where": "x ** ", "epsilon": 2.0}}, "[material.lens] where"),
])
def test_bad_material_tables_are_one_line_errors(table, message, tmp_path):
    data = {"mesh": {"elements": [2, 1, 1]}, "discretization": {"order": 2},
            "physics": {"equations": "maxwell"}, "time": {"t_end": 0.01}, "material": table}
    with pytest.raises(InputError, match=None) as error:
        run(case_from_dict(data), output_dir=tmp_path)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_energy_per_region_with_a_heterogeneous_medium(tmp_path):
    """[output.integrals] energies weigh |E|^2 and |H|^2 by the per-point eps and mu: the
    energy over the whole mesh equals the system's energy, and the electric plus magnetic
    parts equal it."""

    case = case_from_dict({"mesh": {"elements": [2, 2, 1]}, "discretization": {"order": 3},
                           "physics": {"equations": "maxwell"}, "time": {"t_end": 0.05},
                           "material": {"half": {"where": "x - 0.5", "epsilon": 2.0, "mu": "1 + y"}},
                           "initial": {"Ez": "sin(pi*x)*sin(pi*y)", "Hx": "x*y"},
                           "output": {"formats": ["hdf5"], "every": 0,
                                      "integrals": {"every": 1, "volume": ["energy", "electric_energy",
                                                                           "magnetic_energy"]}}})
    result = run(case, output_dir=tmp_path)
    system = result.simulation.system
    assert system.medium is not None
    u = np.stack([result.fields[n] for n in system.field_names])
    text = (tmp_path / "case_probes.csv").read_text().splitlines()
    row = dict(zip(text[0].split(","), (float(v) for v in text[-1].split(","))))
    energy, electric, magnetic = (row[f"{k}@all"] for k in ("energy", "electric_energy", "magnetic_energy"))
    assert energy == pytest.approx(system.energy(u), rel=1e-12)
    assert electric + magnetic == pytest.approx(energy, rel=1e-12)
    eps = system.medium.epsilon
    assert electric == pytest.approx(0.5 * float(np.sum(system.geometry.mass * eps * np.sum(u[0:3] ** 2, 0))),
                                     rel=1e-12)


def test_region_of_a_gmsh_mesh_equals_the_same_ball_given_by_where(tmp_path):
    """[material.sphere] on the volume group "sphere" of a curved gmsh mesh gives eps = 4 on
    exactly its elements, and the same run as a "where" ball judged at element centroids."""
    from pathlib import Path

    from lobatto.api import Simulation

    mesh_file = Path(__file__).resolve().parents[1] / "data" / "meshes" / "sphere_in_box_order2.msh"
    fields = {}
    for label, table in (("region", {"sphere": {"epsilon": 4.0}}),
                         ("where", {"ball": {"where": "0.25 - x**2 - y**2 - z**2", "epsilon": 4.0,
                                             "sampling": "element"}})):
        case = case_from_dict({"mesh": {"generator": "gmsh", "file": str(mesh_file), "boundary": "pec"},
                               "discretization": {"order": 3}, "physics": {"equations": "maxwell"},
                               "initial": {"Ez": "cos(pi*x/2)*cos(pi*y/2)"}, "time": {"t_end": 0.1},
                               "output": {"formats": []}, "material": table})
        sim = Simulation(case, backend="cpu", output_dir=tmp_path / label, comm=None)
        mesh, eps = sim.system.mesh, sim.system.medium.epsilon
        in_sphere = np.asarray(mesh.regions) == mesh.region_names.index("sphere")
        assert 0 < in_sphere.sum() < mesh.num_elements
        assert np.all(eps[in_sphere] == 4.0) and np.all(eps[~in_sphere] == 1.0)
        sim.advance(5)
        fields[label] = sim.fields()
    assert np.max(np.abs(fields["region"]["Ez"])) > 0.1
    for name, values in fields["region"].items():
        assert np.array_equal(values, fields["where"][name]), name


@pytest.mark.parametrize("order, conducting", [(3, True), (6, False)])
def test_compiled_rhs_materials_equals_reference(order, conducting, tmp_path):
    """The CPU backend's C kernel for a medium given per point equals the reference (array
    operations) on random fields, sums and media, over all elements and over a range."""
    from lobatto.api import Simulation
    from lobatto.systems.maxwell.materials import make_rhs_materials

    materials = {"lens": {"where": "0.1 - (x-0.6)**2 - (y-0.5)**2", "epsilon": "3 + x*y", "mu": 1.5},
                 "slab": {"where": "0.4 - z", "epsilon": 2.0, "sampling": "element"}}
    if conducting:
        materials["lossy"] = {"where": "y - 0.5", "sigma": "2*z"}
    case = case_from_dict({
        "mesh": {"elements": [3, 2, 2], "boundary": "pec", "deform": {"y": "0.03*sin(pi*x)*sin(pi*z)"}},
        "discretization": {"order": order}, "physics": {"equations": "maxwell"}, "time": {"t_end": 1.0},
        "output": {"formats": []}, "material": materials})
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    system, backend = sim.system, sim.backend
    compiled = backend.kernel("maxwell_rhs_materials", order=order)
    reference = make_rhs_materials(backend, order)
    if not backend.has_tuned("maxwell_rhs_materials") or compiled.__name__ != "rhs_medium":
        pytest.skip("no C compiler: the CPU backend runs the reference kernel itself")
    rng = np.random.default_rng(order)
    e, n = system.num_elements, order + 1
    u = rng.standard_normal((6, e, n, n, n))
    sums = rng.standard_normal((6, e, 6, n, n))
    for elements in (None, (2, e - 3)):
        outs = [np.full(u.shape, 7.0) for _ in range(2)]
        compiled(u, sums, system.device_geometry, outs[0], system.medium.arrays, 0.8, elements)
        reference(u, sums, system.device_geometry, outs[1], system.medium.arrays, 0.8, elements)
        scale = float(np.abs(outs[1]).max())
        assert scale > 1.0
        assert float(np.abs(outs[0] - outs[1]).max()) <= 1e-12 * scale
