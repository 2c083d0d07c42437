"""Linear combinations of arrays in one pass: out = sum_j c_j a_j (the BDF/EXT sums of a
multistep scheme, the residual projection's x_bar and residual).

    combine = backend.kernel("linear_combination")
    combine(out, [c0, c1, c2], [a0, a1, a2])     # out may be one of the first 8 arrays

Each value is summed in increasing j (the reference: c_0 a_0, then += c_j a_j, which is what
the step's array code did before, bit for bit), so it depends on nothing but its own inputs.
The CUDA kernel (kernels/combination.cu) takes up to 8 arrays a pass; more are chained
(out = 1 out + the next 7), still in a fixed order. Byte model: reads each array once and
writes out once, (k + 1) values per point.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from lobatto.backends.base import reference_kernel, tuned_kernel
from lobatto.jit.nvrtc import ctype, get_module

SOURCE = Path(__file__).resolve().parent / "kernels" / "combination.cu"
#: arrays one CUDA pass takes
PER_PASS = 8


def _check(out, coefficients, arrays):
    if len(coefficients) != len(arrays) or not arrays:
        raise ValueError(f"linear_combination: {len(coefficients)} coefficients for {len(arrays)} arrays "
                         "(need as many, at least one)")
    for a in arrays:
        if tuple(a.shape) != tuple(out.shape):
            raise ValueError(f"linear_combination: an array of shape {tuple(a.shape)} for out {tuple(out.shape)}")


@reference_kernel("linear_combination")
def reference_linear_combination(backend):
    def combine(out, coefficients, arrays):
        _check(out, coefficients, arrays)
        total = coefficients[0] * arrays[0]
        for c, a in zip(coefficients[1:], arrays[1:]):
            total += c * a
        out[...] = total
        return out

    return combine


@tuned_kernel("cuda", "linear_combination")
def cuda_linear_combination(backend):
    xp = backend.xp
    functions: dict = {}

    def function(dtype, k):
        key = (dtype.name, k)
        f = functions.get(key)
        if f is None:
            name = f"lobatto::linear_combination_kernel<{ctype(dtype)}, {k}>"
            f = functions[key] = get_module(SOURCE, (name,)).get_function(name)
        return f

    def one_pass(target, coefficients, arrays):
        k = len(arrays)
        t = target.dtype.type
        pointers = list(arrays) + [arrays[0]] * (PER_PASS - k)  # (unread)
        scalars = [t(c) for c in coefficients] + [t(0)] * (PER_PASS - k)
        size = target.size
        blocks = min(math.ceil(size / 256), 132 * 16)
        function(target.dtype, k)((blocks,), (256,), (target, *pointers, *scalars, np.int64(size)))

    def combine(out, coefficients, arrays):
        _check(out, coefficients, arrays)
        coefficients = [float(c) for c in coefficients]
        arrays = [xp.ascontiguousarray(a, dtype=out.dtype) for a in arrays]
        if out.size == 0:
            return out
        later = arrays[PER_PASS:]
        direct = out.flags.c_contiguous and not any(a.data.ptr == out.data.ptr for a in later)
        target = out if direct else xp.empty(out.shape, dtype=out.dtype)
        one_pass(target, coefficients[:PER_PASS], arrays[:PER_PASS])
        for start in range(PER_PASS, len(arrays), PER_PASS - 1):
            stop = start + PER_PASS - 1
            one_pass(target, [1.0] + coefficients[start:stop], [target] + arrays[start:stop])
        if target is not out:
            out[...] = target
        return out

    return combine
