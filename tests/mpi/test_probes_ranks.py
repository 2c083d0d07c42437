"""Probes and integrals under ``mpiexec -n P lobatto run``: the same time series on 1, 2 and 3
ranks (to 1e-13), each probe taken by the lowest global element id that holds it whichever
rank has it, and a point outside the mesh reported once, exit 2."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run, run_case
from lobatto.io.timeseries import read_csv

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

# 4 x 2 x 2 curved elements (element id = ix + 4 iy + 8 iz); the deformation keeps the planes
# x = 0.25, 0.5, 0.75 and y, z = 0.5, so the first points lie on faces, edges and corners shared
# by elements that the partitions put on different ranks.
POINTS = [[0.5, 0.5, 0.5], [0.25, 0.3, 0.5], [0.75, 0.5, 0.2], [0.1, 0.9, 0.7], [0.62, 0.13, 0.41],
          [1.0, 1.0, 1.0]]
OWNERS = [1, 0, 2, 12, 2, 15]
CASE = """
[mesh]
elements = [4, 2, 2]
boundary = "pec"
[mesh.boundaries]
zmax = "absorbing"
xmin = "absorbing"
[mesh.deform]
x = "0.02*sin(4*pi*x)*sin(pi*y)*sin(pi*z)"
y = "0.03*sin(pi*x)*sin(2*pi*y)*sin(pi*z)"
[discretization]
order = 4
[initial]
Ez = "sin(pi*x)*sin(pi*y) + exp(-20*((x-0.4)**2 + (y-0.5)**2 + (z-0.6)**2))"
Hx = "cos(2*z)*sin(pi*y)"
[time]
t_end = 0.2
[output.probes]
every = 3
points = {points}
[output.integrals]
every = 2
volume = ["energy", "electric_energy", "magnetic_energy"]
surfaces = ["xmin", "zmax", "ymin"]
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for nprocs in (1, 2, 3):
        directory = tmp_path_factory.mktemp(f"ranks{nprocs}")
        summary, _, _ = run_case(directory, CASE.replace("{points}", str(POINTS)), nprocs)
        assert summary["ranks"] == nprocs
        out[nprocs] = summary, read_csv(directory / "out" / "case_probes.csv"), directory / "out" / "case_probes.h5"
    return out


@pytest.mark.parametrize("nprocs", [2, 3])
def test_the_time_series_does_not_depend_on_the_rank_count(runs, nprocs):
    _, serial, _ = runs[1]
    summary, series, _ = runs[nprocs]
    assert series["columns"] == serial["columns"] and len(serial["columns"]) == 6 * 6 + 3 + 3
    assert np.array_equal(series["step"], serial["step"]) and np.array_equal(series["time"], serial["time"])
    for column in serial["columns"]:
        a, b = series["values"][column], serial["values"][column]
        assert np.array_equal(np.isnan(a), np.isnan(b)), column
        scale = np.nanmax(np.abs(b))
        assert np.nanmax(np.abs(a - b)) <= 1e-13 * max(scale, 1e-300), column
    energy = series["values"]["energy@all"]
    assert energy[~np.isnan(energy)][-1] == pytest.approx(summary["energy"]["final"], rel=1e-13)


@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_each_probe_belongs_to_the_lowest_element_id_holding_it(runs, nprocs):
    summary, _, h5_path = runs[nprocs]
    assert summary["time_series"]["probes"]["element_ids"] == OWNERS
    with h5py.File(h5_path, "r") as f:
        assert f["probes/element_ids"][:].tolist() == OWNERS
        assert np.array_equal(f["probes/points"][:], POINTS)
        assert f.attrs["equations"] == "maxwell"


def test_a_point_outside_is_reported_once_by_every_rank(tmp_path):
    points = POINTS[:2] + [[0.5, 1.5, 0.5]]
    (tmp_path / "case.toml").write_text(CASE.replace("{points}", str(points)))
    result = run(3, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(tmp_path / "out"), "--quiet"])
    assert result.returncode == 2, describe(result)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, describe(result)
    assert "[output.probes] points[2] = [0.5, 1.5, 0.5] is outside the mesh" in lines[0]
