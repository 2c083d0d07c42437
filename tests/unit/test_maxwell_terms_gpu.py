"""Terms around the Maxwell stage kernel on the CUDA backend (systems/maxwell/terms.py): the
fused whole-step path with a term on a subset of elements (its traces rewritten after each
stage) and the stage path equal the CPU backend. Skipped, with the reason, without CuPy and
a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.backends import get_backend  # noqa: E402
from lobatto.integrators import Stepper, get_scheme  # noqa: E402
from lobatto.mesh import box_mesh  # noqa: E402
from lobatto.systems.maxwell.system import MaxwellSystem  # noqa: E402

from test_maxwell_terms import Conduction, Relaxation  # noqa: E402


def stepped(backend_name, fused, steps=15, dt=0.01):
    mesh = box_mesh((4, 3, 2), boundary="pec", periodic=(False, True, False))
    backend = get_backend(backend_name)
    system = MaxwellSystem(mesh, 5, backend)
    centroid = system.geometry.coords[0].mean(axis=(1, 2, 3))
    system.add_term(Conduction(system, np.nonzero(centroid > 0.6)[0], 1.7))
    system.add_term(Relaxation(system, np.nonzero(centroid < 0.4)[0], 2.0, 0.3))
    if not fused:
        system.fused_with_terms = False
    stepper = Stepper(system, get_scheme("lsrk45"))
    assert stepper.path == ("whole-step" if fused and backend_name == "cuda" else "stages")
    u0 = np.random.default_rng(11).standard_normal(system.allocate_state().shape)
    u = backend.asarray(u0)
    for n in range(steps):
        stepper.step(u, n * dt, dt)
    return backend.to_host(u), backend.to_host(system.terms[1].aux)


@pytest.mark.parametrize("fused", [True, False])
def test_cuda_terms_equal_cpu(fused):
    u_cpu, aux_cpu = stepped("cpu", False)
    u_gpu, aux_gpu = stepped("cuda", fused)
    scale = np.max(np.abs(u_cpu))
    assert np.max(np.abs(u_gpu - u_cpu)) < 1e-11 * scale
    assert np.max(np.abs(aux_gpu - aux_cpu)) < 1e-11 * max(1.0, np.max(np.abs(aux_cpu)))
