"""Fused reductions, the overlapped operator apply and the collective counter, on 1, 2 and 3
ranks (CPU backend, reproducible sums):

- PCG and flexible CG with their inner products fused (``Assembly.dots``: one reduction for
  several) give the same bits as with one reduction per inner product, and the same bits on
  every rank count (solution, residual history, iterations);
- the Helmholtz apply with the exchange overlapped (boundary elements first, exchange
  started, every element, exchange finished) equals the plain apply bit for bit, alone and
  inside a multigrid-preconditioned solve;
- ``collective_counts`` counts what the docstrings say: PCG 1 + 1 + 2k reductions (||b||, the
  start, two per iteration), flexible CG 3k + 2, one exchange per application of A, the same
  on every rank count.

The 6 x 2 x 2 box is cut into x-slabs: on 3 ranks the middle one has no Dirichlet face (they
are on xmin and xmax only) and every one of its elements touches another rank (no interior
element to overlap with).

This file is also the script that ``mpiexec`` runs: ``python test_fused_reductions_ranks.py
OUT.npz``; rank 0 writes the solutions (global element order), histories and counts.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

ELEMENTS = (6, 2, 2)
ORDER = 5


def run_cases(comm) -> tuple[dict, np.ndarray]:
    from lobatto.backends import get_backend
    from lobatto.machine.parallel import collective_counts
    from lobatto.mesh.box import box_mesh
    from lobatto.mesh.geometry import compute_geometry
    from lobatto.mesh.partition import partition_box
    from lobatto.operators.assembly import dirichlet_faces
    from lobatto.solvers import flexible_cg, pcg
    from lobatto.solvers.multigrid import Level, PMultigrid

    rank, size = comm.Get_rank(), comm.Get_size()
    ids = None if size == 1 else partition_box(ELEMENTS, size, rank, "rcb")
    mesh = box_mesh(ELEMENTS, upper=(1.5, 0.5, 0.5), element_ids=ids)
    dirichlet = dirichlet_faces(mesh, ["xmin", "xmax"])
    backend = get_backend("cpu")
    geometry = compute_geometry(mesh, ORDER)
    x, y, z = geometry.coords
    level = Level.build(mesh, ORDER, backend, comm, dirichlet, h1=1.0 + 0.3 * x * y, h2=0.4, geometry=geometry)
    assembly = level.assembly
    b = backend.asarray(geometry.mass * np.sin(3 * x + 1) * np.cos(2 * y - z))
    assembly.dssum(b)
    b *= level.mask
    out: dict = {}

    def record(name, result, before=None):
        after = collective_counts()
        out[f"{name}/x"] = np.asarray(result.x)
        out[f"{name}/residuals"] = np.asarray(result.residuals)
        out[f"{name}/iterations"] = np.int64(result.iterations)
        if before is not None:
            out[f"{name}/reductions"] = np.int64(after["reductions"] - before["reductions"])
            out[f"{name}/exchanges"] = np.int64(after["exchanges"] - before["exchanges"])

    def unfused(pairs):
        return [level.dot(u, v) for u, v in pairs]

    jacobi = level.jacobi()
    for overlap in (False, True):
        assembly.overlap = overlap
        tag = "overlap" if overlap else "plain"
        before = collective_counts()
        record(f"pcg_{tag}", pcg(level.apply, b, M=jacobi, dot=level.dot, tol=1e-10, maxiter=500), before)
        record(f"pcg_unfused_{tag}", pcg(level.apply, b, M=jacobi, dot=level.dot, tol=1e-10, maxiter=500,
                                         dots=unfused, fused=False))
        before = collective_counts()
        record(f"fcg_{tag}", flexible_cg(level.apply, b, M=jacobi, dot=level.dot, tol=1e-10, maxiter=500), before)
        record(f"fcg_unfused_{tag}", flexible_cg(level.apply, b, M=jacobi, dot=level.dot, tol=1e-10, maxiter=500,
                                                 dots=unfused))
        # the multigrid's own levels (orders 3 and 1) never overlap by default: its finest is this level
        mg = PMultigrid.build(mesh, backend, (ORDER, 3, 1), comm, dirichlet, h1=1.0 + 0.3 * x * y, h2=0.4,
                              finest=level, coarse="pcg", coarse_tol=1e-3)
        before = collective_counts()
        record(f"mg_fcg_{tag}", flexible_cg(level.apply, b, M=mg, dot=level.dot, tol=1e-10, maxiter=100), before)
        u = backend.asarray(np.cos(x * y + 2 * z) + x * x)
        out[f"apply_{tag}"] = np.asarray(level.apply(u))
        out[f"apply3_{tag}"] = np.asarray(assembly.apply_operator(level.operator, np.stack([u, 2 * u + 1, u * u])))
    out["boundary_elements"] = np.int64(len(assembly.boundary_elements))
    return out, mesh.element_ids


def main(path: str) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    out, element_ids = run_cases(comm)
    gathered = comm.gather((element_ids, out), root=0)
    if comm.Get_rank() != 0:
        return
    ids = np.concatenate([g[0] for g in gathered])
    order = np.argsort(ids)
    arrays = {"ranks": comm.Get_size(), "element_ids": ids[order],
              "boundary_elements": np.array([g[1]["boundary_elements"] for g in gathered])}
    for name, value in out.items():
        if name == "boundary_elements":
            continue
        if name.endswith("/x") or name.startswith("apply"):
            axis = 1 if name.startswith("apply3") else 0
            arrays[name] = np.take(np.concatenate([g[1][name] for g in gathered], axis=axis), order, axis=axis)
        else:
            arrays[name] = value
            assert all(np.array_equal(g[1][name], value) for g in gathered), name  # every rank agrees
    np.savez(path, **arrays)
    print(f"fused_ranks P={comm.Get_size()}: " + ", ".join(
        f"{n.split('/')[0]} {int(out[n])}" for n in out if n.endswith("/iterations")))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    main(sys.argv[1])
    sys.exit(0)

from mpirun import SKIP_REASON, describe, run  # noqa: E402  (the script above needs no pytest helpers)

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

SOLVES = ("pcg", "fcg", "mg_fcg")


def run_on(nprocs: int, directory: Path) -> dict:
    path = directory / f"fused-{nprocs}.npz"
    result = run(nprocs, [os.path.abspath(__file__), str(path)], timeout=240)
    assert result.returncode == 0, describe(result)
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return run_on(1, tmp_path_factory.mktemp("serial"))


def check_one_run(data):
    for tag in ("plain", "overlap"):
        # fused = one reduction per inner product, bit for bit
        for solve in ("pcg", "fcg"):
            for part in ("x", "residuals", "iterations"):
                np.testing.assert_array_equal(data[f"{solve}_{tag}/{part}"], data[f"{solve}_unfused_{tag}/{part}"],
                                              err_msg=f"{solve} {tag} {part}")
        # the counts of the docstrings
        k = int(data[f"pcg_{tag}/iterations"])
        assert int(data[f"pcg_{tag}/reductions"]) == 2 + 2 * k
        assert int(data[f"pcg_{tag}/exchanges"]) == k
        k = int(data[f"fcg_{tag}/iterations"])
        assert int(data[f"fcg_{tag}/reductions"]) == 3 * k + 2
        assert int(data[f"fcg_{tag}/exchanges"]) == k
    # the overlapped apply is the plain one, bit for bit, alone and in every solve
    for name in ("apply", "apply3"):
        np.testing.assert_array_equal(data[f"{name}_overlap"], data[f"{name}_plain"], err_msg=name)
    for solve in SOLVES:
        for part in ("x", "residuals", "iterations", "reductions", "exchanges"):
            np.testing.assert_array_equal(data[f"{solve}_overlap/{part}"], data[f"{solve}_plain/{part}"],
                                          err_msg=f"{solve} {part}")
    assert 10 < int(data["pcg_plain/iterations"]) < 500 and int(data["mg_fcg_plain/iterations"]) < 30


def test_serial_counts_and_fusion(serial):
    check_one_run(serial)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_give_the_serial_bits_and_counts(serial, nprocs, tmp_path):
    parallel = run_on(nprocs, tmp_path)
    check_one_run(parallel)
    np.testing.assert_array_equal(parallel["element_ids"], serial["element_ids"])
    # 2 ranks: one slab of boundary elements each; 3: the middle rank's elements all touch another rank
    expected = {2: [4, 4], 3: [4, 8, 4]}[nprocs]
    np.testing.assert_array_equal(parallel["boundary_elements"], expected)
    for key, value in serial.items():
        if key in ("ranks", "boundary_elements"):
            continue
        np.testing.assert_array_equal(parallel[key], value, err_msg=f"{key} on {nprocs} ranks")


def test_unordered_sums_overlap_and_fuse_to_the_same_bits(monkeypatch, tmp_path):
    """LOBATTO_REPRODUCIBLE=0 (partition-dependent sums, the plain gather of the shared ids):
    within one run, overlapped = plain and fused = unfused, bit for bit, and the same counts."""
    monkeypatch.setenv("LOBATTO_REPRODUCIBLE", "0")
    check_one_run(run_on(3, tmp_path))
