"""Navier–Stokes on the CUDA backend equals the CPU backend (docs/navier-stokes.md): the
whole step (dealiased advection, pressure with multigrid and projection, velocity) on a
curved periodic box with a filter, and on the Ethier–Steinman case with time-dependent
boundary data and a pressure null space; buoyancy (a force in the scalars: the Rayleigh–Bénard
roll box, and examples/rbc.toml sub-stepped); and a sub-stepped run ([time] substeps). Skipped,
with the reason, without CuPy and a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from test_navier_stokes import beltrami_case, tgv_case  # noqa: E402
from test_navier_stokes_buoyancy import free_fall_case, rbc_case  # noqa: E402
from test_navier_stokes_scalars import EXAMPLE  # noqa: E402


def channel_case():
    """examples/channel.toml (walls, constant flow rate, a scalar with hot and cold walls)."""
    from lobatto.api import load_case, with_changes

    return with_changes(load_case(EXAMPLE), {"output.formats": []})


def rolls_case():
    """Rayleigh–Bénard rolls at Ra = 5000 growing from a finite perturbation (BDF2, dt fixed)."""
    return rbc_case(5000.0, order=5, dt=2e-3, amplitude=0.2)


def rbc_example():
    """examples/rbc.toml on 3 x 3 x 2 elements, N = 4, sub-stepped at a fixed dt."""
    import tomllib

    data = tomllib.loads((EXAMPLE.parent / "rbc.toml").read_text())
    data["mesh"]["elements"], data["discretization"]["order"] = [3, 3, 2], 4
    data["time"] = {"integrator": "bdf2", "dt": 0.1, "substeps": 2, "t_end": 1.0}
    data["output"] = {"formats": [], "log_every": 0}
    return case_from_dict(data, name="rbc")


@pytest.mark.parametrize("make", [tgv_case, beltrami_case, channel_case], ids=["tgv", "beltrami", "channel"])
def test_cuda_equals_cpu(make, tmp_path):
    results = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(make(), backend=backend, output_dir=tmp_path / backend, comm=None)
        sim.advance(6)
        results[backend] = (sim.fields(), sim.system.step_report())
    cpu, cuda = results["cpu"][0], results["cuda"][0]
    scale = max(float(np.abs(cpu[name]).max()) for name in ("ux", "uy", "uz"))
    for name in cpu:
        assert np.abs(cuda[name] - cpu[name]).max() <= 1e-11 * max(scale, 1.0), name
    assert results["cpu"][1]["pressure_iterations"] == results["cuda"][1]["pressure_iterations"]


def substepped_tgv():
    """The curved periodic TGV box with the filter, two RK4 sub-steps per step at CFL 1.5 (the
    relaxation rides in the sub-steps), BDF3: 4 * 2 * k convective evaluations per step."""
    from test_navier_stokes_substeps import variable

    return variable(tgv_case(filter_modes=1, t_end=1.0), target_cfl=1.5, substeps=2, integrator="bdf3")


def test_cuda_sub_steps_equal_cpu(tmp_path):
    """Sub-stepping ([time] substeps, substeps.py) on CUDA equals the CPU: the fields, the
    steps taken (dt follows the CFL number) and the pressure iterations, after 6 steps."""
    results = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(substepped_tgv(), backend=backend, output_dir=tmp_path / backend, comm=None)
        sim.advance(6)
        results[backend] = (sim.fields(), sim.system.step_report(), sim.t, sim.largest_cfl,
                            sim.system.substepper.evaluations)
    cpu, cuda = results["cpu"], results["cuda"]
    assert cpu[3] > 1.0  # the steps do go beyond what extrapolated advection takes
    assert cpu[4] == cuda[4] > 0
    assert abs(cuda[2] - cpu[2]) <= 1e-12 * cpu[2]
    scale = max(float(np.abs(cpu[0][name]).max()) for name in ("ux", "uy", "uz"))
    for name in cpu[0]:
        assert np.abs(cuda[0][name] - cpu[0][name]).max() <= 1e-10 * max(scale, 1.0), name
    assert cpu[1]["pressure_iterations"] == cuda[1]["pressure_iterations"]


@pytest.mark.parametrize("make", [rolls_case, rbc_example], ids=["rolls", "rbc"])
def test_cuda_buoyancy_equals_cpu(make, tmp_path):
    """The force in the temperature (the force's path through the step, with and without
    sub-steps) on CUDA equals the CPU after 6 steps: each field to 1e-10 of its own largest
    value (the pressure, which balances Ra Pr T, is 1e3 times the velocity), the iterations."""
    results = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(make(), backend=backend, output_dir=tmp_path / backend, comm=None)
        sim.advance(6)
        results[backend] = (sim.fields(), sim.system.step_report())
    cpu, cuda = results["cpu"][0], results["cuda"][0]
    assert np.abs(cpu["uz"]).max() > 1e-2  # the force moves the fluid
    for name in cpu:
        assert np.abs(cuda[name] - cpu[name]).max() <= 1e-10 * max(float(np.abs(cpu[name]).max()), 1.0), name
    for key in ("pressure_iterations", "velocity_iterations", "scalar_iterations"):
        assert results["cpu"][1][key] == results["cuda"][1][key], key


@pytest.mark.parametrize("rolls", [0.0, 1.0])
def test_cuda_first_step_under_buoyancy_equals_cpu(tmp_path, rolls):
    """The first variable step counts the body force's acceleration (force_courant) on the GPU
    as on the CPU: the same dt from rest and from rolls, and the same first step."""
    found = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(free_fall_case(rolls), backend=backend, output_dir=tmp_path / backend, comm=None)
        dt = sim.dt
        sim.advance(1)
        found[backend] = (dt, sim.last_cfl)
    assert found["cuda"][0] == pytest.approx(found["cpu"][0], rel=1e-12) and 0 < found["cpu"][0] < 1.0
    assert found["cuda"][1] == pytest.approx(found["cpu"][1], rel=1e-8)
