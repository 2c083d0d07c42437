"""Exact, partition-independent sums (comm/exact_sum.py) and the ordered gather-scatter
(comm/ordered.py), on fresh random data: the result is math.fsum's (the correctly rounded
sum) whatever the order of the terms and however they are split among "ranks"; per-element
partials do not depend on which other elements share the array; the keyed serial
gather-scatter adds each id's copies left to right in key order."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lobatto.comm import GatherScatter
from lobatto.comm.exact_sum import SLOTS, accumulate, accumulate_rows, exact_sum, exact_sums, row_sums, totals


def spread(rng, size):
    """Terms over 120 binary orders of magnitude, with cancellation and subnormals."""
    x = rng.standard_normal(size) * np.exp2(rng.integers(-60, 60, size))
    x[: size // 3] = -x[size // 3: 2 * (size // 3)] * (1 + 2.0 ** -45)
    x[-3:] = rng.standard_normal(3) * 5e-320
    return rng.permutation(x)


def test_exact_sum_is_fsum_under_permutation_and_splitting():
    rng = np.random.default_rng()
    for _ in range(30):
        x = spread(rng, int(rng.integers(10, 5000)))
        reference = math.fsum(x)
        assert exact_sum(None, x) == reference
        y = x[rng.permutation(x.size)]
        cuts = np.sort(rng.integers(0, x.size, 3))
        parts = np.split(y, cuts)  # four "ranks", some maybe empty
        assert totals(None, [sum(accumulate(p) for p in parts)])[0] == reference
        assert exact_sum(None, x.astype(np.float32)) == math.fsum(x.astype(np.float32).astype(np.float64))


def test_exact_sum_of_naive_sums_differs_but_exact_does_not():
    """The plain sum depends on the order (why the reductions were rank-count dependent)."""
    rng = np.random.default_rng()
    x = spread(rng, 4000)
    orders = [x[rng.permutation(x.size)] for _ in range(20)]
    assert len({float(np.cumsum(o)[-1]) for o in orders}) > 1  # left to right in each order
    assert len({exact_sum(None, o) for o in orders}) == 1


def test_special_values_and_range():
    assert exact_sum(None, np.array([1e308, 1e308])) == math.inf
    assert exact_sum(None, np.array([-1e308, -1e308, 1.0])) == -math.inf
    assert math.isnan(exact_sum(None, np.array([np.inf, -np.inf])))
    assert math.isnan(exact_sum(None, np.array([1.0, np.nan])))
    assert exact_sum(None, np.array([np.inf, 1.0])) == math.inf
    assert exact_sum(None, np.array([2.0 ** 1023, 2.0 ** 1023, -2.0 ** 1023])) == 2.0 ** 1023
    assert exact_sum(None, np.array([1.0, 1e-300, -1.0])) == 1e-300
    assert exact_sum(None, np.zeros(0)) == 0.0
    assert exact_sum(None, np.array([5e-324, 5e-324])) == 1e-323
    a, b = exact_sums(None, [np.array([0.1] * 10), np.array([1.0, 2.0 ** -60])])
    assert a == math.fsum([0.1] * 10) and b == 1.0 + 2.0 ** -60 - 2.0 ** -60 + 2.0 ** -60


@pytest.mark.parametrize("points", [1, 7, 64, 125])
def test_per_element_partials_do_not_depend_on_the_other_elements(points):
    """A rank's part of the elements gives the same per-element sums (and, exactly added,
    the same total) as the whole array, for u, u v and u v w with w repeated over components."""
    rng = np.random.default_rng()
    elements = int(rng.integers(5, 40))
    u = rng.standard_normal((3, elements, points)) * np.exp2(rng.integers(-20, 20, (3, elements, points)))
    v = rng.standard_normal((3, elements, points))
    w = rng.random((elements, points)) + 0.1
    for args in ((u,), (u, v), (u, v, w)):
        whole = accumulate_rows(points, *args)
        assert whole.shape == (SLOTS,)
        mine = rng.permutation(elements)
        cut = int(rng.integers(1, elements))
        pieces = []
        for part in (np.sort(mine[:cut]), np.sort(mine[cut:])):
            pieces.append(accumulate_rows(points, *[np.ascontiguousarray(a[:, part] if a.ndim == 3 else a[part])
                                                    for a in args]))
        assert totals(None, [whole])[0] == totals(None, [pieces[0] + pieces[1]])[0]
        product = np.prod(np.broadcast_arrays(*args), axis=0)
        assert totals(None, [whole])[0] == pytest.approx(math.fsum(product.ravel()), rel=1e-12)
        rows = row_sums(np.ascontiguousarray(product[:, mine[:cut]]), points)
        assert np.array_equal(rows, row_sums(product, points).reshape(3, elements)[:, mine[:cut]].ravel())


def test_keyed_serial_gather_scatter_adds_in_key_order():
    """Each id's copies are added left to right in increasing key order, whatever their
    positions: the same bits as a Python loop over the sorted keys."""
    rng = np.random.default_rng()
    n = 3000
    ids = rng.integers(1, 300, n)
    keys = rng.permutation(n) * 7 + 3
    values = spread(rng, n)
    gs = GatherScatter(ids, keys=keys)
    summed = values.copy()
    gs.apply(summed, "sum")
    for i in np.unique(ids):
        members = np.flatnonzero(ids == i)
        ordered = members[np.argsort(keys[members])]
        total = values[ordered[0]]
        for p in ordered[1:]:
            total = total + values[p]
        assert np.all(summed[members] == total), i
    plain = values.copy()
    GatherScatter(ids).apply(plain, "sum")
    assert np.allclose(plain, summed, rtol=1e-12, atol=1e-12 * np.abs(values).max())
