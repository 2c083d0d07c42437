"""The fast-diagonalization solve's CUDA kernels (kernels/fdm.cu): launch and arguments.

Registered as the CUDA backend's tuned ``fdm_apply``, with the reference signature
``apply(r, out, sx, sy, sz, eigenvalues, coefficients)`` (operators/fdm.py); arrays are C-contiguous CuPy
arrays of one dtype (float64 or float32). One block of M x M threads per element, M = N + 3;
the element's M^3 values in shared memory (46 KB at M = 18, N = 15, in float64; larger elements
run the reference kernel: SHARED_LIMIT). Nothing
allocates and nothing waits for the host, so an apply can be recorded in a CUDA graph.
``ext_layers`` (the reference's ``apply(z, saved, mode)``): one block of (M-2)^2 threads per
element. A 2-D mesh (``dim=2``, the templates' D = 2): (E, 1, M, M) ext arrays, one block of
M x M threads per element with the plane in shared memory (never above SHARED_LIMIT), and
M - 2 threads per element for ``ext_layers``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto.backends.base import REFERENCE_KERNELS, check_kernel_arrays, tuned_kernel
from lobatto.jit.nvrtc import ctype, get_module

SOURCE = Path(__file__).resolve().parent / "kernels" / "fdm.cu"

#: static shared memory a block may hold; an element of M^3 values above it (float64 from
#: N = 16, float32 from N = 21) runs the reference kernel (batched matrix products) instead
SHARED_LIMIT = 48 * 1024


def kernel_name(size: int, dtype, kind: str = "fdm_apply", dim: int = 3) -> str:
    dimension = "" if int(dim) == 3 else f", {int(dim)}"  # D defaults to 3: 3-D names as they were
    return f"lobatto::{kind}_kernel<{int(size)}, {ctype(dtype)}{dimension}>"


def compiled_functions(m: int, kind: str, dim: int = 3):
    """dtype -> the compiled kernel ``kind`` of size m, compiled on first use."""
    compiled: dict = {}

    def function_of(dtype):
        function = compiled.get(dtype.name)
        if function is None:
            name = kernel_name(m, dtype, kind, dim)
            function = compiled[dtype.name] = get_module(SOURCE, (name,)).get_function(name)
        return function

    return function_of


@tuned_kernel("cuda", "ext_layers")
def make_layers(backend, size, dim=3):
    m = int(size)
    function_of = compiled_functions(m, "ext_layers", dim)
    volume, layers = ((m, m, m), (6, m - 2, m - 2)) if dim == 3 else ((1, m, m), (4, 1, m - 2))

    def apply(z, saved, mode):
        E = z.shape[0]
        check_kernel_arrays("ext_layers", z.dtype, ((z, (E, *volume), "z"), (saved, (E, *layers), "saved")))
        if not 0 <= int(mode) <= 3:
            raise ValueError(f"ext_layers: mode must be 0..3, got {mode}")
        if E:
            function_of(z.dtype)((E,), ((m - 2) ** (dim - 1),), (z, saved, np.int32(mode), np.int64(E)))
        return z

    return apply


@tuned_kernel("cuda", "fdm_apply")
def make_apply(backend, size, dim=3):
    m = int(size)
    function_of = compiled_functions(m, "fdm_apply", dim)
    # registered by fdm.py, which imports this
    reference = REFERENCE_KERNELS["fdm_apply"](backend, size=size, dim=dim)
    volume = (m, m, m) if dim == 3 else (1, m, m)

    def apply(r, out, sx, sy, sz, eigenvalues, coefficients):
        if m ** dim * r.dtype.itemsize > SHARED_LIMIT:
            return reference(r, out, sx, sy, sz, eigenvalues, coefficients)
        E = r.shape[0]
        arrays = [(r, (E, *volume), "r"), (out, (E, *volume), "out"), (eigenvalues, (E, dim, m), "eigenvalues"),
                  (coefficients, (E, 3), "coefficients"), (sx, (E, m, m), "sx"), (sy, (E, m, m), "sy")]
        if dim == 3:
            arrays.append((sz, (E, m, m), "sz"))
        else:
            sz = sy  # not read by the 2-D kernel
        check_kernel_arrays("fdm_apply", r.dtype, arrays)
        if E == 0:
            return out
        function_of(r.dtype)((E,), (m * m,), (r, out, sx, sy, sz, eigenvalues, coefficients, np.int64(E)))
        return out

    return apply
