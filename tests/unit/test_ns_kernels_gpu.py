"""The tuned CUDA kernels of the Navier–Stokes step (advection_contravariant, advection_apply,
curl, weak_divergence_minus_curl, mass_minus_gradient) equal their NumPy reference kernels on
fresh random data: float64 to ~1e-13 relative, float32 to ~1e-5; at several orders, with an
element count that leaves the last block short; every output value written (outputs are
poisoned with NaN first); and the first elements' values do not depend on how many elements
follow (the bits a rank's share of the mesh gives). Skipped, with the reason, without CuPy and
a CUDA GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupy")

from lobatto.backends import cuda_available  # noqa: E402

OK, WHY = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"needs CuPy and a CUDA GPU: {WHY}")]

import cupy  # noqa: E402

import lobatto.operators  # noqa: E402,F401  (registers the kernels)
from lobatto.backends import get_backend  # noqa: E402
from lobatto.backends.base import REFERENCE_KERNELS  # noqa: E402
from lobatto.backends.numpy_backend import NumpyBackend  # noqa: E402
from lobatto.operators.advection import default_fine_points  # noqa: E402

ORDERS = (3, 5, 7, 8)
ELEMENTS = 13  # not a multiple of any elements-per-block choice
TOLERANCE = {"float64": 1e-13, "float32": 2e-5}


def cases(order, elements, rng):
    """{kernel name: (specialisation, inputs before out, out shape)} on random host data."""
    n, m = order + 1, default_fine_points(order)
    E = elements
    field = (E, n, n, n)

    def r(*shape):
        return rng.standard_normal(shape)

    interp = r(m, n)
    mass = 0.5 + rng.random(field)  # positive, as a mass is
    return {
        "advection_contravariant": ({"order": order, "fine": m}, [r(3, *field), r(3, 3, E, m, m, m), interp],
                                    (3, E, m, m, m)),
        "advection_apply": ({"order": order, "fine": m},
                            [r(3, E, m, m, m), r(3, *field), interp, r(m, n), np.ascontiguousarray(interp.T)],
                            (3, *field)),
        "advection_apply_one": ({"order": order, "fine": m},
                                [r(3, E, m, m, m), r(1, *field), interp, r(m, n), np.ascontiguousarray(interp.T)],
                                (1, *field)),
        "curl": ({"order": order}, [r(3, *field), r(3, 3, *field), None, r(n, n)], (3, *field)),
        "weighted_curl": ({"order": order}, [r(3, *field), r(3, 3, *field), mass, r(n, n)], (3, *field)),
        "weak_divergence_minus_curl": ({"order": order}, [r(3, *field), r(3, *field), r(3, 3, *field), mass,
                                                          r(n, n), 0.0123], field),
        "mass_minus_gradient": ({"order": order}, [r(3, *field), r(*field), r(3, 3, *field), mass, r(n, n)],
                                (3, *field)),
    }


KERNEL = {"advection_apply_one": "advection_apply", "weighted_curl": "curl"}


def run(backend, name, spec, inputs, out_shape, dtype):
    kernel_name = KERNEL.get(name, name)
    if isinstance(backend, NumpyBackend):
        kernel = REFERENCE_KERNELS[kernel_name](backend, **spec)
        args = [a.astype(dtype) if isinstance(a, np.ndarray) else a for a in inputs]
        out = np.full(out_shape, np.nan, dtype=dtype)
    else:
        assert backend.has_tuned(kernel_name)
        kernel = backend.kernel(kernel_name, **spec)
        args = [cupy.asarray(a, dtype=dtype) if isinstance(a, np.ndarray) else a for a in inputs]
        out = cupy.full(out_shape, np.nan, dtype=dtype)
    result = kernel(*args, out)
    assert result is out
    return backend.to_host(out)


@pytest.fixture(scope="module")
def gpu():
    return {p: get_backend("cuda", precision=p) for p in ("float64", "float32")}


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("name", ["advection_contravariant", "advection_apply", "advection_apply_one", "curl",
                                  "weighted_curl", "weak_divergence_minus_curl", "mass_minus_gradient"])
def test_tuned_equals_the_reference(gpu, name, order, precision):
    rng = np.random.default_rng(abs(hash((name, order, precision))) % 2 ** 32)
    spec, inputs, shape = cases(order, ELEMENTS, rng)[name]
    expected = run(NumpyBackend(), name, spec, inputs, shape, np.float64)  # the oracle in float64
    got = run(gpu[precision], name, spec, inputs, shape, np.dtype(precision))
    assert np.all(np.isfinite(got)), "an output value was not written"
    error = np.abs(got - expected).max() / np.abs(expected).max()
    assert error < TOLERANCE[precision], f"{name} N={order} {precision}: relative error {error:.3g}"


@pytest.mark.parametrize("name", ["advection_contravariant", "advection_apply", "weighted_curl",
                                  "weak_divergence_minus_curl", "mass_minus_gradient"])
def test_values_do_not_depend_on_the_element_count(gpu, name):
    """The first 5 of 29 elements computed alone give the same bits as within all 29."""
    rng = np.random.default_rng(7)
    order = 7
    spec, inputs, shape = cases(order, 29, rng)[name]
    whole = run(gpu["float64"], name, spec, inputs, shape, np.float64)

    def head(a, axis_of_elements):
        return np.ascontiguousarray(np.take(a, range(5), axis=axis_of_elements))

    part_inputs = []
    for a in inputs:
        if not isinstance(a, np.ndarray) or a.ndim <= 2:
            part_inputs.append(a)  # matrices and scalars
        else:
            part_inputs.append(head(a, a.ndim - 4))  # elements come just before the element's 3 axes
    part_shape = shape[:len(shape) - 4] + (5,) + shape[len(shape) - 3:]
    part = run(gpu["float64"], name, spec, part_inputs, part_shape, np.float64)
    assert np.array_equal(part, head(whole, len(shape) - 4))


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("count", [1, 2, 8, 9, 17])
def test_linear_combination(gpu, count, precision):
    """One pass up to 8 arrays, chained beyond; in place (out the first array) too."""
    backend = gpu[precision]
    assert backend.has_tuned("linear_combination")
    rng = np.random.default_rng(count)
    host = [rng.standard_normal((3, 5, 4, 4, 4)) for _ in range(count)]
    coefficients = list(rng.standard_normal(count))
    expected = sum(c * a for c, a in zip(coefficients, host))
    arrays = [cupy.asarray(a, dtype=precision) for a in host]
    combine = backend.kernel("linear_combination")
    out = cupy.full(expected.shape, np.nan, dtype=precision)
    assert combine(out, coefficients, arrays) is out
    scale = np.abs(expected).max()
    assert np.abs(cupy.asnumpy(out) - expected).max() < 4 * TOLERANCE[precision] * scale * count
    combine(arrays[0], coefficients, arrays)
    assert np.array_equal(cupy.asnumpy(arrays[0]), cupy.asnumpy(out))


def test_projection_on_the_gpu_equals_the_cpu():
    """SolutionProjection with the multi-dot and the combination kernel: the same x_bar and
    residual as on the CPU (reference kernels), and dots with dot's bits."""
    from lobatto.mesh import box_mesh
    from lobatto.operators import Assembly
    from lobatto.solvers import SolutionProjection

    mesh = box_mesh((3, 2, 2))
    rng = np.random.default_rng(11)
    results = {}
    for name in ("cpu", "cuda"):
        backend = get_backend(name)
        assembly = Assembly(mesh, 5, backend)
        host = [rng.standard_normal(assembly.shape) for _ in range(4)]
        rng = np.random.default_rng(11)  # the same data on both
        vectors = [assembly.dssum(backend.asarray(h)) for h in host]
        b = vectors[-1]
        assert assembly.dots([(x, b) for x in vectors[:3]]) == [assembly.dot(x, b) for x in vectors[:3]]

        def A(x):
            return 2.0 * x

        projection = SolutionProjection(A, assembly.dot, 4, dots=assembly.dots,
                                        combine=backend.kernel("linear_combination"))
        for x in vectors[:3]:
            projection.update(backend.zeros(assembly.shape), x)
        x_bar, residual = projection.project(b)
        results[name] = (backend.to_host(x_bar), backend.to_host(residual))
    for cpu, gpu_ in zip(results["cpu"], results["cuda"]):
        assert np.abs(cpu - gpu_).max() <= 1e-12 * np.abs(cpu).max()
