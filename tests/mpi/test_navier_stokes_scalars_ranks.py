"""Passive scalars of Navier–Stokes on 1, 2 and 3 ranks (docs/navier-stokes.md, "Passive
scalars"): a channel (walls at y = +-1, periodic x and z, constant flow rate) with a
temperature between a hot and a cold wall and a dye with a source, a flux through the lower
wall and none through the upper one; the temperature drives the flow too (a buoyancy force
across the channel, docs/navier-stokes.md, "Buoyancy"). The fields (to 1e-12, gathered by global element id from
the HDF5 snapshot), the steps and the scalar iterations are those of one rank; the Nek5000
temperature slot holds the same values; a checkpoint written on 2 ranks, continued on 3,
equals the uninterrupted 1-rank run.

This file is also the script that ``mpiexec`` runs:

    python test_navier_stokes_scalars_ranks.py OUT run            to t_end into OUT
    python test_navier_stokes_scalars_ranks.py OUT cut STEPS      STEPS steps, then a checkpoint
    python test_navier_stokes_scalars_ranks.py OUT resume DIR     from DIR/checkpoint to t_end
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
CUT = 3


def build_case():
    from lobatto.api import parse_case

    data = {
        "physics": {"equations": "navier_stokes", "viscosity": 0.05, "flow_rate": 2.0 / 3.0,
                    "scalars": ["temperature", "dye"], "force_y": "2*(temperature - 0.5) + 0.1*dye*sin(pi*x)"},
        "scalar": {"temperature": {"diffusivity": 0.02, "tolerance": 1e-12},
                   "dye": {"diffusivity": 0.05, "source": "sin(pi*x)*(1 - y**2)", "tolerance": 1e-12}},
        "mesh": {"elements": [3, 2, 2], "lower": [0.0, -1.0, 0.0], "upper": [2.0, 1.0, 1.0],
                 "periodic": [True, False, True], "boundary": "wall"},
        "discretization": {"order": 4},
        "time": {"integrator": "bdf3", "dt": 0.05, "t_end": 0.3},
        "solver": {"pressure": {"tolerance": 1e-10}, "velocity": {"tolerance": 1e-12}},
        "boundary": {"ymin": {"temperature": "1 + 0.1*sin(pi*x)*cos(2*pi*z)", "dye_flux": "0.1*cos(pi*x)"},
                     "ymax": {"temperature": 0}},
        "initial": {"ux": "0.9*(1 - y**2) + 0.05*sin(pi*x)*(1 - y**2)",
                    "uz": "0.05*cos(pi*x)*sin(2*pi*z)*(1 - y**2)", "temperature": "(1 - y)/2",
                    "dye": "exp(-4*(x - 1)**2)*(1 - y**2)"},
        "output": {"formats": ["hdf5", "nek"], "name": "channel", "every": 6},
    }
    return parse_case(data, source="<channel>", name="channel")


def main(out: Path, mode: str, argument: str | None) -> None:
    from lobatto.runner.simulation import Simulation

    sim = Simulation(build_case(), "cpu", out, comm="world")
    if mode == "cut":
        sim.advance(int(argument))
        sim.checkpoint(out / "checkpoint")
        return
    if mode == "resume":
        sim.restart(Path(argument) / "checkpoint")
    sim.run()


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1] / "src"))
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    sys.exit(0)

from mpirun import SKIP_REASON, describe, read_final, run  # noqa: E402

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def launch(nprocs: int, out: Path, mode: str = "run", argument: str | None = None):
    """(summary, element ids, fields, steps.jsonl rows) of a run on nprocs ranks."""
    result = run(nprocs, [os.path.abspath(__file__), str(out), mode, *([argument] if argument else [])], timeout=120)
    assert result.returncode == 0, describe(result)
    if mode == "cut":
        return None
    summary, ids, fields = read_final(out)
    rows = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    return summary, ids, fields, rows


def steps_of(rows: list) -> list:
    return [(r["step"], r["t"], r["pressure_iterations"], r["velocity_iterations"], r["scalar_iterations"])
            for r in rows]


def relative_difference(a, b) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    found = launch(1, out)
    summary, ids, fields, rows = found
    assert summary["ranks"] == 1 and len(rows) == 6 and np.isfinite(fields).all()
    assert all(r["scalar_iterations"] > 0 for r in rows)
    assert np.abs(fields[5]).max() > 0.5  # the dye is there
    return found + (out,)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_give_the_serial_fields_and_iterations(serial, tmp_path, nprocs):
    from lobatto.io import nek5000

    s1, ids1, u1, rows1, out1 = serial
    sp, idsp, up, rowsp = launch(nprocs, tmp_path)
    assert sp["ranks"] == nprocs and np.array_equal(ids1, idsp)
    assert steps_of(rowsp) == steps_of(rows1)
    difference = relative_difference(up, u1)
    assert difference <= 1e-12, f"{nprocs} ranks: fields differ by {difference:.2e}"
    one = nek5000.read_field_file(out1 / "channel0.f00001")
    many = nek5000.read_field_file(tmp_path / "channel0.f00001")
    assert one["rdcode"] == many["rdcode"] == "XUPTS01"
    assert np.abs(many["fields"]["T"] - one["fields"]["T"]).max() <= 1e-12
    assert np.array_equal(one["fields"]["T"], u1[4])


def test_two_rank_checkpoint_continued_on_three_equals_one_rank(serial, tmp_path):
    s1, ids1, u1, rows1, _ = serial
    launch(2, tmp_path / "first", mode="cut", argument=str(CUT))
    sr, idsr, ur, rowsr = launch(3, tmp_path / "second", mode="resume", argument=str(tmp_path / "first"))
    assert sr["ranks"] == 3 and sr["restarts"][0]["from"]["ranks"] == 2
    assert np.array_equal(ids1, idsr) and steps_of(rowsr) == steps_of(rows1)[CUT:]
    difference = relative_difference(ur, u1)
    assert difference <= 1e-12, f"restarted on 3 ranks, the fields differ by {difference:.2e}"
