"""The fused reductions and the overlapped apply's pieces on one CPU process: ``Assembly.dots``
gives ``dot``'s bits for every pair, the Helmholtz kernel on a subset of elements
(``apply_elements``) gives ``apply_local``'s bits on them, the gather-scatter with the local
sums deferred to ``finish`` equals the plain one, and the Krylov methods issue the reductions
their docstrings count (``collective_counts``). The same checks run on the GPU in
test_fused_reductions_gpu.py, and on 1-3 ranks in tests/mpi/test_fused_reductions_ranks.py."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.backends import get_backend
from lobatto.comm import GatherScatter
from lobatto.machine.parallel import collective_counts
from lobatto.mesh.box import box_mesh
from lobatto.mesh.geometry import compute_geometry
from lobatto.solvers import SolutionProjection, flexible_cg, pcg
from lobatto.solvers.multigrid import Level

xp = np


@pytest.fixture(scope="module")
def level():
    backend = get_backend("cpu")
    mesh = box_mesh((3, 2, 2), upper=(1.5, 1.0, 1.0))
    geometry = compute_geometry(mesh, 5)
    x, y, _ = geometry.coords
    return backend, Level.build(mesh, 5, backend, None, mesh.face_neighbour < 0, h1=1.0 + 0.2 * x * y, h2=0.3,
                                geometry=geometry)


def test_dots_are_dot_bit_for_bit(level):
    backend, lv = level
    rng = np.random.default_rng(3)
    u, v, w = (backend.asarray(rng.standard_normal(lv.assembly.shape)) for _ in range(3))
    pairs = [(u, v), (v, w), (w, w), (u, u)]
    assert lv.assembly.dots(pairs) == [lv.assembly.dot(a, b) for a, b in pairs]
    stacked = xp.stack([u, v])
    assert lv.assembly.dots([(stacked, stacked)]) == [lv.assembly.dot(stacked, stacked)]


def test_apply_elements_is_apply_local_on_them(level):
    backend, lv = level
    u = backend.asarray(np.random.default_rng(4).standard_normal(lv.assembly.shape))
    whole = lv.operator.apply_local(u)
    chosen = np.array([0, 2, 7, 11], dtype=np.int64)
    out = xp.full_like(u, np.nan)
    lv.operator.apply_elements(u, out, chosen)
    assert xp.array_equal(out[xp.asarray(chosen)], whole[xp.asarray(chosen)])
    others = np.setdiff1d(np.arange(u.shape[0]), chosen)
    assert bool(np.isnan(out[others]).all())  # the other elements untouched


@pytest.mark.parametrize("keyed", [False, True])
def test_deferred_local_sums_equal_the_plain_gather_scatter(keyed):
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 40, 300)
    keys = rng.permutation(300).astype(np.int64) if keyed else None
    gs = GatherScatter(ids, None, xp=np, keys=keys)
    u = xp.asarray(rng.standard_normal((2, 300)))
    plain = gs.apply(u.copy())
    deferred = u.copy()
    gs.finish(gs.start(deferred, "sum", defer_local=True))
    assert xp.array_equal(plain, deferred)


def test_the_krylov_methods_issue_the_reductions_they_count(level):
    backend, lv = level
    b = backend.asarray(np.random.default_rng(6).standard_normal(lv.assembly.shape))
    lv.assembly.dssum(b)
    b *= lv.mask
    jacobi = lv.jacobi()
    for method, per_iteration, fixed in ((pcg, 2, 2), (flexible_cg, 3, 2)):
        before = collective_counts()
        result = method(lv.apply, b, M=jacobi, dot=lv.dot, tol=1e-9, maxiter=400)
        after = collective_counts()
        k = result.iterations
        assert result.converged and k > 5
        # ||b||, the start, k iterations (flexible CG's last stops after r.r: 2 of its 3)
        expected = fixed + per_iteration * k if method is pcg else 1 + 2 + 3 * (k - 1) + 2
        assert after["reductions"] - before["reductions"] == expected, method.__name__
        assert after["exchanges"] - before["exchanges"] == k  # one per application of A


def test_projection_fuses_its_products_to_the_same_values(level):
    backend, lv = level
    rng = np.random.default_rng(7)
    fused = SolutionProjection(lv.apply, lv.dot)
    plain = SolutionProjection(lv.apply, lv.dot, dots=lambda pairs: [lv.dot(u, v) for u, v in pairs])
    for step in range(3):
        dx = backend.asarray(rng.standard_normal(lv.assembly.shape)) * lv.mask
        lv.assembly.dssum(dx)
        dx *= lv.inverse_multiplicity
        for projection in (fused, plain):
            projection.update(xp.zeros_like(dx), dx.copy())
    b = lv.apply(backend.asarray(rng.standard_normal(lv.assembly.shape)) * lv.mask)
    before = collective_counts()
    x_fused, r_fused = fused.project(b)
    assert collective_counts()["reductions"] - before["reductions"] == 1
    x_plain, r_plain = plain.project(b)
    assert len(fused) == 3
    assert np.array_equal(x_fused, x_plain) and np.array_equal(r_fused, r_plain)
