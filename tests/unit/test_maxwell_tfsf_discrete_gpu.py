"""TF/SF with the discrete incident wave (tfsf_discrete.py) on the CUDA backend: equal to the
CPU backend on the fused whole-step path and on the stage path (fields and the auxiliary
wave), with a dielectric block (a heterogeneous medium: the main operator is the medium's,
the auxiliary wave's the background's), and the scattered-field region at round-off on CUDA
over a whole run without a scatterer. Skipped, with the reason, without CuPy and a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.backends import get_backend  # noqa: E402
from lobatto.integrators import Stepper, get_scheme  # noqa: E402
from lobatto.mesh import box_mesh  # noqa: E402
from lobatto.systems.maxwell.system import MaxwellSystem  # noqa: E402
from lobatto.systems.maxwell.tfsf import PlaneWave, elements_in_box  # noqa: E402
from lobatto.systems.maxwell.tfsf_discrete import DiscreteIncidentTFSF  # noqa: E402

#: the total-field box (4^3 of the 6^3 elements); the block: its 2^3 central elements
LOWER, UPPER = [0.25] * 3, [1.25] * 3
BLOCK = "0.1 - (x - 0.75)**2 - (y - 0.75)**2 - (z - 0.75)**2"
PULSE = {"frequency": 1.0, "t0": 1.0, "width": 0.2}


def wave():
    k, p = np.array([1.0, 0.5, 0.3]), np.array([-0.5, 1.0, 0.0])
    k, p = k / np.linalg.norm(k), p / np.linalg.norm(p)
    return PlaneWave("inc", k, p, 1.0, "modulated_gaussian", PULSE, np.array([0.5, 0.5, 0.5]), 1.0, 1.0)


def run_system(backend_name, fused, steps, monitor=False):
    """A box in a box (6^3 elements of [0, 1.5]^3, N = 4), lsrk45, dt = 0.01 (cfl 0.23)."""
    backend = get_backend(backend_name)
    system = MaxwellSystem(box_mesh((6, 6, 6), upper=(1.5, 1.5, 1.5), boundary="absorbing"), 4, backend)
    inside = elements_in_box(system, LOWER, UPPER)
    system.add_term(DiscreteIncidentTFSF(system, wave(), inside))
    assert (system.terms[0].kernels is not None) == (backend_name == "cuda")  # CUDA: the kernel path
    if not fused:
        system.fused_with_terms = False
    stepper = Stepper(system, get_scheme("lsrk45"))
    assert stepper.path == ("whole-step" if fused and backend_name == "cuda" else "stages")
    u = backend.asarray(np.zeros(system.allocate_state().shape))
    dt, outside = 0.01, 0.0
    for n in range(steps):
        stepper.step(u, n * dt, dt)
        if monitor:
            outside = max(outside, float(np.abs(backend.to_host(u)[:, ~inside]).max()))
    return backend.to_host(u), backend.to_host(system.terms[0].aux), inside, outside


@pytest.mark.parametrize("fused", [True, False])
def test_cuda_equals_cpu(fused):
    cpu_u, cpu_aux, inside, _ = run_system("cpu", fused, 120)
    cuda_u, cuda_aux, _, _ = run_system("cuda", fused, 120)
    scale = np.abs(cpu_u).max()
    assert scale > 0.3 and np.abs(cpu_aux).max() > 0.3  # the pulse is in the box
    assert np.abs(cuda_u - cpu_u).max() <= 1e-12 * scale
    assert np.abs(cuda_aux - cpu_aux).max() <= 1e-12 * scale


def test_scattered_field_region_stays_at_round_off_on_cuda():
    u, aux, inside, outside = run_system("cuda", True, 300, monitor=True)  # t = 3: the pulse crossed the box
    assert np.abs(u[:, inside]).max() < 0.1  # and left it
    assert outside < 1e-12  # of an amplitude of 1


def test_cuda_equals_cpu_with_a_scatterer():
    data = {"mesh": {"elements": [6, 6, 6], "upper": [1.5, 1.5, 1.5], "boundary": "absorbing"},
            "discretization": {"order": 4}, "physics": {"equations": "maxwell"},
            "time": {"t_end": 1.6, "cfl": 0.3}, "output": {"formats": []},
            "material": {"block": {"where": BLOCK, "sampling": "element", "epsilon": 4.0}},
            "source": {"inc": {"type": "plane_wave", "incident_field": "discrete", "direction": [1.0, 0.5, 0.3],
                               "polarization": [-0.5, 1.0, 0.0], "waveform": "modulated_gaussian", **PULSE,
                               "origin": [0.5, 0.5, 0.5], "lower": LOWER, "upper": UPPER}}}
    fields = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(case_from_dict(data), backend=backend, output_dir=None, comm=None)
        sim.run()
        fields[backend] = np.asarray(sim.backend.to_host(sim.u))
    inside = elements_in_box(sim.system, LOWER, UPPER)
    assert np.abs(fields["cpu"][:, ~inside]).max() > 1e-2  # the block scatters
    assert np.abs(fields["cuda"] - fields["cpu"]).max() <= 1e-12 * np.abs(fields["cpu"]).max()
