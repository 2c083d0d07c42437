"""The Helmholtz operator's CUDA kernel (kernels/helmholtz.cu): launch and arguments.

Registered as the CUDA backend's tuned ``helmholtz_apply``, with the reference signature
``apply(u, out, factors, mass, h1, h2)``; arrays are C-contiguous CuPy arrays of one dtype
(float64 or float32). Nothing allocates after the first call of a dtype and nothing waits for
the host, so an apply can be recorded in a CUDA graph.

A block holds ``elements_per_block`` elements of (N+1)^2 threads each (a 2-D mesh, ``dim=2``:
the same threads, one point each; the template's D = 2); tuning runs may set
``backend.launch_overrides[("helmholtz_apply", order, dtype name)] = elements per block``
before the first call of that order and dtype.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from lobatto.backends.base import check_kernel_arrays, tuned_kernel
from lobatto.discretization import derivative_matrix
from lobatto.jit.nvrtc import ctype, get_module

SOURCE = Path(__file__).resolve().parent / "kernels" / "helmholtz.cu"
#: threads a block aims for (several small elements share one block)
TARGET_THREADS = 256


def default_elements_per_block(order: int) -> int:
    return max(1, TARGET_THREADS // (order + 1) ** 2)


def kernel_name(order: int, dtype, mass: bool, elements_per_block: int, dim: int = 3) -> str:
    # D defaults to 3 in the template: 3-D names are as they were
    dimension = "" if int(dim) == 3 else f", {int(dim)}"
    return (f"lobatto::helmholtz_apply_kernel<{int(order)}, {ctype(dtype)}, {'true' if mass else 'false'}, "
            f"{int(elements_per_block)}{dimension}>")


@tuned_kernel("cuda", "helmholtz_apply")
def make_apply(backend, order, dim=3):
    n = int(order) + 1
    volume = (n, n, n) if dim == 3 else (1, n, n)
    factors_count = 6 if dim == 3 else 3
    compiled: dict = {}
    derivatives: dict = {}

    def launch_of(dtype, mass: bool):
        overrides = getattr(backend, "launch_overrides", {})
        epb = int(overrides.get(("helmholtz_apply", int(order), dtype.name), default_elements_per_block(order)))
        key = (dtype.name, mass, epb)
        entry = compiled.get(key)
        if entry is None:
            name = kernel_name(order, dtype, mass, epb, dim)
            entry = compiled[key] = (get_module(SOURCE, (name,)).get_function(name), epb)
        return entry

    def derivative(dtype):
        d = derivatives.get(dtype.name)
        if d is None:
            d = derivatives[dtype.name] = backend.asarray(derivative_matrix(order), dtype=dtype)
        return d

    def apply(u, out, factors, mass, h1, h2):
        E = u.shape[0]
        shapes = [(u, (E, *volume), "u"), (out, (E, *volume), "out"), (factors, (factors_count, E, *volume), "factors")]
        if mass is not None:
            shapes.append((mass, (E, *volume), "mass"))
        check_kernel_arrays("helmholtz_apply", u.dtype, shapes)
        if E == 0:
            return out
        function, epb = launch_of(u.dtype, mass is not None)
        d = derivative(u.dtype)
        t = u.dtype.type
        args = (u, out, factors, d if mass is None else mass, d, t(h1), t(h2), np.int64(E))
        function((math.ceil(E / epb),), (n * n, epb), args)
        return out

    return apply
