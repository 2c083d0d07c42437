"""A diagonal anisotropic medium (anisotropy.py; with a sub-cell averaged ball, subcell.py) on
the CUDA backend equals the CPU backend:
lsrk45 (the fused whole step, maxwell_stage_pairs_medium_kernel with component strides) and
rk4 (stage by stage, maxwell_rhs_medium_kernel), on curved elements with a conductor; and the
tuned kernel equals the reference (array operations on CuPy) on random fields, sums and media
over all elements and a range. Skipped, with the reason, without CuPy and a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.api import Simulation, case_from_dict  # noqa: E402

MATERIALS = {
    "crystal": {"where": "x - 0.3", "epsilon": [2.0, "3 + x*y", 1.5], "mu": [1.0, 1.2, 0.9], "sampling": "element"},
    "lens": {"where": "0.04 - (x-0.6)**2 - (y-0.5)**2 - (z-0.5)**2", "epsilon": "3 + x*y", "mu": 1.5},
    "lossy": {"where": "y - 0.5", "sigma": "2*z"},
    "averaged": {"where": "0.05 - (x-0.3)**2 - (y-0.6)**2 - (z-0.4)**2", "epsilon": 4.0, "sampling": "average"},
}


def case(integrator="lsrk45", order=5):
    return case_from_dict({
        "mesh": {"elements": [4, 3, 2], "boundary": "pec", "boundaries": {"xmax": "absorbing"},
                 "deform": {"x": "0.02*sin(4*pi*x)*sin(pi*y)*sin(pi*z)"}},
        "discretization": {"volume_form": "split", "order": order}, "physics": {"equations": "maxwell"},
        "initial": {"Ey": "exp(-20*((x-0.5)**2 + (z-0.5)**2))", "Hz": "sin(pi*y)*exp(-20*(x-0.4)**2)",
                    "Ex": "exp(-20*(y-0.5)**2)"},
        "time": {"t_end": 0.3, "integrator": integrator}, "output": {"formats": []}, "material": MATERIALS})


@pytest.mark.parametrize("integrator", ["lsrk45", "rk4"])
def test_cuda_equals_cpu_with_a_diagonal_medium(integrator, tmp_path):
    results = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(case(integrator), backend=backend, output_dir=tmp_path / backend, comm=None)
        assert sim.system.medium is not None and sim.system.medium.anisotropic
        if backend == "cuda":
            assert sim.stepper.path == ("whole-step" if integrator == "lsrk45" else "stages")
        sim.advance(8)
        results[backend] = sim.fields()
    cpu, cuda = results["cpu"], results["cuda"]
    scale = max(float(np.abs(cpu[name]).max()) for name in cpu)
    assert scale > 1e-2
    for name in cpu:
        assert np.abs(cuda[name] - cpu[name]).max() <= 1e-12 * scale, name


@pytest.mark.parametrize("order", [3, 7])
def test_tuned_rhs_with_a_diagonal_medium_equals_reference(order, tmp_path):
    import cupy

    from lobatto.systems.maxwell.materials import make_rhs_materials

    sim = Simulation(case(order=order), backend="cuda", output_dir=tmp_path, comm=None)
    system, backend = sim.system, sim.backend
    medium = system.medium
    assert medium.anisotropic and medium.arrays["flux_coefficients"].shape[:2] == (3, 4)
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


# dipoles, a current and poles in the diagonal medium (sources.py divides each component by its
# eps_c or mu_c; dispersive.py's E update by eps_inf,c: the poles' kernel reads (3, m, ...) arrays)
SOURCES = {"d": {"type": "electric_dipole", "position": [0.62, 0.45, 0.5], "direction": [1, 2, 3],
                 "waveform": "gaussian", "t0": 0.05, "width": 0.03},
           "m": {"type": "magnetic_dipole", "position": [0.8, 0.3, 0.4], "direction": [0, 1, -1],
                 "waveform": "ricker", "frequency": 2.0, "t0": 0.1},
           "j": {"type": "current", "Jx": "sin(3*x)*t", "Jz": "1 + y", "lower": [0.5, 0.2, 0.2],
                 "upper": [0.9, 0.7, 0.6]}}
POLE_MATERIALS = {
    "crystal": {"where": "x - 0.3", "epsilon": [2.0, "3 + x*y", 1.5], "mu": [1.0, 1.2, 0.9], "model": "drude",
                "poles": [{"plasma_frequency": 1.0, "collision_frequency": 0.2}]},
    "averaged": {"where": "0.05 - (x-0.3)**2 - (y-0.6)**2 - (z-0.4)**2", "epsilon": 4.0, "sampling": "average",
                 "model": "lorentz", "poles": [{"resonance_frequency": 1.5, "delta_epsilon": 1.2,
                                                "damping_frequency": 0.3}]},
}


@pytest.mark.parametrize("fused", [True, False], ids=["whole-step", "stages"])
def test_cuda_equals_cpu_with_sources_and_poles_in_a_diagonal_medium(fused, tmp_path):
    from lobatto.integrators import Stepper, get_scheme

    data = case().to_dict()
    data.update(material=POLE_MATERIALS, source=SOURCES)
    results = {}
    for backend in ("cpu", "cuda"):
        sim = Simulation(case_from_dict(data), backend=backend, output_dir=tmp_path / backend, comm=None)
        system = sim.system
        assert system.medium.anisotropic and sorted(t.name for t in system.terms) == [
            "dispersion.averaged", "dispersion.crystal", "sources"]
        assert all(t.per_component for t in system.terms if t.name.startswith("dispersion."))
        if backend == "cuda" and not fused:
            system.fused_with_terms = False
        stepper = Stepper(system, get_scheme("lsrk45"))
        if backend == "cuda":
            assert stepper.path == ("whole-step" if fused else "stages")
        for n in range(8):
            stepper.step(sim.u, n * sim.dt, sim.dt)
        results[backend] = np.asarray(sim.backend.to_host(sim.u))
    cpu, cuda = results["cpu"], results["cuda"]
    scale = float(np.abs(cpu).max())
    assert scale > 1e-2
    assert np.abs(cuda - cpu).max() <= 1e-11 * scale
