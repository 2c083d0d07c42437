"""Run under mpiexec -n 3 by test_growth_guard_ranks.py: an unstable case (a [pml] layer on
xmin only, a dipole near it and a Drude medium reaching into the layer, stepped 1.9 x too long with cfl_check = false) on 3 ranks, on
2 of them (a sub-communicator) and on 1 (rank 0 alone), in one launch. The mesh is a line of 6
elements split along x, so on 3 ranks the last owns no layer element and no source. Rank 0
prints, for every rank and rank count, where the growth guard stopped the run, as JSON lines."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile

from mpi4py import MPI

from lobatto.api import Simulation, case_from_dict
from lobatto.errors import SolverError

CASE = {"mesh": {"elements": [6, 1, 1], "upper": [1.5, 0.25, 0.25], "periodic": [False, True, True],
                 "boundary": "pec"},
        "discretization": {"order": 3}, "physics": {"equations": "maxwell"}, "output": {"formats": []},
        "pml": {"sides": ["xmin"], "elements": 1, "reflection": 1e-4},
        "source": {"a": {"type": "electric_dipole", "position": [0.3, 0.1, 0.1], "direction": [0, 1, 0],
                         "waveform": "gaussian", "t0": 0.3, "width": 0.1}},
        # elements 0 (in the layer, rank 0) and 1: the hint counts the overlap over ranks
        "material": {"metal": {"where": "0.4 - x", "sampling": "element", "model": "drude",
                               "poles": [{"plasma_frequency": 1.0, "collision_frequency": 1.0}]}}}


def stopped(comm, directory, dt=None):
    time = {"t_end": 6.0} if dt is None else {"t_end": 6.0, "dt": dt, "cfl_check": False}
    with contextlib.redirect_stdout(io.StringIO()):
        sim = Simulation(case_from_dict(dict(CASE, time=time), name="guard"), backend="cpu", output_dir=directory,
                         comm=comm)
    if dt is None:
        return sim.dt
    layer = next(term for term in sim.system.terms if term.name == "pml")
    try:
        sim.run()
    except SolverError as error:
        text = str(error)
        return {"step": sim.step_count, "t": sim.t, "collective": bool(getattr(error, "collective", False)),
                "message": text[:text.index(": the discrete energy")], "layer": layer.count,
                "sources": sim.system.terms[0].count,
                "overlap": "[material.metal] (dispersive) reaches into the [pml] layer on 1 element;" in text}
    return {"step": sim.step_count, "finished": True}


def main() -> int:
    world = MPI.COMM_WORLD
    pair = world.Split(0 if world.rank < 2 else 1, world.rank)
    scratch = tempfile.TemporaryDirectory() if world.rank == 0 else None
    root = world.bcast(scratch.name if scratch is not None else None)
    dt = 1.9 * stopped(world, f"{root}/dt")
    found = {3: stopped(world, f"{root}/three", dt)}
    if world.rank < 2:
        found[2] = stopped(pair, f"{root}/two", dt)
    if world.rank == 0:
        found[1] = stopped(None, f"{root}/one", dt)
    everyone = world.gather({"rank": world.rank, "found": found})
    if world.rank == 0:
        for line in everyone:
            print(json.dumps(line), flush=True)
        scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
