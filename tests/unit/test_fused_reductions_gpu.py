"""The fused reductions and the overlapped apply's pieces on the CUDA backend: ``Assembly.dots``
gives ``dot``'s bits for every pair (one device buffer, one copy to the host), the Helmholtz
kernel on a subset of elements (``apply_elements``) gives ``apply_local``'s bits on them, and
the gather-scatter with the local sums deferred to ``finish`` equals the plain one. Skipped,
with the reason, without CuPy and a CUDA GPU (tests/mpi/test_fused_reductions_ranks.py checks
the same on CPU ranks)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

import cupy  # noqa: E402

from lobatto.backends import get_backend  # noqa: E402
from lobatto.comm import GatherScatter  # noqa: E402
from lobatto.mesh.box import box_mesh  # noqa: E402
from lobatto.mesh.geometry import compute_geometry  # noqa: E402
from lobatto.solvers.multigrid import Level  # noqa: E402


@pytest.fixture(scope="module")
def level():
    backend = get_backend("cuda")
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
    stacked = cupy.stack([u, v])
    assert lv.assembly.dots([(stacked, stacked)]) == [lv.assembly.dot(stacked, stacked)]


def test_apply_elements_is_apply_local_on_them(level):
    backend, lv = level
    u = backend.asarray(np.random.default_rng(4).standard_normal(lv.assembly.shape))
    whole = lv.operator.apply_local(u)
    chosen = np.array([0, 2, 7, 11], dtype=np.int64)
    out = cupy.full_like(u, np.nan)
    lv.operator.apply_elements(u, out, chosen)
    assert cupy.array_equal(out[cupy.asarray(chosen)], whole[cupy.asarray(chosen)])
    others = np.setdiff1d(np.arange(u.shape[0]), chosen)
    assert bool(cupy.isnan(out[cupy.asarray(others)]).all())  # the other elements untouched


@pytest.mark.parametrize("keyed", [False, True])
def test_deferred_local_sums_equal_the_plain_gather_scatter(keyed):
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 40, 300)
    keys = rng.permutation(300).astype(np.int64) if keyed else None
    gs = GatherScatter(ids, None, xp=cupy, keys=keys)
    u = cupy.asarray(rng.standard_normal((2, 300)))
    plain = gs.apply(u.copy())
    deferred = u.copy()
    gs.finish(gs.start(deferred, "sum", defer_local=True))
    assert cupy.array_equal(plain, deferred)
