"""Run under mpiexec -n 3 by test_maxwell_2d_ranks.py: 2-D Maxwell (quads; compiled CPU
kernels) on 3 ranks, on 2 of them (a sub-communicator) and on 1 (rank 0 alone), in one launch:
20 lsrk45 steps from z-independent data, rank 0 prints JSON with the fields in global element
order per rank count. The case has a medium with conductivity, Drude poles, a current and a
PML at xmax, all at x > 4 of a 6 x 2 box: rcb gives the 3-rank run's rank 0 the columns at
x < 2, so it holds none of them (and no face of the layer's side). The mesh is made here (the
[mesh] key of the case is a placeholder: 2-entry elements are another slice's)."""

from __future__ import annotations

import json

import numpy as np
from mpi4py import MPI
from quiet import quiet_barrier

from lobatto.api import case_from_dict
from lobatto.backends.cpu import CpuBackend
from lobatto.integrators.stepper import Stepper, get_scheme
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.partition import partition_box
from lobatto.systems.maxwell.system import MaxwellSystem

ELEMENTS, ORDER = (6, 2), 3
CASE = {"mesh": {"elements": [6, 2, 1]}, "discretization": {"order": ORDER}, "physics": {"equations": "maxwell"},
        "time": {"t_end": 1.0, "dt": 0.01}, "output": {"formats": [], "every": 0},
        "material": {"rod": {"where": "0.5 - (x-4.6)**2 - (y-1.0)**2", "epsilon": 2.0, "sigma": 0.3},
                     "metal": {"where": "0.2 - (x-5.0)**2 - (y-0.5)**2",
                               "poles": [{"model": "drude", "plasma_frequency": 0.8, "collision_frequency": 0.1}]}},
        "source": {"j": {"type": "current", "lower": [4.2, 0.3, -1.0], "upper": [5.0, 1.5, 1.0],
                         "Jz": "sin(3*t) * exp(-(x-4.6)**2 - (y-0.9)**2)", "Jy": "cos(2*t) * x"}},
        "pml": {"sides": ["xmax"], "elements": 1}}


def fields(comm):
    rank, size = (0, 1) if comm is None else (comm.rank, comm.size)
    ids = None if size == 1 else partition_box(ELEMENTS, size, rank)
    mesh = box_mesh(ELEMENTS, lower=(0.0, 0.0), upper=(6.0, 2.0), boundaries={"xmin": "pmc", "ymin": "absorbing"},
                    element_ids=ids).halo_last()
    system = MaxwellSystem.from_case(case_from_dict(CASE, name="maxwell_2d_ranks"), mesh,
                                     compute_geometry(mesh, ORDER), CpuBackend(), comm)
    x, y = system.geometry.coords[0], system.geometry.coords[1]
    u = system.allocate_state()
    u[0], u[1], u[2] = np.sin(x) * np.cos(y), np.exp(-(x - 2.0) ** 2), np.cos(0.5 * x + y)
    u[3], u[4], u[5] = 0.3 * np.sin(y), np.cos(x - y), np.exp(-(x - 3.0) ** 2 - (y - 1.0) ** 2)
    stepper = Stepper(system, get_scheme("lsrk45"))
    for step in range(20):
        stepper.step(u, step * 0.01, 0.01)
    mine = np.asarray(system.mesh.element_ids)
    terms = sorted(t.name for t in system.terms if t.count)  # the terms with elements on this rank
    parts = comm.gather((mine, u, terms), root=0) if comm is not None else [(mine, u, terms)]
    if parts is None:
        return None
    order = np.argsort(np.concatenate([p[0] for p in parts]))
    whole = np.concatenate([p[1] for p in parts], axis=1)[:, order]
    return {"u": whole.tolist(), "terms": [p[2] for p in parts], "shape": list(whole.shape)}


def main() -> int:
    world = MPI.COMM_WORLD
    pair = world.Split(0 if world.rank < 2 else 1, world.rank)
    found = {3: fields(world)}
    if world.rank < 2:
        found[2] = fields(pair)
    if world.rank == 0:
        found[1] = fields(None)
        print(json.dumps(found))
    quiet_barrier(world)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
