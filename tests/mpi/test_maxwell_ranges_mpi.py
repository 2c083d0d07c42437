"""Maxwell tables that touch nothing, and sources checked at set-up, under ``mpiexec -n P
lobatto run``: the decision is global (a material or current box present on one rank only
is accepted, one present nowhere is one line, exit 2, on any number of ranks; no hang)."""

from __future__ import annotations

import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [6, 1, 1]
upper = [3.0, 1.0, 1.0]
boundary = "pec"
[discretization]
order = 2
[physics]
equations = "maxwell"
[initial]
Ey = "sin(pi*z)"
[time]
t_end = 0.02
[output]
formats = []
"""


def lobatto(tmp_path, text, nprocs):
    (tmp_path / "case.toml").write_text(CASE + text)
    result = run(nprocs, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(tmp_path / "out"),
                          "--quiet"], timeout=90)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return result, lines


@pytest.mark.parametrize("nprocs", [2, 3])
@pytest.mark.parametrize("text, message", [
    ('[material.far]\nwhere = "x - 5"\nepsilon = 2.0\n', "[material.far] where = 'x - 5' is not > 0 at any point"),
    ('[source.c]\ntype = "current"\nJy = "1"\nlower = [4, 0, 0]\nupper = [5, 1, 1]\n',
     "[source.c] the current's box lower = [4, 0, 0], upper = [5, 1, 1] holds no point of the mesh"),
    ('[source.d]\ntype = "electric_dipole"\nposition = [2.9, 0.5, 0.5]\ndirection = [0, 1, 0]\namplitude = 1e25\n'
     'waveform = "ricker"\nfrequency = 1.0\nt0 = 0.5\n[backend]\nprecision = "float32"\n',
     "[source.d] amplitude = 1e+25 gives the point source a density"),
    # J out of its range on the last element only: at t = 0, and at t_end (checked before the run)
    ('[source.c]\ntype = "current"\nJy = "1e35*x"\nlower = [2.5, 0, 0]\nupper = [3, 1, 1]\n',
     '[source.c] Jy = "1e35*x" is 2.5e+35 at t = 0 at some points; its values must be from -1e+30 to 1e+30'),
    ('[source.c]\ntype = "current"\nJy = "1e33*t*x"\nlower = [2.5, 0, 0]\nupper = [3, 1, 1]\n',
     '[source.c] Jy = "1e33*t*x" is 5e+31 at t = 0.02 at some points; its values must be from -1e+30 to 1e+30'),
])
def test_a_table_that_touches_nothing_is_one_line_on_every_rank_count(tmp_path, nprocs, text, message):
    result, lines = lobatto(tmp_path, text, nprocs)
    assert result.returncode == 2 and len(lines) == 1 and message in lines[0], describe(result)


@pytest.mark.parametrize("nprocs", [2, 3])
@pytest.mark.parametrize("text", [
    '[material.end]\nwhere = "x - 2.5"\nepsilon = 2.0\nsampling = "element"\n',
    '[source.c]\ntype = "current"\nJy = "1"\nlower = [2.5, 0, 0]\nupper = [3, 1, 1]\n',
])
def test_a_table_on_the_last_rank_only_is_accepted(tmp_path, nprocs, text):
    """Only the last element (x > 2.5) holds it: the first ranks have none of it."""
    result, lines = lobatto(tmp_path, text, nprocs)
    assert result.returncode == 0, describe(result)
