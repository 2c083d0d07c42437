"""``[output.dft]`` on CUDA (the transforms accumulate on the GPU) gives the CPU file, float64,
for Maxwell and acoustics; its cost per step beside the step's on a larger mesh.

Skipped, with the reason, where CuPy or a CUDA device is missing.
"""

from __future__ import annotations

import h5py
import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

import lobatto.api as api  # noqa: E402

INITIAL = {"maxwell": {"Ez": "sin(pi*x)*sin(pi*y) + exp(-20*((x-0.4)**2 + (y-0.5)**2 + (z-0.6)**2))",
                       "Hx": "cos(2*z)*sin(pi*y)"},
           "acoustics": {"p": "exp(-20*((x-0.4)**2 + (y-0.5)**2 + (z-0.6)**2))", "uz": "cos(2*pi*x) + 0.5"}}


def read(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: out.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset) else None)
    return out


@pytest.mark.parametrize("equations", ["maxwell", "acoustics"])
def test_cuda_transforms_equal_the_cpu_ones(tmp_path, equations):
    case = api.case_from_dict({
        "physics": {"equations": equations},
        "mesh": {"elements": [3, 2, 2], "boundary": "absorbing"},
        "discretization": {"order": 5},
        "initial": INITIAL[equations],
        "time": {"t_end": 0.3},
        "output": {"formats": [], "dft": {"frequencies": [0.5, 1.5], "regions": ["all"], "surfaces": ["xmax", "zmin"]}},
    }, name="gpu")
    files = {}
    for backend in ("cpu", "cuda"):
        api.run(case, backend=backend, output_dir=tmp_path / backend)
        files[backend] = read(tmp_path / backend / "gpu_dft.h5")
    assert sorted(files["cpu"]) == sorted(files["cuda"])
    for name, value in files["cpu"].items():
        scale = max(np.abs(value).max(), 1e-30)
        assert np.abs(files["cuda"][name] - value).max() <= 1e-11 * scale, name
