"""Linear acoustics (p, u) against exact solutions, invariants, the wall's mirror image, the
split-element path, and the case-file route."""

import h5py
import numpy as np
import pytest

import lobatto.api as api
from lobatto.errors import InputError
from lobatto.integrators import Stepper, get_scheme, plan_steps, stable_time_step
from lobatto.io.nek5000 import read_field_file
from lobatto.systems.acoustics.system import AcousticsSystem

from analytic import PI, Fn, build_system, bump, integrate

RHO, C = 1.3, 0.7  # non-default density and sound speed: impedance Z = 0.91
VELOCITY = ("ux", "uy", "uz")


def make_system(*args, **kwargs):
    return build_system(AcousticsSystem, *args, **kwargs)


def l2_norm(system, values) -> float:
    return float(np.sqrt(np.sum(system.geometry.mass * np.sum(values**2, axis=0))))


def relative_error(system, u, exact, t) -> float:
    expected = system.evaluate_fields(exact, t)
    return l2_norm(system, u - expected) / l2_norm(system, expected)


def standing_mode(rho, c):
    """The (1,1,1) mode of the rigid unit cube: rho du/dt = -grad p, dp/dt = -rho c^2 div u."""
    w = c * PI * np.sqrt(3.0)
    a = PI / (rho * w)
    cos, sin = np.cos, np.sin
    return {
        "p": Fn(lambda x, y, z, t: cos(PI * x) * cos(PI * y) * cos(PI * z) * cos(w * t)),
        "ux": Fn(lambda x, y, z, t: a * sin(PI * x) * cos(PI * y) * cos(PI * z) * sin(w * t)),
        "uy": Fn(lambda x, y, z, t: a * cos(PI * x) * sin(PI * y) * cos(PI * z) * sin(w * t)),
        "uz": Fn(lambda x, y, z, t: a * cos(PI * x) * cos(PI * y) * sin(PI * z) * sin(w * t)),
    }


def plane_wave(k, rho, c):
    """p = cos(k.x - w t), u = k/|k| p / (rho c), w = c |k|."""
    k = np.asarray(k, dtype=float)
    kn = np.linalg.norm(k)
    w = c * kn

    def phase(x, y, z, t):
        return np.cos(k[0] * x + k[1] * y + k[2] * z - w * t)

    wave = {"p": Fn(phase)}
    for a, name in enumerate(VELOCITY):
        wave[name] = Fn(lambda x, y, z, t, a=a: k[a] / (kn * rho * c) * phase(x, y, z, t))
    return wave


# Exact solutions ------------------------------------------------------------------------------
@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_oblique_plane_wave_in_periodic_box(flux):
    wave = plane_wave(PI * np.array([-1.0, 2.0, 1.0]), RHO, C)
    system = make_system(elements=(3, 4, 3), order=9, periodic=[True] * 3, lower=[-1, -1, -1], upper=[1, 1, 1],
                         density=RHO, sound_speed=C, flux=flux)
    u, t = integrate(system, wave, t_end=0.5, cfl=0.3)
    assert t == pytest.approx(0.5)
    # the wave moved a visible distance: c t |k| = 1.9 rad of phase
    assert l2_norm(system, system.evaluate_fields(wave, t) - system.evaluate_fields(wave, 0.0)) > 0.5
    assert relative_error(system, u, wave, t) < 1e-6


@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_standing_mode_in_wall_box(flux):
    mode = standing_mode(RHO, C)
    system = make_system(elements=(2, 2, 2), order=7, boundary="wall", density=RHO, sound_speed=C, flux=flux)
    u, t = integrate(system, mode, t_end=0.5, cfl=0.2)
    assert np.max(np.abs(u[1:])) > 0.3  # the velocity, zero at t = 0, has grown
    assert relative_error(system, u, mode, t) < 1e-6


def test_mode_error_falls_spectrally_on_curved_mesh():
    mode = standing_mode(RHO, C)
    errors = []
    for order in (3, 5, 7):
        system = make_system(elements=(2, 2, 2), order=order, deform=bump, boundary="wall", density=RHO,
                             sound_speed=C)
        assert not np.all(system.geometry.affine)  # really curved
        u, t = integrate(system, mode, t_end=0.5, dt=0.5 / 200)  # time error far below these
        errors.append(relative_error(system, u, mode, t))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all(ratios > 20.0), (errors, ratios)
    # split-form gradient and divergence (energy-stable on curved elements), curl-form metrics:
    # 1.1e-2, 2.0e-4, 3.7e-6 at N = 3, 5, 7; the chain-rule pair gave 9.6e-3, 1.4e-4, 2.3e-6
    # (the conservative half's aliasing; with the cofactor metrics the split form gave the same
    # 3.7e-6 at N = 7)
    assert errors[-1] < 5e-6, errors


# Energy ---------------------------------------------------------------------------------------
def energy_rate(system, u):
    """d/dt of system.energy under the semi-discrete operator."""
    du = system.rhs(u, 0.0, np.empty_like(u))
    bulk = system.density * system.sound_speed**2
    return float(np.sum(system.geometry.mass * (u[0] * du[0] / bulk + system.density * np.sum(u[1:] * du[1:], 0))))


def test_energy_is_the_weighted_l2_norm():
    rng = np.random.default_rng(3)
    system = make_system(elements=(2, 1, 1), order=3, density=RHO, sound_speed=C)
    u = rng.standard_normal(system.allocate_state().shape)
    m = system.geometry.mass
    expected = 0.5 * np.sum(m * (u[0] ** 2 / (RHO * C**2) + RHO * np.sum(u[1:] ** 2, axis=0)))
    assert system.energy(u) == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("boundary", ["wall", "absorbing"])
@pytest.mark.parametrize("periodic", [[False, False, False], [True, False, True]])
def test_central_rate_vanishes_and_upwind_rate_is_negative(boundary, periodic):
    rng = np.random.default_rng(11)
    for flux in ("central", "upwind"):
        system = make_system(elements=(3, 2, 2), order=4, periodic=periodic, boundary=boundary,
                             upper=[1.0, 2.0, 1.5], density=RHO, sound_speed=C, flux=flux)
        u = rng.standard_normal(system.allocate_state().shape)
        rate, energy = energy_rate(system, u), system.energy(u)
        if flux == "central":
            assert abs(rate) < 1e-12 * energy * system.points
        else:
            assert rate < -1e-3 * energy


def test_central_flux_conserves_energy_over_many_steps_in_a_closed_box():
    # a pulse plus a velocity through the walls; affine mesh. The drift is the time stepper's
    # alone: O(dt^4) per unit time in general, here O(dt^5) (RK4-class error on a skew operator).
    field = {
        "p": Fn(lambda x, y, z, t: np.exp(-((x - 0.4) ** 2 + (y - 0.6) ** 2 + (z - 0.5) ** 2) / 0.05)),
        "ux": Fn(lambda x, y, z, t: 0.5 + 0 * x),
        "uz": Fn(lambda x, y, z, t: np.cos(PI * y)),
    }
    system = make_system(elements=(3, 3, 2), order=5, boundary="wall", upper=[1.0, 1.0, 0.8], density=RHO,
                         sound_speed=C, flux="central")
    drifts = []
    for cfl in (0.1, 0.05):
        u = system.evaluate_fields(field, 0.0)
        stepper = Stepper(system, get_scheme("lsrk45"))
        steps, dt = plan_steps(0.7, stable_time_step(cfl, system.geometry.min_spacing, system.wave_speed))
        energies = [system.energy(u)]
        for n in range(steps):
            stepper.step(u, n * dt, dt)
            energies.append(system.energy(u))
        drifts.append(np.max(np.abs(np.array(energies) - energies[0])) / energies[0])
    assert drifts[1] < 1e-6, drifts
    assert drifts[0] / drifts[1] > 16.0, drifts  # halving dt: 2^5 less
    assert l2_norm(system, u - system.evaluate_fields(field, 0.0)) > 0.1 * l2_norm(system, u)  # it did move


def test_upwind_energy_never_increases_and_falls_on_under_resolved_field():
    rng = np.random.default_rng(5)
    system = make_system(elements=(2, 2, 2), order=5, deform=bump, boundary="wall", density=RHO, sound_speed=C)
    u = rng.standard_normal(system.allocate_state().shape)
    stepper = Stepper(system, get_scheme("lsrk45"))
    dt = stable_time_step(0.5, system.geometry.min_spacing, system.wave_speed)
    energies = [system.energy(u)]
    for n in range(20):
        stepper.step(u, n * dt, dt)
        energies.append(system.energy(u))
    assert np.all(np.diff(energies) <= 1e-13 * energies[0]), np.diff(energies)
    assert energies[-1] < 0.75 * energies[0]


def test_absorbing_boundary_lets_a_pulse_leave():
    # a pulse travelling right (u = p / Z) at speed c: the characteristic condition is exact at
    # normal incidence, so the solution stays the free pulse, cut off at x = 1, while it leaves
    z = RHO * C
    shape = lambda x, t: np.exp(-((x - 0.5 - C * t) ** 2) / 0.02)  # noqa: E731
    pulse = {"p": Fn(lambda x, y, z_, t: shape(x, t)), "ux": Fn(lambda x, y, z_, t: shape(x, t) / z)}
    system = make_system(elements=(4, 1, 1), order=8, boundary="absorbing", periodic=[False, True, True],
                         density=RHO, sound_speed=C)
    u = system.evaluate_fields(pulse, 0.0)
    energy0, norm0 = system.energy(u), l2_norm(system, u)
    stepper = Stepper(system, get_scheme("lsrk45"))
    steps, dt = plan_steps(1.0 / C, stable_time_step(0.4, system.geometry.min_spacing, system.wave_speed))
    for n in range(steps):
        stepper.step(u, n * dt, dt)
        if n + 1 == steps // 2:  # half of the pulse is out
            assert system.energy(u) == pytest.approx(0.5 * energy0, rel=1e-3)
            assert l2_norm(system, u - system.evaluate_fields(pulse, (n + 1) * dt)) < 1e-4 * norm0
    assert system.energy(u) < 1e-9 * energy0
    # the same pulse in a closed (wall) box keeps its energy
    closed = make_system(elements=(4, 1, 1), order=8, boundary="wall", periodic=[False, True, True],
                         density=RHO, sound_speed=C)
    u, _ = integrate(closed, pulse, t_end=1.0 / C, cfl=0.4)
    assert closed.energy(u) > 0.99 * energy0


# Walls ----------------------------------------------------------------------------------------
def mirror_into_periodic_box(u, signs=True):
    """The wall box [0,1]^3 (2x2x2 elements) state as the even/odd extension to the periodic box
    [-1,1]^3 (4x4x4 elements): p even in every axis, u_a odd in axis a and even in the others.

    The wall condition's ghost state is exactly this mirror image, so the DG solutions agree."""
    out = np.empty((u.shape[0], 64) + u.shape[2:])
    sign = np.array([[1, 1, 1], [-1, 1, 1], [1, -1, 1], [1, 1, -1]], dtype=float)  # field, axis
    if not signs:
        sign = np.ones((u.shape[0], 3))
    for iz in range(4):
        for iy in range(4):
            for ix in range(4):
                flips = [i < 2 for i in (ix, iy, iz)]
                j = [i - 2 if i >= 2 else 1 - i for i in (ix, iy, iz)]
                block = u[:, j[0] + 2 * (j[1] + 2 * j[2])]  # (fields, k, j, i) = (z, y, x)
                block = block[:, :: -1 if flips[2] else 1, :: -1 if flips[1] else 1, :: -1 if flips[0] else 1]
                factor = np.prod(np.where(flips, sign, 1.0), axis=1)
                out[:, ix + 4 * (iy + 4 * iz)] = factor[:, None, None, None] * block
    return out


@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_wall_is_the_mirror_image(flux):
    # nonzero normal velocity on the walls initially: random nodal values, discontinuous in DG
    rng = np.random.default_rng(17)
    wall = make_system(elements=(2, 2, 2), order=4, boundary="wall", density=RHO, sound_speed=C, flux=flux)
    periodic = make_system(elements=(4, 4, 4), order=4, periodic=[True] * 3, lower=[-1, -1, -1],
                           upper=[1, 1, 1], density=RHO, sound_speed=C, flux=flux)
    # the construction is right: the mirrored coordinates are |periodic coordinates|
    coords = np.abs(np.asarray(periodic.geometry.coords))
    assert np.allclose(mirror_into_periodic_box(np.asarray(wall.geometry.coords), signs=False), coords, atol=1e-14)

    u = rng.standard_normal(wall.allocate_state().shape)
    v = mirror_into_periodic_box(u)
    assert np.max(np.abs(u[1])) > 0.5
    du = wall.rhs(u, 0.0, np.empty_like(u))
    dv = periodic.rhs(v, 0.0, np.empty_like(v))
    scale = np.max(np.abs(dv))
    assert np.max(np.abs(mirror_into_periodic_box(du) - dv)) < 1e-12 * scale
    stepper_wall, stepper_periodic = Stepper(wall, get_scheme("lsrk45")), Stepper(periodic, get_scheme("lsrk45"))
    dt = stable_time_step(0.3, wall.geometry.min_spacing, wall.wave_speed)
    for n in range(10):
        stepper_wall.step(u, n * dt, dt)
        stepper_periodic.step(v, n * dt, dt)
    assert np.max(np.abs(mirror_into_periodic_box(u) - v)) < 1e-12 * np.max(np.abs(v))


@pytest.mark.parametrize("deform", [None, bump], ids=["straight", "curved"])
def test_wall_box_keeps_total_pressure_and_uniform_flow_makes_pressure(deform):
    # u = (1, 0, 0) pushes against x = 0 and x = 1: pressure rises on one side and falls on the
    # other, and sum M p stays 0 since no flux crosses a wall (u*.n = 0 there)
    system = make_system(elements=(2, 2, 2), order=5, deform=deform, boundary="wall", density=RHO, sound_speed=C)
    u = system.evaluate_fields({"ux": Fn(lambda x, y, z, t: 1.0 + 0 * x)}, 0.0)
    stepper = Stepper(system, get_scheme("lsrk45"))
    dt = stable_time_step(0.3, system.geometry.min_spacing, system.wave_speed)
    for n in range(20):
        stepper.step(u, n * dt, dt)
    x = system.geometry.coords[0]
    assert np.mean(u[0][x < 0.1]) < -0.3 and np.mean(u[0][x > 0.9]) > 0.3
    assert abs(np.sum(system.geometry.mass * u[0])) < 1e-12 * np.sum(system.geometry.mass * np.abs(u[0]))
    # an absorbing box lets pressure out: its total changes
    open_box = make_system(elements=(2, 2, 2), order=5, deform=deform, boundary="absorbing", density=RHO,
                           sound_speed=C)
    w = open_box.evaluate_fields({"p": Fn(lambda x, y, z, t: 1.0 + 0 * x)}, 0.0)
    assert abs(np.sum(open_box.geometry.mass * open_box.rhs(w, 0.0, np.empty_like(w))[0])) > 0.1


# Element blocks (the overlap path) ------------------------------------------------------------
@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_rhs_by_element_blocks_equals_full_rhs(flux):
    rng = np.random.default_rng(23)
    system = make_system(elements=(3, 2, 2), order=4, deform=bump, periodic=[True, False, False],
                         boundaries={"zmax": "absorbing"}, boundary="wall", density=RHO, sound_speed=C, flux=flux)
    u = rng.standard_normal(system.allocate_state().shape)
    full = system.rhs(u, 0.0, np.empty_like(u)).copy()
    assert np.max(np.abs(full)) > 1.0
    sums = system.exchange_traces(u)
    for cuts in ([0, 5, 12], [0, 1, 7, 11, 12], [0, 0, 12]):
        out = np.full_like(u, np.nan)
        for first, stop in zip(cuts[:-1], cuts[1:]):
            system.rhs_kernel(u, sums, system.device_geometry, out, RHO, C, system.alpha, (first, stop))
        np.testing.assert_array_equal(out, full)
    # the same through the system's overlap path, forced on one rank
    system.overlap, system.split = True, 5
    out = system.rhs(u, 0.0, np.full_like(u, np.nan))
    np.testing.assert_array_equal(out, full)
    with pytest.raises(ValueError):
        system.rhs_kernel(u, sums, system.device_geometry, out, RHO, C, system.alpha, (3, 13))


# The case-file route --------------------------------------------------------------------------
MODE_CASE = {
    "mesh": {"elements": [2, 2, 2], "boundary": "wall"},
    "discretization": {"order": 6},
    "physics": {"equations": "acoustics", "density": 1.3, "sound_speed": 0.7},
    "initial": {"p": "cos(pi*x)*cos(pi*y)*cos(pi*z)"},
    "exact": {
        "p": "cos(pi*x)*cos(pi*y)*cos(pi*z)*cos(0.7*sqrt(3)*pi*t)",
        "ux": "sin(pi*x)*cos(pi*y)*cos(pi*z)*sin(0.7*sqrt(3)*pi*t)/(1.3*0.7*sqrt(3))",
        "uy": "cos(pi*x)*sin(pi*y)*cos(pi*z)*sin(0.7*sqrt(3)*pi*t)/(1.3*0.7*sqrt(3))",
        "uz": "cos(pi*x)*cos(pi*y)*sin(pi*z)*sin(0.7*sqrt(3)*pi*t)/(1.3*0.7*sqrt(3))",
    },
    "time": {"t_end": 0.4, "cfl": 0.3},
    "output": {"formats": ["hdf5", "nek"]},
}


def test_case_file_route_runs_and_writes_acoustic_fields(tmp_path):
    case = api.case_from_dict(MODE_CASE, name="mode")
    result = api.run(case, output_dir=tmp_path, backend="cpu")
    summary = result.summary
    assert summary["equations"] == "acoustics"
    assert summary["errors"]["all"]["l2"] < 1e-5
    assert summary["errors"]["ux"]["l2"] < 1e-5 and summary["errors"]["p"]["l2"] < 1e-5
    assert set(result.fields) == {"p", "ux", "uy", "uz"}
    assert np.max(np.abs(result.fields["ux"])) > 0.2

    h5_name, nek_name = summary["outputs"][-1]["files"]
    with h5py.File(tmp_path / h5_name, "r") as f:
        for name in ("p", "ux", "uy", "uz"):
            assert f"fields/{name}" in f
            np.testing.assert_array_equal(f[f"fields/{name}"][:], result.fields[name])
        assert "fields/Ex" not in f
    nek = read_field_file(tmp_path / nek_name, velocity=VELOCITY, pressure="p")
    # serial run: element ids 1..E in the order of the arrays
    assert np.array_equal(nek["element_ids"], np.arange(1, 9))
    assert set(nek["fields"]) == {"p", "ux", "uy", "uz"}
    for name in ("p", "ux", "uy", "uz"):
        np.testing.assert_array_equal(nek["fields"][name], result.fields[name])
    assert nek["time"] == pytest.approx(0.4)
    np.testing.assert_allclose(nek["coords"], result.coordinates, rtol=0, atol=1e-15)


def base_case(**sections):
    data = {"mesh": {"elements": [1, 1, 1]}, "physics": {"equations": "acoustics"}, "time": {"t_end": 0.1}}
    for name, values in sections.items():
        data[name] = {**data.get(name, {}), **values}
    return data


def test_defaults_and_keys_of_acoustics():
    case = api.parse_case(base_case())
    assert case.physics.density == 1.0 and case.physics.sound_speed == 1.0
    assert case.discretization.flux == "upwind"
    assert case.mesh.boundary == "wall"


@pytest.mark.parametrize("sections,words", [
    ({"mesh": {"boundary": "pec"}}, ["pec", "wall", "absorbing"]),
    ({"mesh": {"boundaries": {"xmin": "pmc"}}}, ["pmc", "wall", "absorbing"]),
    ({"physics": {"densty": 2.0}}, ["densty", "physics.density"]),
    ({"physics": {"epsilon": 2.0}}, ["epsilon"]),
    ({"physics": {"sound_speed": -1.0}}, ["sound_speed"]),
    ({"initial": {"Ex": "1"}}, ["Ex", "p, ux, uy, uz"]),
    ({"exact": {"Hz": "1"}}, ["Hz"]),
    ({"discretization": {"flux": "lax"}}, ["flux", "upwind", "central"]),
])
def test_bad_acoustics_input_is_an_input_error(sections, words):
    with pytest.raises(InputError) as info:
        api.parse_case(base_case(**sections))
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_acoustics_example_reaches_its_documented_error(tmp_path):
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "acoustics_mode.toml"
    case = api.load_case(example)
    assert case.physics.equations == "acoustics" and case.mesh.deform  # curved, walls
    assert (case.physics.density, case.physics.sound_speed) == (1.3, 0.7)
    result = api.run(case, output_dir=tmp_path, backend="cpu")
    assert result.summary["errors"]["all"]["l2"] < 1e-6
    assert abs(result.summary["energy"]["final"] / result.summary["energy"]["initial"] - 1) < 1e-6
