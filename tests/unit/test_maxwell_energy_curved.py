"""The discrete energy on curved elements: the volume curl's split form.

With no sources and lossless media the semi-discrete operator L satisfies, in the energy
inner product B(u, v) = sum M (eps E_u . E_v + mu H_u . H_v), B(u, L u) = 0 with the central
flux (the operator is skew) and B(u, L u) <= 0 with the upwind flux, on any mesh. The
chain-rule curl alone breaks this on curved elements (aliasing): with the central flux its
relative rate B / (2 sqrt(E(u) E(Lu))) was 6e-3, 1.5e-3 and 5e-4 at N = 2, 3, 5 on the deformed
box below and 1.9e-3 on the gmsh ball, and upwind random data grew x1810 in 12 time units
at N = 5; the split form keeps the rate at round-off (tensor.split_curl). These checks need no time stepping:
B comes from the system's own energy by polarisation, E(u + L) - E(u - L) = 2 B(u, L u).

Also the time-stepped energy: a deformed box from random data, upwind, never grows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict

ROOT = Path(__file__).resolve().parents[2]
DEFORM = {"x": "0.15*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.12*sin(pi*x)*sin(pi*y)*sin(pi*z)",
          "z": "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"}
BALL = {"ball": {"where": "0.09 - (x-0.5)**2 - (y-0.5)**2 - (z-0.5)**2", "epsilon": 3.0, "mu": 1.5}}


def simulation(tmp_path, mesh, order, flux, material=None, backend="cpu"):
    # the split form named: "auto" (the default) runs the Galerkin form on these curved meshes
    data = {"mesh": mesh, "discretization": {"order": order, "flux": flux, "volume_form": "split"},
            "physics": {"equations": "maxwell"},
            "time": {"t_end": 1.0, "cfl": 0.4}, "output": {"formats": []}}
    if material:
        data["material"] = material
    sim = Simulation(case_from_dict(data, name="energy"), backend=backend, output_dir=str(tmp_path), comm=None)
    sim.close()  # only its system is used: the next one may take the directory (one live run per directory)
    return sim


def energy_rate(sim, rng):
    """B(u, L u) / (2 sqrt(E(u) E(L u))): the relative rate of change of the energy."""
    system, xp = sim.system, sim.backend.xp
    u = sim.backend.asarray(rng.standard_normal(sim.u.shape))
    du = system.rhs(u, 0.0, xp.empty_like(u))
    rate = 0.5 * (system.energy(u + du) - system.energy(u - du))
    return rate / (2 * np.sqrt(system.energy(u) * system.energy(du)))


MESHES = {
    "deformed box": {"elements": [3, 3, 3], "boundary": "pec", "deform": DEFORM},
    "deformed periodic box": {"elements": [3, 2, 2], "periodic": [True, True, True],
                              "deform": {"x": "0.1*sin(2*pi*y)*sin(2*pi*z)", "y": "0.08*sin(2*pi*x)*sin(2*pi*z)",
                                         "z": "0.06*sin(2*pi*x)*sin(2*pi*y)"}},
}


@pytest.mark.parametrize("mesh", sorted(MESHES))
@pytest.mark.parametrize("order", [2, 3, 5])
def test_central_flux_conserves_and_upwind_dissipates(tmp_path, mesh, order):
    rng = np.random.default_rng()
    central = energy_rate(simulation(tmp_path, MESHES[mesh], order, "central"), rng)
    upwind = energy_rate(simulation(tmp_path, MESHES[mesh], order, "upwind"), rng)
    assert abs(central) < 1e-12, central
    assert upwind < 1e-12, upwind
    assert upwind < -1e-3  # random data has jumps: upwind takes energy out


@pytest.mark.parametrize("order", [3, 4])
def test_medium_per_point_on_curved_elements(tmp_path, order):
    """A ball of eps = 3, mu = 1.5 given per point (HeterogeneousMedium) on the deformed box."""
    rng = np.random.default_rng()
    sim = simulation(tmp_path, MESHES["deformed box"], order, "central", BALL)
    assert sim.system.medium is not None
    assert abs(energy_rate(sim, rng)) < 1e-12
    assert energy_rate(simulation(tmp_path, MESHES["deformed box"], order, "upwind", BALL), rng) < 1e-12


def test_gmsh_curved_mesh(tmp_path):
    pytest.importorskip("gmsh")
    mesh = {"generator": "gmsh", "file": str(ROOT / "examples" / "meshes" / "sphere_in_box.msh"), "boundary": "pec"}
    rng = np.random.default_rng()
    assert abs(energy_rate(simulation(tmp_path, mesh, 3, "central"), rng)) < 1e-12
    assert energy_rate(simulation(tmp_path, mesh, 3, "upwind"), rng) < 1e-12


def check_upwind_energy_never_grows(tmp_path, backend="cpu"):
    """Random data on the deformed box at N = 5 for 12 time units: the energy decreases at
    every step (under the chain-rule curl it grew x1810)."""
    sim = simulation(tmp_path, MESHES["deformed box"], 5, "upwind", backend=backend)
    sim.u[...] = sim.backend.asarray(np.random.default_rng().standard_normal(sim.u.shape))
    energies = [sim.system.energy(sim.u)]
    for n in range(int(round(12.0 / sim.dt))):
        sim.stepper.step(sim.u, n * sim.dt, sim.dt)
        energies.append(sim.system.energy(sim.u))
    assert np.all(np.diff(energies) <= 1e-13 * energies[0])
    assert energies[-1] < 0.5 * energies[0]


def test_upwind_energy_never_grows_in_time(tmp_path):
    check_upwind_energy_never_grows(tmp_path)


@pytest.mark.parametrize("order", [3, 6])
def test_uniform_field_stays_uniform(tmp_path, order):
    """Free-stream preservation: a uniform field in the deformed periodic box has L(u) = 0 to
    round-off. The split curl's conservative half needs the discrete metric identities for it,
    which the curl-form metrics of curved elements meet exactly (mesh/geometry.py)."""
    sim = simulation(tmp_path, MESHES["deformed periodic box"], order, "upwind")
    assert not sim.system.geometry.affine.any()
    values = np.random.default_rng().uniform(-1.0, 1.0, 6)
    u = np.broadcast_to(values[:, None, None, None, None], sim.u.shape).copy()
    du = sim.system.rhs(u, 0.0, np.empty_like(u))
    assert np.abs(du).max() < 1e-11 * np.abs(values).max() * order**2


def test_chain_rule_option(tmp_path):
    """[discretization] volume_form = "chain": the chain rule alone, which gains energy on
    curved elements (the central flux's rate is not zero), and the effective configuration
    records the choice."""
    rng = np.random.default_rng()
    data = {"mesh": MESHES["deformed box"], "discretization": {"order": 3, "flux": "central", "volume_form": "chain"},
            "physics": {"equations": "maxwell"}, "time": {"t_end": 1.0, "cfl": 0.4}, "output": {"formats": []}}
    case = case_from_dict(data, name="chain")
    assert case.to_dict()["discretization"]["volume_form"] == "chain"
    sim = Simulation(case, backend="cpu", output_dir=str(tmp_path), comm=None)
    assert abs(energy_rate(sim, rng)) > 1e-5
