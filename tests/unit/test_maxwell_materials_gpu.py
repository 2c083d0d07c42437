"""Maxwell in heterogeneous media on the CUDA backend equals the CPU backend: point and element
materials and a conductivity, lsrk45 (the fused whole step, maxwell_stage_pairs_medium_kernel)
and rk4 (stage by stage, the tuned kernel maxwell_rhs_materials); and the tuned kernel equals the reference (array operations on
CuPy) on random fields, sums and media, with and without the face phase, over all elements and
a range of them. Skipped, with the reason, without CuPy and a GPU."""

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
            "discretization": {"volume_form": "split", "order": 5}, "physics": {"equations": "maxwell", "epsilon": 2.0},
            "initial": {"Ey": "exp(-20*((x-0.5)**2 + (z-0.5)**2))", "Hz": "sin(pi*y)*exp(-20*(x-0.4)**2)"},
            "time": {"t_end": 0.3, "integrator": integrator}, "output": {"formats": []}, "material": MATERIALS})
        sim = Simulation(case, backend=backend, output_dir=tmp_path / backend, comm=None)
        assert sim.system.medium is not None
        if backend == "cuda":  # lsrk45: the fused whole step with the medium's kernel; rk4: stages
            assert sim.stepper.path == ("whole-step" if integrator == "lsrk45" else "stages")
        sim.advance(8)
        results[backend] = sim.fields()
    cpu, cuda = results["cpu"], results["cuda"]
    scale = max(float(np.abs(cpu[name]).max()) for name in cpu)
    assert scale > 1e-2
    for name in cpu:
        assert np.abs(cuda[name] - cpu[name]).max() <= 1e-12 * scale, name


@pytest.mark.parametrize("order, face_phase, conducting", [(3, True, True), (5, False, True), (7, True, False)])
def test_tuned_rhs_materials_equals_reference(order, face_phase, conducting, tmp_path):
    import cupy

    from lobatto.systems.maxwell.materials import make_rhs_materials

    materials = dict(MATERIALS)
    if not conducting:
        materials.pop("lossy")
    case = case_from_dict({
        "mesh": {"elements": [3, 2, 2], "boundary": "pec", "deform": {"y": "0.03*sin(pi*x)*sin(pi*z)"}},
        "discretization": {"volume_form": "split", "order": order}, "physics": {"equations": "maxwell"}, "time": {"t_end": 1.0},
        "output": {"formats": []}, "material": materials})
    sim = Simulation(case, backend="cuda", output_dir=tmp_path, comm=None)
    system, backend = sim.system, sim.backend
    medium = system.medium
    assert (medium.arrays["sigma_over_epsilon"] is not None) == conducting
    if not face_phase:  # the same launch shape without the face phase
        from lobatto.systems.maxwell.cuda import default_launch

        cfg = default_launch(order, np.dtype(np.float64), backend.max_shared_per_block)
        backend.launch_overrides[(order, "float64")] = (cfg.elements_per_block, cfg.threads, 0, 0)
    tuned = backend.kernel("maxwell_rhs_materials", order=order)
    reference = make_rhs_materials(backend, order)
    assert tuned is not reference and getattr(tuned, "kernels", None) is not None
    rng = np.random.default_rng(order)
    e, n = system.num_elements, order + 1
    u = cupy.asarray(rng.standard_normal((6, e, n, n, n)))
    sums = cupy.asarray(rng.standard_normal((6, e, 6, n, n)))
    for elements in (None, (2, e - 3)):
        out_tuned, out_reference = (cupy.full(u.shape, 7.0) for _ in range(2))
        tuned(u, sums, system.device_geometry, out_tuned, medium.arrays, 0.8, elements)
        reference(u, sums, system.device_geometry, out_reference, medium.arrays, 0.8, elements)
        scale = float(cupy.abs(out_reference).max())
        assert scale > 1.0
        assert float(cupy.abs(out_tuned - out_reference).max()) <= 1e-12 * scale
    backend.launch_overrides.pop((order, "float64"), None)
