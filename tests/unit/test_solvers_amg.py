"""The AMG coarse solve (solvers/amg.py): its cycles converge to the dense Cholesky solve
(Dirichlet and pure-Neumann coarse levels), one cycle is a fixed symmetric map (plain CG
takes it), a whole solve with it equals the one with Cholesky, "auto" picks it above the
dense limit, and a missing pyamg gives an error that names the key."""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("pyamg")

from lobatto.backends import get_backend  # noqa: E402
from lobatto.errors import InputError  # noqa: E402
from lobatto.mesh.box import box_mesh  # noqa: E402
from lobatto.solvers import amg  # noqa: E402
from lobatto.solvers.amg import AmgCoarseSolve  # noqa: E402
from lobatto.solvers.coarse import DenseCoarseSolve  # noqa: E402
from lobatto.solvers.elliptic import EllipticSolver  # noqa: E402
from lobatto.solvers.multigrid import Level, PMultigrid  # noqa: E402
from test_solvers_multigrid import deform, poisson, random_continuous  # noqa: E402


@pytest.fixture(scope="module")
def backend():
    return get_backend("cpu")


def coarse_level(backend, neumann, periodic: bool = False):
    """An order-1 level on a curved 6 x 5 x 4 box: Dirichlet sides, Neumann sides, or
    periodic on every axis (the pressure of a periodic flow)."""
    if periodic:
        mesh = box_mesh((6, 5, 4), periodic=(True, True, True))
    else:
        mesh = box_mesh((6, 5, 4), deform=deform, boundary="neumann" if neumann else "dirichlet")
    dirichlet = None if neumann else mesh.face_neighbour < 0
    return Level.build(mesh, 1, backend, dirichlet=dirichlet)


@pytest.mark.parametrize("neumann,periodic", [(False, False), (True, False), (True, True)])
def test_amg_cycles_converge_to_the_dense_solve(backend, neumann, periodic):
    level = coarse_level(backend, neumann, periodic)
    dense = DenseCoarseSolve(level.operator, level.assembly, null_space=neumann)
    solve = AmgCoarseSolve(level.operator, level.assembly, null_space=neumann, max_coarse=15, cycles=60)
    assert len(solve.level_sizes) >= 2 and solve.level_sizes[-1] <= 15  # a hierarchy, then the dense inverse
    b = random_continuous(level, np.random.default_rng(3), backend)
    if neumann:  # consistent: 1.b = 0 over distinct points
        b = b - level.dot(b, level.mask * 0 + 1) / level.assembly.num_global_points
    x, reference = solve(b), dense(b)
    assert np.abs(x - reference).max() <= 1e-8 * np.abs(reference).max()
    if neumann:
        assert abs(level.dot(x, level.mask * 0 + 1)) <= 1e-10 * np.abs(x).max() * level.assembly.num_global_points


def test_a_singular_hierarchy_down_to_one_aggregate(backend):
    """pyamg may coarsen a constants-singular matrix to one point (a periodic flow's pressure
    with levels = [N] did: 3375 points -> ... -> 1): that level holds only the constants, its
    inverse on the range is empty (it was refused as 'singular beyond the constants')."""
    level = coarse_level(backend, True, periodic=True)
    dense = DenseCoarseSolve(level.operator, level.assembly, null_space=True)
    solve = AmgCoarseSolve(level.operator, level.assembly, null_space=True, max_coarse=1, cycles=60)
    assert solve.level_sizes[-1] == 1
    b = random_continuous(level, np.random.default_rng(6), backend)
    b = b - level.dot(b, level.mask * 0 + 1) / level.assembly.num_global_points
    x, reference = solve(b), dense(b)
    assert np.abs(x - reference).max() <= 1e-8 * np.abs(reference).max()


@pytest.mark.parametrize("neumann", [False, True])
def test_one_cycle_is_a_fixed_symmetric_map(backend, neumann):
    level = coarse_level(backend, neumann)
    solve = AmgCoarseSolve(level.operator, level.assembly, null_space=neumann, max_coarse=15)
    rng = np.random.default_rng(5)
    u, v = (random_continuous(level, rng, backend) for _ in range(2))
    mu, mv = solve(u), solve(v)
    assert abs(level.dot(u, mv) - level.dot(v, mu)) <= 1e-12 * abs(level.dot(u, mu))
    assert level.dot(u, mu) > 0
    np.testing.assert_array_equal(solve(u), mu)  # the same map on every call


def test_poisson_with_amg_equals_cholesky_and_cg_takes_it(backend, monkeypatch):
    monkeypatch.setattr(amg, "MAX_COARSE", 20)
    mesh, dirichlet, level, b, exact = poisson(4, 3, backend)
    solutions = {}
    for coarse, method in (("cholesky", "cg"), ("amg", "cg"), ("amg", "fcg")):
        solver = EllipticSolver(mesh, level, {"method": method, "coarse": coarse, "tolerance": 1e-11}, backend, None,
                                dirichlet, 1.0, 0.0)
        assert solver.coarse_solve == coarse
        result = solver.solve(b)
        assert result.converged and result.iterations <= 20
        solutions[(coarse, method)] = result.x
    reference = solutions[("cholesky", "cg")]
    for key, x in solutions.items():
        assert np.abs(x - reference).max() <= 1e-9 * np.abs(reference).max(), key
    assert np.abs(reference - exact).max() < 1e-3


def test_auto_picks_amg_above_the_dense_limit_and_pcg_without_pyamg(backend, monkeypatch):
    mesh, dirichlet, level, *_ = poisson(3, 2, backend)
    monkeypatch.setattr("lobatto.solvers.multigrid.DENSE_LIMIT", 10)
    mg = PMultigrid.build(mesh, backend, (2, 1), dirichlet=dirichlet, finest=level, coarse="auto")
    assert type(mg.coarse).__name__ == "AmgCoarseSolve" and mg.symmetric
    monkeypatch.setitem(sys.modules, "pyamg", None)  # import pyamg now raises ImportError
    mg = PMultigrid.build(mesh, backend, (2, 1), dirichlet=dirichlet, finest=level, coarse="auto")
    assert type(mg.coarse).__name__ == "IterativeCoarseSolve" and not mg.symmetric


def test_amg_without_pyamg_is_a_clear_error(backend, monkeypatch):
    mesh, dirichlet, level, *_ = poisson(3, 2, backend)
    monkeypatch.setitem(sys.modules, "pyamg", None)
    with pytest.raises(InputError, match=r'coarse = "amg" needs the pyamg package'):
        EllipticSolver(mesh, level, {"coarse": "amg"}, backend, None, dirichlet, 1.0, 0.0)


def test_sparse_matrix_of_the_cpu_backend(backend):
    import scipy.sparse

    host = scipy.sparse.random(30, 30, density=0.2, random_state=1, format="csr")
    matrix = backend.sparse_matrix(host, np.float32)
    x = np.random.default_rng(2).standard_normal(30).astype(np.float32)
    assert (matrix @ x).dtype == np.float32
    np.testing.assert_allclose(matrix @ x, host @ x, rtol=1e-5, atol=1e-6)


def test_a_replay_that_differs_from_a_plain_cycle_falls_back(backend, monkeypatch):
    """A recorded cycle that left work out (here: one that does nothing) is caught at its first
    replay; the answer is the plain cycle's, and so is every later one."""

    class Broken:
        captured, fallback_reason = True, None

        def __call__(self):
            pass

    level = coarse_level(backend, False)
    reference = AmgCoarseSolve(level.operator, level.assembly, max_coarse=15)
    monkeypatch.setattr(backend, "capture", lambda function, allowed=None: Broken())
    solve = AmgCoarseSolve(level.operator, level.assembly, max_coarse=15)
    b = random_continuous(level, np.random.default_rng(9), backend)
    np.testing.assert_array_equal(solve(b), reference(b))
    assert solve.graph_mismatch and not solve.step.captured and "differed" in solve.step.fallback_reason
    np.testing.assert_array_equal(solve(2 * b), reference(2 * b))


def test_small_and_empty_coarse_levels(backend):
    """At most MAX_COARSE free points: one dense inverse (here equal to Cholesky's); none at
    all (one element, every point on a Dirichlet side): x = 0."""
    level = coarse_level(backend, False)
    solve = AmgCoarseSolve(level.operator, level.assembly)
    assert solve.level_sizes == [5 * 4 * 3]  # the interior points of the 7 x 6 x 5
    b = random_continuous(level, np.random.default_rng(4), backend)
    reference = DenseCoarseSolve(level.operator, level.assembly)(b)
    assert np.abs(solve(b) - reference).max() <= 1e-12 * np.abs(reference).max()
    mesh = box_mesh((1, 1, 1))
    single = Level.build(mesh, 1, backend, dirichlet=mesh.face_neighbour < 0)
    empty = AmgCoarseSolve(single.operator, single.assembly)
    assert empty.level_sizes == [0]
    np.testing.assert_array_equal(empty(single.mask * 0.0), np.zeros(single.assembly.shape))
