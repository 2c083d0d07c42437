"""The CPU backend's compiled ``advection_apply`` (operators/advection_cpu.py,
kernels/advection.c) against the NumPy reference on fresh random data: orders 1 to 9, the 3/2
rule's fine grid and a finer one, one to four fields, float64 and float32."""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.backends.cpu import CpuBackend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.discretization import derivative_matrix, gll_points
from lobatto.jit import c as cbuild
from lobatto.operators.advection import default_fine_points
from lobatto.operators.advection_cpu import compiled_apply
from lobatto.operators.interpolation import interpolation_matrix


def operands(order, fine, count, elements, dtype, seed):
    rng = np.random.default_rng(seed)
    points, _ = np.polynomial.legendre.leggauss(fine)
    interp = interpolation_matrix(gll_points(order), points)
    n = order + 1
    return (rng.standard_normal((3, elements, fine, fine, fine)).astype(dtype),
            rng.standard_normal((count, elements, n, n, n)).astype(dtype),
            interp.astype(dtype), (interp @ derivative_matrix(order)).astype(dtype),
            np.ascontiguousarray(interp.T).astype(dtype))


@pytest.mark.skipif(cbuild.disabled(), reason="compiled CPU kernels are switched off")
@pytest.mark.parametrize("order", [1, 2, 4, 5, 7, 9])
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_compiled_apply_equals_the_reference(order, precision):
    dtype = np.dtype(precision)
    for fine, count in ((default_fine_points(order), 3), (default_fine_points(order) + 1, 1), (order + 1, 4)):
        u, f, i, idr, it = operands(order, fine, count, 5, dtype, seed=order * 100 + fine)
        reference = NumpyBackend(precision=precision).kernel("advection_apply", order=order, fine=fine)
        expected = reference(u, f, i, idr, it, np.empty_like(f))
        compiled = compiled_apply(order, fine, precision)
        assert compiled is not None, "the C kernel did not build"
        got = compiled(u, f, i, idr, it, np.empty_like(f))
        scale = np.abs(expected).max()
        tolerance = 1e-13 if precision == "float64" else 2e-5
        assert np.abs(got - expected).max() <= tolerance * scale, (order, fine, precision)
        # the backend's kernel is the compiled one
        tuned = CpuBackend(precision=precision).kernel("advection_apply", order=order, fine=fine)
        assert np.array_equal(tuned(u, f, i, idr, it, np.empty_like(f)), got)
