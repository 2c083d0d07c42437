"""Run under mpiexec -n 3 by test_step_check_ranks.py: the step check of a deformed N = 2 box
(maxwell upwind and acoustics central at their enforced cfl, both shortened) on 3 ranks, on
2 of them (a sub-communicator) and on 1 (rank 0 alone), in one launch; rank 0 prints, per
case, the dt and the check's record (without its seconds) of each rank count as JSON."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile

from mpi4py import MPI
from quiet import quiet_barrier

from lobatto.api import Simulation, case_from_dict

DEFORM = {"x": "0.15*sin(pi*x)*sin(pi*y)*sin(pi*z)", "y": "0.12*sin(pi*x)*sin(pi*y)*sin(pi*z)",
          "z": "0.1*sin(pi*x)*sin(pi*y)*sin(pi*z)"}
CASES = {"maxwell": ("upwind", 0.63), "acoustics": ("central", 0.74)}


def checked(equations, comm, directory):
    flux, cfl = CASES[equations]
    data = {"mesh": {"elements": [2, 2, 2], "deform": DEFORM}, "physics": {"equations": equations},
            "discretization": {"order": 2, "flux": flux, "volume_form": "split"},  # the collocated forms' check
            "time": {"t_end": 1.0, "cfl": cfl},
            "output": {"formats": []}}
    with contextlib.redirect_stdout(io.StringIO()):
        sim = Simulation(case_from_dict(data, name="check"), backend="cpu", output_dir=directory, comm=comm)
    record = {key: value for key, value in sim.step_check.items() if key != "seconds"}
    return {"dt": sim.dt, "steps": sim.steps, "record": record}


def main() -> int:
    world = MPI.COMM_WORLD
    pair = world.Split(0 if world.rank < 2 else 1, world.rank)
    scratch = tempfile.TemporaryDirectory() if world.rank == 0 else None
    root = world.bcast(scratch.name if scratch is not None else None)
    out = {}
    for equations in CASES:
        found = {3: checked(equations, world, f"{root}/{equations}3")}
        if world.rank < 2:
            found[2] = checked(equations, pair, f"{root}/{equations}2")
        if world.rank == 0:
            found[1] = checked(equations, None, f"{root}/{equations}1")
        out[equations] = found
        quiet_barrier(world)  # the ranks left out of the 2- and 1-rank runs wait asleep
    if world.rank == 0:
        json.dump(out, sys.stdout)
        scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
