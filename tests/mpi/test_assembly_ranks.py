"""Continuous numbering and assembly on 1, 2 and 3 ranks give the serial results.

Under pytest this file starts itself under ``mpiexec -n P``. Each rank holds a part of two
meshes (rotated elements with a periodic axis, split into scattered random parts; a deformed box
split by rcb, as runs split it) and checks against the serial numbering of the whole mesh, which
every rank computes itself: the same point classes (gathered on rank 0), dense ids 0..M-1 over
all ranks, the same multiplicity and Dirichlet mask, dssum with every exchange method, the
assembled inner product and the assembled Helmholtz operator.
"""

from __future__ import annotations

import sys
from pathlib import Path

ORDER = 3
METHODS = ("auto", "pairwise", "crystal_router", "allreduce")
UNIT_TESTS = str(Path(__file__).resolve().parent.parent / "unit")  # the mesh builders and oracles


def meshes(size):
    """[(name, whole mesh, this rank's element ids as a function of rank, Dirichlet names)]."""
    import numpy as np

    from test_operators_numbering import periodic_deform, rotated_box_mesh

    from lobatto.mesh import box_mesh
    from lobatto.mesh.partition import partition_box

    rotated = rotated_box_mesh((4, 3, 3), (True, False, False), seed=6, upper=(2.0, 1.0, 1.0),
                               deform=periodic_deform((0, 0, 0), (2.0, 1.0, 1.0)))
    scattered = np.array_split(np.random.default_rng(0).permutation(rotated.num_elements), size)
    elements = (4, 3, 2)
    box = box_mesh(elements, periodic=(False, True, False), deform=lambda x, y, z: (0.05 * np.sin(3 * z), 0 * y, 0 * z))
    return [
        ("rotated", rotated, lambda rank: np.sort(scattered[rank]), ["wall"]),
        ("box", box, lambda rank: partition_box(elements, size, rank, "rcb"), ["xmin", "zmax"]),
    ]


def check(comm) -> list[str]:
    import numpy as np

    from test_operators_numbering import same_partition

    from lobatto.backends import get_backend
    from lobatto.mesh import compute_geometry
    from lobatto.operators import Assembly, HelmholtzOperator, dirichlet_faces

    rank, size = comm.Get_rank(), comm.Get_size()
    backend = get_backend("cpu")
    failures = []

    def expect(ok, what):
        if not ok:
            failures.append(f"rank {rank}: {what}")

    for name, whole, part_of, dirichlet_names in meshes(size):
        serial = Assembly(whole, ORDER, backend, dirichlet=dirichlet_faces(whole, dirichlet_names))
        rng = np.random.default_rng(42)
        values = rng.standard_normal((2,) + serial.shape)  # per element, by global element id
        continuous = rng.standard_normal((2, serial.num_global_points))[:, serial.ids]
        h1 = 1 + rng.random(serial.shape)
        whole_operator = HelmholtzOperator(compute_geometry(whole, ORDER), backend, h1=h1, h2=0.5)

        mine = part_of(rank)
        part = whole.subset(mine)
        for method in METHODS:
            parallel = Assembly(part, ORDER, backend, comm, dirichlet=dirichlet_faces(part, dirichlet_names),
                                method=method)
            label = f"{name}, method {method}"
            expect(parallel.num_global_points == serial.num_global_points,
                   f"{label}: {parallel.num_global_points} points, serial {serial.num_global_points}")
            gathered = comm.gather((mine, parallel.ids), root=0)
            if rank == 0:
                ids = np.empty_like(serial.ids)
                for elements, part_ids in gathered:
                    ids[elements] = part_ids
                expect(same_partition(ids, serial.ids), f"{label}: point classes differ from the serial ones")
                expect(np.array_equal(np.unique(ids), np.arange(serial.num_global_points)), f"{label}: ids not dense")
            expect(np.array_equal(parallel.multiplicity, serial.multiplicity[mine]), f"{label}: multiplicity")
            expect(np.array_equal(parallel.mask, serial.mask[mine]), f"{label}: Dirichlet mask")
            summed = parallel.dssum(values[:, mine].copy())
            expected = serial.dssum(values.copy())[:, mine]
            # reproducible (the default): each point's copies added in global (element, point)
            # order, dot products exactly reduced: the serial bits on any partition
            expect(np.array_equal(summed, expected), f"{label}: dssum off by {np.abs(summed - expected).max():.3g}")
            dot, serial_dot = parallel.dot(continuous[0][mine], continuous[1][mine]), serial.dot(*continuous)
            expect(dot == serial_dot, f"{label}: dot {dot!r}, serial {serial_dot!r}")
            started = values[:, mine].copy()
            handle = parallel.dssum_start(started)
            parallel.dssum_finish(handle)
            expect(np.array_equal(started, expected), f"{label}: dssum_start/finish differs from dssum")
            summed32 = parallel.dssum(np.ascontiguousarray(values[:, mine], dtype=np.float32))
            expected32 = serial.dssum(values.astype(np.float32))[:, mine]
            expect(np.array_equal(summed32, expected32), f"{label}: float32 dssum differs from the serial one")
            if method == "auto":
                operator = HelmholtzOperator(compute_geometry(part, ORDER), backend, h1=h1[mine], h2=0.5)
                applied = parallel.dssum(operator.apply_local(np.ascontiguousarray(continuous[0][mine])))
                expected = serial.dssum(whole_operator.apply_local(np.ascontiguousarray(continuous[0])))[mine]
                expect(np.allclose(applied, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max()),
                       f"{label}: assembled Helmholtz off by {np.abs(applied - expected).max():.3g}")
            parallel.free()
    return failures


def main() -> int:
    from mpi4py import MPI

    sys.path.insert(0, UNIT_TESTS)
    comm = MPI.COMM_WORLD
    failures = [f for part in comm.allgather(check(comm)) for f in part]
    if comm.Get_rank() == 0:
        print(f"assembly_ranks P={comm.Get_size()}: {len(failures)} failures")
        for line in failures:
            print("  " + line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())


import subprocess  # noqa: E402

import pytest  # noqa: E402

from mpirun import SKIP_REASON, describe, run  # noqa: E402

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

TIMEOUT_S = 180


@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_assembly_matches_serial(nprocs):
    try:
        result = run(nprocs, [__file__], timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{nprocs} ranks timed out after {TIMEOUT_S} s\n{exc.stdout or ''}\n{exc.stderr or ''}")
    assert result.returncode == 0, describe(result)
    assert f"assembly_ranks P={nprocs}: 0 failures" in result.stdout, describe(result)
