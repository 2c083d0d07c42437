"""Navier–Stokes on a 2-D mesh on 1, 2 and 3 ranks (one mpiexec per rank count): the same
fields (ux, uy, p, a scalar) and the same forces, to the last bit, with ranks that hold no inflow face and none
of the force surface (tests/mpi/navier_stokes_2d_run.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

HERE = Path(__file__).resolve().parent


def launch(directory: Path, nprocs: int):
    directory.mkdir(parents=True, exist_ok=True)
    result = run(nprocs, [str(HERE / "navier_stokes_2d_run.py"), str(directory / "out")], timeout=180)
    assert result.returncode == 0, describe(result)
    table = np.genfromtxt(directory / "out" / "ns2d_forces.csv", delimiter=",", names=True)
    return np.load(directory / "out" / "fields.npy"), table


def test_one_two_and_three_ranks_agree(tmp_path):
    fields, table = launch(tmp_path / "1", 1)
    assert fields.shape == (4, 12, 1, 5, 5) and np.abs(fields[1]).max() > 1e-3  # uy: the force moved it
    assert abs(table["Fxinflow"][-1]) > 1e-3 and abs(table["Fxwalls"][-1]) > 1e-3
    for nprocs in (2, 3):
        other, other_table = launch(tmp_path / str(nprocs), nprocs)
        # the assembly adds shared copies in global order and the sums are exact: the same bits
        assert np.array_equal(other, fields), (nprocs, np.abs(other - fields).max())
        for name in table.dtype.names:
            assert np.array_equal(other_table[name], table[name]), (nprocs, name)
