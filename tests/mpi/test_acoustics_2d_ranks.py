"""Acoustics on a 2-D mesh on 1, 2 and 3 ranks (one mpiexec per rank count) gives the same
fields and integrals, with ranks that hold no face of the absorbing side; a 2-D mesh for a
system that does not run in 2-D ends the job with one error line and exit 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

HERE = Path(__file__).resolve().parent


def launch(directory: Path, nprocs: int, flux: str):
    directory.mkdir(parents=True, exist_ok=True)
    result = run(nprocs, [str(HERE / "acoustics_2d_run.py"), str(directory / "out"), flux], timeout=120)
    assert result.returncode == 0, describe(result)
    table = np.genfromtxt(directory / "out" / "ranks2d_probes.csv", delimiter=",", names=True)
    return np.load(directory / "out" / "fields.npy"), table


@pytest.mark.parametrize("flux", ["upwind", "central"])
def test_one_two_and_three_ranks_agree(tmp_path, flux):
    fields, table = launch(tmp_path / "1", 1, flux)
    assert fields.shape == (3, 12, 1, 5, 5) and np.abs(fields[1:]).max() > 0.05
    flux_column = table["intensity_fluxxmax"]
    assert flux_column.max() > 1e-3  # the pulse reaches the absorbing side within t_end
    for nprocs in (2, 3):
        other, other_table = launch(tmp_path / str(nprocs), nprocs, flux)
        assert np.abs(other - fields).max() <= 1e-13 * np.abs(fields).max(), nprocs
        for name in table.dtype.names:
            assert np.allclose(other_table[name], table[name], rtol=1e-12, atol=1e-14 * np.abs(table[name]).max()), \
                (nprocs, name)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_a_3d_only_system_on_a_2d_mesh_ends_every_rank_with_one_line(tmp_path, nprocs):
    case = tmp_path / "case.toml"
    case.write_text('[mesh]\nelements = [3, 2]\n[physics]\nequations = "acoustics"\n[time]\nt_end = 0.1\n'
                    '[output]\nformats = []\n')
    result = run(nprocs, [str(HERE / "three_d_only_run.py"), "run", str(case), "-o", str(tmp_path / "out"), "--quiet"],
                 timeout=60)
    assert result.returncode == 2, describe(result)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("lobatto: error:"), describe(result)
    assert "2-D" in lines[0] and '"acoustics"' in lines[0] and str(case) in lines[0], describe(result)
