"""2-D file meshes split over ranks; run as ``mpiexec -n P python mesh2d_ranks.py MESH...``.

Every rank reads each whole 2-D gmsh mesh, keeps the part the partitioner gives it (rcb, rsb
and, with pymetis, metis), and computes its area and the continuous GLL numbering of its part
(collective). Rank 0 prints one JSON line per mesh and partitioner: the total area, the global
count of distinct points, and each rank's element and boundary-face counts.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

try:
    import lobatto  # noqa: F401
except ImportError:  # running from a checkout without install
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src"))

import numpy as np
from mpi4py import MPI

from lobatto.mesh import compute_geometry
from lobatto.mesh.partition import partition_mesh
from lobatto.mesh.readers import mesh_from_file
from lobatto.operators import continuous_ids

ORDER = 3


def main(paths):
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    methods = ["rcb", "rsb"] + (["metis"] if importlib.util.find_spec("pymetis") else [])
    for path in paths:
        whole = mesh_from_file("gmsh", path, ORDER)
        for method in methods:
            part = whole if size == 1 else whole.subset(partition_mesh(whole, size, rank, method))
            part.check()
            area = comm.allreduce(float(compute_geometry(part, ORDER).mass.sum()))  # sums in rank order
            ids = continuous_ids(part, ORDER, comm)
            count = comm.allreduce(int(ids.max()) + 1 if ids.size else 0, MPI.MAX)
            faces = {name: int(np.sum(part.face_group == g)) for g, name in enumerate(part.group_names)}
            rows = comm.gather({"elements": part.num_elements, "faces": faces, "dim": part.dim}, root=0)
            if rank == 0:
                print(json.dumps({"mesh": os.path.basename(path), "method": method, "ranks": size, "area": area,
                                  "points": count, "parts": rows}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
