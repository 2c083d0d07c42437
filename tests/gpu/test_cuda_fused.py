"""The fused-exchange step (systems/maxwell/fused.py) equals the stage-by-stage step with the gather-scatter.

partner_map runs anywhere; the GPU tests skip, with the reason, without CuPy and a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.backends import cuda_available
from lobatto.systems.maxwell.fused import partner_map
from lobatto.integrators import Stepper, get_scheme, stable_time_step
from lobatto.mesh import box_mesh, face_point_ids

OK, WHY = cuda_available()
needs_gpu = pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")
PI = np.pi


def test_partner_map_pairs_equal_ids():
    for periodic in (False, True):
        mesh = box_mesh((3, 2, 2), periodic=(periodic,) * 3)
        ids = face_point_ids(mesh, 3).reshape(-1)
        partner = partner_map(ids)
        paired = partner >= 0
        assert np.all(ids[partner[paired]] == ids[paired])
        assert np.all(partner[partner[paired]] == np.flatnonzero(paired))
        counts = np.bincount(ids)[ids]
        assert np.array_equal(paired, counts == 2)
        assert paired.all() == periodic


def test_partner_map_rejects_triples():
    with pytest.raises(ValueError):
        partner_map(np.array([1, 1, 1, 2]))


class Fn:
    def __init__(self, f):
        self.f = f

    def evaluate(self, xp, x, y, z, t):
        return self.f(x, y, z)


INITIAL = {
    "Ez": Fn(lambda x, y, z: np.sin(PI * x) * np.sin(PI * y)),
    "Hx": Fn(lambda x, y, z: np.cos(2 * PI * z) * np.sin(PI * y)),
    "Ey": Fn(lambda x, y, z: np.cos(PI * x + 0.3) * z),
}


def bump(x, y, z):
    b = 0.05 * np.sin(PI * x) * np.sin(PI * y) * np.sin(PI * z)
    return b, 0.5 * b, b


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize(
    "order,dims,deform,periodic,flux,precision",
    [
        (3, (3, 2, 2), bump, False, "upwind", "float64"),
        (4, (2, 3, 2), None, True, "upwind", "float64"),
        (7, (2, 2, 2), bump, False, "central", "float64"),
        (14, (2, 1, 1), bump, False, "upwind", "float64"),
        (7, (2, 2, 2), bump, False, "upwind", "float32"),
    ],
)
def test_fused_step_equals_solver_step(order, dims, deform, periodic, flux, precision):
    from lobatto.backends import get_backend
    from lobatto.systems.maxwell.fused import FusedExchangeStepper
    from lobatto.systems.maxwell.system import MaxwellSystem

    backend = get_backend("cuda", precision=precision)
    mesh = box_mesh(dims, deform=deform, periodic=(periodic,) * 3)
    system = MaxwellSystem(mesh, order, backend, flux=flux, epsilon=1.3, mu=0.8)
    dt = stable_time_step(0.4, system.geometry.min_spacing, system.wave_speed)
    u0 = system.evaluate_fields(INITIAL, 0.0)
    u_ref, u_fused, u_graph = (backend.asarray(u0) for _ in range(3))
    solver = Stepper(system, get_scheme("lsrk45"))
    assert solver.path == "whole-step"  # on one GPU the solver takes the fused steps by default
    plain = Stepper(system, get_scheme("lsrk45"))
    plain.whole_step = None  # the reference: the system's stages with the gather-scatter
    fused = FusedExchangeStepper(system, Stepper(system, get_scheme("lsrk45")))
    fused_g = FusedExchangeStepper(system, Stepper(system, get_scheme("lsrk45")))
    replay = backend.capture(lambda: fused_g.step(u_graph, 0.0, dt))
    for _ in range(4):
        plain.step(u_ref, 0.0, dt)
        fused.step(u_fused, 0.0, dt)
        replay()
    ref = backend.to_host(u_ref).astype(np.float64)
    tol = 1e-12 if precision == "float64" else 2e-5
    assert np.max(np.abs(backend.to_host(u_fused) - ref)) <= tol * np.max(np.abs(ref))
    assert replay.captured, replay.fallback_reason
    np.testing.assert_array_equal(backend.to_host(u_graph), backend.to_host(u_fused))
