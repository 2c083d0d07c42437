"""The fused operators of the Navier–Stokes step equal the composition of the plain ones
(reference kernels on NumPy and the CPU backend): B curl v, weak_divergence(f - nu curl w),
B (f - grad p); and curl through its backend kernel equals the chain rule written out.
The CUDA kernels are compared with these in test_ns_kernels_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.backends.cpu import CpuBackend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.discretization.tensor import physical_gradient
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.operators import curl, gradient, weak_divergence
from lobatto.operators.differential import (BackendGeometry, mass_minus_gradient, weak_divergence_minus_curl,
                                            weighted_curl)

BACKENDS = [NumpyBackend(), CpuBackend()]


def curved(x, y, z):
    return 0.05 * np.sin(3 * y), 0.04 * np.sin(2 * z + x), 0.03 * np.cos(x)


@pytest.fixture(scope="module", params=[3, 5])
def setup(request):
    order = request.param
    geometry = compute_geometry(box_mesh((2, 2, 1), deform=curved), order)
    rng = np.random.default_rng(30 + order)
    n = order + 1
    fields = {name: rng.standard_normal((3, geometry.coords.shape[1], n, n, n)) for name in ("v", "f", "w")}
    fields["p"] = rng.standard_normal((geometry.coords.shape[1], n, n, n))
    return geometry, fields


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_curl_is_the_chain_rule(setup, backend):
    geometry, f = setup
    g = BackendGeometry(geometry, backend)
    v = backend.asarray(f["v"])
    grads = [physical_gradient(np, f["v"][c], np.asarray(g.derivative), geometry.metrics) for c in range(3)]
    expected = np.stack([grads[2][1] - grads[1][2], grads[0][2] - grads[2][0], grads[1][0] - grads[0][1]])
    got = backend.to_host(curl(g, backend, v))
    assert np.allclose(got, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    weighted = backend.to_host(weighted_curl(g, backend, v))
    assert np.array_equal(weighted, got * geometry.mass)  # the same products, then one multiply


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_fused_right_hand_sides_equal_the_composition(setup, backend):
    geometry, f = setup
    g = BackendGeometry(geometry, backend)
    forcing, w, p = backend.asarray(f["f"]), backend.asarray(f["w"]), backend.asarray(f["p"])
    nu = 0.0137
    expected = backend.to_host(weak_divergence(g, backend, forcing - nu * curl(g, backend, w)))
    got = backend.to_host(weak_divergence_minus_curl(g, backend, forcing, w, nu))
    assert np.array_equal(got, expected)
    expected = backend.to_host((forcing - gradient(g, backend, p)) * g.mass)
    got = backend.to_host(mass_minus_gradient(g, backend, forcing, p))
    assert np.array_equal(got, expected)
    out = np.full_like(expected, np.nan)  # an out argument is filled in place
    out = backend.asarray(out)
    assert mass_minus_gradient(g, backend, forcing, p, out=out) is out
    assert np.array_equal(backend.to_host(out), expected)


@pytest.mark.parametrize("count", [1, 3, 11])
def test_linear_combination_is_the_axpys(count):
    """The reference kernel gives the bits of c_0 a_0 + c_1 a_1 + ... written as axpys, also
    in place (out one of the arrays), as the BDF/EXT sums and the projection use it."""
    from lobatto.backends.base import REFERENCE_KERNELS

    rng = np.random.default_rng(count)
    arrays = [rng.standard_normal((3, 4, 5)) for _ in range(count)]
    coefficients = list(rng.standard_normal(count))
    expected = coefficients[0] * arrays[0]
    for c, a in zip(coefficients[1:], arrays[1:]):
        expected -= (-c) * a
    combine = NumpyBackend().kernel("linear_combination")
    assert combine is not None and "linear_combination" in REFERENCE_KERNELS
    out = np.full_like(arrays[0], np.nan)
    assert combine(out, coefficients, arrays) is out
    assert np.array_equal(out, expected)
    first = arrays[0].copy()
    combine(arrays[0], coefficients, arrays)  # in place
    assert np.array_equal(arrays[0], expected) and not np.array_equal(first, expected)
    with pytest.raises(ValueError, match="coefficients"):
        combine(out, coefficients[:-1] + [1.0, 2.0], arrays)


def test_assembly_dots_equal_dot():
    from lobatto.operators import Assembly

    mesh = box_mesh((2, 2, 2), periodic=(True, False, True))
    assembly = Assembly(mesh, 4, NumpyBackend())
    rng = np.random.default_rng(5)
    vectors = [assembly.dssum(rng.standard_normal(assembly.shape)) for _ in range(4)]
    b = assembly.dssum(rng.standard_normal(assembly.shape))
    assert assembly.dots([(x, b) for x in vectors]) == [assembly.dot(x, b) for x in vectors]
    assert assembly.dots([]) == []


def test_fused_kernels_fall_back_to_the_reference_where_a_block_does_not_fit():
    """High orders' blocks exceed an H100's 227 KiB of shared memory per block (or 1024
    threads): the tuned factories then hand out the reference kernel instead of failing at
    launch. Worked out from the launch settings (no GPU needed)."""
    from types import SimpleNamespace

    from lobatto.operators import advection_cuda, differential_cuda
    from lobatto.operators.advection import default_fine_points

    h100 = SimpleNamespace(max_shared_per_block=227 * 1024, xp=np)
    fitting = [n for n in range(1, 25) if advection_cuda.fits(h100, n, default_fine_points(n), "contravariant")]
    assert fitting == list(range(1, fitting[-1] + 1)) and 8 <= fitting[-1] < 24
    assert all(differential_cuda.fits(h100, n, "curl") for n in range(1, 16))
    assert not differential_cuda.fits(h100, 24, "curl")
    high = advection_cuda.make_contravariant(h100, 24, default_fine_points(24))
    assert high.__qualname__.startswith("reference_contravariant")
    assert advection_cuda.make_apply(h100, 24, default_fine_points(24)).__qualname__.startswith("reference_apply")
    assert differential_cuda.make_curl(h100, 24).__qualname__.startswith("reference_curl")
