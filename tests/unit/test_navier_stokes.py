"""Incompressible Navier–Stokes (docs/navier-stokes.md) against exact solutions, on the CPU.

Ethier–Steinman (Beltrami) flow, a = pi/4, d = pi/2, nu = 1: spectral convergence in N and
temporal orders 1, 2, 3 of BDF1-3; Kovasznay flow at Re = 40 against Nek5000's errors;
plane Poiseuille flow held by the constant-flow-rate driving (the driving gradient must come
out as 2 nu); the kinetic-energy budget of a Taylor–Green vortex (-dE/dt = 2 nu enstrophy);
restart equal to the uninterrupted run; the solver keys' errors and a solve that does not
converge.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.errors import InputError, SolverError

A, D = "pi/4", "pi/2"
DECAY = "exp(-pi**2/4*t)"
BELTRAMI = {
    "ux": f"-{A}*(exp({A}*x)*sin({A}*y + {D}*z) + exp({A}*z)*cos({A}*x + {D}*y))*{DECAY}",
    "uy": f"-{A}*(exp({A}*y)*sin({A}*z + {D}*x) + exp({A}*x)*cos({A}*y + {D}*z))*{DECAY}",
    "uz": f"-{A}*(exp({A}*z)*sin({A}*x + {D}*y) + exp({A}*y)*cos({A}*z + {D}*x))*{DECAY}",
    "p": "-pi**2/32*(exp(pi/2*x) + exp(pi/2*y) + exp(pi/2*z) + 2*sin(pi/4*x + pi/2*y)*cos(pi/4*z + pi/2*x)"
         "*exp(pi/4*(y + z)) + 2*sin(pi/4*y + pi/2*z)*cos(pi/4*x + pi/2*y)*exp(pi/4*(z + x)) + 2*sin(pi/4*z + "
         "pi/2*x)*cos(pi/4*y + pi/2*z)*exp(pi/4*(x + y)))*exp(-pi**2/2*t)",
}
SIDES = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")


def beltrami_case(order=5, elements=2, dt=2e-3, t_end=0.01, integrator="bdf2", **more):
    velocity = {c: BELTRAMI[c] for c in ("ux", "uy", "uz")}
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 1.0, **more.pop("physics", {})},
        "mesh": {"elements": [elements] * 3, "lower": [-1.0] * 3, "upper": [1.0] * 3},
        "discretization": {"order": order},
        "time": {"integrator": integrator, "dt": dt, "t_end": t_end},
        "solver": {"pressure": {"tolerance": 1e-12}, "velocity": {"tolerance": 1e-13}},
        "boundary": {side: dict(velocity) for side in SIDES},
        "initial": dict(BELTRAMI), "exact": dict(BELTRAMI),
        "output": {"formats": []}, **more,
    }, name="beltrami")


def tgv_case(order=5, elements=3, nu=0.01, dt=0.01, t_end=0.05, **physics):
    two_pi = 2 * math.pi
    return case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": nu, **physics},
        "mesh": {"elements": [elements] * 3, "upper": [two_pi] * 3, "periodic": [True] * 3,
                 "deform": {"x": "0.1*sin(x)*sin(y)*sin(z)"}},
        "discretization": {"order": order},
        "time": {"integrator": "bdf2", "dt": dt, "t_end": t_end},
        "initial": {"ux": "sin(x)*cos(y)*cos(z)", "uy": "-cos(x)*sin(y)*cos(z)",
                    "p": "(cos(2*x) + cos(2*y))*(cos(2*z) + 2)/16"},
        "output": {"formats": []},
    }, name="tgv")


def errors(case, tmp_path):
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    sim.run()
    e = sim.errors()
    return math.sqrt(sum(e[c]["l2"] ** 2 for c in ("ux", "uy", "uz"))), e["p"]["l2"], sim


def test_beltrami_converges_spectrally_in_n(tmp_path):
    """BDF3 with dt = 1e-4 (time error far below the space error) on 2^3 elements. Measured:
    velocity L2 1.9e-3, 1.2e-6, 5.3e-9, 5.8e-11 and pressure 1.0, 6.8e-4, 8.1e-7, 4.3e-9
    at N = 3, 5, 7, 9."""
    velocity, pressure = [], []
    for order in (3, 5, 7, 9):
        u, p, _ = errors(beltrami_case(order=order, dt=1e-4, t_end=4e-4, integrator="bdf3"), tmp_path / str(order))
        velocity.append(u)
        pressure.append(p)
    # each step of 2 in N gains two orders of magnitude or more
    assert all(b < a / 90 for a, b in zip(velocity, velocity[1:])), velocity
    assert all(b < a / 150 for a, b in zip(pressure, pressure[1:])), pressure
    assert velocity[-1] < 1e-10 and pressure[-1] < 1e-8


@pytest.mark.parametrize("integrator,order,steps", [("bdf1", 1, (1e-3, 5e-4, 2.5e-4)),
                                                    ("bdf2", 2, (4e-3, 2e-3, 1e-3)), ("bdf3", 3, (2e-3, 1e-3, 5e-4))])
def test_beltrami_temporal_order(integrator, order, steps, tmp_path):
    # BDF1's errors are large enough for N = 7: 9.2657e-5, 4.4309e-5, 2.1834e-5 (slopes 1.064,
    # 1.021), N = 9 gives 9.2656e-5, 4.4308e-5, 2.1836e-5 (1.064, 1.021)
    found = []
    for dt in steps:
        u, _, _ = errors(beltrami_case(order={1: 7, 2: 9, 3: 10}[order], dt=dt, t_end=0.02, integrator=integrator),
                         tmp_path / str(dt))
        found.append(u)
    slopes = [math.log2(a / b) for a, b in zip(found, found[1:])]
    assert all(abs(s - order) <= 0.3 for s in slopes), (found, slopes)


KOVASZNAY_LAMBDA = "(20 - sqrt(400 + 4*pi**2))"
KOVASZNAY = {"ux": f"1 - exp({KOVASZNAY_LAMBDA}*x)*cos(2*pi*y)",
             "uy": f"{KOVASZNAY_LAMBDA}/(2*pi)*exp({KOVASZNAY_LAMBDA}*x)*sin(2*pi*y)",
             "p": f"0.5*(1 - exp(2*{KOVASZNAY_LAMBDA}*x))"}


def test_kovasznay_against_nek5000(tmp_path):
    """Re = 40, N = 7 on 2 x 4 elements (one periodic layer in z): the steady discrete
    solution's velocity L2 error within 2x of Nek5000's 1.3e-6 (examples/kovasznay.toml,
    which starts from rest, reaches 1.85e-6 at t = 10). Here the run starts from the exact
    solution and relaxes to the discrete steady state."""
    velocity = {c: KOVASZNAY[c] for c in ("ux", "uy")}
    case = case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.025},
        "mesh": {"elements": [2, 4, 1], "lower": [-0.5, -0.5, 0.0], "upper": [1.0, 1.5, 1.0],
                 "periodic": [False, False, True]},
        "discretization": {"order": 7},
        "time": {"dt": 5e-3, "t_end": 1.5},
        "solver": {"pressure": {"tolerance": 1e-10}, "velocity": {"tolerance": 1e-12}},
        "boundary": {side: dict(velocity) for side in ("xmin", "xmax", "ymin", "ymax")},
        "initial": dict(KOVASZNAY), "exact": dict(KOVASZNAY), "output": {"formats": []},
    }, name="kovasznay")
    u, p, sim = errors(case, tmp_path)
    assert u < 2 * 1.3e-6, u
    assert sim.system.step_report()["velocity_iterations"] <= 3  # steady: the solves start at the answer


def test_poiseuille_held_by_the_flow_rate(tmp_path):
    """u = 1 - y^2 between walls y = +-1 has mean 2/3 and needs -dp/dx = 2 nu."""
    nu = 0.05
    case = case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": nu, "flow_rate": 2.0 / 3.0},
        "mesh": {"elements": [2, 3, 1], "lower": [0.0, -1.0, 0.0], "upper": [2.0, 1.0, 1.0],
                 "periodic": [True, False, True], "boundary": "wall"},
        "discretization": {"order": 4},
        "time": {"dt": 0.05, "t_end": 100.0},
        "initial": {"ux": "0.9*(1 - y**2) + 0.05*sin(pi*x)*(1 - y**2)"},
        "exact": {"ux": "1 - y**2"},
        "output": {"formats": []},
    }, name="poiseuille")
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    sim.advance(1)
    assert abs(sim.system.flow_rate.mean(sim.u[:3]) - 2.0 / 3.0) < 1e-12  # on target from the first step
    # t = 20: the disturbance is gone; measured at t = 20 (40): |ux - exact| 3.5e-10 (2.9e-10),
    # uy 3.2e-11 (3.2e-11), gradient - 2 nu 3.8e-11 (2.7e-11)
    sim.advance(400)
    assert abs(sim.system.flow_rate.mean(sim.u[:3]) - 2.0 / 3.0) < 1e-12
    assert abs(sim.system.flow_rate.gradient - 2 * nu) < 1e-8
    errs = sim.errors()
    assert errs["ux"]["max"] < 1e-8 and errs["uy"]["max"] < 1e-8


def test_the_flow_rate_response_is_not_counted_in_the_iterations_per_step(tmp_path):
    """The response to the driving force is solved at the first step and whenever bdf_0/dt
    changes (here: BDF1 then BDF2); the per-step averages are those of the step lines, as
    without a flow rate (they counted the response's solves too: twice the lines' mean)."""
    case = case_from_dict({
        "physics": {"equations": "navier_stokes", "viscosity": 0.05, "flow_rate": 2.0 / 3.0},
        "mesh": {"elements": [2, 2, 1], "lower": [0.0, -1.0, 0.0], "upper": [2.0, 1.0, 1.0],
                 "periodic": [True, False, True], "boundary": "wall"},
        "discretization": {"order": 3}, "time": {"dt": 0.05, "t_end": 0.15},
        "initial": {"ux": "0.9*(1 - y**2) + 0.05*sin(pi*x)*(1 - y**2)"}, "output": {"formats": []},
    }, name="poiseuille")
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    lines = []
    for _ in range(3):
        sim.advance(1)
        lines.append(sim.system.step_report())
    per_step = sim.system.summary()["iterations_per_step"]
    assert per_step["pressure"] == pytest.approx(np.mean([r["pressure_iterations"] for r in lines]))
    assert per_step["velocity"] == pytest.approx(np.mean([r["velocity_iterations"] for r in lines]))


@pytest.mark.parametrize("pressure, words", [
    ({"levels": [2, 1]}, '[solver.pressure] levels = [2, 1] must start at the [discretization] order 3'),
    ({"method": "cg", "precision": "float32"}, '[solver.pressure] method = "cg" needs a fixed preconditioner'),
    ({"method": "cg", "coarse": "pcg"}, '([solver.pressure] coarse = "pcg"'),
    ({"levels": [3], "coarse": "cholesky"}, '[solver.pressure] coarse = "cholesky": the coarse level has 3375'),
])
def test_pressure_solver_errors_name_the_pressure_table(tmp_path, pressure, words):
    """The elliptic solver's messages name [solver.pressure], not the Poisson system's [solver]."""
    case = tgv_case(order=3, elements=5, nu=0.05, dt=0.01, t_end=0.01)
    data = case.to_dict()
    data["solver"] = {"pressure": pressure}
    with pytest.raises(InputError) as error:
        Simulation(case_from_dict(data, "tgv"), backend="cpu", output_dir=tmp_path, comm=None)
    assert words in str(error.value)


def test_a_float32_solve_that_stalls_says_what_float32_reaches(tmp_path):
    """The default pressure tolerance 1e-8 is below a float32 backend's round-off: the solve
    stalls or breaks down at step 1, and the message says so (it read as a bad preconditioner)."""
    data = tgv_case(order=3, elements=2, nu=0.01, dt=0.05, t_end=0.1).to_dict()
    data["backend"] = {"precision": "float32"}
    data["mesh"].pop("deform")  # float32 refuses the deformation's near-zero metric terms
    with pytest.raises(SolverError, match=r"with \[backend\] precision = \"float32\" a \[solver.pressure\] tolerance "
                       r"below about 1e-5 is not reached"):
        Simulation(case_from_dict(data, "tgv"), backend="cpu", output_dir=tmp_path, comm=None).advance(2)


def test_taylor_green_energy_budget(tmp_path):
    """-dE/dt equals the dissipation 2 nu enstrophy in a periodic box (to the time error)."""
    case = tgv_case(order=6, elements=3, nu=0.05, dt=2e-3, t_end=0.1)
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    records = []
    for _ in range(50):
        sim.advance(1)
        records.append((sim.t, sim.system.step_report()))
    t = np.array([r[0] for r in records])
    energy = np.array([r[1]["kinetic_energy"] for r in records])
    dissipation = np.array([r[1]["dissipation"] for r in records])
    rate = -np.gradient(energy, t)
    inner = slice(2, -2)
    assert np.abs(rate[inner] / dissipation[inner] - 1).max() < 2e-3
    assert records[-1][1]["divergence"] < 1e-2
    assert 0.125 * 0.9 < energy[-1] < 0.125  # decays from E(0) = 1/8


def test_restart_equals_uninterrupted(tmp_path):
    whole = Simulation(beltrami_case(integrator="bdf3", t_end=0.012), backend="cpu", output_dir=tmp_path / "a",
                       comm=None)
    whole.advance(6)
    first = Simulation(beltrami_case(integrator="bdf3", t_end=0.012), backend="cpu", output_dir=tmp_path / "b",
                       comm=None)
    first.advance(3)
    path = first.checkpoint()
    second = Simulation(beltrami_case(integrator="bdf3", t_end=0.012), backend="cpu", output_dir=tmp_path / "c",
                        comm=None)
    second.restart(path)
    second.advance(3)
    for name, values in whole.fields().items():
        assert np.array_equal(values, second.fields()[name]), name


def test_bad_solver_keys_are_refused():
    base = {"physics": {"equations": "navier_stokes"}, "mesh": {"elements": [2, 2, 2]},
            "time": {"dt": 0.1, "t_end": 1.0}}
    with pytest.raises(InputError, match=r"solver\.pressure.*tolerance"):
        case_from_dict({**base, "solver": {"pressure": {"tolerance": -1.0}}}, name="bad")
    with pytest.raises(InputError, match="toleranse"):
        case_from_dict({**base, "solver": {"velocity": {"toleranse": 1e-8}}}, name="bad")
    with pytest.raises(InputError, match="integrator"):
        case_from_dict({**base, "time": {"dt": 0.1, "t_end": 1.0, "integrator": "lsrk45"}}, name="bad")


def test_a_pressure_solve_that_does_not_converge_stops_the_run(tmp_path):
    case = beltrami_case()
    case = case_from_dict({**case.to_dict(), "solver": {"pressure": {"max_iterations": 1, "tolerance": 1e-14}}},
                          name="beltrami")
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    with pytest.raises(SolverError, match=r"pressure solve of step 1 \(t = 0\.002\) did not converge"):
        sim.advance(1)


def test_boundaries_by_named_groups_of_a_gmsh_mesh(tmp_path):
    """A duct on the gmsh-written unit cube (groups xmin ... zmax): inflow on xmin, outflow on
    xmax, walls elsewhere, by group name; the same run on the box generator's identical mesh
    gives the same kinetic energy, enstrophy and divergence to round-off."""
    from pathlib import Path

    msh = Path(__file__).resolve().parents[1] / "data" / "meshes" / "box_msh41.msh"
    common = {
        "physics": {"equations": "navier_stokes", "viscosity": 0.05},
        "discretization": {"order": 4},
        "time": {"dt": 0.02, "t_end": 0.1},
        "boundary": {"xmin": {"ux": "16*y*(1 - y)*z*(1 - z)*(1 - exp(-20*t))"}},
        "output": {"formats": []},
    }
    runs = {}
    for name, mesh in (("gmsh", {"generator": "gmsh", "file": str(msh), "boundaries": {"xmax": "outflow"}}),
                       ("box", {"elements": [3, 2, 2], "boundaries": {"xmax": "outflow"}})):
        sim = Simulation(case_from_dict({**common, "mesh": mesh}, name=name), backend="cpu",
                         output_dir=tmp_path / name, comm=None)
        sim.advance(5)
        assert not sim.system.null_space  # the outflow group fixes the pressure
        runs[name] = sim.system.step_report()
    for key in ("kinetic_energy", "enstrophy", "divergence"):
        assert runs["gmsh"][key] == pytest.approx(runs["box"][key], rel=1e-9), key
    assert runs["gmsh"]["kinetic_energy"] > 1e-3  # the inflow filled the duct
