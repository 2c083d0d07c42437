"""Restart onto another order and mesh across rank counts, in one mpiexec launch of 3 ranks
(runner/restart_onto.py, docs/restart.md):

    A  1 rank:  a Taylor–Green state (periodic box, 2 x 1 x 2 elements, order 4), one BDF2
                step, checkpointed
    B  2 ranks: A interpolated onto 3 x 1 x 3 elements at order 5 (every rank locates its own
                points in the whole old mesh and reads the old elements it needs), checkpointed
    C  3 ranks: B interpolated onto 2 x 2 x 2 elements at order 3, then one BDF1 step

each against the same restart on 1 rank (rank 0 with comm=None): the interpolated fields and
the step after C must be equal to round-off (NS sums are reproducible: the step bitwise).
And [time] steady_tolerance (runner/steady_stop.py) on 3 ranks, one element each: a channel
from rest stops at the same step, with the same measured change, as on 1 rank, and so does
the 3-rank run continued from its checkpoint of step 6 (between two checks: the checkpoint
holds the steady-state test's reference, by element; with its own state as the reference it
would measure 5.5e-3 at step 8, not 2.7e-2, and stop there).

This file is also the script mpiexec runs: ``python test_restart_onto_ranks.py OUT``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
TWO_PI = 2 * np.pi


def tgv(order: int, elements, t_end: float):
    from lobatto.api import parse_case

    return parse_case({
        "physics": {"equations": "navier_stokes", "viscosity": 0.05},
        "mesh": {"elements": list(elements), "upper": [TWO_PI] * 3, "periodic": [True] * 3},
        "discretization": {"order": order},
        "time": {"integrator": "bdf2", "dt": 0.05, "t_end": t_end},
        "solver": {"pressure": {"tolerance": 1e-10}, "velocity": {"tolerance": 1e-12}},
        "initial": {"ux": "sin(x)*cos(y)*cos(z)", "uy": "-cos(x)*sin(y)*cos(z)",
                    "p": "(cos(2*x) + cos(2*y))*(cos(2*z) + 2)/16"},
        "output": {"formats": [], "name": "tgv"},
    }, source="<tgv>", name="tgv")


def channel(checkpoint=None):
    """A channel at constant flow rate from rest, 1 x 3 x 1 elements: Poiseuille flow by step 12."""
    from lobatto.api import parse_case

    return parse_case({
        "physics": {"equations": "navier_stokes", "viscosity": 2.0, "flow_rate": 2.0 / 3.0},
        "mesh": {"elements": [1, 3, 1], "lower": [0.0, -1.0, 0.0], "upper": [1.0, 1.0, 1.0],
                 "periodic": [True, False, True], "boundary": "wall"},
        "discretization": {"order": 3},
        "time": {"integrator": "bdf2", "dt": 0.05, "t_end": 5.0, "steady_tolerance": 1e-2, "steady_every": 4},
        "output": {"formats": [], "name": "channel", "log_every": 1000},
        **({"checkpoint": checkpoint} if checkpoint else {}),
    }, source="<channel>", name="channel")


def gathered(sim, comm):
    """(F, E, n, n, n) of the whole mesh by global id, on rank 0 of comm (None elsewhere)."""
    values = np.stack(list(sim.fields().values()))
    parts = [(sim.system.mesh.element_ids, values)] if comm is None else comm.gather(
        (sim.system.mesh.element_ids, values))
    if parts is None:
        return None
    out = np.zeros((values.shape[0], sim.system.mesh.num_global_elements) + values.shape[2:])
    for ids, part in parts:
        out[:, ids] = part
    return out


def main(out: Path) -> None:
    from mpi4py import MPI
    from quiet import quiet_barrier

    from lobatto.runner.simulation import Simulation

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    found = {}
    if rank == 0:  # A: 1 rank
        sim = Simulation(tgv(4, (2, 1, 2), 0.05), "cpu", out / "a", comm=None)
        sim.run()
        sim.checkpoint(out / "A")
    quiet_barrier(world)  # the ranks outside the smaller runs wait asleep
    pair = world.Split(0 if rank < 2 else MPI.UNDEFINED, rank)
    if rank < 2:  # B: 2 ranks
        sim = Simulation(tgv(5, (3, 1, 3), 0.1), "cpu", out / "b", comm=pair)
        sim.restart(out / "A", interpolate=True)
        values = gathered(sim, pair)
        sim.checkpoint(out / "B")
        sim.close()
        if rank == 0:
            serial = Simulation(tgv(5, (3, 1, 3), 0.1), "cpu", out / "b1", comm=None)
            serial.restart(out / "A", interpolate=True)
            found["B"] = float(np.abs(values - gathered(serial, None)).max())
            found["B_scale"] = float(np.abs(values).max())
            found["B_step"] = sim.step_count
    quiet_barrier(world)  # the ranks outside the smaller runs wait asleep
    sim = Simulation(tgv(3, (2, 2, 2), 0.15), "cpu", out / "c", comm=world)  # C: 3 ranks
    sim.restart(out / "B", interpolate=True)
    values = gathered(sim, world)
    sim.run()
    stepped = gathered(sim, world)
    if rank == 0:
        serial = Simulation(tgv(3, (2, 2, 2), 0.15), "cpu", out / "c1", comm=None)
        serial.restart(out / "B", interpolate=True)
        found["C"] = float(np.abs(values - gathered(serial, None)).max())
        serial.run()
        found["C_step"] = float(np.abs(stepped - gathered(serial, None)).max())
        found["C_scale"] = float(np.abs(stepped).max())
        found["steps"] = [sim.step_count, serial.step_count]
        found["t"] = [sim.t, serial.t]
    steady = [Simulation(channel({"every": 6, "keep": 10}), "cpu", out / "d", comm=world).run()]
    between_checks = out / "d" / "checkpoints" / "channel_000006"
    continued = Simulation(channel(), "cpu", out / "d6", comm=world).restart(between_checks)
    steady.append(continued.run())
    if rank == 0:
        steady.append(Simulation(channel(), "cpu", out / "d1", comm=None).run())
        found["steady"] = [(s["stopped"], s["steps"], s["steady"]["change"]) for s in steady]
        (out / "found.json").write_text(json.dumps(found))


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1] / "src"))
    main(Path(sys.argv[1]))
    sys.exit(0)

from mpirun import SKIP_REASON, describe, run  # noqa: E402

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def test_restart_onto_other_meshes_1_to_2_to_3_ranks(tmp_path):
    result = run(3, [os.path.abspath(__file__), str(tmp_path)], timeout=300)
    assert result.returncode == 0, describe(result)
    found = json.loads((tmp_path / "found.json").read_text())
    assert found["B_scale"] > 0.5 and found["C_scale"] > 0.5, found
    assert found["B"] <= 1e-14 * found["B_scale"] and found["C"] <= 1e-14 * found["C_scale"], found
    assert found["C_step"] <= 1e-12 * found["C_scale"], found
    assert found["B_step"] == 1 and found["steps"] == [3, 3] and found["t"][0] == found["t"][1], found
    (stopped, steps, change), continued, serial = found["steady"]
    assert stopped == "steady" and steps == 12 and [stopped, steps, change] == serial == continued, found
