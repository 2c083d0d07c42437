"""The split-form curl on the GPU: every SPLIT variant of kernels/maxwell.cu equals the CPU,
and the GPU's operator keeps the energy (test_maxwell_energy_curved.py) on curved elements."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from test_maxwell_energy_curved import (  # noqa: E402
    BALL, MESHES, check_upwind_energy_never_grows, energy_rate, simulation)


def rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("order", [3, 7])
@pytest.mark.parametrize("material", [None, BALL], ids=["uniform", "ball"])
def test_every_split_variant_equals_cpu_over_steps(tmp_path, order, material):
    """Ten whole steps (fused path) from random data: SPLIT 1 and 2 equal the CPU's split form
    to round-off; SPLIT 0 (the chain rule alone) does not, so the comparison can fail."""
    mesh = MESHES["deformed box"]
    rng = np.random.default_rng()
    u0 = rng.standard_normal((6, 27, order + 1, order + 1, order + 1))
    cpu = simulation(tmp_path, mesh, order, "upwind", material)
    cpu.u[...] = u0
    dt = cpu.dt
    for n in range(10):
        cpu.stepper.step(cpu.u, n * dt, dt)
    got = {}
    for split in (0, 1, 2):
        gpu = simulation(tmp_path, mesh, order, "upwind", material, backend="cuda")
        assert gpu.dt == dt
        fused = gpu.stepper.whole_step
        assert fused is not None and fused.kernels.config(gpu.u.dtype, True).split == 1  # the default here
        fused.kernels.split_override = split
        gpu.u[...] = gpu.backend.asarray(u0)
        for n in range(10):
            gpu.stepper.step(gpu.u, n * dt, dt)
        got[split] = rel(gpu.backend.to_host(gpu.u), cpu.u)
    assert got[1] < 1e-12 and got[2] < 1e-12, got
    assert got[0] > 1e-6, got


@pytest.mark.parametrize("mesh", sorted(MESHES))
def test_energy_rate_on_gpu(tmp_path, mesh):
    rng = np.random.default_rng()
    for order in (3, 6):
        assert abs(energy_rate(simulation(tmp_path, MESHES[mesh], order, "central", backend="cuda"), rng)) < 1e-12
        assert energy_rate(simulation(tmp_path, MESHES[mesh], order, "upwind", backend="cuda"), rng) < 1e-12


def test_upwind_energy_never_grows_on_gpu(tmp_path):
    check_upwind_energy_never_grows(tmp_path, backend="cuda")


def test_chain_rule_option_on_gpu_equals_cpu(tmp_path):
    """[discretization] volume_form = "chain" on CUDA (the SPLIT 0 kernels) equals the CPU's
    chain rule over ten steps from random data on the deformed box."""
    rng = np.random.default_rng()
    states = {}
    for backend in ("cpu", "cuda"):
        data = {"mesh": MESHES["deformed box"], "discretization": {"order": 4, "flux": "upwind", "volume_form": "chain"},
                "physics": {"equations": "maxwell"}, "time": {"t_end": 1.0, "cfl": 0.4}, "output": {"formats": []}}
        sim = Simulation(case_from_dict(data, name="chain"), backend=backend, output_dir=str(tmp_path), comm=None)
        sim.close()  # only its system and stepper are used (one live run per directory)
        if backend == "cpu":
            u0 = rng.standard_normal(sim.u.shape)
        else:
            assert not sim.stepper.whole_step.kernels.is_curved(sim.system.device_geometry)
        sim.u[...] = sim.backend.asarray(u0)
        for n in range(10):
            sim.stepper.step(sim.u, n * sim.dt, sim.dt)
        states[backend] = sim.backend.to_host(sim.u)
    assert rel(states["cuda"], states["cpu"]) < 1e-12
