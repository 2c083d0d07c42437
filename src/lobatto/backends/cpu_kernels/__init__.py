"""Compiled C kernels of the CPU backend (see docs/backends.md, "CPU backend").

`maxwell_kernels(order, precision)` gives ctypes-wrapped kernels with exactly the reference
signatures (lobatto/systems/maxwell/reference.py), or None when they cannot be compiled;
`gs_kernels(precision)` gives the local gather-scatter kernels. `set_num_threads(n)` sets
the OpenMP thread count of every compiled kernel (OMP_NUM_THREADS sets the default).
"""

from __future__ import annotations

import ctypes
import os

import numpy as np

from lobatto.backends.base import element_bounds
from lobatto.backends.cpu_kernels import build
from lobatto.backends.cpu_kernels.build import cache_dir, disabled, prebuild, toolchain  # noqa: F401

_VP, _I64, _F64, _INT = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double, ctypes.c_int
_REAL = {"float64": "double", "float32": "float"}
_threads: int | None = None


def available() -> bool:
    """True when the C kernels can be compiled here (a compiler is found and not disabled)."""
    return not disabled() and toolchain() is not None


def maxwell_spec(order: int, precision: str) -> tuple[str, dict]:
    return "maxwell.c", {"NQ": int(order) + 1, "REAL": _REAL[precision]}


def set_num_threads(n: int | None) -> None:
    """OpenMP threads for the compiled kernels (None: back to OMP_NUM_THREADS / all cores)."""
    global _threads
    _threads = n
    if n is None:
        n = int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or (os.cpu_count() or 1)
    for lib in build.loaded_libraries():
        if hasattr(lib, "lobatto_set_num_threads"):
            lib.lobatto_set_num_threads(int(n))


def get_num_threads() -> int:
    for lib in build.loaded_libraries():
        if hasattr(lib, "lobatto_get_max_threads"):
            return int(lib.lobatto_get_max_threads())
    return 1


def _load(source, macros):
    lib = build.load(source, **macros)
    if lib is not None and _threads is not None and hasattr(lib, "lobatto_set_num_threads"):
        lib.lobatto_set_num_threads(int(_threads))
    return lib


def _ptr(a) -> int:
    return a.__array_interface__["data"][0]


def _check(a, dtype, shape, name, writable=False):
    if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != shape or not a.flags.c_contiguous:
        raise TypeError(
            f"compiled kernel: {name} must be a C-contiguous {dtype} array of shape {shape}, got "
            f"{type(a).__name__} {getattr(a, 'dtype', '?')} {getattr(a, 'shape', '?')}"
            + ("" if getattr(a, "flags", None) is None else f" contiguous={a.flags.c_contiguous}")
        )
    if writable and not a.flags.writeable:
        raise TypeError(f"compiled kernel: {name} must be writable")


class _Geometry:
    """Pointers of one geometry dict, checked once and kept (arrays are held alive)."""

    def __init__(self, geometry, dtype, E, n):
        def arr(key, dt, shape):
            a = np.ascontiguousarray(geometry[key], dtype=dt)
            _check(a, np.dtype(dt), shape, f"geometry[{key!r}]")
            return a

        self.arrays = (
            arr("metrics", dtype, (3, 3, E, n, n, n)),
            arr("normals", dtype, (3, E, 6, n, n)),
            arr("lift", dtype, (E, 6, n, n)),
            arr("face_factors", dtype, (2, E, 6)),
            arr("affine", np.int8, (E,)),
            arr("derivative", dtype, (n, n)),
        )
        self.pointers = tuple(_ptr(a) for a in self.arrays)
        self.sources = tuple(geometry[k] for k in ("metrics", "normals", "lift", "face_factors", "affine", "derivative"))

    def matches(self, geometry) -> bool:
        return all(geometry[k] is s for k, s in
                   zip(("metrics", "normals", "lift", "face_factors", "affine", "derivative"), self.sources))


def maxwell_kernels(order: int, precision: str = "float64") -> dict | None:
    """{'maxwell_traces', 'maxwell_rhs', 'maxwell_stage'} callables for this order, or None."""
    source, macros = maxwell_spec(order, precision)
    lib = _load(source, macros)
    if lib is None:
        return None
    dtype = np.dtype(precision)
    n = int(order) + 1
    lib.maxwell_traces.argtypes = [_VP, _VP, _VP, _I64]
    lib.maxwell_traces.restype = None
    lib.maxwell_rhs.argtypes = [_VP] * 9 + [_I64] * 3 + [_F64] * 3
    lib.maxwell_rhs.restype = None
    lib.maxwell_stage.argtypes = [_VP] * 9 + [_I64] * 3 + [_F64] * 6
    lib.maxwell_stage.restype = _INT
    c_traces, c_rhs, c_stage = lib.maxwell_traces, lib.maxwell_rhs, lib.maxwell_stage
    cache: list = [None]  # the last geometry seen (one system per kernel, in practice)

    def geometry_of(geometry, E):
        g = cache[0]
        if g is None or len(g.arrays[4]) != E or not g.matches(geometry):
            g = cache[0] = _Geometry(geometry, dtype, E, n)
        return g

    def traces(u, normals, out):
        E = u.shape[1]
        _check(u, dtype, (6, E, n, n, n), "u")
        _check(normals, dtype, (3, E, 6, n, n), "normals")
        _check(out, dtype, (6, E, 6, n, n), "traces", writable=True)
        c_traces(_ptr(u), _ptr(normals), _ptr(out), E)
        return out

    def rhs(u, sums, geometry, out, epsilon, mu, alpha, elements=None):
        E = u.shape[1]
        _check(u, dtype, (6, E, n, n, n), "u")
        _check(sums, dtype, (6, E, 6, n, n), "sums")
        _check(out, dtype, (6, E, n, n, n), "out", writable=True)
        first, stop = element_bounds(elements, E)
        m, nr, lf, ff, af, d = geometry_of(geometry, E).pointers
        c_rhs(_ptr(u), _ptr(sums), m, nr, lf, ff, af, d, _ptr(out), E, first, stop, float(epsilon), float(mu),
              float(alpha))
        return out

    def stage(u, residual, sums, geometry, epsilon, mu, alpha, a, b, dt, elements=None):
        E = u.shape[1]
        _check(u, dtype, (6, E, n, n, n), "u", writable=True)
        _check(residual, dtype, (6, E, n, n, n), "residual", writable=True)
        _check(sums, dtype, (6, E, 6, n, n), "sums")
        first, stop = element_bounds(elements, E)
        m, nr, lf, ff, af, d = geometry_of(geometry, E).pointers
        status = c_stage(_ptr(u), _ptr(residual), _ptr(sums), m, nr, lf, ff, af, d, E, first, stop, float(epsilon),
                         float(mu), float(alpha), float(a), float(b), float(dt))
        if status:
            raise MemoryError("maxwell_stage: could not allocate the per-thread element buffer")

    return {"maxwell_traces": traces, "maxwell_rhs": rhs, "maxwell_stage": stage}


# Local gather-scatter -----------------------------------------------------------------------
_OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3}


def gs_kernels(precision: str = "float64") -> dict | None:
    """Local gather-scatter kernels on NumPy arrays (for lobatto.comm), or None.

    combine(u2, perm, starts, op)        in place: u2[:, perm-group] = op over the group
    gather(u2, perm, starts, op) -> (vn, len(starts)) compact values (take + reduceat)
    scatter(values, u2, dest, src)       u2[:, dest] = values[:, src]
    u2 is (vn, n) C-contiguous of `precision`; index arrays are int64 (np.intp on 64-bit).
    """
    lib = _load("gs_local.c", {})
    if lib is None:
        return None
    sfx = {"float64": "f64", "float32": "f32"}[precision]
    dtype = np.dtype(precision)
    c_combine = getattr(lib, f"gs_combine_{sfx}")
    c_gather = getattr(lib, f"gs_gather_{sfx}")
    c_scatter = getattr(lib, f"gs_scatter_{sfx}")
    c_combine.argtypes = [_VP, _I64, _I64, _VP, _VP, _I64, _I64, _INT]
    c_gather.argtypes = [_VP, _I64, _I64, _VP, _VP, _I64, _I64, _INT, _VP]
    c_scatter.argtypes = [_VP, _I64, _VP, _I64, _I64, _VP, _VP, _I64]
    for f in (c_combine, c_gather, c_scatter):
        f.restype = None

    def _idx(a):
        if a.dtype != np.int64 or not a.flags.c_contiguous:
            raise TypeError("gs kernels: index arrays must be C-contiguous int64")
        return _ptr(a)

    def _u(u2):
        if u2.ndim != 2 or u2.dtype != dtype or not u2.flags.c_contiguous:
            raise TypeError(f"gs kernels: u must be a C-contiguous 2-D {dtype} array")
        return _ptr(u2)

    def combine(u2, perm, starts, op="sum"):
        if len(starts):
            c_combine(_u(u2), u2.shape[0], u2.shape[1], _idx(perm), _idx(starts), len(starts), len(perm), _OPS[op])
        return u2

    def gather(u2, perm, starts, op="sum"):
        out = np.empty((u2.shape[0], len(starts)), dtype=dtype)
        if len(starts):
            c_gather(_u(u2), u2.shape[0], u2.shape[1], _idx(perm), _idx(starts), len(starts), len(perm), _OPS[op],
                     _ptr(out))
        return out

    def scatter(values, u2, dest, src):
        values = np.ascontiguousarray(values, dtype=dtype)
        if len(dest):
            c_scatter(_ptr(values), values.shape[1], _u(u2), u2.shape[0], u2.shape[1], _idx(dest), _idx(src),
                      len(dest))

    return {"combine": combine, "gather": gather, "scatter": scatter}
