"""Partitioners (rcb, metis) and the interior-first element order of a rank's part."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from lobatto.errors import InputError
from lobatto.mesh import box_mesh
from lobatto.mesh.partition import partition_box

HAVE_PYMETIS = importlib.util.find_spec("pymetis") is not None
METHODS = ["rcb", pytest.param("metis", marks=pytest.mark.skipif(not HAVE_PYMETIS, reason="pymetis is not installed"))]


def random_boxes(seed, count=6):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        elements = tuple(int(v) for v in rng.integers(1, 7, size=3))
        parts = int(rng.integers(1, min(8, int(np.prod(elements))) + 1))
        yield elements, parts


@pytest.mark.parametrize("method", METHODS)
def test_parts_cover_the_box_once_and_are_balanced(method):
    for elements, parts in random_boxes(seed=None):
        owned = [partition_box(elements, parts, p, method) for p in range(parts)]
        every = np.concatenate(owned)
        total = int(np.prod(elements))
        assert np.array_equal(np.sort(every), np.arange(total)), (elements, parts)
        sizes = np.array([len(o) for o in owned])
        assert sizes.min() >= 1
        # rcb cuts whole element layers, metis balances within its default 3 %; both stay
        # well inside 2x of the mean on these boxes
        assert sizes.max() <= 2 * total / parts + 1, (elements, parts, sizes)
        # a rank computes its part alone: asking again gives the same ids
        assert all(np.array_equal(partition_box(elements, parts, p, method), owned[p]) for p in range(parts))


def test_rcb_halves_a_cube_exactly():
    parts = [partition_box((4, 4, 4), 8, p) for p in range(8)]
    assert all(len(p) == 8 for p in parts)


def test_more_ranks_than_elements_is_an_error():
    with pytest.raises(InputError, match="without elements"):
        partition_box((2, 1, 1), 3, 0)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("periodic", [(True, False, False), (False, False, False), (True, True, True)])
def test_halo_elements_last(method, periodic):
    elements, parts = (12, 4, 3), 3
    for p in range(parts):
        ids = partition_box(elements, parts, p, method)
        rng = np.random.default_rng(p)
        mesh = box_mesh(elements, periodic=periodic, element_ids=rng.permutation(ids))
        ordered = mesh.halo_last()
        ordered.check()
        # brute force: an element is halo when a face neighbour is owned elsewhere
        own = set(ids.tolist())
        halo = np.array([any(nb >= 0 and int(nb) not in own for nb in row) for row in ordered.face_neighbour])
        assert np.array_equal(ordered.halo_elements(), halo)
        count = int(halo.sum())
        assert 0 < count < len(ids)
        assert halo[len(ids) - count:].all() and not halo[: len(ids) - count].any()
        # the same elements, each with its own connectivity and vertices
        assert sorted(ordered.element_ids.tolist()) == sorted(ids.tolist())
        where = {int(e): i for i, e in enumerate(mesh.element_ids)}
        back = np.array([where[int(e)] for e in ordered.element_ids])
        assert np.array_equal(ordered.face_neighbour, mesh.face_neighbour[back])
        assert np.array_equal(ordered.vertices[ordered.element_vertices], mesh.vertices[mesh.element_vertices[back]])
        assert ordered.halo_last() is ordered  # already in order: unchanged


def test_reordered_refuses_a_non_permutation():
    mesh = box_mesh((2, 1, 1))
    with pytest.raises(ValueError, match="permutation"):
        mesh.reordered([0, 0])
