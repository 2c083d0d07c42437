"""volume_form = "galerkin" with a per-point medium under mpiexec (the compiled CPU backend: the
medium in galerkin_cpu's C kernel): 2 and 3 ranks give the serial fields and energy. The medium: a
diagonal eps and a varying mu at x < 0.7, a conductor at x > 1.1 (whole elements) on a 6-element
row split along x, so rank 0 of 2 and ranks 0 and 1 of 3 own no conductor (their kernel gets no
loss array) and the last rank of 3 none of the diagonal eps (measured with the partition of
this case: x ranges [0, 0.75], [0.75, 1.5] and [0, 0.5], [0.5, 1], [1, 1.5])."""

from __future__ import annotations

import numpy as np
import pytest

from maxwell_cases import max_relative_difference, run_case
from mpirun import SKIP_REASON

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """[mesh]
elements = [6, 2, 2]
upper = [1.5, 0.5, 0.5]
boundary = "pec"
[mesh.boundaries]
xmax = "absorbing"
[mesh.deform]
y = "0.02*sin(4*pi*x)*sin(2*pi*y)*sin(2*pi*z)"
[discretization]
order = 3
volume_form = "galerkin"
[physics]
equations = "maxwell"
[initial]
Ey = "exp(-20*((x-0.5)**2 + (z-0.25)**2))"
Hz = "sin(2*pi*y)*exp(-20*(x-0.4)**2)"
[time]
t_end = 0.3
[output]
formats = ["hdf5"]
[material.crystal]
where = "0.7 - x"
epsilon = [2.0, "3 + x*y", 1.5]
mu = "1 + 0.3*z"
[material.lossy]
where = "x - 1.1"
sigma = "1 + 2*z"
epsilon = 1.5
sampling = "element"
"""


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("serial"), CASE, 1)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_reproduce_serial_fields_with_a_medium(serial, nprocs, tmp_path):
    summary, ids, fields = run_case(tmp_path, CASE, nprocs)
    serial_summary, serial_ids, serial_fields = serial
    assert summary["config"]["discretization"]["volume_form"] == "galerkin" and summary["ranks"] == nprocs
    assert np.array_equal(ids, serial_ids) and summary["steps"] == serial_summary["steps"]
    assert np.abs(serial_fields).max() > 0.1  # the pulse is still there
    assert max_relative_difference(fields, serial_fields) <= 1e-13
    energy, serial_energy = summary["energy"]["final"], serial_summary["energy"]["final"]
    assert abs(energy - serial_energy) <= 1e-12 * serial_energy
    assert energy < summary["energy"]["initial"]  # the conductor, absorbing and upwind faces: no gain
