"""solvers.elliptic on 1, 2 and 3 ranks: the singular (null_space=True) solves on a pure-Neumann
curved box and a periodic curved box, with the Cholesky and the AMG coarse solve (and AMG on
a Dirichlet problem, by plain CG), Chebyshev-Schwarz smoothing (periodic, and a slab where a
rank has no Dirichlet face), and VectorHelmholtzSolver before and after
set_coefficients, give the same solution (to 1e-12) and the same iteration counts.

This file is also the script that ``mpiexec`` runs: ``python test_solvers_elliptic_ranks.py
OUT.npz PARTITIONER`` solves every case on its ranks and rank 0 writes the solutions (in
global element order), iteration counts and residual histories to OUT.npz.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

ELEMENTS = (4, 3, 2)
ORDER = 5
TWO_PI = 2 * np.pi


def cube_deform(x, y, z):
    s = np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * z)
    return 0.08 * s, 0.06 * s * np.cos(np.pi * x), 0.05 * s


def periodic_deform(x, y, z):
    a, b, c = TWO_PI * x, TWO_PI * y, TWO_PI * z
    return 0.02 * np.sin(b) * np.sin(c), 0.015 * np.sin(a + c), 0.02 * np.cos(a) * np.sin(b)


def solve_cases(comm, partitioner: str):
    """({case: (iterations, residuals / ||b||, x host, converged)}, this rank's element ids)."""
    from lobatto.backends import get_backend
    from lobatto.mesh.box import box_mesh
    from lobatto.mesh.geometry import compute_geometry
    from lobatto.mesh.partition import partition_box
    from lobatto.solvers import amg
    from lobatto.solvers.elliptic import EllipticSolver, VectorHelmholtzSolver
    from lobatto.solvers.multigrid import Level

    amg.MAX_COARSE = 12  # the 60-point coarse level gets a hierarchy, not just the dense inverse

    rank, size = comm.Get_rank(), comm.Get_size()
    if size > 1 and partitioner == "middle":  # rank 0 owns the inner x columns: no boundary face in x
        columns = {2: ([1, 2], [0, 3]), 3: ([1, 2], [0], [3])}[size][rank]
        ids = np.flatnonzero(np.isin(np.arange(np.prod(ELEMENTS)) % ELEMENTS[0], columns))
    else:
        ids = None if size == 1 else partition_box(ELEMENTS, size, rank, partitioner)
    backend = get_backend("cpu")
    results = {}

    def singular(mesh, source, settings):
        geometry = compute_geometry(mesh, ORDER)
        level = Level.build(mesh, ORDER, backend, comm, geometry=geometry)
        b = level.assembly.dssum(backend.asarray(geometry.mass * source(*geometry.coords)))
        solver = EllipticSolver(mesh, level, {"tolerance": 1e-10, **settings}, backend, comm, None, 1.0, 0.0,
                                null_space=True)
        return solver.solve(b)

    neumann = box_mesh(ELEMENTS, boundary="neumann", deform=cube_deform, element_ids=ids)
    # cos(pi x) cos(pi y) cos(pi z)'s source, plus an inconsistent constant
    def neumann_source(x, y, z):
        return 3 * np.pi**2 * np.cos(np.pi * x) * np.cos(np.pi * y) * np.cos(np.pi * z) + 0.4

    results["neumann_mg_fcg"] = singular(neumann, neumann_source, {"method": "fcg"})
    results["neumann_mg_amg_cg"] = singular(neumann, neumann_source, {"method": "cg", "coarse": "amg"})
    periodic = box_mesh(ELEMENTS, periodic=(True, True, True), deform=periodic_deform, element_ids=ids)

    def wave(x, y, z):
        return 2 * TWO_PI**2 * np.sin(TWO_PI * x) * np.cos(TWO_PI * y) + 0.5 * TWO_PI**2 * np.cos(TWO_PI * z)

    results["periodic_mg_cg"] = singular(periodic, wave, {"method": "cg"})
    results["periodic_jacobi_fcg"] = singular(periodic, wave, {"preconditioner": "jacobi", "max_iterations": 1000})
    # Chebyshev-Schwarz smoothing (its ext exchange crosses ranks and periodic faces)
    results["periodic_schwarz_cg"] = singular(periodic, wave, {"method": "cg", "smoother": "schwarz"})
    # x sides: Dirichlet xmin, Neumann xmax; y, z periodic: with 2 ranks (rcb) or 3 (metis)
    # one rank has no Dirichlet face, and with the "middle" partition one has no boundary face
    slab = box_mesh(ELEMENTS, periodic=(False, True, True), deform=periodic_deform, element_ids=ids)
    fixed = (slab.face_neighbour < 0) & (np.arange(6) == 0)[None, :]
    geometry = compute_geometry(slab, ORDER)
    level = Level.build(slab, ORDER, backend, comm, fixed, geometry=geometry)
    b = level.assembly.dssum(backend.asarray(geometry.mass * wave(*geometry.coords))) * level.mask
    solver = EllipticSolver(slab, level, {"method": "cg", "smoother": "schwarz", "smoother_degree": 2,
                                          "tolerance": 1e-10}, backend, comm, fixed, 1.0, 0.0)
    results["slab_schwarz_cg"] = solver.solve(b)

    walls = box_mesh(ELEMENTS, deform=cube_deform, element_ids=ids)
    dirichlet = (walls.face_neighbour < 0) & np.isin(np.arange(6), [0, 1, 2, 5])[None, :]
    geometry = compute_geometry(walls, ORDER)
    level = Level.build(walls, ORDER, backend, comm, dirichlet, geometry=geometry)
    b = level.assembly.dssum(backend.asarray(geometry.mass * np.exp(geometry.coords[0]) * geometry.coords[1]))
    solver = EllipticSolver(walls, level, {"method": "cg", "coarse": "amg", "tolerance": 1e-10}, backend, comm,
                            dirichlet, 1.0, 0.0)
    results["dirichlet_mg_amg_cg"] = solver.solve(b * level.mask)
    level = Level.build(walls, ORDER, backend, comm, dirichlet, h1=0.05, h2=30.0, geometry=geometry)
    x, y, z = geometry.coords
    forcing = np.stack([np.sin(3 * x) * np.cos(2 * y - z), np.exp(x - z) * y, 1e-2 * np.cos(5 * x * y) + z])
    b = level.assembly.dssum(backend.asarray(geometry.mass * forcing)) * level.mask
    solver = VectorHelmholtzSolver(level, tolerance=1e-10, max_iterations=500)
    results["vector"] = first = solver.solve(b)
    solver.set_coefficients(0.01, 120.0)
    results["vector_new_coefficients"] = solver.solve(b, first.x)
    out = {name: (r.iterations, np.array(r.residuals) / r.reference_norm, np.asarray(r.x), r.converged)
           for name, r in results.items()}
    return out, walls.element_ids


def main(path: str, partitioner: str) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    out, element_ids = solve_cases(comm, partitioner)
    gathered = comm.gather((element_ids, out), root=0)
    if comm.Get_rank() != 0:
        return
    ids = np.concatenate([g[0] for g in gathered])
    order = np.argsort(ids)
    arrays = {"ranks": comm.Get_size(), "element_ids": ids[order]}
    for name in out:
        axis = out[name][2].ndim - 4  # the element axis: 1 for (3, E, n, n, n)
        x = np.concatenate([g[1][name][2] for g in gathered], axis=axis)
        arrays[f"{name}/x"] = np.take(x, order, axis=axis)
        arrays[f"{name}/iterations"] = out[name][0]
        arrays[f"{name}/residuals"] = out[name][1]
        arrays[f"{name}/converged"] = out[name][3]
    np.savez(path, **arrays)
    print(f"elliptic_ranks P={comm.Get_size()}: " + ", ".join(f"{n} {out[n][0]}" for n in out))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    main(sys.argv[1], sys.argv[2])
    sys.exit(0)

from mpirun import SKIP_REASON, describe, run  # noqa: E402  (the script above needs no pytest helpers)

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASES = ("neumann_mg_fcg", "neumann_mg_amg_cg", "dirichlet_mg_amg_cg", "periodic_mg_cg", "periodic_jacobi_fcg",
         "periodic_schwarz_cg", "slab_schwarz_cg", "vector", "vector_new_coefficients")


def solve_on(nprocs: int, directory: Path, partitioner: str = "rcb") -> dict:
    path = directory / f"elliptic-{nprocs}-{partitioner}.npz"
    result = run(nprocs, [os.path.abspath(__file__), str(path), partitioner], timeout=240)
    assert result.returncode == 0, describe(result)
    assert f"elliptic_ranks P={nprocs}:" in result.stdout, describe(result)
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return solve_on(1, tmp_path_factory.mktemp("serial"))


def test_serial_solutions(serial):
    for case in CASES:
        assert bool(serial[f"{case}/converged"]), case
    for case in ("neumann_mg_fcg", "periodic_mg_cg"):
        assert serial[f"{case}/iterations"] <= 16, case  # 14 and 12 measured
    # the two periodic solves found the same zero-mean solution
    mg, jacobi = serial["periodic_mg_cg/x"], serial["periodic_jacobi_fcg/x"]
    assert np.abs(mg - jacobi).max() <= 1e-8 * np.abs(mg).max()
    schwarz = serial["periodic_schwarz_cg/x"]
    assert np.abs(schwarz - mg).max() <= 1e-8 * np.abs(mg).max()
    # Chebyshev-Schwarz takes fewer iterations than Chebyshev-Jacobi at the same degree
    assert serial["periodic_schwarz_cg/iterations"] < serial["periodic_mg_cg/iterations"]
    # the AMG coarse solve gives the Cholesky one's solution
    dense, amg = serial["neumann_mg_fcg/x"], serial["neumann_mg_amg_cg/x"]
    assert np.abs(amg - dense).max() <= 1e-8 * np.abs(dense).max()
    assert serial["vector/x"].shape[0] == 3


# "middle": rank 0 holds x columns 1 and 2, so in the slab case (y, z periodic) it has no
# boundary face at all while the others have the Dirichlet or the Neumann side
@pytest.mark.parametrize("nprocs,partitioner", [(2, "rcb"), (3, "rcb"), (3, "metis"), (3, "middle")])
def test_ranks_give_the_serial_solution_and_iteration_counts(serial, nprocs, partitioner, tmp_path):
    parallel = solve_on(nprocs, tmp_path, partitioner)
    assert int(parallel["ranks"]) == nprocs
    np.testing.assert_array_equal(parallel["element_ids"], serial["element_ids"])
    for case in CASES:
        assert bool(parallel[f"{case}/converged"]), case
        assert int(parallel[f"{case}/iterations"]) == int(serial[f"{case}/iterations"]), case
        reference = serial[f"{case}/x"]
        difference = np.abs(parallel[f"{case}/x"] - reference).max() / np.abs(reference).max()
        assert difference <= 1e-12, f"{case}: solutions differ by {difference:.2e} (relative)"
        np.testing.assert_allclose(parallel[f"{case}/residuals"], serial[f"{case}/residuals"], rtol=0, atol=1e-12,
                                   err_msg=case)
