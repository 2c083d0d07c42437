"""Dispersive poles inside the PML (dispersive.py's stretch_with, pml.py's hand_over_stretch):
the layer's medium is the stretched dispersive one, i omega eps(omega) Lambda E = curl H, at
every layer point (the transfer function of the local rates); a Drude and a Lorentz medium
filling a box lined with the layer stay bounded over 20 crossing times, where the former
drive by E (not stretched) grows by orders of magnitude within 3; a pulse leaving a Drude
half-space through the layer reflects far less than through Silver-Mueller, measured against a
run on a larger domain; a restart continues bitwise. benchmarks/drude_pml_stability.py runs
1,000 crossing times."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.backends import get_backend
from lobatto.mesh import box_mesh
from lobatto.systems.maxwell.dispersion_fit import Pole, permittivity
from lobatto.systems.maxwell.dispersion_tables import Dispersion
from lobatto.systems.maxwell.dispersive import DispersiveTerm
from lobatto.systems.maxwell.pml import PerfectlyMatchedLayer, PmlSpec, layer_profile
from lobatto.systems.maxwell.system import MaxwellSystem

DRUDE = {"model": "drude", "plasma_frequency": 1.0, "collision_frequency": 0.05}
LORENTZ = {"model": "lorentz", "resonance_frequency": 1.0, "delta_epsilon": 1.5, "damping_frequency": 0.1}
H = 0.25


def test_the_layer_point_is_the_stretched_dispersive_medium():
    """At each layer point the rates of the layer and the poles together are a linear map
    x' = M x + (g, 0) of x = (E, H, q, poles' fields), g the core operator's rate (curl H /
    eps_inf, -curl E / mu). Its transfer function from g_c to E_c must be
    eps_inf / (i omega Lambda_c eps(omega)), and to H_c 1 / (i omega Lambda_c)."""
    system = MaxwellSystem(box_mesh((4, 4, 4), upper=(1.0, 1.2, 0.9)), 1, get_backend("cpu"))
    elements, sigma, described, alpha = layer_profile(
        system, PmlSpec(("xmin", "ymax", "zmin", "zmax"), 1, None, 3.0, 1e-4, None, 0.7))
    layer = PerfectlyMatchedLayer(system, elements, sigma, alpha, described)
    layer.compiled = None  # the array code (the compiled kernels equal it: test_maxwell_terms_cpu.py)
    poles = (Pole("drude", DRUDE), Pole("lorentz", LORENTZ), Pole("debye", {"delta_epsilon": 0.8,
                                                                         "relaxation_time": 0.3}))
    eps_inf = 1.7
    term = DispersiveTerm(system, np.arange(system.num_elements), Dispersion(poles), None, eps_inf, "test")
    term.compiled = None
    term.stretch_with(layer)
    assert term.stretch is not None and layer.stretched == [term]
    size = 6 + 18 + term.aux_count
    u = system.allocate_state()
    columns = []
    for j in range(size):
        u[...], layer.aux[...], term.aux[...] = 0.0, 0.0, 0.0
        (u if j < 6 else layer.aux if j < 24 else term.aux)[j if j < 6 else j - 6 if j < 24 else j - 24] = 1.0
        layer.hand_over_stretch()
        s, r = np.zeros_like(layer.rate), np.zeros_like(layer.aux)
        layer.rates(u, 0.0, s, r)
        sd, rd = np.zeros_like(term.rate), np.zeros_like(term.aux)
        term.rates(u, 0.0, sd, rd)
        s += sd[:, elements]
        columns.append(np.concatenate([s, r, rd[:, elements]]))
    matrices = np.moveaxis(np.stack(columns, axis=1).reshape(size, size, -1), 2, 0)
    flat = sigma.reshape(3, -1)
    nonzero = (flat > 0).sum(axis=0)
    picks = [int(np.argmax(np.where(nonzero == 3, np.ptp(flat, axis=0), -1))), int(np.argmax(nonzero == 2)),
             int(np.argmax(nonzero == 1))]
    assert nonzero[picks].tolist() == [3, 2, 1]
    for p in picks:
        for w in (0.3, 2.0, 6.3, 40.0):
            sx, sy, sz = 1 + flat[:, p] / (0.7 + 1j * w)
            lam = np.array([sy * sz / sx, sx * sz / sy, sx * sy / sz])
            eps = permittivity(eps_inf, poles, w)
            transfer = np.linalg.inv(1j * w * np.eye(size) - matrices[p])[:6, :6]
            expected = np.diag(np.concatenate([eps_inf / (1j * w * lam * eps), 1 / (1j * w * lam)]))
            assert np.max(np.abs(transfer - expected)) < 1e-9 * np.max(np.abs(expected)), (p, w)


def filled_box(pole, stretched=True, order=2, growth_check=True):
    """6 x 1 x 1 elements (y, z periodic), two layer elements at xmin and xmax, the medium
    everywhere, random E and H at every point. growth_check = False: the run's growth guard
    (runner/growth_guard.py) off, for the former formulation's growth to be watched here."""
    case = case_from_dict({
        "mesh": {"elements": [6, 1, 1], "upper": [1.5, H, H], "periodic": [False, True, True], "boundary": "pec"},
        "discretization": {"order": order}, "physics": {"equations": "maxwell"},
        "time": {"t_end": 100.0, "growth_check": growth_check},
        "pml": {"sides": ["xmin", "xmax"], "elements": 2},
        "material": {"m": {"where": "1", "sampling": "element", "epsilon": 1.0, "poles": [pole]}},
        "output": {"formats": []}}, name="filled")
    return case


@pytest.mark.parametrize("pole", [DRUDE, LORENTZ], ids=["drude", "lorentz"])
def test_a_dispersive_medium_in_the_layer_stays_bounded(pole, tmp_path):
    """Random E, H in the interior, 20 crossing times of the 1.5 wide box (about 1,200 steps):
    the energy (fields and the poles' W_p) never exceeds its start and does not grow over the
    second half (what stays, 0.12 and 0.14 of the start, is the static part of the random
    field); with the poles driven by E instead of Lambda E it grows past 1e3 times its start
    within 8 crossings."""
    def start(sim):
        sim.u[...] = np.random.default_rng(3).standard_normal(sim.u.shape)
        sim.u[:, sim.system.terms[0].elements] = 0  # (terms[0]: the layer)
        return sim.system.energy(sim.u)

    sim = Simulation(filled_box(pole), backend="cpu", output_dir=tmp_path / "a", comm=None)
    assert all(t.stretch is not None for t in sim.system.terms if t.name.startswith("dispersion."))
    energy0 = start(sim)
    steps = round(20 * 1.5 / sim.dt)
    energies = []
    for _ in range(40):
        sim.advance(steps // 40)
        energies.append(sim.system.energy(sim.u) / energy0)
    energies = np.array(energies)
    assert np.all(np.isfinite(energies)) and energies.max() < 1.0
    assert np.mean(energies[30:]) <= np.mean(energies[20:30]) * 1.01 and energies[-1] > 0.05
    old = Simulation(filled_box(pole, growth_check=False), backend="cpu", output_dir=tmp_path / "b", comm=None)
    for term in old.system.terms:  # the former formulation
        term.stretch = None
        if hasattr(term, "stretched"):
            term.stretched.clear()
    energy0 = start(old)
    for _ in range(40):  # (stopped once past 1e3: an overflow to inf would only cost time)
        old.advance(round(0.2 * 1.5 / old.dt))
        if old.system.energy(old.u) > 1e3 * energy0:
            break
    assert old.system.energy(old.u) > 1e3 * energy0


def half_space(length, pml, dt=None, order=3, t_end=3.0):
    pulse = "exp(-((x-0.4)/0.1)**2)"
    data = {"mesh": {"elements": [round(length / H), 1, 1], "upper": [length, H, H], "periodic": [False, True, True],
                     "boundary": "absorbing"},
            "discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "initial": {"Ey": pulse, "Hz": pulse},
            "time": {"t_end": t_end} if dt is None else {"t_end": t_end, "dt": dt},
            "material": {"m": {"where": "x - 0.75", "sampling": "element", "poles": [DRUDE]}},
            "output": {"formats": []}}
    if pml:
        data["pml"] = {"sides": ["xmax"], "elements": 2}
    return case_from_dict(data, name="half")


def test_a_pulse_leaves_a_drude_half_space_through_the_layer(tmp_path):
    """A plane pulse from vacuum into a Drude half-space (x > 0.75) whose interior [0, 1.5]
    ends in the layer (2 elements, Silver-Mueller behind): the difference from a run on
    [0, 4] (its far echo returns after t_end) with the same dt, as energy in the interior over
    the pulse's, is below 1e-4 and below 1e-2 times that of Silver-Mueller at x = 1.5
    (measured at N = 3: 1.8e-6, -57.4 dB, and 7.9e-3; benchmarks/drude_pml_stability.py
    runs to t = 4)."""
    layer = Simulation(half_space(2.0, True), backend="cpu", output_dir=tmp_path / "l", comm=None)
    others = [Simulation(half_space(length, False, layer.dt), backend="cpu", output_dir=tmp_path / f"{length}",
                         comm=None) for length in (4.0, 1.5)]
    mass = layer.system.geometry.mass[:6]
    energy = lambda v: 0.5 * float(np.sum(mass * np.sum(v ** 2, axis=0)))  # noqa: E731
    start = energy(layer.u[:, :6])
    worst = [0.0, 0.0]
    for _ in range(round(3.0 / layer.dt)):
        for s in [layer] + others:
            s.advance(1)
        reference = others[0].u[:, :6]
        for k, s in enumerate((layer, others[1])):
            worst[k] = max(worst[k], energy(s.u[:, :6] - reference))
    reflected, silver_mueller = worst[0] / start, worst[1] / start
    print(f"reflected energy: layer {reflected:.3g} ({10 * math.log10(reflected):.1f} dB), Silver-Mueller "
          f"{silver_mueller:.3g}")
    assert reflected < 1e-4 and reflected < 1e-2 * silver_mueller


def test_restart_with_poles_in_the_layer_is_bitwise(tmp_path):
    """The stretch is read from the layer's fields each stage (nothing of it is stored): a run
    continued from a checkpoint equals the uninterrupted one bitwise, poles and layer included."""
    data = filled_box(LORENTZ).to_dict()
    data["time"] = {"t_end": 0.3}
    data["initial"] = {"Ey": "exp(-((x-0.75)/0.15)**2)", "Hz": "exp(-((x-0.75)/0.15)**2)"}
    case = case_from_dict(data, name="run")
    full = Simulation(case, backend="cpu", output_dir=tmp_path / "full", comm=None)
    full.run()
    first = Simulation(case, backend="cpu", output_dir=tmp_path / "part", comm=None)
    first.advance(5)
    path = first.checkpoint()
    first.close()
    rest = Simulation(case, backend="cpu", output_dir=tmp_path / "part", comm=None).restart(path)
    rest.run()
    assert rest.step_count == full.step_count > 5
    assert np.array_equal(rest.u, full.u)
    for got, want in zip(rest.system.terms, full.system.terms):
        assert got.name == want.name and np.array_equal(got.aux, want.aux), got.name
    poles = next(t for t in full.system.terms if t.name.startswith("dispersion."))
    assert np.abs(poles.aux[:, poles._stretch_at[0]]).max() > 1e-4  # the poles in the layer were driven
