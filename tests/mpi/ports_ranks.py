"""Run under mpiexec -n 3 by test_ports_ranks.py: the two-port guide of test_ports.py with both
ports driven on 3 ranks, on 2 of them (a sub-communicator) and on 1 (rank 0 alone), in one
launch. The mesh is cut along the guide, so on 3 ranks a rank holds none of a port plane's
faces (the plane z = 2 has 2 faces, on at most 2 ranks). Then the same for the device-only
gmsh guide with ports on its named surfaces (test_port_surface.py; the box's sides where gmsh is
missing): the extension grown on the whole mesh before partitioning, so that every rank count
runs the same elements, and on 3 ranks a rank holds none of a surface. Rank 0 prints, per rank
count, S and how many ranks held each plane's faces, as JSON ("1".."3"; "s1".."s3" the surface
case)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

import lobatto  # noqa: E402
from test_port_surface import SURFACE  # noqa: E402
from test_ports import GUIDE  # noqa: E402
from quiet import quiet_barrier  # noqa: E402

CASE = copy.deepcopy(GUIDE)
CASE["ports"]["drive"] = "all"
CASE["time"] = {"t_end": 34.0}  # a fixed end: the decay stop's energy sum may differ in its last bits between rank counts


def surface_case(root: str) -> dict:
    """SURFACE on the gmsh guide z = 0 .. 1 (written by rank 0), or on the box without gmsh."""
    try:
        import gmsh  # noqa: F401
    except ImportError:
        return copy.deepcopy(SURFACE)
    from test_port_surface import guide_msh

    path = Path(root) / "short.msh"
    if MPI.COMM_WORLD.rank == 0:
        guide_msh(path, 0.0, 1.0, 0.5)
    MPI.COMM_WORLD.Barrier()
    return {**copy.deepcopy(SURFACE), "mesh": {"generator": "gmsh", "file": str(path), "boundary": "pec"},
            "port": {"in": {"surface": "port1", "mode": "TE10"}, "out": {"surface": "port2", "mode": "TE10"}}}


def run(comm, directory, case=CASE):
    with contextlib.redirect_stdout(io.StringIO()):
        result = lobatto.run(copy.deepcopy(case), output_dir=directory, comm=comm)
    system = result.simulation.system
    holders = {}
    for name in ("in", "out"):
        plane = system.port_planes[name]
        mine = int(np.isin(plane.ids, system.mesh.element_ids).sum())  # faces of elements this rank holds
        holders[name] = mine if comm is None else comm.allreduce(int(mine > 0))
    if comm is not None and comm.Get_rank() != 0:
        return None
    with h5py.File(Path(directory) / "guide_sparams.h5", "r") as f:
        s = f["S"][()]
    return {"re": s.real.tolist(), "im": s.imag.tolist(), "holders": holders}


def main() -> int:
    world = MPI.COMM_WORLD
    pair = world.Split(0 if world.rank < 2 else 1, world.rank)
    scratch = tempfile.TemporaryDirectory() if world.rank == 0 else None
    root = world.bcast(scratch.name if scratch is not None else None)
    out = {3: run(world, f"{root}/r3")}
    if world.rank < 2:
        out[2] = run(pair, f"{root}/r2")
    if world.rank == 0:
        out[1] = run(None, f"{root}/r1")
    quiet_barrier(world)  # the ranks left out of the 2- and 1-rank runs wait asleep
    surface = surface_case(root)
    out["s3"] = run(world, f"{root}/s3", surface)
    if world.rank < 2:
        out["s2"] = run(pair, f"{root}/s2", surface)
    if world.rank == 0:
        out["s1"] = run(None, f"{root}/s1", surface)
    quiet_barrier(world)
    if world.rank == 0:
        json.dump(out, sys.stdout)
        scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
