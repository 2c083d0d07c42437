"""The dealiased convective term's CUDA kernels (kernels/advection.cu): launch and arguments.

Registered as the CUDA backend's tuned ``advection_contravariant`` and ``advection_apply`` with
the reference signatures of operators/advection.py; arrays are C-contiguous CuPy arrays of one
dtype (float64 or float32); strided inputs are copied to contiguous ones first. Nothing else
allocates and nothing waits for the host, so the calls can be recorded in a CUDA graph. Orders
whose block does not fit the device (``fits``: above N = 16 in float64 on an H100) take the
reference kernel.

Byte models (the fewest bytes a call must move; benchmarks/bench_ns_kernels.py measures them
against a device-to-device copy), per element, with n = N + 1, M fine points, s the value size:

    contravariant  reads u (3 n^3) and G (9 M^3), writes U (3 M^3):   (3 n^3 + 12 M^3) s
    apply (k)      reads the fields (k n^3) and U (3 M^3), writes k n^3: (2 k n^3 + 3 M^3) s

(apply reads U once per field; the model counts it once, as the later reads are meant to hit
L2.) apply is not bound by these bytes but by its arithmetic and shared-memory traffic
(kernels/advection.cu, about 1.2e5 multiply-adds per field and element at N = 7): measured on
an H100 at N = 7, 36^3 elements, float64, it moves its model's bytes at 23 % of the copy
bandwidth (4.37 ms for 3 fields; 5.64 ms before the bank-conflict fix), contravariant at 77 %
(benchmarks/results/ns_kernels_h100_2026-11-26.json).

A block holds ``elements_per_block`` elements of M^2 threads; tuning runs may set
``backend.launch_overrides[("advection_apply" or "advection_contravariant", order, dtype name)]``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from lobatto.backends.base import REFERENCE_KERNELS, tuned_kernel
from lobatto.jit.nvrtc import ctype, get_module, run_into

SOURCE = Path(__file__).resolve().parent / "kernels" / "advection.cu"
#: threads a block aims for (several small elements share one block)
TARGET_THREADS = 256
#: statically allowed dynamic shared memory; more needs the function attribute raised
_DEFAULT_SHARED = 48 * 1024


def default_elements_per_block(fine: int) -> int:
    return max(1, TARGET_THREADS // (fine * fine))


def shared_values(order: int, fine: int, which: str) -> tuple[int, int]:
    """(per block, per element) shared-memory values of kernel ``which`` (see advection.cu)."""
    n, m = order + 1, fine
    if which == "contravariant":
        return 2 * m * n, n ** 3 + 3 * m * n * n
    s1 = max(n ** 3, m * n * n)
    s2 = max(2 * m * n * n, n * m * m)
    return 4 * m * n, s1 + s2


def kernel_name(which: str, order: int, fine: int, dtype, elements_per_block: int) -> str:
    return f"lobatto::advection_{which}_kernel<{int(order)}, {int(fine)}, {ctype(dtype)}, {int(elements_per_block)}>"


def bytes_moved(which: str, order: int, fine: int, elements: int, itemsize: int, fields: int = 3) -> int:
    """The byte model of the module docstring."""
    n3, m3 = (order + 1) ** 3, fine ** 3
    per = 3 * n3 + 12 * m3 if which == "contravariant" else 2 * fields * n3 + 3 * m3
    return per * elements * itemsize


def fits(backend, order: int, fine: int, which: str) -> bool:
    """Whether a float64 block at the default elements per block fits the device: at most 1024
    threads and the opt-in shared memory per block (high orders do not: the reference kernel
    serves them)."""
    epb = default_elements_per_block(fine)
    block, element = shared_values(order, fine, which)
    limit = getattr(backend, "max_shared_per_block", _DEFAULT_SHARED)
    return fine * fine * epb <= 1024 and (block + epb * element) * 8 <= limit


def _launcher(backend, order, fine, which):
    compiled: dict = {}
    name_of = "advection_" + which

    def launch_of(dtype):
        overrides = getattr(backend, "launch_overrides", {})
        epb = int(overrides.get((name_of, int(order), dtype.name), default_elements_per_block(fine)))
        key = (dtype.name, epb)
        entry = compiled.get(key)
        if entry is None:
            name = kernel_name(which, order, fine, dtype, epb)
            function = get_module(SOURCE, (name,)).get_function(name)
            block, element = shared_values(order, fine, which)
            shared = (block + epb * element) * dtype.itemsize
            if shared > _DEFAULT_SHARED:
                function.max_dynamic_shared_size_bytes = shared
            entry = compiled[key] = (function, epb, shared)
        return entry

    return launch_of


def _check(name, arrays, dtype):
    for a, shape, what in arrays:
        if a.dtype != dtype or tuple(a.shape) != tuple(shape):
            raise TypeError(f"{name}: {what} must be a {dtype} array of shape {tuple(shape)}, "
                            f"got {a.dtype} {tuple(a.shape)}")


def contiguous(xp, *arrays):
    """The arrays, C-contiguous (views of strided ones are copied: the kernels index densely)."""
    return [xp.ascontiguousarray(a) for a in arrays]


@tuned_kernel("cuda", "advection_contravariant")
def make_contravariant(backend, order, fine):
    if not fits(backend, int(order), int(fine), "contravariant"):
        return REFERENCE_KERNELS["advection_contravariant"](backend, order=order, fine=fine)
    n, m = int(order) + 1, int(fine)
    launch_of = _launcher(backend, int(order), m, "contravariant")

    def contravariant(velocity, factors, interp, out):
        E = velocity.shape[1]
        _check("advection_contravariant", [(velocity, (3, E, n, n, n), "velocity"),
                                           (factors, (3, 3, E, m, m, m), "factors"), (interp, (m, n), "interp"),
                                           (out, (3, E, m, m, m), "out")], velocity.dtype)
        if E == 0:
            return out
        function, epb, shared = launch_of(velocity.dtype)
        velocity, factors, interp = contiguous(backend.xp, velocity, factors, interp)
        return run_into(backend.xp, out, lambda target: function(
            (math.ceil(E / epb),), (m * m, epb), (velocity, factors, interp, target, np.int64(E)), shared_mem=shared))

    return contravariant


@tuned_kernel("cuda", "advection_apply")
def make_apply(backend, order, fine):
    if not fits(backend, int(order), int(fine), "apply"):
        return REFERENCE_KERNELS["advection_apply"](backend, order=order, fine=fine)
    n, m = int(order) + 1, int(fine)
    launch_of = _launcher(backend, int(order), m, "apply")

    def apply(contravariant, fields, interp, interp_derivative, interp_transpose, out):
        k, E = fields.shape[0], fields.shape[1]
        _check("advection_apply", [(contravariant, (3, E, m, m, m), "contravariant"),
                                   (fields, (k, E, n, n, n), "fields"), (interp, (m, n), "interp"),
                                   (interp_derivative, (m, n), "interp_derivative"),
                                   (out, (k, E, n, n, n), "out")], fields.dtype)
        if E == 0 or k == 0:
            return out
        function, epb, shared = launch_of(fields.dtype)
        contravariant, fields, interp, interp_derivative = contiguous(backend.xp, contravariant, fields, interp,
                                                                      interp_derivative)
        return run_into(backend.xp, out, lambda target: function(
            (math.ceil(E / epb),), (m * m, epb),
            (contravariant, fields, interp, interp_derivative, target, np.int64(E), np.int32(k)), shared_mem=shared))

    return apply
