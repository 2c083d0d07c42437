"""The multistep path on 1, 2 and 3 ranks: variable dt from the largest CFL number over ranks
gives the same steps, and the same field bitwise (the test system is pointwise); a restart in
the middle equals the uninterrupted run; step lines come from rank 0 only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mpirun import SKIP_REASON, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]
SCRIPT = str(Path(__file__).resolve().parent / "multistep_run.py")


def launch(directory, nprocs, *extra):
    proc = run(nprocs, [SCRIPT, str(directory), *extra])
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in (directory / "steps.jsonl").read_text().splitlines()]
    return proc.stdout, rows, np.load(directory / "u.npy")


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return launch(tmp_path_factory.mktemp("serial"), 1)


@pytest.mark.parametrize("nprocs, cut", [(2, None), (3, None), (3, "17")])
def test_the_same_steps_and_field_on_several_ranks(tmp_path, serial, nprocs, cut):
    stdout, rows, u = launch(tmp_path, nprocs, *([cut] if cut else []))
    serial_stdout, serial_rows, serial_u = serial
    strip = lambda rs: [{k: v for k, v in r.items() if k != "seconds"} for r in rs]  # noqa: E731
    assert strip(rows) == strip(serial_rows) and rows[-1]["t"] == 1.0
    assert np.array_equal(u, serial_u)
    lines = [line for line in stdout.splitlines() if line.startswith("step ")]
    assert [int(line.split()[1]) for line in lines] == [r["step"] for r in rows]  # once each: rank 0 only
    assert stdout.splitlines()[-1] == serial_stdout.splitlines()[-1]
