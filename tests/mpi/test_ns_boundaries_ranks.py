"""The Navier–Stokes boundary kinds symmetry, outflow_normal, traction and the backflow
stabilisation (docs/navier-stokes.md, "Boundary conditions") on 1, 2 and 3 ranks: bitwise the
same fields (gathered by global element id from the HDF5 snapshot) and the same steps and
iteration counts, from one ``mpiexec -n 3`` launch (the 1- and 2-rank runs on split
communicators). A 1 x 3 x 1 box along y, which rcb cuts across y: on 3 ranks the middle rank
owns no inflow, traction, outflow or ON face, on 2 ranks one rank owns no inflow face.

    inflow_on  walls on xmin and xmax, a where/min/max inflow on ymin, an ON outlet on ymax
               with the backflow stabilisation: the only constrained faces are the ON ones,
               which one rank (of 2) or two (of 3) do not own, yet take part in building the
               constraint (a gather-scatter)
    traction   the xmin symmetry plane tilted (x = 0.1 y, its normal off the axes), a traction
               inlet on ymin, an outflow on ymax with the backflow stabilisation

This file is also the script that ``mpiexec`` runs: ``python test_ns_boundaries_ranks.py OUT``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
CASES = ("inflow_on", "traction")
SIZES = (1, 2, 3)


def build_case(name: str):
    from lobatto.api import parse_case

    data = {
        "physics": {"equations": "navier_stokes", "viscosity": 0.05, "backflow_stabilization": True},
        "mesh": {"elements": [1, 3, 1], "upper": [1.0, 3.0, 1.0], "periodic": [False, False, True]},
        "discretization": {"order": 4},
        "time": {"integrator": "bdf2", "dt": 0.02, "t_end": 0.08},
        "solver": {"pressure": {"tolerance": 1e-10}, "velocity": {"tolerance": 1e-12}},
        "initial": {"uy": "2*x*(1 - x)", "ux": "0.2*sin(pi*y/3)*x*(1 - x)"},
        "output": {"formats": ["hdf5"], "name": name},
        "parallel": {"partitioner": "rcb"},
    }
    if name == "inflow_on":
        data["mesh"]["boundaries"] = {"ymax": "outflow_normal"}
        data["boundary"] = {"ymin": {"uy": "where(x < 0.5, min(4*x*(1 - x), 0.9), max(4*x*(1 - x), 0))*(1 - exp(-20*t))"}}
    else:
        data["mesh"]["boundaries"] = {"xmin": "symmetry", "ymin": "traction", "ymax": "outflow"}
        data["mesh"]["deform"] = {"x": "0.1*y*(1 - x)"}
        data["boundary"] = {"ymin": {"ty": "0.3", "tx": "0.05*x"}}
    return parse_case(data, source=f"<{name}>", name=name)


def main(out: Path) -> None:
    from mpi4py import MPI
    from quiet import quiet_barrier

    from lobatto.runner.simulation import Simulation

    world = MPI.COMM_WORLD
    backend = os.environ.get("LOBATTO_TEST_BACKEND", "cpu")
    for size in SIZES:
        comm = world.Split(0 if world.Get_rank() < size else MPI.UNDEFINED, world.Get_rank())
        if comm != MPI.COMM_NULL:
            for name in CASES:
                Simulation(build_case(name), backend, out / f"{name}_{size}", comm=comm).run()
            comm.Free()
        quiet_barrier(world)  # ranks outside this size's run wait asleep


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1] / "src"))
    main(Path(sys.argv[1]))
    sys.exit(0)

from mpirun import SKIP_REASON, describe, read_final, run  # noqa: E402

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def steps_of(directory: Path) -> list:
    rows = [json.loads(line) for line in (directory / "steps.jsonl").read_text().splitlines()]
    return [(r["step"], r["t"], r["dt"], r["pressure_iterations"], r["velocity_iterations"], r["pressure_residual"],
             r["velocity_residual"]) for r in rows]


def test_new_boundary_kinds_are_the_same_on_1_2_and_3_ranks(tmp_path):
    result = run(3, [os.path.abspath(__file__), str(tmp_path)], timeout=300)
    assert result.returncode == 0, describe(result)
    for name in CASES:
        s1, ids1, u1 = read_final(tmp_path / f"{name}_1")
        assert len(steps_of(tmp_path / f"{name}_1")) == 4 and np.isfinite(u1).all(), name
        assert np.abs(u1[1]).max() > 0.1, name  # the flow moves
        for size in SIZES[1:]:
            sp, idsp, up = read_final(tmp_path / f"{name}_{size}")
            assert sp["ranks"] == size and np.array_equal(ids1, idsp), name
            assert steps_of(tmp_path / f"{name}_{size}") == steps_of(tmp_path / f"{name}_1"), (name, size)
            assert np.array_equal(up, u1), f"{name} on {size} ranks: fields differ by {np.abs(up - u1).max():.2e}"
