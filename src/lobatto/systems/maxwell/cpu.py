"""Maxwell's compiled C kernels for the CPU backend (kernels/maxwell.c; docs/backends.md).

`maxwell_kernels(order, precision, dim)` gives ctypes-wrapped kernels with exactly the reference
signatures (reference.py) for a mesh of that dimension (2: the thin (1, n, n) layout, built
with -DDIM=2), or None when they cannot be compiled; they are registered as the
CPU backend's tuned ``maxwell_traces``, ``maxwell_rhs`` and ``maxwell_stage`` (and their
per-point medium variants ``maxwell_rhs_materials``, ``maxwell_stage_materials``). Where the
compiler fails the factories return the reference kernels (and a stage built from the
reference rhs), so a run goes on, unfused.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from lobatto.backends.base import REFERENCE_KERNELS, element_bounds, tuned_kernel
from lobatto.jit import c as cbuild
from lobatto.jit.c import pointer as _ptr
from lobatto.mesh.topology import element_shape, face_shape

SOURCE = Path(__file__).resolve().parent / "kernels" / "maxwell.c"
_VP, _I64, _F64, _INT = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double, ctypes.c_int
_REAL = {"float64": "double", "float32": "float"}


def maxwell_spec(order: int, precision: str, dim: int = 3) -> tuple[Path, dict]:
    """(source, macros) of the library for this order, precision and mesh dimension (for jit.c.prebuild)."""
    if dim not in (2, 3):
        raise ValueError(f"maxwell kernels: dim must be 2 or 3, got {dim!r}")
    return SOURCE, {"NQ": int(order) + 1, "DIM": int(dim), "REAL": _REAL[precision]}


def _check(a, dtype, shape, name, writable=False):
    if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != shape or not a.flags.c_contiguous:
        raise TypeError(
            f"compiled kernel: {name} must be a C-contiguous {dtype} array of shape {shape}, got "
            f"{type(a).__name__} {getattr(a, 'dtype', '?')} {getattr(a, 'shape', '?')}"
            + ("" if getattr(a, "flags", None) is None else f" contiguous={a.flags.c_contiguous}")
        )
    if writable and not a.flags.writeable:
        raise TypeError(f"compiled kernel: {name} must be writable")


GEOMETRY_KEYS = ("metrics", "jacobian", "normals", "lift", "face_factors", "affine", "derivative")


def split_flag(geometry) -> int:
    """1 where the curl takes the split form on curved elements (systems/dg.py: "split_form")."""
    return 1 if geometry.get("split_form", True) else 0


class _Geometry:
    """Pointers of one geometry dict, checked once and kept (arrays are held alive)."""

    def __init__(self, geometry, dtype, E, n, vol, face):
        """vol: an element's (k, j, i) shape; face: (faces, a, b) of an element's face arrays."""
        def arr(key, dt, shape):
            a = np.ascontiguousarray(geometry[key], dtype=dt)
            _check(a, np.dtype(dt), shape, f"geometry[{key!r}]")
            return a

        self.arrays = (
            arr("metrics", dtype, (3, 3, E) + vol),
            arr("jacobian", dtype, (E,) + vol),
            arr("normals", dtype, (3, E) + face),
            arr("lift", dtype, (E,) + face),
            arr("face_factors", dtype, (2, E, face[0])),
            arr("affine", np.int8, (E,)),
            arr("derivative", dtype, (n, n)),
        )
        self.pointers = tuple(_ptr(a) for a in self.arrays)
        self.sources = tuple(geometry[k] for k in GEOMETRY_KEYS)

    def matches(self, geometry) -> bool:
        return all(geometry[k] is s for k, s in zip(GEOMETRY_KEYS, self.sources))


def maxwell_kernels(order: int, precision: str = "float64", dim: int = 3) -> dict | None:
    """{'maxwell_traces', 'maxwell_rhs', 'maxwell_stage', ...} callables for this order and
    mesh dimension, or None."""
    source, macros = maxwell_spec(order, precision, dim)
    lib = cbuild.load(source, **macros)
    if lib is None:
        return None
    dtype = np.dtype(precision)
    n = int(order) + 1
    vol = element_shape(dim, int(order))  # (n, n, n), or (1, n, n) in 2-D
    face = (2 * dim,) + face_shape(dim, int(order))  # (faces, a, b) of one element
    lib.maxwell_traces.argtypes = [_VP, _VP, _VP, _I64]
    lib.maxwell_traces.restype = None
    lib.maxwell_rhs.argtypes = [_VP] * 10 + [_I64] * 3 + [_F64] * 3 + [_INT]
    lib.maxwell_rhs.restype = None
    lib.maxwell_stage.argtypes = [_VP] * 10 + [_I64] * 3 + [_F64] * 6 + [_INT]
    lib.maxwell_stage.restype = _INT
    lib.maxwell_rhs_medium.argtypes = [_VP] * 14 + [_I64] * 3 + [_F64] + [_INT] + [_I64]
    lib.maxwell_rhs_medium.restype = None
    c_traces, c_rhs, c_stage = lib.maxwell_traces, lib.maxwell_rhs, lib.maxwell_stage
    c_rhs_medium = lib.maxwell_rhs_medium
    lib.maxwell_stage_medium.argtypes = [_VP] * 14 + [_I64] * 3 + [_F64] * 4 + [_INT] + [_I64]
    lib.maxwell_stage_medium.restype = _INT
    c_stage_medium = lib.maxwell_stage_medium
    cache: list = [None]  # the last geometry seen (one system per kernel, in practice)

    def geometry_of(geometry, E):
        g = cache[0]
        if g is None or len(g.arrays[GEOMETRY_KEYS.index("affine")]) != E or not g.matches(geometry):
            g = cache[0] = _Geometry(geometry, dtype, E, n, vol, face)
        return g

    def traces(u, normals, out):
        E = u.shape[1]
        _check(u, dtype, (6, E) + vol, "u")
        _check(normals, dtype, (3, E) + face, "normals")
        _check(out, dtype, (6, E) + face, "traces", writable=True)
        c_traces(_ptr(u), _ptr(normals), _ptr(out), E)
        return out

    def rhs(u, sums, geometry, out, epsilon, mu, alpha, elements=None):
        E = u.shape[1]
        _check(u, dtype, (6, E) + vol, "u")
        _check(sums, dtype, (6, E) + face, "sums")
        _check(out, dtype, (6, E) + vol, "out", writable=True)
        first, stop = element_bounds(elements, E)
        m, jac, nr, lf, ff, af, d = geometry_of(geometry, E).pointers
        c_rhs(_ptr(u), _ptr(sums), m, jac, nr, lf, ff, af, d, _ptr(out), E, first, stop, float(epsilon), float(mu),
              float(alpha), split_flag(geometry))
        return out

    def stage(u, residual, sums, geometry, epsilon, mu, alpha, a, b, dt, elements=None):
        E = u.shape[1]
        _check(u, dtype, (6, E) + vol, "u", writable=True)
        _check(residual, dtype, (6, E) + vol, "residual", writable=True)
        _check(sums, dtype, (6, E) + face, "sums")
        first, stop = element_bounds(elements, E)
        m, jac, nr, lf, ff, af, d = geometry_of(geometry, E).pointers
        status = c_stage(_ptr(u), _ptr(residual), _ptr(sums), m, jac, nr, lf, ff, af, d, E, first, stop, float(epsilon),
                         float(mu), float(alpha), float(a), float(b), float(dt), split_flag(geometry))
        if status:
            raise MemoryError("maxwell_stage: could not allocate the per-thread element buffer")

    def rhs_medium(u, sums, geometry, out, material, alpha, elements=None):
        """materials.py's reference rhs in C: material = HeterogeneousMedium.arrays."""
        E = u.shape[1]
        _check(u, dtype, (6, E) + vol, "u")
        _check(sums, dtype, (6, E) + face, "sums")
        _check(out, dtype, (6, E) + vol, "out", writable=True)
        cs, lead = _medium_layout(material, E)
        for key in ("inv_epsilon", "inv_mu"):
            _check(material[key], dtype, lead + (E,) + vol, key)
        _check(material["flux_coefficients"], dtype, lead + (4, E) + face, "flux_coefficients")
        sigma = material["sigma_over_epsilon"]
        if sigma is not None:
            _check(sigma, dtype, lead + (E,) + vol, "sigma_over_epsilon")
        first, stop = element_bounds(elements, E)
        m, jac, nr, lf, ff, af, d = geometry_of(geometry, E).pointers
        c_rhs_medium(_ptr(u), _ptr(sums), m, jac, nr, lf, ff, af, d, _ptr(out), _ptr(material["inv_epsilon"]),
                     _ptr(material["inv_mu"]), None if sigma is None else _ptr(sigma),
                     _ptr(material["flux_coefficients"]), E, first, stop, float(alpha), split_flag(geometry), cs)
        return out

    def stage_medium(u, residual, sums, geometry, material, alpha, a, b, dt, elements=None):
        """maxwell_stage with rhs_medium's L(u): material = HeterogeneousMedium.arrays."""
        E = u.shape[1]
        _check(u, dtype, (6, E) + vol, "u", writable=True)
        _check(residual, dtype, (6, E) + vol, "residual", writable=True)
        _check(sums, dtype, (6, E) + face, "sums")
        cs, lead = _medium_layout(material, E)
        for key in ("inv_epsilon", "inv_mu"):
            _check(material[key], dtype, lead + (E,) + vol, key)
        _check(material["flux_coefficients"], dtype, lead + (4, E) + face, "flux_coefficients")
        sigma = material["sigma_over_epsilon"]
        if sigma is not None:
            _check(sigma, dtype, lead + (E,) + vol, "sigma_over_epsilon")
        first, stop = element_bounds(elements, E)
        m, jac, nr, lf, ff, af, d = geometry_of(geometry, E).pointers
        status = c_stage_medium(_ptr(u), _ptr(residual), _ptr(sums), m, jac, nr, lf, ff, af, d,
                                _ptr(material["inv_epsilon"]), _ptr(material["inv_mu"]),
                                None if sigma is None else _ptr(sigma), _ptr(material["flux_coefficients"]), E, first,
                                stop, float(alpha), float(a), float(b), float(dt), split_flag(geometry), cs)
        if status:
            raise MemoryError("maxwell_stage_medium: could not allocate the per-thread element buffer")

    return {"maxwell_traces": traces, "maxwell_rhs": rhs, "maxwell_stage": stage, "maxwell_rhs_materials": rhs_medium,
            "maxwell_stage_materials": stage_medium}


def _medium_layout(material, E) -> tuple:
    """(component stride, leading shape) of HeterogeneousMedium.arrays: a diagonal eps, mu has
    (3, ...) arrays (anisotropy.py), read with stride E n^dim; one value a point has stride 0."""
    anisotropic = material["inv_epsilon"].ndim == 5
    return (int(material["inv_epsilon"][0].size) if anisotropic else 0), ((3,) if anisotropic else ())


def reference_stage(backend, order, dim=3):
    """The fused stage's contract from the reference rhs (used only if compilation fails)."""
    rhs = REFERENCE_KERNELS["maxwell_rhs"](backend, order=order, dim=dim)
    scratch: list = [None]

    def stage(u, residual, sums, geometry, epsilon, mu, alpha, a, b, dt, elements=None):
        if scratch[0] is None or scratch[0].shape != u.shape or scratch[0].dtype != u.dtype:
            scratch[0] = backend.xp.empty_like(u)
        du = rhs(u, sums, geometry, scratch[0], epsilon, mu, alpha, elements)
        part = slice(None) if elements is None else slice(*elements)
        u, residual, du = u[:, part], residual[:, part], du[:, part]
        residual *= a
        residual += dt * du
        u += b * residual

    return stage


def _register(name):
    @tuned_kernel("cpu", name)
    def factory(backend, order, dim=3):
        kernels = maxwell_kernels(order, backend.precision, dim)
        if kernels is not None:
            return kernels[name]
        if name == "maxwell_stage":
            return reference_stage(backend, order, dim)
        if name == "maxwell_stage_materials":
            return None  # materials.py steps with its rhs and array operations
        if name == "maxwell_rhs_materials":
            import lobatto.systems.maxwell.materials  # noqa: F401  (registers the reference)
        return REFERENCE_KERNELS[name](backend, order=order, dim=dim)

    factory.__name__ = f"compiled_{name}"
    return factory


for _name in ("maxwell_traces", "maxwell_rhs", "maxwell_stage", "maxwell_rhs_materials", "maxwell_stage_materials"):
    _register(_name)
