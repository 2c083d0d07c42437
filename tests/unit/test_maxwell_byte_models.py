"""The bench's byte models of the Maxwell step (bench/maxwell_models.py) count a mesh's own
faces and points: the 3-D figures keep the formula of the hexahedral step, and a 2-D mesh
(four edges of N + 1 points, (N + 1)^2 points) is counted as such, not as hexahedra."""

import numpy as np
import pytest

from lobatto.backends import get_backend
from lobatto.bench.maxwell_models import byte_model, fused_byte_model
from lobatto.integrators import Stepper, get_scheme
from lobatto.mesh import box_mesh
from lobatto.systems.maxwell import cuda as cm
from lobatto.systems.maxwell.system import MaxwellSystem


def system_and_stepper(elements, order):
    system = MaxwellSystem(box_mesh(elements), order, get_backend("cpu"))
    return system, Stepper(system, get_scheme("lsrk45"))


@pytest.mark.parametrize("order", [3, 7])
def test_the_fused_model_of_a_hex_mesh_is_the_hexahedral_formula(order):
    system, stepper = system_and_stepper((2, 2, 2), order)
    n, item, e = order + 1, 8, system.num_elements
    a = list(stepper.scheme.A)
    total = e * cm.traces_bytes(order, item)
    for i, ai in enumerate(a):  # affine box: the affine stage; 6 n^2 face points per element
        total += e * (cm.stage_bytes(order, item, True, ai != 0) + 6 * n**2 * 4 + (36 * n**2 * item if i < 4 else 0))
    assert fused_byte_model(system, stepper)["total_per_stage"] == pytest.approx(total / len(a), rel=1e-15)


@pytest.mark.parametrize("order", [3, 7])
def test_a_quad_mesh_is_counted_with_its_edges_and_points(order):
    system, stepper = system_and_stepper((4, 3), order)
    n, item, e = order + 1, 8, system.num_elements
    a = list(stepper.scheme.A)
    total = e * cm.traces_bytes(order, item, 2)
    for i, ai in enumerate(a):  # four edges of n points
        total += e * (cm.stage_bytes(order, item, True, ai != 0, 2) + 4 * n * 4 + (6 * 4 * n * item if i < 4 else 0))
    fused = fused_byte_model(system, stepper)
    assert fused["total_per_stage"] == pytest.approx(total / len(a), rel=1e-15)
    # per point, a quad's step moves fewer bytes than a hexahedron's (no t metrics, four faces)
    twin, twin_stepper = system_and_stepper((4, 3, 1), order)
    assert fused["per_point_per_stage"] < fused_byte_model(twin, twin_stepper)["per_point_per_stage"]
    assert byte_model(system, stepper)["stage"] == pytest.approx(
        e * np.mean([cm.stage_bytes(order, item, True, ai != 0, 2) for ai in a]), rel=1e-15)
