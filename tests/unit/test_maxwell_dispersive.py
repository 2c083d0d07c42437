"""Dispersive media (systems/maxwell/dispersive.py, dispersion_fit.py): each pole's ODE against
the exact solution of the linear ODE at fourth order in dt, the semi-discrete energy balance
with the poles' energy, a Drude and a Lorentz slab against the analytic slab response per
frequency, checkpoint/restart, the passive fit (poles recovered from synthetic data and from the
committed gold table), and bad input as one-line errors of the CLI."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from lobatto import cli
from lobatto.api import Simulation, case_from_dict, run
from lobatto.errors import InputError
from lobatto.integrators import Stepper, get_scheme
from lobatto.systems.maxwell.dispersion_fit import Pole, fit_nk_file, fit_permittivity, permittivity
from lobatto.systems.maxwell.dispersive import Dispersion, DispersiveTerm
from lobatto.systems.maxwell.system import MaxwellSystem

from analytic import build_system

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "tests" / "data" / "dispersion" / "gold_vial2005.csv"
TWO_PI = 2 * math.pi

DRUDE = Pole("drude", {"plasma_frequency": 0.9, "collision_frequency": 0.3})
LORENTZ = Pole("lorentz", {"resonance_frequency": 0.7, "delta_epsilon": 1.8, "damping_frequency": 0.2})
LORENTZ_2 = Pole("lorentz", {"resonance_frequency": 1.3, "delta_epsilon": 0.6, "damping_frequency": 0.4})
DEBYE = Pole("debye", {"delta_epsilon": 2.5, "relaxation_time": 0.15})


def ode_matrix(poles, eps):
    """The ODE of one component of a uniform E with the poles (H = 0, no curl), written here
    from the model equations: state (E, then J | P, J | P per pole)."""
    size = 1 + sum({"drude": 1, "lorentz": 2, "debye": 1}[p.model] for p in poles)
    a = np.zeros((size, size))
    row = 1
    for p in poles:
        v = p.values
        if p.model == "drude":
            wp, g = TWO_PI * v["plasma_frequency"], TWO_PI * v["collision_frequency"]
            a[row, 0], a[row, row], a[0, row] = wp**2, -g, -1 / eps  # J' = wp^2 E - g J; eps E' = -J
            row += 1
        elif p.model == "lorentz":
            w0, g, d = TWO_PI * v["resonance_frequency"], TWO_PI * v["damping_frequency"], v["delta_epsilon"]
            a[row, row + 1] = 1  # P' = J
            a[row + 1, 0], a[row + 1, row], a[row + 1, row + 1] = d * w0**2, -w0**2, -g
            a[0, row + 1] = -1 / eps
            row += 2
        else:
            d, tau = v["delta_epsilon"], v["relaxation_time"]
            a[row, 0], a[row, row] = d / tau, -1 / tau  # P' = (d E - P) / tau
            a[0, 0] -= d / (tau * eps)
            a[0, row] += 1 / (tau * eps)
            row += 1
    return a


def expm_times(a, x0, t):
    w, v = np.linalg.eig(a)
    return (v @ np.diag(np.exp(w * t)) @ np.linalg.solve(v, x0)).real


def add_poles(system, poles, elements=None, weight=None, eps=None):
    elements = np.arange(system.num_elements) if elements is None else elements
    term = DispersiveTerm(system, elements, Dispersion(tuple(poles)), weight,
                          system.epsilon if eps is None else eps, "test")
    system.add_term(term)
    return term


@pytest.mark.parametrize("poles", [[DRUDE], [LORENTZ], [DEBYE], [DRUDE, LORENTZ, LORENTZ_2, DEBYE]],
                         ids=["drude", "lorentz", "debye", "all"])
def test_uniform_field_follows_the_pole_ode_at_fourth_order(poles):
    eps, t_end, e0 = 2.0, 0.8, np.array([1.0, -0.5, 0.3])
    errors = []
    for steps in (40, 80):
        system = build_system(MaxwellSystem, elements=(2, 1, 1), order=2, periodic=[True] * 3, epsilon=eps)
        term = add_poles(system, poles)
        u = system.allocate_state()
        u[0:3] = e0[:, None, None, None, None]
        stepper = Stepper(system, get_scheme("lsrk45"))
        dt = t_end / steps
        for n in range(steps):
            stepper.step(u, n * dt, dt)
        a = ode_matrix(poles, eps)
        error = 0.0
        for c in range(3):
            exact = expm_times(a, np.eye(a.shape[0])[0] * e0[c], t_end)
            error = max(error, np.max(np.abs(u[c] - exact[0])))
            row, k = 1, 0
            for p in poles:  # the auxiliary fields: (J) | (P, J) | (P) per pole
                for part in range({"drude": 1, "lorentz": 2, "debye": 1}[p.model]):
                    error = max(error, np.max(np.abs(term.aux[k + 3 * part + c] - exact[row + part])))
                row += {"drude": 1, "lorentz": 2, "debye": 1}[p.model]
                k += 3 * {"drude": 1, "lorentz": 2, "debye": 1}[p.model]
        assert np.max(np.abs(u[3:])) < 1e-13  # curl E = 0 (to round-off): H stays 0
        assert abs(u[0].mean() - e0[0]) > 1e-2  # the poles moved E
        errors.append(error)
    print(f"{[p.model for p in poles]}: errors {errors[0]:.3g}, {errors[1]:.3g}, ratio {errors[0] / errors[1]:.2f}")
    assert errors[1] < 1e-5 and errors[0] / errors[1] > 2**3.7, errors


@pytest.mark.parametrize("partial", [False, True], ids=["whole-elements", "masked-points"])
def test_semi_discrete_energy_balance_with_poles(partial):
    """Central flux, PEC box: d/dt (field energy + poles' energy) = -(poles' dissipation) to
    round-off, for random fields and auxiliary fields, with per-point eps_inf; the mask w
    switches the poles off at some points of an element."""
    system = build_system(MaxwellSystem, elements=(3, 2, 2), order=3, flux="central", boundary="pec",
                          epsilon=1.7, mu=1.2)
    rng = np.random.default_rng(11)
    x = system.geometry.coords[0]
    elements = np.nonzero(x.mean(axis=(1, 2, 3)) > 0.3)[0]
    weight = (x[elements] > 0.5).astype(float) if partial else None
    poles = [DRUDE, LORENTZ, DEBYE]
    term = add_poles(system, poles, elements, weight)
    u = rng.standard_normal(system.allocate_state().shape)
    term.aux[...] = rng.standard_normal(term.aux.shape)
    if partial:
        term.aux *= weight  # a masked point holds no polarisation
    du = system.core_rhs(u, 0.0, np.empty_like(u))
    term.rates(u, 0.0, term.rate, term.aux_rate)
    du[0:3, elements] += term.rate[0:3]
    m = system.geometry.mass
    rate = float(np.sum(m * (1.7 * np.sum(u[:3] * du[:3], 0) + 1.2 * np.sum(u[3:] * du[3:], 0))))
    me, q, r = m[elements], term.aux, term.aux_rate
    pole_rate = dissipation = 0.0
    # J, then P and J, then P: W_p's rate and D_p written from the docs' formulas
    wp2, g = (TWO_PI * 0.9) ** 2, TWO_PI * 0.3
    pole_rate += np.sum(me * np.sum(q[0:3] * r[0:3], 0)) / wp2
    dissipation += g * np.sum(me * np.sum(q[0:3] ** 2, 0)) / wp2
    w02, g, d = (TWO_PI * 0.7) ** 2, TWO_PI * 0.2, 1.8
    pole_rate += np.sum(me * (np.sum(q[6:9] * r[6:9], 0) / w02 + np.sum(q[3:6] * r[3:6], 0))) / d
    dissipation += g * np.sum(me * np.sum(q[6:9] ** 2, 0)) / (d * w02)
    d, tau = 2.5, 0.15
    pole_rate += np.sum(me * np.sum(q[9:12] * r[9:12], 0)) / d
    dissipation += tau * np.sum(me * np.sum(r[9:12] ** 2, 0)) / d
    scale = abs(rate) + abs(pole_rate) + dissipation
    assert abs(rate + pole_rate + dissipation) < 1e-12 * scale, (rate, pole_rate, dissipation)
    assert dissipation > 1e-2 * scale
    # energy(): the field energy plus the poles' W
    w = 0.5 * (np.sum(me * np.sum(q[0:3] ** 2, 0)) / wp2 + np.sum(me * (np.sum(q[6:9] ** 2, 0) / w02
               + np.sum(q[3:6] ** 2, 0))) / 1.8 + np.sum(me * np.sum(q[9:12] ** 2, 0)) / 2.5)
    field = 0.5 * float(np.sum(m * (1.7 * np.sum(u[:3] ** 2, 0) + 1.2 * np.sum(u[3:] ** 2, 0))))
    assert system.energy(u) == pytest.approx(field + w, rel=1e-13)


# ============================================================== slab against the analytic response
SLAB = (1.25, 1.5)  # the slab's faces; the domain is 0 < x < 1.75, absorbing ends
FREQUENCIES = [0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 1.5]
SLAB_POLES = {
    "drude": (1.0, {"model": "drude", "plasma_frequency": 1.0, "collision_frequency": 1.0}),
    "lorentz": (2.0, {"model": "lorentz", "resonance_frequency": 0.9, "delta_epsilon": 1.5, "damping_frequency": 1.0}),
}


def slab_case(name, pole=None):
    pulse = "exp(-((x-0.6)/0.1)**2)"  # moving to +x
    data = {"mesh": {"elements": [7, 1, 1], "upper": [1.75, 0.25, 0.25], "periodic": [False, True, True],
                     "boundary": "absorbing"},
            "discretization": {"order": 5}, "physics": {"equations": "maxwell"},
            "initial": {"Ey": pulse, "Hz": pulse}, "time": {"t_end": 7.0, "cfl": 0.5},
            "output": {"formats": [], "dft": {"frequencies": FREQUENCIES, "surfaces": ["xmin", "xmax"],
                                              "fields": ["Ey"]}}}
    if pole is not None:
        eps_inf, values = pole
        data["material"] = {"slab": {"where": f"(x - {SLAB[0]})*({SLAB[1]} - x)", "sampling": "element",
                                     "epsilon": eps_inf, "poles": [values]}}
    return case_from_dict(data, name=name)


def surface_spectra(case, directory):
    result = run(case, output_dir=directory)
    with h5py.File(directory / f"{case.name}_dft.h5", "r") as f:
        return result, {s: f[f"surfaces/{s}/Ey"][:, 0].mean(axis=(1, 2)) for s in ("xmin", "xmax")}


@pytest.fixture(scope="module")
def vacuum(tmp_path_factory):
    return surface_spectra(slab_case("vacuum"), tmp_path_factory.mktemp("vacuum"))


@pytest.mark.parametrize("model", list(SLAB_POLES))
def test_slab_reflection_and_transmission_match_the_analytic_response(model, vacuum, tmp_path):
    """A pulse at normal incidence through a dispersive slab: r(f) and t(f) from the DFT of Ey on
    the absorbing ends, divided by the vacuum run's, against the slab formula with the model's
    eps(omega) = eps_inf + chi(omega) (e^(+i omega t)). Measured (t_end = 7, 7 elements, N = 5): Lorentz
    |t - t_exact| <= 1.1e-5, |r - r_exact| <= 1.3e-5; Drude 1.1e-6, 2.3e-6; the window's end is
    most of it (t_end = 4 gave 1e-3)."""
    eps_inf, values = SLAB_POLES[model]
    result, slab = surface_spectra(slab_case(model, SLAB_POLES[model]), tmp_path)
    reference, through = vacuum[1], vacuum[0]
    assert result.summary["steps"] == through.summary["steps"] and result.summary["dt"] == through.summary["dt"]
    assert result.simulation.system.terms[0].count == 1
    omega, (a, b) = TWO_PI * np.array(FREQUENCIES), SLAB
    pole = Pole(values["model"], {k: v for k, v in values.items() if k != "model"})
    n = np.sqrt(eps_inf + pole.susceptibility(omega))  # Im n < 0: e^(i(omega t - n k x)) decays
    r12, phase = (1 - n) / (1 + n), np.exp(-1j * omega * n * (b - a))
    r_exact = r12 * (1 - phase**2) / (1 - r12**2 * phase**2)
    t_exact = (1 - r12**2) * phase / (1 - r12**2 * phase**2)
    # vacuum: the pulse reaches x = 1.75 after a delay; the slab: via a, b and back to x = 0
    t_measured = slab["xmax"] / reference["xmax"] * np.exp(-1j * omega * (b - a))
    r_measured = slab["xmin"] / reference["xmax"] * np.exp(1j * omega * (2 * a - 1.75))
    print(f"{model}: |t - t_exact| {np.abs(t_measured - t_exact)}\n |r - r_exact| {np.abs(r_measured - r_exact)}")
    assert np.max(np.abs(t_measured - t_exact)) < 1e-4
    assert np.max(np.abs(r_measured - r_exact)) < 1e-4
    assert np.min(np.abs(r_exact)) > 0.05 and np.min(np.abs(t_exact)) > 0.3  # both are measured, not zero


# ======================================================================= checkpoint and restart
RESTART_CASE = {
    "mesh": {"elements": [4, 2, 1], "periodic": [False, True, True], "boundary": "pec"},
    "discretization": {"order": 3}, "physics": {"equations": "maxwell", "epsilon": 1.5},
    "initial": {"Ey": "exp(-20*(x-0.3)**2)*sin(pi*y)", "Hz": "exp(-20*(x-0.3)**2)"},
    "time": {"t_end": 0.3},
    "material": {
        "metal": {"where": "x - 0.5", "sampling": "element",
                  "poles": [{"model": "drude", "plasma_frequency": 1.2, "collision_frequency": 0.2}]},
        "film": {"where": "0.45 - x", "model": "lorentz", "epsilon": 2.0,
                 "poles": [{"resonance_frequency": 1.0, "delta_epsilon": 1.2, "damping_frequency": 0.1},
                           {"model": "debye", "delta_epsilon": 0.8, "relaxation_time": 0.3}]}},
    "output": {"formats": ["hdf5"]},
}


def test_checkpoint_restart_with_poles_is_bitwise(tmp_path):
    case = case_from_dict(RESTART_CASE, name="run")
    full = Simulation(case, backend="cpu", output_dir=tmp_path / "full", comm=None)
    full.run()
    first = Simulation(case, backend="cpu", output_dir=tmp_path / "part", comm=None)
    first.advance(5)
    path = first.checkpoint()
    first.close()  # one live run per directory: the restart writes there
    rest = Simulation(case, backend="cpu", output_dir=tmp_path / "part", comm=None).restart(path)
    rest.run()
    assert rest.step_count == full.step_count > 5
    assert np.array_equal(rest.backend.to_host(rest.u), full.backend.to_host(full.u))
    for a, b in zip(rest.system.terms, full.system.terms):
        assert a.name == b.name and np.array_equal(a.aux, b.aux)
    assert np.max(np.abs(full.system.terms[0].aux)) > 1e-3  # the poles hold something
    assert rest.summary["energy"] == full.summary["energy"]
    with h5py.File(path / "rank00000.h5", "r") as part:
        assert {"history/system/dispersion.metal/aux", "history/system/dispersion.film/aux"} <= set(_datasets(part))


def _datasets(group, prefix=""):
    for key, item in group.items():
        if isinstance(item, h5py.Dataset):
            yield prefix + key
        else:
            yield from _datasets(item, prefix + key + "/")


def test_case_tables_round_trip_and_summary(tmp_path):
    case = case_from_dict(RESTART_CASE, name="run")
    table = case.to_dict()["material"]
    assert table["film"]["poles"][1] == {"model": "debye", "delta_epsilon": 0.8, "relaxation_time": 0.3}
    again = case_from_dict(__import__("tomllib").loads(case.to_toml()), name="run")
    assert again.to_dict() == case.to_dict()
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    metal, film = sim.system.terms
    x = sim.system.geometry.coords[0]
    assert np.array_equal(metal.elements, np.nonzero(x.mean(axis=(1, 2, 3)) > 0.5)[0]) and metal.weight is None
    # point sampling: "0.45 - x" cuts the elements of 0.25 < x < 0.5, so w masks their points
    assert np.array_equal(film.weight, (0.45 - x[film.elements] > 0).astype(float))
    assert metal.aux_count == 3 and film.aux_count == 9 and not sim.system.energy_bounded
    summary = sim.run()
    assert summary["dispersion.film"]["elements"] == film.count and summary["dispersion.film"]["auxiliary_fields"] == 9
    assert summary["dispersion.metal"]["poles"][0]["plasma_frequency"] == 1.2


# ==================================================================================== the fit
def test_fit_recovers_synthetic_poles():
    eps_inf, poles = 2.5, [Pole("drude", {"plasma_frequency": 2.0, "collision_frequency": 0.05}),
                           Pole("lorentz", {"resonance_frequency": 0.9, "delta_epsilon": 1.2, "damping_frequency": 0.2}),
                           Pole("lorentz", {"resonance_frequency": 1.6, "delta_epsilon": 0.6, "damping_frequency": 0.3})]
    rng = np.random.default_rng()
    f = np.sort(rng.uniform(0.4, 2.5, 60))
    fit = fit_permittivity(f, permittivity(eps_inf, poles, TWO_PI * f), lorentz=2, drude=True)
    assert fit.max_relative_error < 1e-8 and fit.passivity["passive"]
    assert fit.epsilon_infinity == pytest.approx(eps_inf, rel=1e-6)
    got = sorted(fit.poles, key=lambda p: (p.model, p.values.get("resonance_frequency", 0)))
    for want, have in zip(poles, got):
        assert want.model == have.model
        for key, value in want.values.items():
            assert have.values[key] == pytest.approx(value, rel=1e-5), (key, have.values[key], value)


def test_fit_of_lorentz_only_data_and_a_poor_fit_is_reported():
    poles = [Pole("lorentz", {"resonance_frequency": 1.1, "delta_epsilon": 2.0, "damping_frequency": 0.15})]
    f = np.linspace(0.5, 2.0, 40)
    eps = permittivity(1.3, poles, TWO_PI * f)
    good = fit_permittivity(f, eps, lorentz=1)
    assert good.max_relative_error < 1e-8
    assert good.poles[0].values["resonance_frequency"] == pytest.approx(1.1, rel=1e-7)
    # an active "material" (gain: Im eps > 0) cannot be fitted by passive poles
    bad = fit_permittivity(f, np.conj(eps), lorentz=1)
    assert bad.passivity["passive"] and bad.max_relative_error > 0.1


def gold_table() -> np.ndarray:
    """The committed gold table's rows, computed again from Vial et al. (2005) (see the file)."""
    c = 299792458.0
    wavelength = np.arange(500, 1001, 10) * 1e-9
    w = TWO_PI * c / wavelength
    wd, gd, wl, gl = (TWO_PI * f * 1e12 for f in (2113.6, 15.92, 650.07, 104.86))
    eps = 5.9673 - wd**2 / (w**2 - 1j * gd * w) + 1.09 * wl**2 / (wl**2 - w**2 + 1j * gl * w)
    nk = np.sqrt(eps)
    return np.stack([wavelength * 1e9, nk.real, -nk.imag], axis=1)


def test_gold_table_is_the_published_model_and_is_fitted():
    rows = np.loadtxt(GOLD, delimiter=",", comments="#", skiprows=7)
    assert np.allclose(rows, gold_table(), rtol=1e-9, atol=0)
    # lobatto's unit length = 1 um: wavelength_unit = 0.001 (nm); f = 1 / wavelength, 1 to 2 cycles per unit time
    exact = fit_nk_file(GOLD, 0.001, lorentz=1, drude=True)
    to_unit = 1e12 * 1e-6 / 299792458.0  # THz -> cycles per (1 um / c)
    assert exact.band == pytest.approx((1.0, 2.0))
    assert exact.max_relative_error < 1e-7 and exact.epsilon_infinity == pytest.approx(5.9673, rel=1e-6)
    drude = [p for p in exact.poles if p.model == "drude"][0]
    assert drude.values["plasma_frequency"] == pytest.approx(2113.6 * to_unit, rel=1e-6)
    two = fit_nk_file(GOLD, 0.001, lorentz=2, drude=False)
    print(f"gold, 2 Lorentz poles without Drude: max relative error {two.max_relative_error:.3g}")
    assert two.passivity["passive"] and two.max_relative_error < 0.05


def test_fitted_material_in_a_case(tmp_path, capsys):
    data = dict(RESTART_CASE, material={"gold": {"where": "x - 0.5", "sampling": "element", "data": str(GOLD),
                                                 "wavelength_unit": 0.001,
                                                 "fit": {"poles": 1, "model": "drude_lorentz"}}},
                output={"formats": [], "dft": {"frequencies": [1.5, 2.5], "surfaces": ["xmin"]}})
    result = run(case_from_dict(data), output_dir=tmp_path)
    assert "lobatto: warning:" in capsys.readouterr().out.split("frequencies 2.5 are outside")[0].splitlines()[-1]
    described = result.summary["dispersion.gold"]
    assert described["fit"]["max_relative_error"] < 1e-7 and described["fit"]["passive"]
    assert described["fit"]["band"] == pytest.approx([1.0, 2.0])
    assert result.simulation.system.medium.epsilon.max() == pytest.approx(5.9673, rel=1e-6)
    assert "epsilon" not in result.summary["config"]["material"]["gold"]
    tight = dict(data, material={"gold": dict(data["material"]["gold"], fit={"poles": 1, "tolerance": 1e-3})})
    with pytest.raises(InputError, match="above fit.tolerance = 0.001"):
        case_from_dict(tight)


# =================================================================================== bad input
GOOD = """\
[mesh]
elements = [2, 1, 1]
[discretization]
order = 2
[physics]
equations = "maxwell"
[time]
t_end = 0.01
"""


@pytest.mark.parametrize("table, fragments", [
    ('model = "plasma"\npoles = [{plasma_frequency = 1.0, collision_frequency = 0.1}]',
     ["[material.all] model must be one of", "\"drude\""]),
    ('model = "drude"\npoles = [{plasma_frequency = -1.0, collision_frequency = 0.1}]',
     ["[material.all] poles[0].plasma_frequency must be a number from 1e-30 to 1e+30"]),
    ('model = "lorentz"\npoles = [{resonance_frequency = 1.0, delta_epsilon = 1.0}]',
     ["poles[0] (lorentz) lacks damping_frequency"]),
    ('poles = [{plasma_frequency = 1.0, collision_frequency = 0.1}]', ["poles[0] has no model"]),
    ('model = "debye"\npoles = [{delta_epsilon = 1.0, relaxation_tme = 0.1}]', ["did you mean 'relaxation_time'"]),
    ('model = "drude"', ["model needs poles"]),
    ('data = "missing.csv"\nwavelength_unit = 0.001\nfit = {poles = 2}', ["no such file", "missing.csv"]),
    ('data = "bad.csv"\nwavelength_unit = 0.001\nfit = {poles = 1}', ["bad.csv line 3", "expected three numbers"]),
    ('data = "bad.csv"', ["wavelength_unit is required"]),
    ('data = "bad.csv"\nwavelength_unit = 0.001', ["fit is required"]),
    ('data = "bad.csv"\nwavelength_unit = 0.001\nfit = {poles = 0}', ["fit.poles must be"]),
])
def test_bad_dispersion_is_one_line_exit_2(table, fragments, tmp_path, capsys):
    (tmp_path / "bad.csv").write_text("wavelength,n,k\n500,1.0,2.0\n510,1.1,abc\n")
    case = tmp_path / "case.toml"
    case.write_text(GOOD + "[material.all]\n" + table + "\n")
    code = cli.main(["run", str(case), "--output", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("lobatto: error: ") and "case.toml" in lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def test_bad_dispersion_through_the_command_line(tmp_path):
    """The same, as a separate process (what a user runs)."""
    case = tmp_path / "case.toml"
    case.write_text(GOOD + '[material.all]\nmodel = "drude"\npoles = [{plasma_frequency = 0, collision_frequency = 1}]\n')
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run([sys.executable, "-m", "lobatto", "run", str(case), "--output", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=120)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "[material.all] poles[0].plasma_frequency must be a number from 1e-30 to 1e+30" in lines[0]


def test_a_later_table_with_epsilon_takes_the_poles_away():
    """A dielectric hole listed after a Drude block has no poles (the poles are part of the
    permittivity: the last table giving epsilon wins, as Meep's last object); a later table
    with only sigma keeps them."""
    from lobatto.api import case_from_dict
    from lobatto.backends import get_backend
    from lobatto.runner.build import build_system

    def poles_at(hole):
        case = case_from_dict({
            "mesh": {"elements": [4, 1, 1], "upper": [1.0, 0.25, 0.25], "periodic": [False, True, True]},
            "discretization": {"order": 2}, "physics": {"equations": "maxwell"}, "time": {"t_end": 0.01},
            "material": {"block": {"where": "1", "epsilon": 2.0, "model": "drude",
                                   "poles": [{"plasma_frequency": 1.0, "collision_frequency": 0.1}]},
                         "hole": dict(hole, where="(x - 0.5)*(0.75 - x)", sampling="element")},
            "output": {"formats": []}})
        system = build_system(case, get_backend("cpu"))
        (term,) = [t for t in system.terms if t.name == "dispersion.block"]
        return set(int(e) for e in term.elements)

    assert poles_at({"epsilon": 1.0}) == {0, 1, 3}  # element 2 is the hole: no Drude current there
    assert poles_at({"sigma": 0.5}) == {0, 1, 2, 3}
