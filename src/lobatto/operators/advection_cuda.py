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

2-D meshes (``dim=2``: the kernels' template D = 2): thin arrays, velocity and fields (k, E, 1,
n, n), factors (F, F, E, 1, M, M) with F = 3 or 2, U (2 or 3, E, 1, M, M); M^2 threads per
element, one fine point each; the contravariant kernel takes its layout (VC, OC, F) from the
shapes (kernels/advection.cu says what each computes) and compiles it on first use. Byte models
in 2-D (natural layout, 2 components, F = 2): contravariant (2 n^2 + 6 M^2) s, apply
(2 k n^2 + 2 M^2) s per element.
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


def shared_values(order: int, fine: int, which: str, dim: int = 3, interpolated: int = 2) -> tuple[int, int]:
    """(per block, per element) shared-memory values of kernel ``which`` (see advection.cu);
    ``interpolated``: the 2-D contravariant kernel's NI, the velocity components it interpolates."""
    n, m = order + 1, fine
    if dim == 2:
        if which == "contravariant":
            return 2 * m * n, n * n + interpolated * m * n
        return 4 * m * n, max(n * n, m * n) + max(2 * m * n, m * m)
    if which == "contravariant":
        return 2 * m * n, n ** 3 + 3 * m * n * n
    s1 = max(n ** 3, m * n * n)
    s2 = max(2 * m * n * n, n * m * m)
    return 4 * m * n, s1 + s2


def kernel_name(which: str, order: int, fine: int, dtype, elements_per_block: int, dim: int = 3,
                layout: tuple = ()) -> str:
    """The template instance; 3-D names are as they were. A 2-D contravariant ``layout`` is
    (VC, OC, F) (advection.cu); apply has none."""
    tail = "" if int(dim) == 3 else ", 2" + "".join(f", {int(x)}" for x in layout)
    return (f"lobatto::advection_{which}_kernel<{int(order)}, {int(fine)}, {ctype(dtype)}, "
            f"{int(elements_per_block)}{tail}>")


def bytes_moved(which: str, order: int, fine: int, elements: int, itemsize: int, fields: int = 3,
                dim: int = 3) -> int:
    """The byte model of the module docstring (2-D: its natural layout)."""
    if dim == 2:
        n2, m2 = (order + 1) ** 2, fine ** 2
        per = 2 * n2 + 6 * m2 if which == "contravariant" else 2 * fields * n2 + 2 * m2
        return per * elements * itemsize
    n3, m3 = (order + 1) ** 3, fine ** 3
    per = 3 * n3 + 12 * m3 if which == "contravariant" else 2 * fields * n3 + 3 * m3
    return per * elements * itemsize


def fits(backend, order: int, fine: int, which: str, dim: int = 3) -> bool:
    """Whether a float64 block at the default elements per block fits the device: at most 1024
    threads and the opt-in shared memory per block (high orders do not: the reference kernel
    serves them)."""
    epb = default_elements_per_block(fine)
    block, element = shared_values(order, fine, which, dim, 3)
    limit = getattr(backend, "max_shared_per_block", _DEFAULT_SHARED)
    return fine * fine * epb <= 1024 and (block + epb * element) * 8 <= limit


def _launcher(backend, order, fine, which, dim=3):
    compiled: dict = {}
    name_of = "advection_" + which

    def launch_of(dtype, layout=()):
        overrides = getattr(backend, "launch_overrides", {})
        epb = int(overrides.get((name_of, int(order), dtype.name), default_elements_per_block(fine)))
        key = (dtype.name, epb, layout)
        entry = compiled.get(key)
        if entry is None:
            name = kernel_name(which, order, fine, dtype, epb, dim, layout)
            function = get_module(SOURCE, (name,)).get_function(name)
            interpolated = 3 if layout == (3, 3, 3) else 2
            block, element = shared_values(order, fine, which, dim, interpolated)
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


def _reference(name, backend, order, fine, dim):
    # the reference factories take dim for 2-D meshes (operators/advection.py)
    return REFERENCE_KERNELS[name](backend, order=order, fine=fine, **({} if dim == 3 else {"dim": dim}))


def _leading(name, what, a, ndim, allowed):
    """The leading axis of a 2-D layout argument, checked against ``allowed``."""
    c = a.shape[0] if a.ndim == ndim else 0
    if c not in allowed:
        raise TypeError(f"advection_{name}: {what} must have {' or '.join(map(str, allowed))} components on a 2-D "
                        f"mesh, got shape {tuple(a.shape)}")
    return c


@tuned_kernel("cuda", "advection_contravariant")
def make_contravariant(backend, order, fine, dim=3):
    order, fine, dim = int(order), int(fine), int(dim)
    if not fits(backend, order, fine, "contravariant", dim):
        return _reference("advection_contravariant", backend, order, fine, dim)
    n, m = order + 1, fine
    launch_of = _launcher(backend, order, m, "contravariant", dim)
    volume, fine_volume = ((n, n, n), (m, m, m)) if dim == 3 else ((1, n, n), (1, m, m))

    def contravariant(velocity, factors, interp, out):
        E = velocity.shape[1]
        vc = oc = f = 3
        layout = ()
        if dim == 2:
            vc = _leading("contravariant", "velocity", velocity, 5, (2, 3))
            oc = _leading("contravariant", "out", out, 5, (2, 3))
            f = _leading("contravariant", "factors", factors, 6, (2, 3))
            layout = (vc, oc, f)
        _check("advection_contravariant", [(velocity, (vc, E) + volume, "velocity"),
                                           (factors, (f, f, E) + fine_volume, "factors"), (interp, (m, n), "interp"),
                                           (out, (oc, E) + fine_volume, "out")], velocity.dtype)
        if E == 0:
            return out
        function, epb, shared = launch_of(velocity.dtype, layout)
        velocity, factors, interp = contiguous(backend.xp, velocity, factors, interp)
        return run_into(backend.xp, out, lambda target: function(
            (math.ceil(E / epb),), (m * m, epb), (velocity, factors, interp, target, np.int64(E)), shared_mem=shared))

    return contravariant


@tuned_kernel("cuda", "advection_apply")
def make_apply(backend, order, fine, dim=3):
    order, fine, dim = int(order), int(fine), int(dim)
    if not fits(backend, order, fine, "apply", dim):
        return _reference("advection_apply", backend, order, fine, dim)
    n, m = order + 1, fine
    launch_of = _launcher(backend, order, m, "apply", dim)
    volume, fine_volume = ((n, n, n), (m, m, m)) if dim == 3 else ((1, n, n), (1, m, m))

    def apply(contravariant, fields, interp, interp_derivative, interp_transpose, out):
        k, E = fields.shape[0], fields.shape[1]
        uc = 3 if dim == 3 else _leading("apply", "contravariant", contravariant, 5, (2, 3))  # U_t unread in 2-D
        _check("advection_apply", [(contravariant, (uc, E) + fine_volume, "contravariant"),
                                   (fields, (k, E) + volume, "fields"), (interp, (m, n), "interp"),
                                   (interp_derivative, (m, n), "interp_derivative"),
                                   (out, (k, E) + volume, "out")], fields.dtype)
        if E == 0 or k == 0:
            return out
        function, epb, shared = launch_of(fields.dtype)
        contravariant, fields, interp, interp_derivative = contiguous(backend.xp, contravariant, fields, interp,
                                                                      interp_derivative)
        return run_into(backend.xp, out, lambda target: function(
            (math.ceil(E / epb),), (m * m, epb),
            (contravariant, fields, interp, interp_derivative, target, np.int64(E), np.int32(k)), shared_mem=shared))

    return apply
