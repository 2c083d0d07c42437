"""Probes and integrals on CUDA (the fields stay on the GPU; probes copy their elements, surface
integrals their faces) give the CPU time series, float64.

Skipped, with the reason, where CuPy or a CUDA device is missing.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

import lobatto.api as api  # noqa: E402
from lobatto.io.timeseries import read_csv  # noqa: E402

SIDES = ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"]
INITIAL = {"maxwell": {"Ez": "sin(pi*x)*sin(pi*y) + exp(-20*((x-0.4)**2 + (y-0.5)**2 + (z-0.6)**2))",
                       "Hx": "cos(2*z)*sin(pi*y)"},
           "acoustics": {"p": "exp(-20*((x-0.4)**2 + (y-0.5)**2 + (z-0.6)**2))", "uz": "cos(2*pi*x) + 0.5"}}


@pytest.mark.parametrize("equations", ["maxwell", "acoustics"])
def test_cuda_time_series_equal_the_cpu_ones(tmp_path, equations):
    case = api.case_from_dict({
        "physics": {"equations": equations},
        "mesh": {"elements": [3, 2, 2], "boundary": "absorbing",
                 "deform": {"x": "0.04*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.03*sin(pi*x)*sin(pi*y)*sin(pi*z)"}},
        "discretization": {"volume_form": "split", "order": 5},
        "initial": INITIAL[equations],
        "time": {"t_end": 0.2},
        "output": {"formats": [], "probes": {"points": [[0.5, 0.5, 0.5], [0.1, 0.7, 0.3]], "every": 2},
                   "integrals": {"every": 3, "surfaces": SIDES}},
    }, name="gpu")
    series = {}
    for backend in ("cpu", "cuda"):
        result = api.run(case, output_dir=tmp_path / backend, backend=backend)
        assert result.summary["backend"] == backend
        series[backend] = read_csv(tmp_path / backend / "gpu_probes.csv")
    cpu, gpu = series["cpu"], series["cuda"]
    assert gpu["columns"] == cpu["columns"] and np.array_equal(gpu["step"], cpu["step"])
    for column in cpu["columns"]:
        a, b = gpu["values"][column], cpu["values"][column]
        assert np.array_equal(np.isnan(a), np.isnan(b)), column
        assert np.nanmax(np.abs(a - b)) <= 1e-12 * max(np.nanmax(np.abs(b)), 1e-30), column
