"""Run under mpiexec -n 3 by test_maxwell_bloch_ranks.py: Bloch-periodic runs on 3 ranks, on 2
of them (a sub-communicator) and on 1 (rank 0 alone), in one launch: a deformed box periodic in x
and y with a [material] slab and bloch_k along x and y (cut along z: every rank owns wraps), and
a box periodic in x only cut across x (on 3 ranks the middle one owns no wrap point), a phased
current sheet, an oblique TF/SF plane wave (only the middle of 3 ranks owns its surface); and an
oblique plane wave across a periodic wrap, refused on every rank of 3. Rank 0
prints, per case and rank count, the fields by global element id, the energy, the steps and
each rank's wrap points as JSON."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile

import numpy as np
from mpi4py import MPI
from quiet import quiet_barrier

from lobatto.api import Simulation, case_from_dict
from lobatto.errors import InputError

CASE = {
    # periodic in x and y; PEC at z: the partitioner cuts along z, so every rank owns wraps of x and y
    "mesh": {"elements": [2, 2, 6], "periodic": [True, True, False], "upper": [1.0, 1.0, 3.0], "boundary": "pec",
             "deform": {"x": "0.04*sin(pi*x)*sin(pi*y)*sin(pi*z/3)", "y": "0.03*sin(pi*x)*sin(pi*y)*sin(pi*z/3)"}},
    "discretization": {"order": 3}, "physics": {"equations": "maxwell", "bloch_k": [1.7, -0.9, 0.0]},
    "material": {"slab": {"where": "0.4 - abs(z - 1.5)", "epsilon": 3.0}},
    "initial": {"Ez": "exp(-4*(z-1)**2)*cos(2*x)", "Hx_im": "exp(-4*(z-2)**2)*sin(3*y)", "Ey": "sin(x+y)"},
    "time": {"t_end": 0.3}, "output": {"formats": []},
}
#: the same with a wrap only along x, on a mesh cut across x: with 3 ranks the middle one owns
#: no face of the x wrap
ACROSS = {**CASE, "mesh": {"elements": [6, 1, 1], "periodic": [True, False, False], "upper": [3.0, 0.5, 0.5],
                           "boundary": "pec"},
          "physics": {"equations": "maxwell", "bloch_k": [1.3, 0.0, 0.0]},
          "material": {}, "initial": {"Ey": "exp(-4*(x-1)**2)", "Hz_im": "exp(-4*(x-2)**2)"}}


#: a phased current sheet radiating into a [pml] at both z ends, cut along z: every rank holds
#: layer, sheet or neither
SHEET = {"mesh": {"elements": [1, 1, 12], "periodic": [True, True, False], "upper": [0.25, 0.25, 3.0],
                  "boundary": "pec"},
         "discretization": {"order": 3}, "physics": {"equations": "maxwell", "bloch_k": [3.1, 0.0, 0.0]},
         "pml": {"sides": ["zmin", "zmax"], "elements": 2},
         "source": {"sheet": {"type": "current", "Jy": "exp(-((t-0.6)/0.3)**2)*exp(-200*(z-1.1)**2)",
                              "Jx": "exp(-((t-0.5)/0.3)**2)*exp(-200*(z-1.6)**2)"}},
         "time": {"t_end": 1.5}, "output": {"formats": []}}


#: an oblique continuous plane wave (TF/SF) at 30 degrees with bloch_k = its k along x, its
#: total-field box 1.25 <= z <= 1.75 inside the middle third of the mesh (on 3 ranks the others
#: own no surface face: checked, 0, 4 and 0 faces per part)
WAVE = {**SHEET, "source": {"inc": {"type": "plane_wave", "direction": [0.5, 0.0, 0.75**0.5], "polarization": [0, 1, 0],
                                    "waveform": "continuous", "frequency": 1.0, "ramp": 0.3,
                                    "lower": [0.0, 0.0, 1.25], "upper": [0.25, 0.25, 1.75]}},
        "physics": {"equations": "maxwell", "bloch_k": [3.141592653589793, 0.0, 0.0]}, "time": {"t_end": 1.0}}


def run(data, comm, directory):
    with contextlib.redirect_stdout(io.StringIO()):
        sim = Simulation(case_from_dict({k: v for k, v in data.items() if v}, name="bloch"), backend="cpu",
                         output_dir=directory, comm=comm)
        sim.run()
    system = sim.system
    ids = np.asarray(system.mesh.element_ids)
    fields = np.asarray(system.backend.to_host(sim.u))
    gather = (lambda x: [x]) if comm is None else comm.gather
    parts = gather((ids.tolist(), fields.tolist(), int(system.bloch.wrap_points)))
    energy = system.energy(sim.u)
    energy = energy if comm is None else comm.allreduce(energy)
    if parts is None:
        return None
    ids = np.concatenate([p[0] for p in parts])
    fields = np.concatenate([np.array(p[1]) for p in parts], axis=1)[:, np.argsort(ids)]
    return {"fields": fields.tolist(), "energy": energy, "wraps": [p[2] for p in parts], "steps": sim.steps}


#: an oblique plane wave whose total-field box spans the periodic y axis (plane_waves.py refuses
#: it), on 3 ranks (the box is one layer of six elements along x)
OBLIQUE = {"mesh": {"elements": [6, 4, 1], "periodic": [False, True, True], "upper": [1.5, 1.0, 0.25],
                    "boundary": "absorbing"},
           "discretization": {"order": 2}, "physics": {"equations": "maxwell"}, "time": {"t_end": 0.1},
           "output": {"formats": []},
           "source": {"inc": {"type": "plane_wave", "direction": [1, 0.5, 0], "polarization": [0, 0, 1],
                              "waveform": "modulated_gaussian", "frequency": 1.0, "t0": 0.6, "width": 0.2,
                              "lower": [0.0, 0.0, 0.0], "upper": [0.25, 1.0, 0.25]}}}


def refusal(comm, directory) -> str:
    """The message every rank gets for OBLIQUE (collective: no rank may hang)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            Simulation(case_from_dict(OBLIQUE, name="oblique"), backend="cpu", output_dir=directory, comm=comm)
    except InputError as error:
        return str(error)
    return "accepted"


def main() -> int:
    world = MPI.COMM_WORLD
    pair = world.Split(0 if world.rank < 2 else 1, world.rank)
    scratch = tempfile.TemporaryDirectory() if world.rank == 0 else None
    root = world.bcast(scratch.name if scratch is not None else None)
    out = {}
    for name, data in (("case", CASE), ("across", ACROSS), ("sheet", SHEET), ("wave", WAVE)):
        found = {3: run(data, world, f"{root}/{name}3")}
        if world.rank < 2:
            found[2] = run(data, pair, f"{root}/{name}2")
        if world.rank == 0:
            found[1] = run(data, None, f"{root}/{name}1")
        out[name] = found
        quiet_barrier(world)  # the ranks left out of the 2- and 1-rank runs wait asleep
    messages = world.gather(refusal(world, f"{root}/oblique"))
    if world.rank == 0:
        out["refusals"] = messages
    quiet_barrier(world)
    if world.rank == 0:
        json.dump(out, sys.stdout)
        scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
