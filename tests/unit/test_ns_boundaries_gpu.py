"""The Navier–Stokes boundary kinds symmetry, outflow_normal, traction and the backflow
stabilisation (docs/navier-stokes.md, "Boundary conditions"), and the piecewise expressions
(where, min, max, comparisons), on the CUDA backend equal to the CPU. Skipped, with the
reason, without CuPy and a GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mpi"))

from lobatto.api import Simulation  # noqa: E402
from lobatto.config import compile_expression  # noqa: E402
from test_navier_stokes_boundaries import rotated, run  # noqa: E402,F401
from test_ns_boundaries_ranks import build_case  # noqa: E402


def test_piecewise_expressions_on_cuda_equal_numpy():
    import cupy

    rng = np.random.default_rng()
    x, y = rng.uniform(-1, 1, (2, 7, 9))
    for text in ("where(y < 0.5, 1 - y**2, 0)", "min(max(x, -0.2), 0.6) + (x >= y) - (x != x)",
                 "where(-0.3 < y <= 0.4, sqrt(abs(x)), -x) + ((x > 0) or (y > 0))"):
        e = compile_expression(text)
        for dtype in (np.float64, np.float32):
            want = e.evaluate(np, x=x.astype(dtype), y=y.astype(dtype), z=0.0, t=0.0)
            got = e.evaluate(cupy, x=cupy.asarray(x, dtype=dtype), y=cupy.asarray(y, dtype=dtype), z=0.0, t=0.0)
            assert got.dtype == dtype
            np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-6 if dtype == np.float32 else 1e-15)


@pytest.mark.parametrize("name", ["inflow_on", "traction"])
def test_cuda_equals_cpu(name, tmp_path):
    """The MPI test's cases (symmetry, a tilted symmetry plane, ON, traction, backflow), 4 steps."""
    results = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(build_case(name), backend=backend, output_dir=tmp_path / backend, comm=None)
        sim.advance(4)
        results[backend] = (sim.fields(), sim.system.step_report())
    cpu, cuda = results["cpu"][0], results["cuda"][0]
    scale = max(float(np.abs(cpu[c]).max()) for c in ("ux", "uy", "uz"))
    for field in cpu:
        assert np.abs(cuda[field] - cpu[field]).max() <= 1e-11 * max(scale, 1.0), field
    assert results["cpu"][1]["velocity_iterations"] == results["cuda"][1]["velocity_iterations"]


def test_rotated_symmetry_on_cuda_is_exact(tmp_path):
    from lobatto.api import case_from_dict

    case = rotated()
    case["output"] = {"formats": []}
    sim = Simulation(case_from_dict(case, name="rotated"), backend="cuda", output_dir=tmp_path, comm=None)
    sim.advance(3)
    errors = sim.errors()
    assert all(errors[c]["max"] < 1e-12 for c in ("ux", "uy", "uz")), errors
