"""The fused differential operators' CUDA kernels (kernels/differential.cu): launch and arguments.

Registered as the CUDA backend's tuned ``curl``, ``weak_divergence_minus_curl`` and
``mass_minus_gradient`` with the reference signatures of operators/differential.py; arrays of
one dtype (float64 or float32); strided inputs are copied to contiguous ones first. Nothing
allocates for contiguous arguments and nothing waits for the host (graph capture works).

Byte models (the fewest bytes a call must move; benchmarks/bench_ns_kernels.py measures them
against a device-to-device copy), in values per point, times the value size:

    curl                         reads v (3) and the metrics (9), writes 3:              15
    curl with mass (B curl v)    reads v (3), the metrics (9) and the mass (1), writes 3: 16
    weak_divergence_minus_curl   reads the forcing (3), the vorticity (3), the metrics (9)
                                 and the mass (1), writes 1:                              17
    mass_minus_gradient          reads the forcing (3), p (1), the metrics (9) and the
                                 mass (1), writes 3:                                      17

The metrics (9 values per point) dominate each: they are what a kernel that recomputed them
from the coordinates would save.

A block holds ``elements_per_block`` elements of (N+1)^2 threads; tuning runs may set
``backend.launch_overrides[(kernel name, order, dtype name)] = elements per block``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from lobatto.backends.base import REFERENCE_KERNELS, tuned_kernel
from lobatto.jit.nvrtc import ctype, get_module, run_into

SOURCE = Path(__file__).resolve().parent / "kernels" / "differential.cu"
TARGET_THREADS = 256
_DEFAULT_SHARED = 48 * 1024
#: values per point each kernel moves (module docstring)
VALUES_PER_POINT = {"curl": 15, "weighted_curl": 16, "weak_divergence_minus_curl": 17, "mass_minus_gradient": 17}
#: fields each kernel stages in shared memory
_STAGED = {"curl": 3, "weak_divergence_minus_curl": 3, "mass_minus_gradient": 1}


def default_elements_per_block(order: int) -> int:
    return max(1, TARGET_THREADS // (order + 1) ** 2)


def kernel_name(name: str, order: int, dtype, elements_per_block: int, mass: bool = False) -> str:
    extra = f", {'true' if mass else 'false'}" if name == "curl" else ""
    return f"lobatto::{name}_kernel<{int(order)}, {ctype(dtype)}{extra}, {int(elements_per_block)}>"


def fits(backend, order: int, name: str) -> bool:
    """Whether a float64 block at the default elements per block fits the device's opt-in shared
    memory (above N = 20 it does not on an H100: the reference kernel serves those orders)."""
    n, epb = order + 1, default_elements_per_block(order)
    rs = n + 1 if n % 2 == 0 else n
    limit = getattr(backend, "max_shared_per_block", _DEFAULT_SHARED)
    return n * n * epb <= 1024 and (n * rs + epb * _STAGED[name] * n ** 3) * 8 <= limit


def _launcher(backend, order, name):
    n = order + 1
    compiled: dict = {}

    def launch_of(dtype, mass=False):
        overrides = getattr(backend, "launch_overrides", {})
        epb = int(overrides.get((name, order, dtype.name), default_elements_per_block(order)))
        key = (dtype.name, epb, mass)
        entry = compiled.get(key)
        if entry is None:
            full = kernel_name(name, order, dtype, epb, mass)
            function = get_module(SOURCE, (full,)).get_function(full)
            rs = n + 1 if n % 2 == 0 else n
            shared = (n * rs + epb * _STAGED[name] * n ** 3) * dtype.itemsize
            if shared > _DEFAULT_SHARED:
                function.max_dynamic_shared_size_bytes = shared
            entry = compiled[key] = (function, epb, shared)
        return entry

    return launch_of


def _prepare(xp, name, dtype, arrays):
    """The arrays (name, array, shape) checked and made C-contiguous."""
    out = []
    for what, a, shape in arrays:
        if a.dtype != dtype or tuple(a.shape) != tuple(shape):
            raise TypeError(f"{name}: {what} must be a {dtype} array of shape {tuple(shape)}, got {a.dtype} "
                            f"{tuple(a.shape)}")
        out.append(xp.ascontiguousarray(a))
    return out


@tuned_kernel("cuda", "curl")
def make_curl(backend, order):
    if not fits(backend, int(order), "curl"):
        return REFERENCE_KERNELS["curl"](backend, order=order)
    n = int(order) + 1
    launch_of = _launcher(backend, int(order), "curl")
    xp = backend.xp

    def apply(v, metrics, mass, d, out):
        E = v.shape[1]
        element = (E, n, n, n)
        arrays = [("v", v, (3,) + element), ("metrics", metrics, (3, 3) + element), ("D", d, (n, n))]
        if mass is not None:
            arrays.append(("mass", mass, element))
        prepared = _prepare(xp, "curl", v.dtype, arrays)
        if tuple(out.shape) != (3,) + element or out.dtype != v.dtype:
            raise TypeError(f"curl: out must be a {v.dtype} array of shape {(3,) + element}")
        if E == 0:
            return out
        weighted = mass is not None
        v, metrics, d = prepared[:3]
        mass = prepared[3] if weighted else d  # (unread when not weighted)
        function, epb, shared = launch_of(v.dtype, weighted)
        return run_into(xp, out, lambda target: function((math.ceil(E / epb),), (n * n, epb),
                                                      (v, metrics, mass, d, target, np.int64(E)), shared_mem=shared))

    return apply


@tuned_kernel("cuda", "weak_divergence_minus_curl")
def make_weak_divergence_minus_curl(backend, order):
    if not fits(backend, int(order), "weak_divergence_minus_curl"):
        return REFERENCE_KERNELS["weak_divergence_minus_curl"](backend, order=order)
    n = int(order) + 1
    launch_of = _launcher(backend, int(order), "weak_divergence_minus_curl")
    xp = backend.xp

    def apply(forcing, vorticity, metrics, mass, d, viscosity, out):
        E = forcing.shape[1]
        element = (E, n, n, n)
        forcing, vorticity, metrics, mass, d = _prepare(
            xp, "weak_divergence_minus_curl", forcing.dtype,
            [("forcing", forcing, (3,) + element), ("vorticity", vorticity, (3,) + element),
             ("metrics", metrics, (3, 3) + element), ("mass", mass, element), ("D", d, (n, n))])
        if tuple(out.shape) != element or out.dtype != forcing.dtype:
            raise TypeError(f"weak_divergence_minus_curl: out must be a {forcing.dtype} array of shape {element}")
        if E == 0:
            return out
        function, epb, shared = launch_of(forcing.dtype)
        nu = forcing.dtype.type(viscosity)
        return run_into(xp, out, lambda target: function(
            (math.ceil(E / epb),), (n * n, epb), (forcing, vorticity, metrics, mass, d, target, nu, np.int64(E)),
            shared_mem=shared))

    return apply


@tuned_kernel("cuda", "mass_minus_gradient")
def make_mass_minus_gradient(backend, order):
    if not fits(backend, int(order), "mass_minus_gradient"):
        return REFERENCE_KERNELS["mass_minus_gradient"](backend, order=order)
    n = int(order) + 1
    launch_of = _launcher(backend, int(order), "mass_minus_gradient")
    xp = backend.xp

    def apply(forcing, pressure, metrics, mass, d, out):
        E = forcing.shape[1]
        element = (E, n, n, n)
        forcing, pressure, metrics, mass, d = _prepare(
            xp, "mass_minus_gradient", forcing.dtype,
            [("forcing", forcing, (3,) + element), ("pressure", pressure, element),
             ("metrics", metrics, (3, 3) + element), ("mass", mass, element), ("D", d, (n, n))])
        if tuple(out.shape) != (3,) + element or out.dtype != forcing.dtype:
            raise TypeError(f"mass_minus_gradient: out must be a {forcing.dtype} array of shape {(3,) + element}")
        if E == 0:
            return out
        function, epb, shared = launch_of(forcing.dtype)
        return run_into(xp, out, lambda target: function(
            (math.ceil(E / epb),), (n * n, epb), (forcing, pressure, metrics, mass, d, target, np.int64(E)),
            shared_mem=shared))

    return apply
