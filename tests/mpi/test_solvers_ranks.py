"""Elliptic solves on 1, 2 and 3 ranks give the same solution (to 1e-12) and the same
iteration counts: p-multigrid PCG (dense coarse solve), flexible CG with an iterative coarse
solve and with float32 cycles, Jacobi-PCG, FGMRES, and projection over a sequence.

This file is also the script that ``mpiexec`` runs: ``python test_solvers_ranks.py OUT.npz
PARTITIONER`` solves every case on its ranks and rank 0 writes the solutions (in global
element order), iteration counts and residual histories to OUT.npz.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

ELEMENTS = (4, 3, 2)
ORDER = 7


def deform(x, y, z):
    s = np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * z)
    return 0.08 * s, 0.06 * s * np.cos(np.pi * x), 0.05 * s


def solve_cases(comm, partitioner: str) -> dict:
    """{case: (iterations, residuals, x (E, n, n, n) host)} on this rank's elements."""
    from lobatto.backends import get_backend
    from lobatto.mesh.box import box_mesh
    from lobatto.mesh.geometry import compute_geometry
    from lobatto.mesh.partition import partition_box
    from lobatto.solvers import LowPrecision, SolutionProjection, fgmres, flexible_cg, pcg
    from lobatto.solvers.multigrid import Level, PMultigrid

    rank, size = comm.Get_rank(), comm.Get_size()
    ids = None if size == 1 else partition_box(ELEMENTS, size, rank, partitioner)
    mesh = box_mesh(ELEMENTS, upper=(1.0, 0.75, 0.5), deform=deform, element_ids=ids)
    dirichlet = (mesh.face_neighbour < 0) & (np.arange(6)[None, :] != 5)  # zmax is a Neumann side
    backend = get_backend("cpu")
    geometry = compute_geometry(mesh, ORDER)
    x, y, z = geometry.coords
    h1 = 1.0 + 0.3 * x * y
    level = Level.build(mesh, ORDER, backend, comm, dirichlet, h1=h1, h2=0.5, geometry=geometry)

    def rhs(step):
        f = np.sin(3 * x + 0.01 * step) * np.cos(2 * y - z) + 1e-3 * step**2 * np.exp(x - z)
        b = backend.asarray(geometry.mass * f)
        level.assembly.dssum(b)
        return b * level.mask

    b = rhs(0)
    mg = PMultigrid.build(mesh, backend, (7, 3, 1), comm, dirichlet, h1=h1, h2=0.5, finest=level)
    mg_pcg = PMultigrid.build(mesh, backend, (7, 3, 1), comm, dirichlet, h1=h1, h2=0.5, finest=level,
                              coarse="pcg", coarse_tol=1e-3)
    mg32 = PMultigrid.build(mesh, backend, (7, 3, 1), comm, dirichlet, h1=h1, h2=0.5, dtype=np.float32)
    common = {"dot": level.dot, "tol": 1e-10}
    results = {
        "mg_pcg": pcg(level.apply, b, M=mg, **common),
        "mg_iterative_coarse_fcg": flexible_cg(level.apply, b, M=mg_pcg, **common),
        "mg_float32_fcg": flexible_cg(level.apply, b, M=LowPrecision(mg32, backend, comm=comm), **common),
        "jacobi_pcg": pcg(level.apply, b, M=level.jacobi(), maxiter=3000, **common),
        "mg_fgmres": fgmres(level.apply, b, M=mg, restart=8, **common),
    }
    out = {name: (r.iterations, np.array(r.residuals) / r.reference_norm, np.asarray(r.x), r.converged)
           for name, r in results.items()}
    # a sequence of nearby right-hand sides: iterations and the initial residual (relative to
    # b) of each solve after projection
    projection = SolutionProjection(level.apply, level.dot)
    counts, initial = [], []
    for step in range(4):
        b_step = rhs(step)
        x_bar, r = projection.project(b_step)
        norm = level.assembly.norm(b_step)
        result = pcg(level.apply, r, M=mg, dot=level.dot, tol=0.0, atol=1e-10 * norm)
        counts.append(result.iterations)
        initial.append(result.residuals[0] / norm)
        solution = projection.update(x_bar, result.x)
    out["projection"] = (np.array(counts), np.array(initial), np.asarray(solution), result.converged)
    return out, mesh.element_ids


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
        arrays[f"{name}/x"] = np.concatenate([g[1][name][2] for g in gathered])[order]
        arrays[f"{name}/iterations"] = out[name][0]
        arrays[f"{name}/residuals"] = out[name][1]
        arrays[f"{name}/converged"] = out[name][3]
    np.savez(path, **arrays)
    print(f"solvers_ranks P={comm.Get_size()}: " + ", ".join(f"{n} {np.ravel(out[n][0]).tolist()}" for n in out))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    main(sys.argv[1], sys.argv[2])
    sys.exit(0)

from mpirun import SKIP_REASON, describe, run  # noqa: E402  (the script above needs no pytest helpers)

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

#: residual histories (relative to |b|) agree to round-off, seeded by the summation order (it
#: depends on the partition): float64's within 1e-12 (relative agreement at the tail of
#: Jacobi-PCG's 180 iterations is only 1e-4); float32's, relative, in the float32 cycles
RESIDUAL_RTOL = {"mg_float32_fcg": 1e-5}
CASES = ("mg_pcg", "mg_iterative_coarse_fcg", "mg_float32_fcg", "jacobi_pcg", "mg_fgmres", "projection")


def solve_on(nprocs: int, directory: Path, partitioner: str = "rcb") -> dict:
    path = directory / f"solvers-{nprocs}-{partitioner}.npz"
    result = run(nprocs, [os.path.abspath(__file__), str(path), partitioner], timeout=240)
    assert result.returncode == 0, describe(result)
    assert f"solvers_ranks P={nprocs}:" in result.stdout, describe(result)
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return solve_on(1, tmp_path_factory.mktemp("serial"))


@pytest.mark.parametrize("nprocs,partitioner", [(2, "rcb"), (3, "rcb"), (3, "metis")])
def test_ranks_give_the_serial_solution_and_iteration_counts(serial, nprocs, partitioner, tmp_path):
    parallel = solve_on(nprocs, tmp_path, partitioner)
    assert int(parallel["ranks"]) == nprocs
    np.testing.assert_array_equal(parallel["element_ids"], serial["element_ids"])
    for case in CASES:
        assert bool(serial[f"{case}/converged"]) and bool(parallel[f"{case}/converged"]), case
        np.testing.assert_array_equal(parallel[f"{case}/iterations"], serial[f"{case}/iterations"], err_msg=case)
        reference = serial[f"{case}/x"]
        difference = np.abs(parallel[f"{case}/x"] - reference).max() / np.abs(reference).max()
        assert difference <= 1e-12, f"{case}: solutions differ by {difference:.2e} (relative)"
        residuals = serial[f"{case}/residuals"]
        np.testing.assert_allclose(parallel[f"{case}/residuals"], residuals, rtol=RESIDUAL_RTOL.get(case, 0.0),
                                   atol=1e-12, err_msg=case)
    # the cases solved the same problem
    mg = serial["mg_pcg/x"]
    for case in ("mg_iterative_coarse_fcg", "mg_float32_fcg", "jacobi_pcg", "mg_fgmres"):
        assert np.abs(serial[f"{case}/x"] - mg).max() <= 1e-8 * np.abs(mg).max(), case
    counts, initial = serial["projection/iterations"], serial["projection/residuals"]
    assert counts[1] < counts[0] and initial[1] < 0.05 * initial[0]  # a nearby b starts close
    # the 4th b is in the span of the first three: projected up to their solves' tolerance
    # (1e-10, amplified by the nearly parallel b's), it needs at most one more iteration
    assert counts[3] <= 1 and initial[3] < 1e-9
