"""Dispersive media under ``mpiexec -n P lobatto run``: Drude, Lorentz and Debye poles on
element-wise and point-sampled (masked) tables, with a per-point eps_inf, give the serial
fields on 2 and 3 ranks; a checkpoint written on 2 ranks continues on 3 to the serial fields;
a bad pole is one line, exit 2, on 3 ranks."""

from __future__ import annotations

import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, read_final, run, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [5, 2, 2]
periodic = [false, true, false]
boundary = "pec"
[mesh.boundaries]
xmax = "absorbing"
xmin = "absorbing"
[discretization]
order = 3
[physics]
equations = "maxwell"
[initial]
Ey = "exp(-20*((x-0.3)**2 + (z-0.5)**2))"
Hz = "exp(-20*(x-0.3)**2)*cos(pi*z)"
[time]
t_end = 0.4
{checkpoint}
[material.metal]
where = "x - 0.6"
sampling = "element"
model = "drude"
poles = [{{plasma_frequency = 1.5, collision_frequency = 0.2}}]
[material.film]
where = "0.04 - (x-0.45)**2 - (z-0.5)**2"
epsilon = "2 + x*z"
poles = [{{model = "lorentz", resonance_frequency = 1.0, delta_epsilon = 1.2, damping_frequency = 0.1}},
         {{model = "debye", delta_epsilon = 0.8, relaxation_time = 0.3}}]
"""


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return run_case(tmp_path_factory.mktemp("serial"), CASE.format(checkpoint=""), 1)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_reproduce_serial_fields_with_poles(serial, nprocs, tmp_path):
    summary, ids, fields = run_case(tmp_path, CASE.format(checkpoint=""), nprocs)
    serial_summary, serial_ids, serial_fields = serial
    assert summary["ranks"] == nprocs and np.array_equal(ids, serial_ids)
    assert summary["steps"] == serial_summary["steps"]
    assert summary["dispersion.film"]["elements"] == serial_summary["dispersion.film"]["elements"] > 0
    assert summary["energy"]["final"] == pytest.approx(serial_summary["energy"]["final"], rel=1e-12)
    assert np.max(np.abs(fields - serial_fields)) <= 1e-13 * np.abs(serial_fields).max()


def test_two_rank_checkpoint_continues_on_three(serial, tmp_path):
    text = CASE.format(checkpoint="[checkpoint]\nevery = 7\n")
    (tmp_path / "case.toml").write_text(text)
    out = tmp_path / "out"
    first = run(2, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(out), "--quiet"])
    assert first.returncode == 0, describe(first)
    checkpoints = sorted((out / "checkpoints").iterdir())
    assert checkpoints, "no checkpoint written"
    again = run(3, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(out), "--quiet",
                    "--restart", str(checkpoints[0]), "--overwrite"])
    assert again.returncode == 0, describe(again)
    summary, ids, fields = read_final(out)
    serial_fields = serial[2]
    assert summary["ranks"] == 3 and summary["restarts"]
    assert np.max(np.abs(fields - serial_fields)) <= 1e-13 * np.abs(serial_fields).max()


def test_a_bad_pole_is_reported_once(tmp_path):
    text = CASE.format(checkpoint="").replace("plasma_frequency = 1.5", "plasma_frequency = -1.5")
    (tmp_path / "case.toml").write_text(text)
    result = run(3, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(tmp_path / "out"), "--quiet"])
    assert result.returncode == 2, describe(result)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, describe(result)
    assert "[material.metal] poles[0].plasma_frequency must be a number from 1e-30 to 1e+30" in lines[0]
