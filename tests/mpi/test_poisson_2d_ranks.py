"""The steady Poisson system on a 2-D mesh (quads) on 1, 2 and 3 ranks: the same solution and
the same iteration counts for each solver variant, including partitions where a rank has no
Dirichlet face (only xmin is Dirichlet in the first case, and rcb cuts the 6 x 2 box along x).

This file is also the script that ``mpiexec`` runs: ``python test_poisson_2d_ranks.py OUT.npz
PARTITIONER`` builds each rank's part of the 2-D box, the system `lobatto run` builds
(PoissonSystem.from_case), solves every variant, and rank 0 writes the solutions (in global
element order), the iteration counts and which ranks held a Dirichlet face to OUT.npz.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

ELEMENTS = (6, 2)
ORDER = 4
U = "sin(pi*x)*sin(pi*y)"
H = "0.5*(1 + x)"
#: du/dn on each side (n outward; the deformation keeps every side on its line)
XMAX, YMIN, YMAX = "pi*cos(pi*x)*sin(pi*y)", "-pi*sin(pi*x)*cos(pi*y)", "pi*sin(pi*x)*cos(pi*y)"
CASES = {
    # Dirichlet on xmin only: ranks away from x = 0 hold Neumann faces or none
    "xmin_only": {"xmin": {"value": "0"}, "xmax": {"flux": XMAX}, "ymin": {"flux": YMIN}, "ymax": {"flux": YMAX}},
    "mixed": {"xmin": {"value": "0"}, "ymin": {"value": U}, "xmax": {"flux": XMAX}, "ymax": {"flux": YMAX}},
}
VARIANTS = {
    "mg_fcg": {"tolerance": 1e-12},
    "mg_schwarz_cg": {"method": "cg", "smoother": "schwarz", "tolerance": 1e-12},
    "mg_amg_cg": {"method": "cg", "coarse": "amg", "tolerance": 1e-12},
    "jacobi_cg": {"method": "cg", "preconditioner": "jacobi", "tolerance": 1e-12},
}


def case(boundary, solver):
    from lobatto.api import case_from_dict

    mesh = {"elements": [*ELEMENTS, 1], "upper": [1.5, 1, 1],
            "deform": {"x": "0.1*sin(2*pi*x/1.5)*sin(pi*y)", "y": "0.08*sin(pi*y)*sin(2*pi*x/1.5)"}}
    data = {"physics": {"equations": "poisson", "f": f"(2*pi**2 + {H})*{U}", "h": H}, "mesh": mesh,
            "discretization": {"order": ORDER}, "boundary": boundary, "solver": solver}
    return case_from_dict(data, "poisson2d")


def main(out: str, partitioner: str) -> None:
    from mpi4py import MPI

    from lobatto.backends import get_backend
    from lobatto.mesh import box_mesh, compute_geometry
    from lobatto.mesh.partition import partition_box
    from lobatto.runner.build import deformation_from_expressions
    from lobatto.solvers import amg
    from lobatto.systems.poisson.system import PoissonSystem

    amg.MAX_COARSE = 12  # the coarse level gets an AMG hierarchy, not just the dense inverse
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    ids = None if size == 1 else partition_box(ELEMENTS, size, rank, partitioner)
    backend = get_backend("cpu")
    results = {}
    for case_name, boundary in CASES.items():
        for name, solver in VARIANTS.items():
            c = case(boundary, solver)
            m = c.mesh
            mesh = box_mesh(ELEMENTS, m.lower[:2], m.upper[:2], deform=deformation_from_expressions(m.deform),
                            element_ids=ids).halo_last()
            geometry = compute_geometry(mesh, ORDER)
            system = PoissonSystem.from_case(c, mesh, geometry, backend, comm if size > 1 else None)
            u = backend.to_host(system.solve())[0]
            parts = comm.gather((mesh.element_ids, u, bool(system.level.assembly.dirichlet.any())), root=0)
            if rank == 0:
                every = np.concatenate([p[0] for p in parts])
                solution = np.concatenate([p[1] for p in parts])[np.argsort(every)]
                key = f"{case_name}.{name}"
                results[key + ".u"] = solution
                results[key + ".iterations"] = np.array([system.result.iterations, system.result.converged])
                results[key + ".dirichlet_ranks"] = np.array([p[2] for p in parts])
                x, y = compute_geometry(box_mesh(ELEMENTS, m.lower[:2], m.upper[:2],
                                                 deform=deformation_from_expressions(m.deform)), ORDER).coords[:2]
                results[key + ".error"] = np.array(np.abs(solution - np.sin(np.pi * x) * np.sin(np.pi * y)).max())
    if rank == 0:
        np.savez(out, **results)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    main(sys.argv[1], sys.argv[2])
    sys.exit(0)

from mpirun import SKIP_REASON, describe, run  # noqa: E402

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def solve_on(nprocs: int, path: Path, partitioner: str = "rcb") -> dict:
    result = run(nprocs, [os.path.abspath(__file__), str(path), partitioner], timeout=300)
    assert result.returncode == 0, describe(result)
    return dict(np.load(path))


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return solve_on(1, tmp_path_factory.mktemp("serial") / "out.npz")


def test_serial_solutions_are_the_manufactured_one(serial):
    for case_name in CASES:
        reference = serial[f"{case_name}.mg_fcg.u"]
        for name in VARIANTS:
            key = f"{case_name}.{name}"
            iterations, converged = serial[key + ".iterations"]
            assert converged and serial[key + ".error"] < 1e-3, key
            assert np.abs(serial[key + ".u"] - reference).max() <= 1e-10 * np.abs(reference).max(), key


@pytest.mark.parametrize("nprocs,partitioner", [(2, "rcb"), (3, "rcb"), (3, "metis")])
def test_ranks_give_the_serial_solution_and_iteration_counts(serial, nprocs, partitioner, tmp_path):
    parallel = solve_on(nprocs, tmp_path / "out.npz", partitioner)
    for case_name in CASES:
        for name in VARIANTS:
            key = f"{case_name}.{name}"
            assert np.array_equal(parallel[key + ".iterations"], serial[key + ".iterations"]), key
            u1, up = serial[key + ".u"], parallel[key + ".u"]
            assert np.abs(up - u1).max() <= 1e-12 * np.abs(u1).max(), key
    if partitioner == "rcb":  # some rank holds no Dirichlet face where only xmin is Dirichlet
        assert not parallel["xmin_only.mg_fcg.dirichlet_ranks"].all()
