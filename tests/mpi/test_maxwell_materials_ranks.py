"""Maxwell in heterogeneous media under ``mpiexec -n P lobatto run``: per-point and
element-wise materials, conductivity and a medium whose fastest part lies on some ranks
only (the time step is reduced over ranks) give the serial fields on 2 and 3 ranks; an
unknown region is one line, exit 2."""

from __future__ import annotations

import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [4, 2, 2]
boundary = "pec"
[mesh.boundaries]
xmax = "absorbing"
[mesh.deform]
x = "0.02*sin(4*pi*x)*sin(pi*y)*sin(pi*z)"
[discretization]
order = 3
[physics]
equations = "maxwell"
epsilon = 2.0
[initial]
Ey = "exp(-20*((x-0.5)**2 + (z-0.5)**2))"
Hz = "sin(pi*y)*exp(-20*(x-0.4)**2)"
[time]
t_end = 0.3
[material.fast]
where = "0.3 - x"
epsilon = 1.0
sampling = "element"
[material.lens]
where = "0.04 - (x-0.6)**2 - (y-0.5)**2 - (z-0.5)**2"
epsilon = "3 + x*y"
mu = 1.5
[material.lossy]
where = "y - 0.5"
sigma = "2*z"
"""


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("serial"), CASE, 1)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_reproduce_serial_fields_with_materials(serial, nprocs, tmp_path):
    summary, ids, fields = run_case(tmp_path, CASE, nprocs)
    serial_summary, serial_ids, serial_fields = serial
    assert summary["ranks"] == nprocs and np.array_equal(ids, serial_ids)
    assert summary["steps"] == serial_summary["steps"]
    assert np.max(np.abs(fields - serial_fields)) <= 1e-13 * np.abs(serial_fields).max()


def test_an_unknown_region_is_reported_once(tmp_path):
    text = CASE + '\n[material.glas]\nepsilon = 2.0\n'
    (tmp_path / "case.toml").write_text(text)
    result = run(3, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(tmp_path / "out"), "--quiet"])
    assert result.returncode == 2, describe(result)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, describe(result)
    assert "[material.glas]: no region 'glas' in the mesh" in lines[0]


@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_a_value_out_of_range_names_the_global_element_once(tmp_path, nprocs):
    """epsilon < 0 only on elements of the last ranks: the same line on any number of ranks,
    naming the lowest such element by global id (a rank's local index meant nothing)."""
    text = CASE.split("[material.fast]")[0] + '[material.all]\nepsilon = "0.6 - x"\n'
    (tmp_path / "case.toml").write_text(text)
    result = run(nprocs, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(tmp_path / "out"),
                          "--quiet"], timeout=60)
    assert result.returncode == 2, describe(result)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        f"lobatto: error: {tmp_path / 'case.toml'}: [material.all] epsilon = \"0.6 - x\" is -0.0809 in element 2 "
        "(box index 2,0,0) centred at (0.625, 0.25, 0.25); its values must be from 1e-30 to 1e+30 (c = "), \
        describe(result)
