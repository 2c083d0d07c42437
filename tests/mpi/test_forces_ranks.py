"""``[output.forces.<name>]`` under ``mpiexec -n P lobatto run``: on a 3 x 1 x 1 box of walls
split along x, the rank(s) that hold no face of xmin (2 and 3 ranks) or of xmax still take part
in every reduction, and the force series are the same bits as the 1-rank run's (the face
terms are summed exactly: comm/exact_sum.py)."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.io.timeseries import read_csv
from lobatto.mesh.partition import partition_box
from mpirun import SKIP_REASON, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

ELEMENTS = [3, 1, 1]
CASE = f"""
[physics]
equations = "navier_stokes"
viscosity = 0.1
force_y = "-1"
[mesh]
elements = {ELEMENTS}
lower = [-1.0, 0.0, 0.0]
upper = [2.0, 0.5, 1.5]
[discretization]
order = 3
[initial]
ux = "y*(0.5 - y)*z*(1.5 - z)"
uy = "0.1*sin(x)*y*(0.5 - y)"
[time]
t_end = 0.03
dt = 0.01
[output.forces.inlet]
surfaces = ["xmin"]
center = [-1.0, 0.25, 0.75]
[output.forces.rest]
surfaces = ["xmax", "ymax", "zmin"]
reference_area = 0.75
reference_velocity = 0.1
density = 1.2
every = 2
"""


def holds_side(nprocs: int, side: str) -> list:
    """Which ranks hold an element on the side (element id = ix + 3 (iy + iz) here)."""
    column = 0 if side == "xmin" else ELEMENTS[0] - 1
    return [bool(np.any(partition_box(ELEMENTS, nprocs, rank) % ELEMENTS[0] == column)) for rank in range(nprocs)]


def test_forces_do_not_depend_on_the_rank_count(tmp_path):
    for nprocs in (2, 3):  # the premise: some rank holds no face of xmin, another none of xmax
        assert not all(holds_side(nprocs, "xmin")) and not all(holds_side(nprocs, "xmax"))
    series = {}
    for nprocs in (1, 2, 3):
        directory = tmp_path / f"ranks{nprocs}"
        summary, _, _ = run_case(directory, CASE, nprocs, timeout=180)
        assert summary["ranks"] == nprocs
        series[nprocs] = read_csv(directory / "out" / "case_forces.csv")
    serial = series[1]
    assert list(serial["step"]) == [0, 1, 2, 3]
    values = serial["values"]  # no zero series: pressure and viscous parts on both groups
    assert all(np.nanmax(np.abs(values[c])) > 1e-3 for c in ("Fpx@inlet", "Fvx@inlet", "Mz@inlet", "Fpy@rest",
                                                          "Fvx@rest", "Mx@rest"))
    assert "Cx@rest" in serial["columns"] and np.isnan(serial["values"]["Fx@rest"][1])
    for nprocs in (2, 3):
        got = series[nprocs]
        assert got["columns"] == serial["columns"] and np.array_equal(got["step"], serial["step"])
        for column in serial["columns"]:
            assert np.array_equal(got["values"][column], serial["values"][column], equal_nan=True), (nprocs, column)
