"""Navier–Stokes on the CUDA backend equals the CPU backend (docs/navier-stokes.md): the
whole step (dealiased advection, pressure with multigrid and projection, velocity) on a
curved periodic box with a filter, and on the Ethier–Steinman case with time-dependent
boundary data and a pressure null space; and a sub-stepped run ([time] substeps). Skipped,
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
from test_navier_stokes_scalars import EXAMPLE  # noqa: E402


def channel_case():
    """examples/channel.toml (walls, constant flow rate, a scalar with hot and cold walls)."""
    from lobatto.api import load_case, with_changes

    return with_changes(load_case(EXAMPLE), {"output.formats": []})


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
