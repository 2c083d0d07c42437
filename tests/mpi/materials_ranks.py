"""Run under mpiexec -n 3 by test_maxwell_material_features_ranks.py: cases with a library
material (material = "Au"), a diagonal anisotropic medium (also with poles, a dipole and a
current), a sub-cell averaged interface (also a dispersive one),
each on 3 ranks, on 2 of them (a sub-communicator) and on 1 (rank 0 alone), in one launch;
rank 0 prints, per case and rank count, the steps, energy and fields in global element order
(as lists) as JSON. The features sit at x > 0.6 of a 5-element row, so a rank of 3 owns none
(nor the dipole's point, nor the current's elements)."""

from __future__ import annotations

import contextlib
import io
import json
import sys

import numpy as np
from mpi4py import MPI
from quiet import on_three_two_one

from lobatto.api import Simulation, case_from_dict

BASE = {"mesh": {"elements": [5, 2, 1], "upper": [1.0, 0.4, 0.2], "periodic": [False, True, True],
                 "boundary": "pec"},
        "discretization": {"order": 2}, "physics": {"equations": "maxwell"},
        "initial": {"Ex": "exp(-20*(x-0.4)**2)", "Ey": "exp(-20*(x-0.3)**2)*sin(5*pi*y)",
                    "Hz": "exp(-20*(x-0.3)**2)"},
        "time": {"t_end": 0.12}, "output": {"formats": []}}
CASES = {
    "library": {"gold": {"where": "x - 0.6", "sampling": "element", "material": "Au", "length_unit": 1e-7}},
    "anisotropic": {"crystal": {"where": "x - 0.6", "epsilon": [2.0, "3 + x*y", 1.5], "mu": [1.0, 1.2, 0.9]}},
    "averaged": {"lens": {"where": "(x - 0.63)*(0.95 - x) + 0.01*y", "epsilon": "3 + z", "mu": 1.3,
                          "sampling": "average"}},
    # poles with a diagonal eps_inf, and an averaged dispersive table (dispersive.py, materials.pole_mask)
    "anisotropic_poles": {"crystal": {"where": "x - 0.6", "epsilon": [2.0, "3 + x*y", 1.5], "model": "drude",
                                      "poles": [{"plasma_frequency": 1.5, "collision_frequency": 0.2}]}},
    "averaged_poles": {"lens": {"where": "min(x - 0.63, 0.95 - x) + 0.01*y", "epsilon": 2.5, "sampling": "average",
                                "model": "lorentz", "poles": [{"resonance_frequency": 1.2, "delta_epsilon": 1.0,
                                                               "damping_frequency": 0.3}]}},
}
#: sources in the diagonal medium (sources.py): a dipole and a current at x > 0.6
SOURCES = {"anisotropic_poles": {
    "d": {"type": "electric_dipole", "position": [0.83, 0.27, 0.1], "direction": [1, 2, 3], "waveform": "gaussian",
          "t0": 0.05, "width": 0.03},
    "j": {"type": "current", "Jy": "sin(3*x)*t", "Jz": "1 + y", "lower": [0.65, 0.0, 0.0], "upper": [0.95, 0.3, 0.2]}}}


def fields(name, comm, directory):
    data = dict(BASE, material=CASES[name], **({"source": SOURCES[name]} if name in SOURCES else {}))
    with contextlib.redirect_stdout(io.StringIO()):
        sim = Simulation(case_from_dict(data, name=name), backend="cpu", output_dir=directory, comm=comm)
        summary = sim.run()
    u = np.asarray(sim.backend.to_host(sim.u))
    ids = np.asarray(sim.system.mesh.element_ids)
    inside = int(np.sum(np.asarray(sim.system.geometry.coords[0]).max(axis=(1, 2, 3)) > 0.6))  # elements of x > 0.6
    parts = comm.gather((ids, u, inside), root=0) if comm is not None else [(ids, u, inside)]
    if parts is None:
        return None
    ids = np.concatenate([p[0] for p in parts])
    u = np.concatenate([p[1] for p in parts], axis=1)[:, np.argsort(ids)]
    counts = [int(p[0].size) for p in parts]
    return {"steps": summary["steps"], "energy": summary["energy"]["final"], "u": u.tolist(), "counts": counts,
            "inside": [p[2] for p in parts]}


def main() -> int:
    world = MPI.COMM_WORLD
    out = on_three_two_one(world, {name: name for name in (sys.argv[1:] or sorted(CASES))}, fields)
    if world.rank == 0:
        json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
