"""volume_form = "galerkin" under mpiexec: 2 and 3 ranks give the serial fields and energy (its
exchange carries the raw face values; the energy's products, in closed form at the default
Q = N + 1, are per element, summed over ranks)."""

from __future__ import annotations

import numpy as np
import pytest

from maxwell_cases import CASE, max_relative_difference, run_case
from mpirun import SKIP_REASON

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

GALERKIN = CASE.replace("order = 4\n", 'order = 3\nvolume_form = "galerkin"\n').replace('formats = ["hdf5", "nek"]',
                                                                                        'formats = ["hdf5"]')


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("serial"), GALERKIN, 1)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_reproduce_serial_fields(serial, nprocs, tmp_path):
    summary, ids, fields = run_case(tmp_path, GALERKIN, nprocs)
    serial_summary, serial_ids, serial_fields = serial
    assert summary["config"]["discretization"]["volume_form"] == "galerkin" and summary["ranks"] == nprocs
    assert np.array_equal(ids, serial_ids)
    assert max_relative_difference(fields, serial_fields) <= 1e-13
    energy, serial_energy = summary["energy"]["final"], serial_summary["energy"]["final"]
    assert abs(energy - serial_energy) <= 1e-12 * serial_energy
    assert energy < summary["energy"]["initial"]  # PEC, absorbing and upwind faces: no gain


# a dipole in one element (the consistent delta M_W^-1 phi(x0): ranks of 2 and 3 hold no part of
# it) and a current on every element
SOURCES = GALERKIN + """
[source.d]
type = "electric_dipole"
position = [0.43, 0.58, 0.37]
direction = [0.3, -0.5, 0.8]
amplitude = 1.7
waveform = "gaussian"
t0 = 0.05
width = 0.03
[source.j]
type = "current"
Jz = "sin(pi*y)*sin(3*t)"
"""


@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_reproduce_serial_fields_with_sources(nprocs, tmp_path):
    _, serial_ids, serial_fields = run_case(tmp_path / "serial", SOURCES, 1)
    summary, ids, fields = run_case(tmp_path / "ranks", SOURCES, nprocs)
    assert summary["ranks"] == nprocs and np.array_equal(ids, serial_ids)
    assert max_relative_difference(fields, serial_fields) <= 1e-13
