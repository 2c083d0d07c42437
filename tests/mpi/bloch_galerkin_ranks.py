"""Run under mpiexec -n 3 by test_maxwell_bloch_galerkin_ranks.py: bloch_ranks.py's Bloch runs
with [discretization] volume_form = "galerkin" on 3 ranks, on 2 of them (a sub-communicator)
and on 1 (rank 0 alone), in one launch: a curved box periodic in x and y, its wrap faces curved
too, cut along z (every rank owns wraps) with the central flux; a box periodic in x only cut
across x (on 3 ranks the middle one owns no wrap point); a phased current sheet into a [pml] at
both z ends; an oblique TF/SF plane wave (the Galerkin sums correction, one per part) whose
surface only the middle of 3 ranks owns. Rank 0 prints, per case and rank count, the fields by
global element id, the energy, the steps and each rank's wrap points as JSON (bloch_ranks.run)."""

from __future__ import annotations

import json
import sys

from bloch_ranks import ACROSS, CASE, SHEET, WAVE, run
from mpi4py import MPI
from quiet import on_three_two_one



def galerkin(data, **changes):
    out = {**data, "discretization": {**data["discretization"], "volume_form": "galerkin"}, **changes}
    out.pop("material", None)  # the Galerkin form takes uniform eps, mu only
    return out


#: the wrap faces curved: the deformation is periodic in x and y but does not vanish there
CURVED = galerkin(CASE, mesh={**CASE["mesh"], "deform": {
    "x": "0.04*sin(2*pi*y)*sin(pi*z/3) + 0.02*sin(2*pi*x)*cos(2*pi*y)", "y": "0.03*sin(2*pi*x)*sin(pi*z/3)",
    "z": "0.05*sin(2*pi*x)*sin(2*pi*y)*sin(pi*z/3)"}})
CURVED["discretization"]["flux"] = "central"


def main() -> int:
    world = MPI.COMM_WORLD
    out = on_three_two_one(world, {"curved": CURVED, "across": galerkin(ACROSS), "sheet": galerkin(SHEET),
                                   "wave": galerkin(WAVE)}, run)
    if world.rank == 0:
        json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
