"""Serial (comm=None) tests of lobatto.comm.GatherScatter against a dictionary reference."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

try:
    import lobatto  # noqa: F401
except ImportError:  # running from a checkout without install
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src"))

from lobatto.comm import OPS, GatherScatter
from lobatto.comm import local as gs_local
from lobatto.errors import InputError

COMBINE = {"sum": lambda a, b: a + b, "prod": lambda a, b: a * b, "min": min, "max": max}


def dict_reference(ids, u, op):
    """Plain Python: combine per id in a dict, write back; id 0 untouched."""
    out = np.array(u, dtype=float, copy=True)
    acc: dict[int, float] = {}
    for i, g in enumerate(ids.tolist()):
        if g:
            acc[g] = u[i] if g not in acc else COMBINE[op](acc[g], u[i])
    for i, g in enumerate(ids.tolist()):
        if g:
            out[i] = acc[g]
    return out


def random_ids(rng, nid=200):
    gids = rng.choice(np.arange(1, 10 * nid, dtype=np.int64), size=nid, replace=False)
    ids = np.repeat(gids, rng.integers(1, 6, size=nid))
    ids = np.concatenate([ids, np.zeros(len(ids) // 8, dtype=np.int64)])
    return ids[rng.permutation(len(ids))]


@pytest.fixture(params=[0, 1, 2])
def problem(request):
    rng = np.random.default_rng(1000 + request.param)
    ids = random_ids(rng)
    return ids, rng.standard_normal(len(ids)), rng


@pytest.mark.parametrize("op", OPS)
def test_each_op_matches_dict_reference(problem, op):
    ids, u, _ = problem
    gs = GatherScatter(ids)
    want = dict_reference(ids, u, op)
    got = u.copy()
    assert gs.apply(got, op) is got
    if op in ("sum", "prod"):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    else:
        np.testing.assert_array_equal(got, want)
    # id 0 is left untouched
    np.testing.assert_array_equal(got[ids == 0], u[ids == 0])


def test_attributes_serial(problem):
    ids, _, _ = problem
    gs = GatherScatter(ids)
    assert gs.n == len(ids)
    assert gs.method == "local"
    assert gs.nshared == 0
    info = gs.setup_info()
    assert info["method"] == "local" and info["neighbours"] == 0 and info["bytes_per_exchange"] == 0
    assert info["timings"] == {}
    assert GatherScatter(ids, method="pairwise").method == "local"  # no communicator: local


@pytest.mark.parametrize("op", OPS)
def test_many_fields_equal_single_fields(problem, op):
    ids, _, rng = problem
    u6 = rng.standard_normal((6, len(ids)))
    gs = GatherScatter(ids)
    singles = [gs.apply(u6[v].copy(), op) for v in range(6)]
    both = gs.apply(u6.copy(), op)
    for v in range(6):
        np.testing.assert_allclose(both[v], singles[v], rtol=1e-15, atol=0)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("vn", [1, 6])
def test_start_finish_equals_apply(problem, op, vn):
    ids, _, rng = problem
    u = rng.standard_normal((vn, len(ids))) if vn > 1 else rng.standard_normal(len(ids))
    gs = GatherScatter(ids)
    a = gs.apply(u.copy(), op)
    b = u.copy()
    h = gs.start(b, op)
    assert gs.finish(h) is b
    np.testing.assert_array_equal(a, b)
    with pytest.raises(InputError, match="twice"):
        gs.finish(h)


def test_integer_data_and_strided_view():
    ids = np.array([5, 0, 5, 7, 7, 7, 9], dtype=np.int32)
    u = np.array([1, 2, 3, 4, 5, 6, 7], dtype=np.int64)
    gs = GatherScatter(ids)
    np.testing.assert_array_equal(gs.apply(u.copy(), "sum"), [4, 2, 4, 15, 15, 15, 7])
    np.testing.assert_array_equal(gs.apply(u.copy(), "min"), [1, 2, 1, 4, 4, 4, 7])
    # in place through a non-contiguous view
    big = np.zeros((7, 2))
    big[:, 0] = u
    gs.apply(big[:, 0], "max")
    np.testing.assert_array_equal(big[:, 0], [3, 2, 3, 6, 6, 6, 7])
    np.testing.assert_array_equal(big[:, 1], 0)


def test_empty_and_all_zero_ids():
    for ids in (np.zeros(0, dtype=np.int64), np.zeros(4, dtype=np.int64)):
        gs = GatherScatter(ids)
        u = np.arange(len(ids), dtype=float)
        np.testing.assert_array_equal(gs.apply(u.copy()), u)
        np.testing.assert_array_equal(gs.apply(np.ones((6, len(ids)))), np.ones((6, len(ids))))


def test_prod_of_integer_valued_floats_is_exact():
    rng = np.random.default_rng(7)
    ids = random_ids(rng, 300)
    u = rng.choice(np.array([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0]), size=len(ids))
    want = dict_reference(ids, u, "prod")
    np.testing.assert_array_equal(GatherScatter(ids).apply(u.copy(), "prod"), want)
    assert all(math.isfinite(x) for x in want)


@pytest.mark.parametrize(
    "ids, match",
    [
        (np.array([1.0, 2.0, 1.0]), "integer"),
        (np.array([[1, 2], [2, 1]]), "1-D"),
        (np.array([1, -2, 3]), "negative.*index 1"),
        (np.array([True, False]), "integer"),
        ("abc", "integer"),
    ],
)
def test_bad_ids_raise_input_error(ids, match):
    with pytest.raises(InputError, match=match):
        GatherScatter(ids)


def test_bad_arguments_raise_input_error():
    ids = np.array([1, 2, 1], dtype=np.int64)
    with pytest.raises(InputError, match="unknown method"):
        GatherScatter(ids, method="fastest")
    gs = GatherScatter(ids)
    with pytest.raises(InputError, match="unknown op"):
        gs.apply(np.zeros(3), "mean")
    with pytest.raises(InputError, match=r"shape \(3,\) or \(vn, 3\)"):
        gs.apply(np.zeros(4))
    with pytest.raises(InputError, match="shape"):
        gs.apply(np.zeros((2, 3, 3)))
    assert InputError.exit_code == 2


def test_kernel_hook():
    assert gs_local.kernels_for(np) is gs_local
    assert gs_local.array_module(np.zeros(2)) is np

    class FakeModule:
        __name__ = "fakearray"

    with pytest.raises(NotImplementedError):
        gs_local.kernels_for(FakeModule())
