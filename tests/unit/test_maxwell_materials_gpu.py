"""Maxwell in heterogeneous media on the CUDA backend equals the CPU backend (the reference
kernel maxwell_rhs_materials on CuPy, stage by stage; no fused whole step): point and element
materials and a conductivity, lsrk45 and rk4. Skipped, with the reason, without CuPy and a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.api import Simulation, case_from_dict  # noqa: E402

MATERIALS = {
    "fast": {"where": "0.3 - x", "epsilon": 1.0, "sampling": "element"},
    "lens": {"where": "0.04 - (x-0.6)**2 - (y-0.5)**2 - (z-0.5)**2", "epsilon": "3 + x*y", "mu": 1.5},
    "lossy": {"where": "y - 0.5", "sigma": "2*z"},
}


@pytest.mark.parametrize("integrator", ["lsrk45", "rk4"])
def test_cuda_equals_cpu_with_materials(integrator, tmp_path):
    results = {}
    for backend in ("cpu", "cuda"):
        case = case_from_dict({
            "mesh": {"elements": [4, 3, 2], "boundary": "pec", "boundaries": {"xmax": "absorbing"},
                     "deform": {"x": "0.02*sin(4*pi*x)*sin(pi*y)*sin(pi*z)"}},
            "discretization": {"order": 5}, "physics": {"equations": "maxwell", "epsilon": 2.0},
            "initial": {"Ey": "exp(-20*((x-0.5)**2 + (z-0.5)**2))", "Hz": "sin(pi*y)*exp(-20*(x-0.4)**2)"},
            "time": {"t_end": 0.3, "integrator": integrator}, "output": {"formats": []}, "material": MATERIALS})
        sim = Simulation(case, backend=backend, output_dir=tmp_path / backend, comm=None)
        assert sim.system.medium is not None and sim.system.whole_step(sim.stepper) is None
        sim.advance(8)
        results[backend] = sim.fields()
    cpu, cuda = results["cpu"], results["cuda"]
    scale = max(float(np.abs(cpu[name]).max()) for name in cpu)
    assert scale > 1e-2
    for name in cpu:
        assert np.abs(cuda[name] - cpu[name]).max() <= 1e-12 * scale, name
