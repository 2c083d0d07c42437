"""Diagonal anisotropic eps and mu (systems/maxwell/anisotropy.py): the interface flux is the
exact Riemann solution per polarisation, the discrete energy identities, the two polarisations
of a plane wave along z travel at 1/sqrt(ex mu) and 1/sqrt(ey mu), the reflection from an
anisotropic half-space is each polarisation's Fresnel coefficient, and the C kernels equal the
reference on curved elements (where the face normals are not axes: the approximation)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict, run
from lobatto.errors import InputError
from lobatto.mesh.topology import face_slice
from lobatto.systems.maxwell.system import MaxwellSystem

from analytic import build_system
from test_maxwell_materials import star_state


def tensor_system(eps_sides, mu_sides, flux="upwind", **keys):
    """Two halves (x < 0.5, x > 0.5) of diagonal eps, mu, element-wise."""
    probe = build_system(MaxwellSystem, **keys)
    left = probe.geometry.coords[0].mean(axis=(1, 2, 3)) < 0.5
    shape = probe.geometry.coords.shape[1:]

    def field(sides):
        a, b = (np.asarray(s, dtype=float) for s in sides)
        return np.where(left[None, :, None, None, None], a[:, None, None, None, None],
                        b[:, None, None, None, None]) * np.ones((3,) + shape)

    fields = {"epsilon": field(eps_sides), "mu": field(mu_sides), "sigma": np.zeros(shape)}
    return build_system(MaxwellSystem, flux=flux, material=fields, **keys), left


EPS = ((1.0, 2.5, 1.7), (3.5, 1.2, 2.0))
MU = ((1.3, 0.9, 1.1), (0.8, 1.6, 1.0))


def test_upwind_flux_is_the_exact_riemann_solution_per_polarisation():
    """Piecewise-constant states in two elements of different diagonal eps, mu, periodic: at
    the x faces du/dt is lift (n x (H* - H-)) / e_i, -lift (n x (E* - E-)) / m_i with (E*, H*)
    the exact solution of the two 1-D systems (Ey, Hz) with e_y, m_z and (Ez, Hy) with e_z,
    m_y, found from their eigenvectors (test_maxwell_materials.star_state)."""
    keys = dict(elements=(2, 1, 1), order=3, periodic=[True, True, True], upper=[1.0, 0.5, 0.5])
    system, left = tensor_system(EPS, MU, **keys)
    states = np.random.default_rng(5).standard_normal((2, 6))
    u = np.empty(system.allocate_state().shape)
    for e in range(2):
        u[:, e] = states[e][:, None, None, None]
    du = system.rhs(u, 0.0, np.empty_like(u))

    def pairs(m):  # (Ey, Hz) and (Ez, Hy) along x: q_t + A q_x = 0
        e, mu = EPS[m], MU[m]
        return (np.array([[0, 1 / e[1]], [1 / mu[2], 0]]), np.array([[0, -1 / e[2]], [-1 / mu[1], 0]]))

    def interface(m_left, m_right):
        ql, qr = states[m_left], states[m_right]
        ey, hz = star_state(ql[[1, 5]], qr[[1, 5]], pairs(m_left)[0], pairs(m_right)[0])
        ez, hy = star_state(ql[[2, 4]], qr[[2, 4]], pairs(m_left)[1], pairs(m_right)[1])
        return np.array([0.0, ey, ez]), np.array([0.0, hy, hz])

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
                expected[(c, e) + face_slice(f, 3)[1:]] += lift * np.cross(n, h_star - states[e][3:6])[c] / EPS[m][c]
                expected[(c + 3, e) + face_slice(f, 3)[1:]] -= lift * np.cross(n, e_star - states[e][0:3])[c] / MU[m][c]
    assert np.max(np.abs(du - expected)) < 1e-12 * np.max(np.abs(expected))


def energy_rate(system, u):
    du = system.rhs(u, 0.0, np.empty_like(u))
    m, eps, mu = system.geometry.mass, system.medium.epsilon, system.medium.mu
    return float(np.sum(m * (np.sum(eps * u[:3] * du[:3], 0) + np.sum(mu * u[3:] * du[3:], 0))))


def bend(x, y, z):
    return np.stack([0 * x, 0.05 * np.sin(np.pi * x) * np.sin(np.pi * z), 0 * x])


@pytest.mark.parametrize("deform", [None, bend], ids=["box", "curved"])
@pytest.mark.parametrize("boundary", ["pec", "absorbing"])
def test_energy_rate_with_a_diagonal_medium(deform, boundary):
    """Central: d/dt of sum M (e_i E_i^2 + m_i H_i^2) / 2 is zero to round-off, on a box (exact
    per-polarisation solver) and on curved elements (one impedance where the normal is not an
    axis); upwind: negative."""
    keys = dict(elements=(4, 2, 2), order=3, boundary=boundary, periodic=[False, True, False],
                upper=[1.0, 1.0, 0.8], deform=deform)
    central, _ = tensor_system(EPS, MU, "central", **keys)
    u = np.random.default_rng(8).standard_normal(central.allocate_state().shape)
    assert central.medium.anisotropic
    assert abs(energy_rate(central, u)) < 1e-12 * central.energy(u) * central.points
    upwind, _ = tensor_system(EPS, MU, "upwind", **keys)
    assert energy_rate(upwind, u) < -1e-3 * central.energy(u)


def plane_wave_case(flux="upwind", order=6):
    eps, mu = [2.0, 3.0, 1.5], 1.2
    zx, zy = math.sqrt(mu / eps[0]), math.sqrt(mu / eps[1])
    wave = "sin(2*pi*z)"
    return case_from_dict({
        "mesh": {"elements": [1, 1, 4], "upper": [0.25, 0.25, 1.0], "periodic": [True, True, True]},
        "discretization": {"order": order, "flux": flux}, "physics": {"equations": "maxwell", "mu": mu},
        "material": {"all": {"epsilon": eps}},
        # Ex with Hy and Ey with -Hx travel to +z
        "initial": {"Ex": wave, "Hy": f"{1 / zx!r}*{wave}", "Ey": f"0.5*{wave}", "Hx": f"{-0.5 / zy!r}*{wave}"},
        "time": {"t_end": 1.0, "cfl": 0.5}, "output": {"formats": []}}), eps, mu


def phase_speed(system, values, t):
    """c from the phase of a sin(2 pi (z - c t)) fit (mass-weighted projection)."""
    m, z = system.geometry.mass, system.geometry.coords[2]
    a = np.sum(m * values * np.sin(2 * np.pi * z))
    b = np.sum(m * values * np.cos(2 * np.pi * z))
    return (math.atan2(-b, a) % (2 * np.pi)) / (2 * np.pi * t)  # c t in (0, 1)


@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_plane_wave_polarisations_travel_at_their_speeds(flux, tmp_path):
    """Ex at 1/sqrt(ex mu) = 0.6455, Ey at 1/sqrt(ey mu) = 0.5270, from the phase at t = 1
    (4 elements a wavelength, N = 4: errors about 1.4e-6, the discretisation's dispersion; the
    two speeds differ by 0.12); with central flux the energy changes only by lsrk45's error
    (measured 2.7e-7 at cfl 0.5; the semi-discrete rate is zero, test above)."""
    case, eps, mu = plane_wave_case(flux, order=4)
    result = run(case, output_dir=tmp_path)
    system, t = result.simulation.system, result.summary["t_final"]
    cx, cy = phase_speed(system, result.fields["Ex"], t), phase_speed(system, result.fields["Ey"], t)
    print(f"{flux}: cx {cx:.10f} ({1 / math.sqrt(eps[0] * mu):.10f}), cy {cy:.10f} ({1 / math.sqrt(eps[1] * mu):.10f})")
    assert abs(cx - 1 / math.sqrt(eps[0] * mu)) < 1e-5 and abs(cy - 1 / math.sqrt(eps[1] * mu)) < 1e-5
    assert system.wave_speed == pytest.approx(1 / math.sqrt(1.5 * mu))  # the fastest pair (ez, mu)
    energy = result.summary["energy"]
    print(f"{flux}: energy change {energy['final'] / energy['initial'] - 1:.3g}")
    assert abs(energy["final"] / energy["initial"] - 1) < (1e-6 if flux == "central" else 1e-5)


PULSE = "exp(-((x-0.5)/0.15)**2)"


def test_anisotropic_half_space_reflects_each_polarisation_by_fresnel(tmp_path):
    """Normal incidence along x onto eps = diag(1.5, 4, 2.25) (x > 1): the Ey polarisation
    sees n = sqrt(e_y) = 2, the Ez one n = sqrt(e_z) = 1.5; the reflected energy of each, over
    the incident, against ((1 - n)/(1 + n))^2 = 1/9 and 1/25 (measured at N = 5: below 1e-4
    relative)."""
    case = case_from_dict({
        "mesh": {"elements": [12, 1, 1], "upper": [1.5, 0.125, 0.125], "periodic": [False, True, True],
                 "boundary": "absorbing"},
        "discretization": {"order": 5}, "physics": {"equations": "maxwell"},
        "material": {"half": {"where": "x - 1", "epsilon": [1.5, 4.0, 2.25], "sampling": "element"}},
        "initial": {"Ey": PULSE, "Hz": PULSE, "Ez": PULSE, "Hy": f"-{PULSE}"}, "time": {"t_end": 1.0, "cfl": 0.6},
        "output": {"formats": []}})
    result = run(case, output_dir=tmp_path)
    system = result.simulation.system
    m, x = system.geometry.mass, system.geometry.coords[0]
    incident = float(np.sum(m * np.exp(-((x - 0.5) / 0.15) ** 2) ** 2))  # (E^2 + H^2)/2 of one polarisation
    left = (x.mean(axis=(1, 2, 3)) < 1.0)[:, None, None, None] * np.ones_like(x)
    f = result.fields
    for e_name, h_name, n in (("Ey", "Hz", 2.0), ("Ez", "Hy", 1.5)):
        reflected = float(np.sum(m * left * 0.5 * (f[e_name] ** 2 + f[h_name] ** 2)))
        exact = ((1 - n) / (1 + n)) ** 2
        print(f"{e_name}: R {reflected / incident:.8f} exact {exact:.8f}")
        assert abs(reflected / incident - exact) < 1e-3 * exact


@pytest.mark.parametrize("conducting", [False, True])
def test_compiled_kernels_equal_the_reference_with_a_diagonal_medium(conducting, tmp_path):
    """The C rhs and stage with (3, ...) media equal the reference on random fields and sums
    on curved elements, over all elements and over a range."""
    from lobatto.systems.maxwell.materials import make_rhs_materials

    materials = {"lens": {"where": "0.1 - (x-0.6)**2 - (y-0.5)**2", "epsilon": ["3 + x*y", 2.0, "1.5 + z"],
                          "mu": [1.5, 1.2, 0.9]},
                 "slab": {"where": "0.4 - z", "epsilon": 2.0, "sampling": "element"}}
    if conducting:
        materials["lossy"] = {"where": "y - 0.5", "sigma": "2*z"}
    case = case_from_dict({
        "mesh": {"elements": [3, 2, 2], "boundary": "pec", "deform": {"y": "0.03*sin(pi*x)*sin(pi*z)"}},
        "discretization": {"order": 3}, "physics": {"equations": "maxwell"}, "time": {"t_end": 1.0},
        "output": {"formats": []}, "material": materials})
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    system, backend = sim.system, sim.backend
    assert system.medium.anisotropic and system.medium.epsilon.shape[0] == 3
    compiled = backend.kernel("maxwell_rhs_materials", order=3)
    if not backend.has_tuned("maxwell_rhs_materials") or compiled.__name__ != "rhs_medium":
        pytest.skip("no C compiler: the CPU backend runs the reference kernel itself")
    reference = make_rhs_materials(backend, 3)
    rng = np.random.default_rng(11)
    e, n = system.num_elements, 4
    u = rng.standard_normal((6, e, n, n, n))
    sums = rng.standard_normal((6, e, 6, n, n))
    arrays, geometry = system.medium.arrays, system.device_geometry
    for elements in (None, (2, e - 3)):
        outs = [np.full(u.shape, 7.0) for _ in range(2)]
        compiled(u, sums, geometry, outs[0], arrays, 0.8, elements)
        reference(u, sums, geometry, outs[1], arrays, 0.8, elements)
        scale = float(np.abs(outs[1]).max())
        assert scale > 1.0 and float(np.abs(outs[0] - outs[1]).max()) <= 1e-12 * scale
        # the stage: residual = a residual + dt L(u); u += b residual
        residual = rng.standard_normal(u.shape)
        got_u, got_r = u.copy(), residual.copy()
        system.medium.stage_kernel(got_u, got_r, sums, geometry, arrays, 0.8, 0.3, 0.7, 0.01, elements)
        first, stop = (0, e) if elements is None else elements
        want_r, want_u = residual.copy(), u.copy()
        want_r[:, first:stop] = 0.3 * residual[:, first:stop] + 0.01 * outs[1][:, first:stop]
        want_u[:, first:stop] += 0.7 * want_r[:, first:stop]
        assert np.max(np.abs(got_r - want_r)) <= 1e-12 and np.max(np.abs(got_u - want_u)) <= 1e-12


@pytest.mark.parametrize("table, message", [
    ('epsilon = [1.0, 2.0]', "[material.all] epsilon must be a number, an expression or a list of 3"),
    ('epsilon = [1.0, -2.0, 1.0]', "[material.all] epsilon[1] must be a number from 1e-30"),
    ('where = "x - 0.5"\nmu = [1.0, "1 - 2*x", 1.0]', "[material.all] mu[1] = \"1 - 2*x\" is"),
    ('epsilon = [1.0, -2.0, 3.0]\nmodel = "drude"\npoles = [{plasma_frequency = 1.0, collision_frequency = 0.1}]',
     "[material.all] epsilon[1] must be a number from 1e-30"),  # (with poles: eps_inf per component)
])
def test_bad_tensor_values_are_one_line_errors(table, message, tmp_path, capsys):
    from lobatto import cli

    case = tmp_path / "case.toml"
    case.write_text('[mesh]\nelements = [2, 1, 1]\n[discretization]\norder = 2\n[physics]\nequations = "maxwell"\n'
                    '[time]\nt_end = 0.01\n[material.all]\n' + table + "\n")
    code = cli.main(["run", str(case), "--output", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert message in lines[0], lines[0]


@pytest.mark.parametrize("value, hinted", [([2.0, 3.0, 4.0], True), (-1.0, False)])
def test_a_list_for_the_physics_epsilon_points_to_a_material_table(value, hinted):
    """A diagonal epsilon given in [physics] (a scalar there) names where it goes; a bad scalar does not."""
    with pytest.raises(InputError) as error:
        case_from_dict({"mesh": {"elements": [2, 1, 1]}, "physics": {"equations": "maxwell", "epsilon": value},
                        "time": {"t_end": 0.1}})
    assert "[physics] epsilon must be a positive number" in str(error.value)
    assert ("goes in a [material.<name>] table" in str(error.value)) == hinted


def test_tensor_and_averaged_tables_round_trip_through_toml():
    import tomllib

    case = case_from_dict({
        "mesh": {"elements": [2, 1, 1]}, "physics": {"equations": "maxwell"}, "time": {"t_end": 0.1},
        "material": {"a": {"where": "x - 0.5", "epsilon": [1.0, "2 + x", 3.0], "mu": [1.0, 1.0, 2.0]},
                     "b": {"where": "x - 0.7", "epsilon": 2.0, "sampling": "average"}}})
    table = case.to_dict()["material"]
    assert table["a"]["epsilon"] == [1.0, "2 + x", 3.0] and table["b"]["sampling"] == "average"
    assert case_from_dict(tomllib.loads(case.to_toml())).to_dict()["material"] == table


@pytest.mark.parametrize("where, crosses", [("x - 0.5", True), ("x - 1.2", False)])
def test_plane_wave_surface_and_a_diagonal_medium(where, crosses, tmp_path):
    """The TF/SF surface (x = +-1) must lie in the background: a tensor medium crossing it is the
    one-line error, one outside it runs."""
    from lobatto.errors import InputError

    data = {"mesh": {"elements": [6, 2, 2], "lower": [-1.5, -0.5, -0.5], "upper": [1.5, 0.5, 0.5],
                     "periodic": [False, True, True], "boundary": "absorbing"},
            "discretization": {"order": 2}, "physics": {"equations": "maxwell"}, "time": {"t_end": 0.1},
            "output": {"formats": []}, "material": {"c": {"where": where, "epsilon": [2.0, 3.0, 1.5]}},
            "source": {"p": {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 1, 0],
                             "waveform": "ricker", "frequency": 1.0, "t0": 1.0, "lower": [-1.0, -0.5, -0.5],
                             "upper": [1.0, 0.5, 0.5]}}}
    if crosses:
        with pytest.raises(InputError, match="crosses a medium other than the background"):
            Simulation(case_from_dict(data), backend="cpu", output_dir=tmp_path, comm=None)
    else:
        sim = Simulation(case_from_dict(data), backend="cpu", output_dir=tmp_path, comm=None)
        sim.advance(2)
        assert sim.system.medium.anisotropic
