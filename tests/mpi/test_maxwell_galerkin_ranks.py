"""volume_form = "galerkin" under mpiexec: 2 and 3 ranks give the serial fields and energy (its
exchange carries the raw face values; the energy's products, in closed form at the default
Q = N + 1, are per element, summed over ranks); with sources, and with a TF/SF plane wave whose
surface a partition cuts and the last rank does not touch (tfsf_galerkin.py)."""

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


# a TF/SF plane wave (tfsf_galerkin.py) in a total-field box at the low-x end: the partitions along
# x put its x = 0.5 side between ranks 0 and 1 of 3 and leave the last rank (of 2 and of 3) with no
# surface face (its term does nothing, the collective set-up still runs there)
PLANE_WAVE = """
[mesh]
elements = [6, 3, 3]
upper = [1.5, 0.75, 0.75]
boundary = "absorbing"
[mesh.deform]
y = "0.02*sin(4*pi*x)*sin(4*pi*y)*sin(4*pi*z)"
[discretization]
order = 3
volume_form = "galerkin"
[time]
t_end = 0.5
cfl = 0.3
integrator = "INTEGRATOR"
[output]
formats = ["hdf5"]
[source.incident]
type = "plane_wave"
direction = [1.0, 0.4, -0.3]
polarization = [0.0, 0.3, 0.4]
amplitude = 2.0
waveform = "modulated_gaussian"
frequency = 1.2
t0 = 0.3
width = 0.15
origin = [0.25, 0.25, 0.5]
lower = [0.25, 0.25, 0.25]
upper = [0.5, 0.5, 0.5]
"""


@pytest.mark.parametrize("integrator", ["lsrk45", "rk4"])  # the stage path and the rhs path
def test_ranks_reproduce_serial_fields_with_a_plane_wave(integrator, tmp_path):
    text = PLANE_WAVE.replace("INTEGRATOR", integrator)
    serial_summary, serial_ids, serial_fields = run_case(tmp_path / "serial", text, 1)
    assert np.abs(serial_fields).max() > 0.5  # the wave came in
    for nprocs in (2, 3):
        summary, ids, fields = run_case(tmp_path / str(nprocs), text, nprocs)
        assert summary["ranks"] == nprocs and np.array_equal(ids, serial_ids)
        assert max_relative_difference(fields, serial_fields) <= 1e-13
        for key in ("total_field_elements", "surface_faces", "elements"):
            assert summary["plane_wave.incident"][key] == serial_summary["plane_wave.incident"][key]


# volume_form = "auto" (the default) on a box curved only where x < 1/3: a partition along x
# leaves ranks 1 and 2 (of 3) with affine elements only; the choice is collective (galerkin on
# every rank), and the fields are the serial run's
AUTO = """
[mesh]
elements = [6, 2, 2]
upper = [1.5, 0.5, 0.5]
boundary = "pec"
[mesh.deform]
y = "0.05*max(0, 1 - 4*x)**2*sin(2*pi*y)*sin(2*pi*z)"
[discretization]
order = 3
[initial]
Ez = "sin(2*pi*y)*sin(pi*x/1.5)"
Hy = "0.3*sin(2*pi*z)*cos(x)"
[time]
t_end = 0.1
[output]
formats = ["hdf5"]
[material.film]
where = "x - 1.2"
sampling = "element"
epsilon = 2.5
sigma = 0.3
"""


def test_auto_chooses_galerkin_on_every_rank_and_ranks_reproduce_serial(tmp_path):
    serial_summary, serial_ids, serial_fields = run_case(tmp_path / "serial", AUTO, 1)
    assert serial_summary["volume_form"]["form"] == "galerkin"
    for nprocs in (2, 3):
        summary, ids, fields = run_case(tmp_path / str(nprocs), AUTO, nprocs)
        assert summary["ranks"] == nprocs and summary["volume_form"]["form"] == "galerkin"
        assert np.array_equal(ids, serial_ids)
        assert max_relative_difference(fields, serial_fields) <= 1e-13
