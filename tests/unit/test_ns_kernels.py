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
