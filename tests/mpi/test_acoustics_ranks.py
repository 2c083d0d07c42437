"""`mpiexec -n P lobatto run` of an acoustics case gives the serial fields, for P = 1, 2, 3."""

from __future__ import annotations


import numpy as np
import pytest

from mpirun import SKIP_REASON, max_relative_difference, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

FIELDS = ("p", "ux", "uy", "uz")

# 8 x 2 x 2 curved elements, periodic in x, walls and one absorbing side: every rank of 2 or 3
# holds elements with no face on another rank, so the stage splits into an interior block
# (updated during the exchange) and a halo block (after it).
CASE = """
[mesh]
elements = [8, 2, 2]
periodic = [true, false, false]
boundary = "wall"
[mesh.boundaries]
zmax = "absorbing"
[mesh.deform]
x = "0.04*sin(pi*x)*sin(pi*y)*sin(pi*z)"
y = "0.03*sin(pi*x)*sin(pi*y)*sin(pi*z)"
[discretization]
order = 4
flux = "{flux}"
[physics]
equations = "acoustics"
density = 1.3
sound_speed = 0.7
[initial]
p = "sin(pi*y)*cos(2*pi*x) + exp(-20*((x-0.3)**2 + (y-0.5)**2 + (z-0.5)**2))"
ux = "sin(pi*y)*sin(pi*z)*exp(x)"
uz = "cos(3*x)*sin(pi*y) + 0.5"
[time]
t_end = 0.15
[output]
every = 4
formats = ["hdf5", "nek"]
"""


def case_text(flux="upwind", extra=""):
    return CASE.replace("{flux}", flux) + extra


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return {flux: run_case(tmp_path_factory.mktemp(f"serial-{flux}"), case_text(flux), 1)
            for flux in ("upwind", "central")}


@pytest.mark.parametrize("flux", ["upwind", "central"])
@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_reproduce_serial_acoustic_fields(serial, flux, nprocs, tmp_path):
    serial_summary, serial_ids, serial_fields = serial[flux]
    assert serial_summary["equations"] == "acoustics" and serial_summary["ranks"] == 1
    assert np.abs(serial_fields[1:]).max() > 0.1  # velocities present, not an all-zero run

    summary, ids, fields = run_case(tmp_path, case_text(flux), nprocs)
    assert summary["ranks"] == nprocs and summary["equations"] == "acoustics"
    assert summary["overlap"]["enabled"] and 0 < summary["overlap"]["interior_elements"] < 32
    assert np.array_equal(ids, serial_ids)
    assert max_relative_difference(fields, serial_fields) <= 1e-13
    e_serial = serial_summary["energy"]["final"]
    assert abs(summary["energy"]["final"] - e_serial) <= 1e-13 * e_serial

    # Nek5000 output: one file for all ranks (nfiles = 1), velocity and pressure, global order
    from lobatto.io.nek5000 import read_field_file

    assert not (tmp_path / "out" / "case1.f00001").exists()
    nek = read_field_file(tmp_path / "out" / "case0.f00001", velocity=FIELDS[1:], pressure="p")
    assert nek["nfiles"] == 1 and nek["nelgt"] == 32
    assert set(nek["fields"]) == set(FIELDS)
    assert nek["element_ids"].tolist() == list(range(1, 33))


def test_without_overlap_the_same_bits(tmp_path):
    summary, _, overlapped = run_case(tmp_path / "overlap", case_text(), 3)
    plain_summary, _, plain = run_case(tmp_path / "plain", case_text(extra="[parallel]\noverlap = false\n"), 3)
    assert summary["overlap"]["enabled"] and plain_summary["overlap"]["enabled"] is False
    assert np.array_equal(plain, overlapped)
