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

2-D meshes (``dim=2``: the kernels' template D = 2): thin (..., E, 1, n, n) arrays, the same
threads with one point each. The metrics may be the host's (3, 3, ...) or the compact (2, 2,
...) r, s block; velocity-like inputs may have 2 (ux, uy) or 3 components; the curl's out has
1 (w_z) or 3 components (kernels/differential.cu says what each layout computes), and
weak_divergence_minus_curl reads the vorticity's last (z) component, or an (E, 1, n, n) w_z.
Each call reads the layout from the shapes and compiles that instantiation on first use. Byte
models in 2-D (compact metrics, 2 components, w_z): curl 2 + 4 + 1 (+ 1 with the mass),
weak_divergence_minus_curl 2 + 1 + 4 + 1 + 1, mass_minus_gradient 2 + 1 + 4 + 1 + 2 values
per point.
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
#: the same in 2-D, in the reference's layout (2 components, w_z, compact 2 x 2 metrics)
VALUES_PER_POINT_2D = {"curl": 7, "weighted_curl": 8, "weak_divergence_minus_curl": 9, "mass_minus_gradient": 10}
#: fields each kernel stages in shared memory (3-D; 2-D: see shared_bytes)
_STAGED = {"curl": 3, "weak_divergence_minus_curl": 3, "mass_minus_gradient": 1}


def default_elements_per_block(order: int) -> int:
    return max(1, TARGET_THREADS // (order + 1) ** 2)


def kernel_name(name: str, order: int, dtype, elements_per_block: int, mass: bool = False, dim: int = 3,
                layout: tuple = ()) -> str:
    """The template instance; 3-D names are as they were (D and the layouts default to 3). A 2-D
    ``layout`` is (VC, OC, MR) for the curl, (MR,) for weak_divergence_minus_curl and (C, MR)
    for mass_minus_gradient (kernels/differential.cu)."""
    extra = f", {'true' if mass else 'false'}" if name == "curl" else ""
    tail = "" if int(dim) == 3 else ", 2" + "".join(f", {int(x)}" for x in layout)
    return f"lobatto::{name}_kernel<{int(order)}, {ctype(dtype)}{extra}, {int(elements_per_block)}{tail}>"


def fits(backend, order: int, name: str, dim: int = 3) -> bool:
    """Whether a float64 block at the default elements per block fits the device's opt-in shared
    memory (above N = 20 it does not on an H100 in 3-D: the reference kernel serves those orders)."""
    n, epb = order + 1, default_elements_per_block(order)
    rs = n + 1 if n % 2 == 0 else n
    limit = getattr(backend, "max_shared_per_block", _DEFAULT_SHARED)
    slots = _STAGED[name] if dim == 3 else 3
    return n * n * epb <= 1024 and (n * rs + epb * slots * n ** dim) * 8 <= limit


def shared_bytes(name: str, order: int, itemsize: int, elements_per_block: int, dim: int = 3,
                 layout: tuple = ()) -> int:
    """Dynamic shared memory of one block: D (padded rows) and the staged fields of each element
    (the 2-D curl stages v_z only where it writes w_x, w_y; the 2-D weak divergence needs two
    fields of room for its fluxes)."""
    n = order + 1
    rs = n + 1 if n % 2 == 0 else n
    if dim == 3:
        slots = _STAGED[name]
    elif name == "curl":
        slots = 3 if tuple(layout[:2]) == (3, 3) else 2
    else:
        slots = 2 if name == "weak_divergence_minus_curl" else 1
    return (n * rs + elements_per_block * slots * n ** dim) * itemsize


def _launcher(backend, order, name, dim=3):
    compiled: dict = {}

    def launch_of(dtype, mass=False, layout=()):
        overrides = getattr(backend, "launch_overrides", {})
        epb = int(overrides.get((name, order, dtype.name), default_elements_per_block(order)))
        key = (dtype.name, epb, mass, layout)
        entry = compiled.get(key)
        if entry is None:
            full = kernel_name(name, order, dtype, epb, mass, dim, layout)
            function = get_module(SOURCE, (full,)).get_function(full)
            shared = shared_bytes(name, order, dtype.itemsize, epb, dim, layout)
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


def _reference(name, backend, order, dim):
    # the reference factories take dim for 2-D meshes (operators/differential.py)
    return REFERENCE_KERNELS[name](backend, order=order, **({} if dim == 3 else {"dim": dim}))


def _element(E, n, dim):
    return (E, n, n, n) if dim == 3 else (E, 1, n, n)


def _components(name, what, a, allowed):
    """The leading (component) axis of a 2-D array, checked against ``allowed``."""
    c = a.shape[0] if a.ndim == 5 else 0
    if c not in allowed:
        raise TypeError(f"{name}: {what} must have {' or '.join(map(str, allowed))} components on a 2-D mesh, "
                        f"got shape {tuple(a.shape)}")
    return c


def _metric_rows(name, metrics, dim):
    rows = metrics.shape[0] if metrics.ndim == 6 else 0
    if rows not in ((3,) if dim == 3 else (2, 3)):
        raise TypeError(f"{name}: metrics must be (3, 3, E, ...) (or (2, 2, E, 1, n, n) on a 2-D mesh), got shape "
                        f"{tuple(metrics.shape)}")
    return rows


@tuned_kernel("cuda", "curl")
def make_curl(backend, order, dim=3):
    order, dim = int(order), int(dim)
    if not fits(backend, order, "curl", dim):
        return _reference("curl", backend, order, dim)
    n = order + 1
    launch_of = _launcher(backend, order, "curl", dim)
    xp = backend.xp

    def apply(v, metrics, mass, d, out):
        E = v.shape[1]
        element = _element(E, n, dim)
        vc, rows, layout = 3, 3, ()
        if dim == 2:
            vc, rows = _components("curl", "v", v, (2, 3)), _metric_rows("curl", metrics, dim)
            oc = 1 if out.ndim == 4 else _components("curl", "out", out, (1, 3))
            layout = (vc, oc, rows)
        arrays = [("v", v, (vc,) + element), ("metrics", metrics, (rows, rows) + element), ("D", d, (n, n))]
        if mass is not None:
            arrays.append(("mass", mass, element))
        prepared = _prepare(xp, "curl", v.dtype, arrays)
        shape = (3,) + element if dim == 3 else (out.shape if layout[1] == 1 else (3,) + element)
        if tuple(out.shape) != tuple(shape) or out.dtype != v.dtype or out.shape[-len(element):] != element:
            raise TypeError(f"curl: out must be a {v.dtype} array of shape {(3,) + element}"
                            + (f" or {element} (w_z)" if dim == 2 else "") + f", got {tuple(out.shape)}")
        if E == 0:
            return out
        weighted = mass is not None
        v, metrics, d = prepared[:3]
        mass = prepared[3] if weighted else d  # (unread when not weighted)
        function, epb, shared = launch_of(v.dtype, weighted, layout)
        return run_into(xp, out, lambda target: function((math.ceil(E / epb),), (n * n, epb),
                                                      (v, metrics, mass, d, target, np.int64(E)), shared_mem=shared))

    return apply


@tuned_kernel("cuda", "weak_divergence_minus_curl")
def make_weak_divergence_minus_curl(backend, order, dim=3):
    order, dim = int(order), int(dim)
    if not fits(backend, order, "weak_divergence_minus_curl", dim):
        return _reference("weak_divergence_minus_curl", backend, order, dim)
    n = order + 1
    launch_of = _launcher(backend, order, "weak_divergence_minus_curl", dim)
    xp = backend.xp

    def apply(forcing, vorticity, metrics, mass, d, viscosity, out):
        E = forcing.shape[1]
        element = _element(E, n, dim)
        fc = wc = rows = 3
        layout = ()
        if dim == 2:  # the kernel reads f_x, f_y and w_z only
            fc = _components("weak_divergence_minus_curl", "forcing", forcing, (2, 3))
            rows = _metric_rows("weak_divergence_minus_curl", metrics, dim)
            if vorticity.ndim == 5:
                wc = _components("weak_divergence_minus_curl", "vorticity", vorticity, (1, 3))
                vorticity = vorticity[wc - 1]
            wc, layout = 0, (rows,)
        forcing, vorticity, metrics, mass, d = _prepare(
            xp, "weak_divergence_minus_curl", forcing.dtype,
            [("forcing", forcing, (fc,) + element),
             ("vorticity", vorticity, ((wc,) if wc else ()) + element),
             ("metrics", metrics, (rows, rows) + element), ("mass", mass, element), ("D", d, (n, n))])
        if tuple(out.shape) != element or out.dtype != forcing.dtype:
            raise TypeError(f"weak_divergence_minus_curl: out must be a {forcing.dtype} array of shape {element}")
        if E == 0:
            return out
        function, epb, shared = launch_of(forcing.dtype, False, layout)
        nu = forcing.dtype.type(viscosity)
        return run_into(xp, out, lambda target: function(
            (math.ceil(E / epb),), (n * n, epb), (forcing, vorticity, metrics, mass, d, target, nu, np.int64(E)),
            shared_mem=shared))

    return apply


@tuned_kernel("cuda", "mass_minus_gradient")
def make_mass_minus_gradient(backend, order, dim=3):
    order, dim = int(order), int(dim)
    if not fits(backend, order, "mass_minus_gradient", dim):
        return _reference("mass_minus_gradient", backend, order, dim)
    n = order + 1
    launch_of = _launcher(backend, order, "mass_minus_gradient", dim)
    xp = backend.xp

    def apply(forcing, pressure, metrics, mass, d, out):
        E = forcing.shape[1]
        element = _element(E, n, dim)
        fc = rows = 3
        layout = ()
        if dim == 2:
            fc = _components("mass_minus_gradient", "forcing", forcing, (2, 3))
            rows = _metric_rows("mass_minus_gradient", metrics, dim)
            layout = (fc, rows)
        forcing, pressure, metrics, mass, d = _prepare(
            xp, "mass_minus_gradient", forcing.dtype,
            [("forcing", forcing, (fc,) + element), ("pressure", pressure, element),
             ("metrics", metrics, (rows, rows) + element), ("mass", mass, element), ("D", d, (n, n))])
        if tuple(out.shape) != (fc,) + element or out.dtype != forcing.dtype:
            raise TypeError(f"mass_minus_gradient: out must be a {forcing.dtype} array of shape {(fc,) + element}")
        if E == 0:
            return out
        function, epb, shared = launch_of(forcing.dtype, False, layout)
        return run_into(xp, out, lambda target: function(
            (math.ceil(E / epb),), (n * n, epb), (forcing, pressure, metrics, mass, d, target, np.int64(E)),
            shared_mem=shared))

    return apply
