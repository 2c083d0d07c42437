"""Run under mpiexec -n 3 by test_step_check_ranks.py: the step check of a deformed N = 2 box
(maxwell upwind and acoustics central at their enforced cfl, both shortened) on 3 ranks, on
2 of them (a sub-communicator) and on 1 (rank 0 alone), in one launch; rank 0 prints, per
case, the dt and the check's record (without its seconds) of each rank count as JSON."""

from __future__ import annotations

import contextlib
import io
import json
import sys

from mpi4py import MPI
from quiet import on_three_two_one

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
    out = on_three_two_one(world, {equations: equations for equations in CASES}, checked)
    if world.rank == 0:
        json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
