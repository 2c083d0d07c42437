"""The stage terms' compiled C kernels on the CPU backend (kernels/terms.c): the PML, the
dispersive poles, the TF/SF surface correction and the generic finish of terms.py.

``term_kernels(system)`` gives a ``TermKernels`` (ctypes wrappers that check their arrays) for
the system's order and precision, or None where the terms keep their array code: another
backend, no C compiler (jit.c), or ``LOBATTO_ARRAY_TERMS=1`` in the environment, read when a
term is built (so a benchmark can time both paths in one process; the tests compare them).
The array code of pml.py, dispersive.py and tfsf.py is the reference.

A term with these kernels sets ``folds_in_stage``: on a stage with a != 0, MaxwellSystem.stage
calls its ``fold`` (residual += (dt / a) S and its auxiliary fields' stage, one pass before the
stage kernel) instead of ``prepare`` and ``finish`` around it (terms.py).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import numpy as np

from lobatto.backends.base import check_kernel_arrays
from lobatto.jit import c as cbuild
from lobatto.jit.c import pointer as _ptr
from lobatto.mesh.topology import element_shape, face_shape

SOURCE = Path(__file__).resolve().parent / "kernels" / "terms.c"
_VP, _I64, _F64, _INT = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double, ctypes.c_int
_REAL = {"float64": "double", "float32": "float"}
#: set to 1 to keep the stage terms on their array code on the CPU (the reference)
ARRAY_TERMS_VARIABLE = "LOBATTO_ARRAY_TERMS"
#: the dispersive models' codes in terms.c
MODEL_CODES = {"drude": 0, "lorentz": 1, "debye": 2}


def array_terms_asked() -> bool:
    return os.environ.get(ARRAY_TERMS_VARIABLE, "").strip() not in ("", "0", "false", "no")


def _ptr_or_none(a):
    return None if a is None else _ptr(a)


class TermKernels:
    """ctypes wrappers of terms.c for one order, mesh dimension and precision (see the C source
    for what each computes); every array is checked (dtype, shape, C order) before its pointer
    is passed."""

    def __init__(self, lib, order: int, dtype, dim: int = 3):
        self.lib, self.n, self.dtype = lib, order + 1, np.dtype(dtype)
        self.points = element_shape(dim, order)  # an element's (k, j, i): (1, n, n) in 2-D
        self.face_points = face_shape(dim, order)
        self.faces = 2 * dim
        lib.term_finish.argtypes = [_VP] * 7 + [_I64, _I64, _INT, _INT, _F64, _F64, _F64]
        lib.pml_stage.argtypes = [_VP] * 9 + [_I64, _I64, _F64, _INT, _F64, _F64, _F64]
        lib.dispersive_stage.argtypes = [_VP] * 9 + [_I64, _F64] + [_VP] * 5 + [_INT, _VP, _I64, _I64, _INT, _F64,
                                                                               _F64, _F64]
        lib.surface_add.argtypes = [_VP] * 6 + [_I64, _I64, _F64, _F64]
        for name in ("term_finish", "pml_stage", "dispersive_stage", "surface_add"):
            getattr(lib, name).restype = None

    def _volume(self, kind, u, residual, elements):
        E = u.shape[1]
        pts = self.points
        check_kernel_arrays(kind, self.dtype, [(u, (6, E) + pts, "u"), (residual, (6, E) + pts, "residual")])
        check_kernel_arrays(kind, np.dtype(np.int64), [(elements, elements.shape, "elements")])
        if elements.ndim != 1 or (elements.size and not 0 <= int(elements.min()) <= int(elements.max()) < E):
            raise ValueError(f"{kind}: element ids outside 0..{E - 1}")
        return E, elements.size, pts

    def finish(self, u, residual, rate, aux, aux_residual, aux_rate, elements, fields, a, b, dt):
        """terms.py's StageTerm.finish on the term's compact arrays (fields: 6, 3 or 0)."""
        E, m, pts = self._volume("term_finish", u, residual, elements)
        if fields not in (0, 3, 6):
            raise ValueError(f"term_finish: fields must be 0, 3 or 6, got {fields}")
        arrays = [(rate, (6, m) + pts, "rate")] if fields else []
        count = 0 if aux is None else aux.shape[0]
        if count:
            arrays += [(x, (count, m) + pts, name) for x, name in
                       ((aux, "aux"), (aux_residual, "aux_residual"), (aux_rate, "aux_rate"))]
        check_kernel_arrays("term_finish", self.dtype, arrays)
        self.lib.term_finish(_ptr(u), _ptr(residual), _ptr_or_none(rate if fields else None),
                             _ptr_or_none(aux if count else None), _ptr_or_none(aux_residual if count else None),
                             _ptr_or_none(aux_rate if count else None), _ptr(elements), m, E, int(fields), count,
                             float(a), float(b), float(dt))

    def pml(self, u, residual, rate, aux, aux_residual, aux_rate, sigma, active, elements, alpha, fold, a, b, dt):
        """active: pml_active(sigma); its factors' auxiliary fields elsewhere must be 0 (they stay 0)."""
        E, m, pts = self._volume("pml_stage", u, residual, elements)
        check_kernel_arrays("pml_stage", self.dtype, [
            (rate, (6, m) + pts, "rate"), (aux, (18, m) + pts, "aux"), (aux_residual, (18, m) + pts, "aux_residual"),
            (aux_rate, (18, m) + pts, "aux_rate"), (sigma, (3, m) + pts, "sigma")])
        check_kernel_arrays("pml_stage", np.dtype(np.int8), [(active, (m,), "active")])
        if fold and a == 0:
            raise ValueError("pml_stage: fold needs a != 0")
        self.lib.pml_stage(_ptr(u), _ptr(residual), _ptr(rate), _ptr(aux), _ptr(aux_residual), _ptr(aux_rate),
                           _ptr(sigma), _ptr(active), _ptr(elements), m, E, float(alpha), int(bool(fold)), float(a),
                           float(b), float(dt))

    def dispersive(self, u, residual, rate, aux, aux_residual, aux_rate, weight, minus_inv_eps, poles, elements,
                   fold, a, b, dt, stretch=None):
        """poles: (model codes, first aux field, c0, c1, c2) as arrays (int32, int32, float64 x 3);
        stretch: None, or (3, m, n, n, n) added to E in the poles' drive (dispersive.py);
        minus_inv_eps: a number, (m, n, n, n) or (3, m, n, n, n) (a diagonal eps_inf)."""
        E, m, pts = self._volume("dispersive_stage", u, residual, elements)
        count = aux.shape[0]
        arrays = [(rate, (6, m) + pts, "rate"), (aux, (count, m) + pts, "aux"),
                  (aux_residual, (count, m) + pts, "aux_residual"), (aux_rate, (count, m) + pts, "aux_rate")]
        if weight is not None:
            arrays.append((weight, (m,) + pts, "weight"))
        if stretch is not None:
            arrays.append((stretch, (3, m) + pts, "stretch"))
        per_point = not isinstance(minus_inv_eps, float)
        per_component = per_point and minus_inv_eps.ndim == 5
        if per_point:
            arrays.append((minus_inv_eps, ((3,) if per_component else ()) + (m,) + pts, "minus_inv_epsilon"))
        check_kernel_arrays("dispersive_stage", self.dtype, arrays)
        model, offset, c0, c1, c2 = poles
        P = model.size
        check_kernel_arrays("dispersive_stage", np.dtype(np.int32), [(model, (P,), "model"), (offset, (P,), "offset")])
        check_kernel_arrays("dispersive_stage", np.dtype(np.float64), [(c, (P,), "coefficients") for c in (c0, c1, c2)])
        last = {0: 3, 1: 6, 2: 3}
        if P and (int(model.min()) < 0 or int(model.max()) > 2
                  or max(int(o) + last[int(k)] for k, o in zip(model, offset)) > count):
            raise ValueError("dispersive_stage: pole models or offsets outside the auxiliary fields")
        if fold and a == 0:
            raise ValueError("dispersive_stage: fold needs a != 0")
        self.lib.dispersive_stage(
            _ptr(u), _ptr(residual), _ptr(rate), _ptr(aux), _ptr(aux_residual), _ptr(aux_rate), _ptr_or_none(weight),
            _ptr_or_none(stretch), _ptr(minus_inv_eps) if per_point else None, m * int(np.prod(self.points)) if per_component else 0,
            0.0 if per_point else float(minus_inv_eps), _ptr(model),
            _ptr(offset), _ptr(c0), _ptr(c1), _ptr(c2), int(P), _ptr(elements), m, E, int(bool(fold)), float(a),
            float(b), float(dt))

    def surface(self, u, residual, gain, w, element, face, scale_residual, scale_u):
        """residual (and u, unless None) += scale * gain * w at the surface's face points."""
        E, pts, fp = residual.shape[1], self.points, self.face_points
        K = element.size
        check_kernel_arrays("surface_add", self.dtype, [(residual, (6, E) + pts, "residual"),
                                                         (gain, (6, K) + fp, "gain"), (w, (K,) + fp, "w")]
                            + ([] if u is None else [(u, (6, E) + pts, "u")]))
        check_kernel_arrays("surface_add", np.dtype(np.int64), [(element, (K,), "element"), (face, (K,), "face")])
        if K and not (0 <= int(element.min()) and int(element.max()) < E and 0 <= int(face.min())
                      and int(face.max()) < self.faces):
            raise ValueError("surface_add: element or face ids out of range")
        self.lib.surface_add(_ptr_or_none(u), _ptr(residual), _ptr(gain), _ptr(w), _ptr(element), _ptr(face), K, E,
                             float(scale_residual), float(scale_u))


def pml_active(sigma: np.ndarray) -> np.ndarray:
    """(m,) int8: bit d set where sigma_d (sigma: (3, m, nz, n, n)) is non-zero on the element."""
    nonzero = np.any(sigma != 0, axis=(2, 3, 4))  # (3, m)
    return np.ascontiguousarray(sum(nonzero[d].astype(np.int8) << d for d in range(3)), dtype=np.int8)


_cache: dict = {}


def term_kernels(system) -> TermKernels | None:
    """The compiled term kernels for this system, or None (module docstring)."""
    backend = system.backend
    if backend.name != "cpu" or not backend.uses_tuned or array_terms_asked():  # (the NumPy oracle: array code)
        return None
    dim = system.mesh.dim
    key = (system.order, backend.precision, dim)
    if key not in _cache:
        lib = cbuild.load(SOURCE, NQ=system.order + 1, DIM=dim, REAL=_REAL[backend.precision])
        _cache[key] = None if lib is None else TermKernels(lib, system.order, backend.precision, dim)
    return _cache[key]
