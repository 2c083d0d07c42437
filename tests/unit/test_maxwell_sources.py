"""Maxwell sources ([source.<name>], systems/maxwell/sources.py): a uniform current's exact
field, the energy balance dW/dt = -integral J . E, a dipole's radiated field against the
analytic Hertzian dipole, and the case file's checks."""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest

from lobatto.api import case_from_dict, run
from lobatto.config.expressions import compile_expression
from lobatto.errors import InputError
from lobatto.integrators import Stepper, get_scheme
from lobatto.systems.maxwell.sources import SourceSpec
from lobatto.systems.maxwell.system import MaxwellSystem

from analytic import build_system

# cubic in t: lsrk45 and rk4 (order 4) integrate dE/dt = -J(t)/eps exactly
J_X, J_X_INTEGRAL = "1 + t - 2*t**2 + 3*t**3", lambda t: t + t**2 / 2 - 2 * t**3 / 3 + 3 * t**4 / 4
J_Z, J_Z_INTEGRAL = "-t**2 + 0.5", lambda t: -t**3 / 3 + 0.5 * t


@pytest.mark.parametrize("integrator", ["lsrk45", "rk4"])  # the fused stage path and the rhs path
def test_uniform_current_in_periodic_box_gives_exact_field(tmp_path, integrator):
    eps, t_end = 2.0, 0.7
    case = case_from_dict({
        "mesh": {"elements": [2, 3, 2], "periodic": [True, True, True], "upper": [1.0, 1.5, 1.0]},
        "discretization": {"order": 3}, "physics": {"equations": "maxwell", "epsilon": eps},
        "time": {"t_end": t_end, "dt": 0.07, "integrator": integrator},
        "source": {"j": {"type": "current", "Jx": J_X, "Jz": J_Z}}})
    result = run(case, output_dir=tmp_path)
    assert result.simulation.system.time_dependent and not result.simulation.system.energy_bounded
    assert "off" in result.summary["sources"]["whole_step"]
    assert result.summary["sources"]["elements_with_sources"] == 12
    f = result.fields
    for name, expression, integral in (("Ex", J_X, J_X_INTEGRAL), ("Ez", J_Z, J_Z_INTEGRAL)):
        # exact to round-off: the scheme's own quadrature of -J/eps, and the integral to the
        # precision of lsrk45's rational coefficients (they meet the order conditions to ~1e-11)
        expected = -quadrature(get_scheme(integrator), compile_expression(expression), 0.07, 10) / eps
        assert np.max(np.abs(f[name] - expected)) < 1e-14
        assert abs(expected + integral(t_end) / eps) < 1e-10
    for name in ("Ey", "Hx", "Hy", "Hz"):
        assert np.max(np.abs(f[name])) < 1e-13


def test_uniform_current_in_two_media_gives_d_exactly():
    """eps 1 | 4 across x = 0.5 (materials.py's per-point path): D = eps E = -integral J dt is
    uniform, so H stays 0 and Ex = -integral Jx dt / eps(x) at every point (Ex is normal to
    the interface, so no flux acts)."""
    keys = dict(elements=(4, 2, 2), order=3, periodic=[True, True, True])
    x = build_system(MaxwellSystem, **keys).geometry.coords[0]
    eps = 1.0 + 3.0 * (x.mean(axis=(1, 2, 3)) > 0.5)[:, None, None, None] + 0 * x
    material = {"epsilon": eps, "mu": 1.0 + 0.2 * np.sin(2 * np.pi * x), "sigma": 0 * x}
    spec = SourceSpec("j", "current", {"Jx": compile_expression(J_X), "Jy": compile_expression("0"),
                                       "Jz": compile_expression("0")})
    system = build_system(MaxwellSystem, material=material, sources=(spec,), **keys)
    u, dt, steps = system.allocate_state(), 0.07, 10
    stepper = Stepper(system, get_scheme("rk4"))
    for n in range(steps):
        stepper.step(u, n * dt, dt)
    expected = -quadrature(get_scheme("rk4"), compile_expression(J_X), dt, steps)
    # round-off: the derivatives of a constant field come out as 1e-14, not 0, and feed back
    assert np.max(np.abs(u[0] * eps - expected)) < 1e-11
    assert np.max(np.abs(u[1:])) < 1e-11


def quadrature(scheme, j, dt, steps) -> float:
    """sum over steps of dt sum_i b_i J(t + c_i dt), the weights b_i of a 2N-storage scheme
    (u gets L_i through residuals: b_i = sum_{k >= i} B_k prod_{i < l <= k} A_l) or a Butcher one."""
    if hasattr(scheme, "A"):
        weights = [sum(scheme.B[k] * math.prod(scheme.A[i + 1:k + 1]) for k in range(i, len(scheme.A)))
                   for i in range(len(scheme.A))]
        nodes = scheme.C
    else:
        weights, nodes = scheme.b, scheme.c
    return sum(dt * w * float(j.evaluate(np, t=n * dt + c * dt)) for n in range(steps) for w, c in zip(weights, nodes))


def current(jz: str, **box) -> SourceSpec:
    values = {"Jx": compile_expression("0"), "Jy": compile_expression("0.3*sin(2*t)*x"),
              "Jz": compile_expression(jz)}
    values.update(box)
    return SourceSpec("j", "current", values)


J_BUMP = "exp(-10*((x-0.4)**2 + (y-0.5)**2 + (z-0.6)**2))*sin(3*t)"


def power(system, u, t) -> float:
    """sum M J . E, J evaluated here on the host."""
    x, y, z = system.geometry.coords
    j = [e.evaluate(np, x=x, y=y, z=z, t=t) for e in (system.sources.specs[0].values[f"J{a}"] for a in "xyz")]
    return float(np.sum(system.geometry.mass * sum(j[c] * u[c] for c in range(3))))


def cavity(**kwargs):
    return build_system(MaxwellSystem, elements=(2, 2, 2), order=4, boundary="pec", epsilon=2.0, mu=1.5,
                        flux="central", sources=(current(J_BUMP),), **kwargs)


def test_energy_rate_is_minus_the_power_of_the_current():
    """Semi-discrete, central flux, PEC: dW/dt = sum M (eps E . dE/dt + mu H . dH/dt) = -sum M J . E."""
    system = cavity()
    u = np.random.default_rng(3).standard_normal(system.allocate_state().shape)
    u[2] += 1.0  # so that J . E does not average out
    for t in (0.3, 1.1):
        du = system.rhs(u, t, np.empty_like(u))
        m = system.geometry.mass
        rate = float(np.sum(m * (2.0 * np.sum(u[:3] * du[:3], 0) + 1.5 * np.sum(u[3:] * du[3:], 0))))
        p = power(system, u, t)
        assert abs(p) > 1e-2
        assert rate == pytest.approx(-p, rel=1e-11)


def test_energy_balance_over_steps_converges_with_dt():
    """W(T) - W(0) = -integral_0^T sum M J . E dt, the power integrated by the trapezoid rule:
    the mismatch falls as dt^2."""
    mismatches = []
    for steps in (20, 40):
        system = cavity()
        u = system.allocate_state()
        stepper, dt = Stepper(system, get_scheme("lsrk45")), 1.0 / steps
        w0, work = system.energy(u), 0.0
        for n in range(steps):
            p0 = power(system, u, n * dt)
            stepper.step(u, n * dt, dt)
            work += 0.5 * dt * (p0 + power(system, u, (n + 1) * dt))
        gained = system.energy(u) - w0
        assert gained > 1e-3
        mismatches.append(abs(gained + work) / gained)
    assert mismatches[1] < 1e-3
    assert 3.0 < mismatches[0] / mismatches[1] < 5.0


def test_box_limits_the_current_to_the_elements_it_meets():
    boxed = build_system(MaxwellSystem, elements=(4, 2, 2), order=3, boundary="pec",
                         sources=(current("1", lower=(0.0, 0.0, 0.0), upper=(0.3, 1.0, 1.0)),))
    ix = boxed.mesh.element_ids % 4  # element id = ix + 4 iy + 8 iz
    assert set(boxed.sources.elements.tolist()) == set(np.nonzero(ix <= 1)[0].tolist())
    u = boxed.allocate_state()
    du = boxed.rhs(u, 0.5, np.empty_like(u))
    x = boxed.geometry.coords[0]
    assert np.array_equal(du[2] != 0, x <= 0.3)  # -Jz/eps inside the box, zero outside
    assert np.allclose(du[2][x <= 0.3], -1.0)


def hertzian_field(point, t, t0, f):
    """E of a unit z-directed current dipole (J = w(t) z delta) at the origin in free space
    (eps = mu = c = 1), w the Ricker wavelet; H of a magnetic dipole is the same (duality)."""
    r = float(np.linalg.norm(point))
    n, d = np.asarray(point) / r, np.array([0.0, 0.0, 1.0])
    s = t - r - t0
    a = (math.pi * f * s) ** 2
    p, dp, ddp = s * np.exp(-a), (1 - 2 * a) * np.exp(-a), -2 * (math.pi * f) ** 2 * s * np.exp(-a) * (3 - 2 * a)
    near = (3 * n * (n @ d) - d)[:, None]
    far = (d - n * (n @ d))[:, None]
    return (near * (p / r**3 + dp / r**2) - far * ddp / r) / (4 * math.pi)


PROBE, T0, FREQUENCY = [0.5, 0.1, 0.2], 0.5, 2.0


def dipole_run(tmp_path, kind, order):
    """The octant [0, 1]^3 of a dipole at the origin: walls on the symmetry planes (an electric
    z dipole: PEC at z = 0, PMC at x = 0 and y = 0; magnetic: swapped), so the field is that
    of 8 images: 8 dipoles in free space. Absorbing far walls; t_end before their echo."""
    walls = ("pec", "pmc") if kind == "electric" else ("pmc", "pec")
    case = case_from_dict({
        "mesh": {"elements": [4, 4, 4], "boundary": "absorbing",
                 "boundaries": {"zmin": walls[0], "xmin": walls[1], "ymin": walls[1]}},
        "discretization": {"order": order}, "physics": {"equations": "maxwell"}, "time": {"t_end": 1.5},
        "source": {"d": {"type": f"{kind}_dipole", "position": [0, 0, 0], "direction": [0, 0, 2],
                         "waveform": "ricker", "frequency": FREQUENCY, "t0": T0}},
        "output": {"probes": {"every": 1, "points": [PROBE], "fields": ["Ex", "Ez", "Hx", "Hz"]}}})
    run(case, output_dir=tmp_path)
    with h5py.File(tmp_path / "case_probes.h5") as f:
        t = f["probes/time"][:]
        names = ("Ex", "Ez") if kind == "electric" else ("Hx", "Hz")
        return t, np.stack([f[f"probes/{name}"][:, 0] for name in names])


@pytest.mark.parametrize("kind", ["electric", "magnetic"])
def test_dipole_radiates_the_hertzian_field(tmp_path, kind):
    errors = []
    for order in (4, 6):
        t, numeric = dipole_run(tmp_path / f"N{order}", kind, order)
        exact = 8 * hertzian_field(np.array(PROBE), t, T0, FREQUENCY)[[0, 2]]
        errors.append(np.linalg.norm(numeric - exact, axis=1) / np.linalg.norm(exact, axis=1))
        # the waveform arrives after distance / c: the peaks coincide
        assert np.array_equal(np.argmax(np.abs(numeric), axis=1), np.argmax(np.abs(exact), axis=1))
    assert np.all(errors[1] < 0.015) and np.all(errors[1] < errors[0] / 4)


BASE = {"mesh": {"elements": [2, 2, 2]}, "discretization": {"order": 2}, "time": {"t_end": 0.1}}
DIPOLE = {"type": "electric_dipole", "position": [0.5, 0.5, 0.5], "direction": [0, 0, 1], "waveform": "gaussian",
          "t0": 0.2, "width": 0.05}


@pytest.mark.parametrize("table, message", [
    ({"type": "curent"}, '[source.s] type must be one of "current", "electric_dipole", "magnetic_dipole"'),
    ({"Jx": "1"}, "[source.s] type is required"),
    ({"type": "current", "Jx": "y +"}, "[source.s] Jx"),
    ({"type": "current", "Jq": "1"}, "unknown key 'source.s.Jq'"),
    ({"type": "current", "lower": [0, 0, 0]}, "[source.s] lower and upper go together"),
    ({"type": "current", "lower": [0, 0, 0], "upper": [1, 0, 1]}, "[source.s] upper must be above lower"),
    ({**DIPOLE, "waveform": "ricker", "frequency": 1.0}, '[source.s] width does not apply to waveform "ricker"'),
    ({**DIPOLE, "waveform": "pulse"}, "[source.s] waveform must be one of"),
    ({k: v for k, v in DIPOLE.items() if k != "width"}, "[source.s] width is required"),
    ({**DIPOLE, "width": -1.0}, "[source.s] width must be a positive number"),
    ({**DIPOLE, "direction": [0, 0, 0]}, "[source.s] direction must be a nonzero vector"),
    ({**DIPOLE, "position": [0.5]}, "[source.s] position must be a list of 3 finite numbers"),  # [x, y]: 2-D
    ({**DIPOLE, "amplitud": 2.0}, "did you mean 'source.s.amplitude'"),
    ({"type": "magnetic_dipole", "position": [0, 0, 0], "direction": [1, 0, 0]}, "[source.s] waveform is required"),
])
def test_bad_source_tables_are_named(table, message):
    with pytest.raises(InputError) as info:
        case_from_dict({**BASE, "source": {"s": table}})
    assert message in str(info.value) and "\n" not in str(info.value)


def test_dipole_outside_the_mesh_is_an_error(tmp_path):
    case = case_from_dict({**BASE, "source": {"s": {**DIPOLE, "position": [0.5, 1.5, 0.5]}}})
    with pytest.raises(InputError, match=r"\[source.s\] position = \[0.5, 1.5, 0.5\] is outside the mesh"):
        run(case, output_dir=tmp_path)


def test_case_with_sources_round_trips_through_toml():
    case = case_from_dict({**BASE, "source": {"s": DIPOLE, "j": {"type": "current", "Jy": "sin(t)",
                                                                  "lower": [0, 0, 0], "upper": [1, 1, 0.5]}}})
    import tomllib

    again = case_from_dict(tomllib.loads(case.to_toml()))
    assert again.to_dict() == case.to_dict()
    assert again.to_dict()["source"]["j"] == {"type": "current", "Jx": "0", "Jy": "sin(t)", "Jz": "0",
                                              "lower": [0.0, 0.0, 0.0], "upper": [1.0, 1.0, 0.5]}


@pytest.mark.parametrize("waveform, params, check", [
    ("gaussian", {"t0": 1.0, "width": 0.2}, lambda w: w(1.0) == 1.0 and w(1.2) == pytest.approx(math.exp(-0.5))),
    ("modulated_gaussian", {"frequency": 2.0, "t0": 1.0, "width": 0.3},
     lambda w: w(1.0) == 0.0 and w(1.125) == pytest.approx(math.exp(-0.5 * (0.125 / 0.3) ** 2))),
    ("ricker", {"frequency": 1.0, "t0": 0.5}, lambda w: w(0.5) == 1.0 and abs(w(0.5 + 1 / (math.pi * 2**0.5))) < 1e-15),
    ("continuous", {"frequency": 1.0, "ramp": 2.0},
     lambda w: w(0.0) == 0.0 and w(2.25) == pytest.approx(1.0) and w(0.25) == pytest.approx(math.sin(math.pi / 16) ** 2)),
])
def test_waveforms(waveform, params, check):
    from lobatto.systems.maxwell.sources import waveform_value

    assert check(lambda t: waveform_value(waveform, params, t))
