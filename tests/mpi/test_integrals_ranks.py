"""``[output.integrals]`` under ``mpiexec -n P lobatto run`` for Navier-Stokes, Poisson and
acoustics: on a 3 x 1 x 1 box split along x, the rank(s) that hold no face of xmin (2 and 3
ranks) or of xmax still take part in every reduction, and the series equal the 1-rank run."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.io.timeseries import read_csv
from lobatto.mesh.partition import partition_box
from mpirun import SKIP_REASON, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

ELEMENTS = [3, 1, 1]
MESH = f"""
[mesh]
elements = {ELEMENTS}
lower = [-1.0, 0.0, 0.0]
upper = [2.0, 0.5, 1.5]
[discretization]
order = 3
"""
CASES = {
    "navier_stokes": MESH + """
[physics]
equations = "navier_stokes"
viscosity = 0.1
[initial]
ux = "y*(0.5 - y)*z*(1.5 - z)"
uy = "0.1*sin(x)"
[time]
t_end = 0.03
dt = 0.01
[output.integrals]
volume = ["kinetic_energy"]
surfaces = ["xmin", "xmax", "ymax"]
""",
    "poisson": MESH + """
[physics]
equations = "poisson"
f = "sin(x) + y*z"
[boundary.xmin]
value = "1 + y*z"
[boundary.xmax]
value = "2"
[solver]
tolerance = 1e-12
[output.integrals]
volume = ["integral", "square"]
surfaces = ["xmin", "xmax", "zmax"]
""",
    "acoustics": MESH + """
[physics]
equations = "acoustics"
[mesh.boundaries]
xmin = "absorbing"
[initial]
p = "1 + exp(-4*((x-0.2)**2 + (y-0.25)**2 + (z-0.7)**2))"
ux = "0.3*y"
[time]
t_end = 0.1
[output.integrals]
every = 2
volume = ["energy", "kinetic_energy"]
surfaces = ["xmin", "xmax", "zmin"]
""",
}


def holds_side(nprocs: int, side: str) -> list:
    """Which ranks hold an element on the side (element id = ix + 3 (iy + iz) here)."""
    column = 0 if side == "xmin" else ELEMENTS[0] - 1
    return [bool(np.any(partition_box(ELEMENTS, nprocs, rank) % ELEMENTS[0] == column)) for rank in range(nprocs)]


@pytest.mark.parametrize("equations", sorted(CASES))
def test_integrals_do_not_depend_on_the_rank_count(tmp_path, equations):
    # the premise: with 2 and 3 ranks some rank holds no face of xmin, another none of xmax
    for nprocs in (2, 3):
        assert not all(holds_side(nprocs, "xmin")) and not all(holds_side(nprocs, "xmax"))
    series = {}
    for nprocs in (1, 2, 3):
        directory = tmp_path / f"ranks{nprocs}"
        summary, _, _ = run_case(directory, CASES[equations], nprocs, timeout=180)
        assert summary["ranks"] == nprocs
        series[nprocs] = read_csv(directory / "out" / "case_probes.csv")
    serial = series[1]
    assert len(serial["step"]) >= 1 and not any(np.isinf(v).any() for v in serial["values"].values())
    assert all(np.nanmax(np.abs(v)) > 1e-3 for c, v in serial["values"].items() if "@x" in c)  # no zero fluxes
    for nprocs in (2, 3):
        got = series[nprocs]
        assert got["columns"] == serial["columns"] and np.array_equal(got["step"], serial["step"])
        for column in serial["columns"]:
            a, b = got["values"][column], serial["values"][column]
            assert np.array_equal(np.isnan(a), np.isnan(b)), (equations, nprocs, column)
            assert np.nanmax(np.abs(a - b)) <= 1e-12 * max(np.nanmax(np.abs(b)), 1e-300), (equations, nprocs, column)
