"""Navier–Stokes on the CUDA backend equals the CPU backend (docs/navier-stokes.md): the
whole step (dealiased advection, pressure with multigrid and projection, velocity) on a
curved periodic box with a filter, and on the Ethier–Steinman case with time-dependent
boundary data and a pressure null space. Skipped, with the reason, without CuPy and a GPU."""

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
