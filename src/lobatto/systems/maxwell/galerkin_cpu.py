"""The Galerkin volume form (galerkin.py) as compiled C kernels for the CPU backend.

kernels/galerkin.c computes WeightAdjustedOperator.rhs with the skew volume term (the default;
volume="strong" runs as array code), M_W^-1 (volume + face load), element by element by sum
factorisation, specialised on the GLL points N + 1 and the Gauss points Q per direction and the
precision (at Q = N + 1 all at the Gauss points; affine elements in closed form, equal to
round-off), and the energy's products (energy_products; attach installs them only where Q is not
N + 1: at N + 1 WeightAdjustedOperator.energy_products has a closed form). Both take a per-point
medium (operator.medium, galerkin_media.py): M_{eps_c W}^-1 per component, the conductor's loss,
the medium's fluxes; an affine element keeps the closed form only where the medium is constant
over it and the fluxes over its faces (medium_constants), the others take the general path.
`rhs_kernel` gives
the rhs with the system's rhs-kernel signature and `energy_kernel` the products, or None where
they do not apply (another backend, the NumPy oracle backend, no compiler): the array code stays
the reference and the fallback.
Per thread the kernels take one element's scratch (about 0.7 MB at N = 9), not counted by
galerkin_memory.memory_estimate."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from lobatto.backends.base import check_kernel_arrays, element_bounds
from lobatto.jit import c as cbuild
from lobatto.jit.c import pointer as _ptr

SOURCE = Path(__file__).resolve().parent / "kernels" / "galerkin.c"
_VP, _I64, _F64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
_REAL = {"float64": "double", "float32": "float"}
#: the operator's arrays the kernel reads, in its argument order
OPERATOR_ARRAYS = ("v", "weighted_cofactors", "inverse_jacobian_weights", "inverse_mass_1d", "derivative",
                   "normals", "face_weights")


def galerkin_spec(order: int, points: int, precision: str) -> tuple[Path, dict]:
    """(source, macros) of the library for this order, Gauss rule and precision."""
    return SOURCE, {"NP": int(order) + 1, "NG": int(points), "REAL": _REAL[precision]}


def _operator_pointers(operator, dtype, E):
    n, q = operator.order + 1, operator.points
    shapes = {"v": (q, n), "weighted_cofactors": (3, 3, E, q, q, q), "inverse_jacobian_weights": (E, q, q, q),
              "inverse_mass_1d": (n, n), "derivative": (n, n), "normals": (3, E, 6, q, q),
              "face_weights": (E, 6, q, q)}
    arrays = [getattr(operator, name) for name in OPERATOR_ARRAYS]
    check_kernel_arrays("galerkin_rhs", dtype,
                        [(a, shapes[k], f"operator.{k}") for a, k in zip(arrays, OPERATOR_ARRAYS)])
    return arrays, tuple(_ptr(a) for a in arrays)


def _library(backend, operator):
    """The loaded library for this operator on this backend, or None where it does not apply."""
    if backend.name != "cpu" or not backend.uses_tuned or backend.xp is not np or not backend.tuned_available():
        return None
    source, macros = galerkin_spec(operator.order, operator.points, backend.precision)
    return cbuild.load(source, **macros)


#: an element takes the closed form of kernels/galerkin.c (affine_rhs) where its J a^b, J, n and
#: sJ vary over the Gauss points by less than this, relative (float64; float32 arrays: 64 times
#: their round-off, 7.6e-6): the two paths then agree to round-off
AFFINE_TOLERANCE = 1e-13


def affine_constants(operator):
    """(affine (E,) int8, constants (E, 34) float64) of the kernel's closed form: per element
    J a^b [b][a], 1/J, the six faces' unit normals and sJ, taken at the first Gauss point, and 1
    where they are constant to AFFINE_TOLERANCE (a parallelepiped), else 0."""
    _, wg = np.polynomial.legendre.leggauss(operator.points)
    w2 = wg[:, None] * wg[None, :]
    w3 = wg[:, None, None] * w2[None]
    cof = np.asarray(operator.weighted_cofactors, dtype=np.float64) / w3  # (3, 3, E, Q, Q, Q)
    jac = w3 / np.asarray(operator.inverse_jacobian_weights, dtype=np.float64)  # (E, Q, Q, Q)
    normals = np.asarray(operator.normals, dtype=np.float64)  # (3, E, 6, Q, Q)
    area = np.asarray(operator.face_weights, dtype=np.float64) / w2  # (E, 6, Q, Q)
    E = jac.shape[0]
    tolerance = max(AFFINE_TOLERANCE, 64 * float(np.finfo(operator.inverse_jacobian_weights.dtype).eps))

    def spread(a, axes):  # max |a - a at the first point| over ``axes``, per element
        first = a[(Ellipsis,) + (slice(0, 1),) * len(axes)]
        return np.abs(a - first).max(axis=axes)

    scale = np.abs(cof[..., 0, 0, 0]).max(axis=(0, 1))
    flat = ((spread(cof, (3, 4, 5)).max(axis=(0, 1)) <= tolerance * scale)
            & (spread(jac, (1, 2, 3)) <= tolerance * np.abs(jac[:, 0, 0, 0]))
            & (spread(normals, (3, 4)).max(axis=(0, 2)) <= tolerance)
            & (spread(area, (2, 3)).max(axis=1) <= tolerance * np.abs(area[..., 0, 0]).max(axis=1)))
    constants = np.concatenate([cof[..., 0, 0, 0].reshape(9, E).T, 1.0 / jac[:, 0, 0, 0, None],
                                normals[..., 0, 0].transpose(1, 2, 0).reshape(E, 18), area[..., 0, 0]], axis=1)
    return flat.astype(np.int8), constants


def medium_constants(operator, affine):
    """(affine (E,) int8, constants (E, 33) float64) of the closed form with a per-point medium
    (operator.medium): ``affine`` (affine_constants') kept where the medium is also constant over
    the element to AFFINE_TOLERANCE (eps_c, mu_c, sigma at its Gauss points, a, b, c, d over each
    of its faces: regions on whole elements, sampling = "element"), else 0; per element 1/(J eps_c),
    1/(J mu_c), sigma / eps_c and each face's a, b, c, d."""
    medium = operator.medium
    _, wg = np.polynomial.legendre.leggauss(operator.points)
    w3 = wg[:, None, None] * wg[None, :, None] * wg[None, None, :]
    ijw = np.asarray(operator.inverse_jacobian_weights, dtype=np.float64)  # w / J
    ratio = np.asarray(medium.inverse_weights, dtype=np.float64) / ijw  # 1 / eps_c, 1 / mu_c (6, E, Q, Q, Q)
    sigma = (np.zeros_like(ijw) if medium.loss_weights is None
             else np.asarray(medium.loss_weights, dtype=np.float64) * ijw / (w3 * w3))  # w J sigma * (w / J) / w^2
    flux = np.asarray(medium.flux, dtype=np.float64)  # (4, E, 6, Q, Q)
    tolerance = max(AFFINE_TOLERANCE, 64 * float(np.finfo(medium.inverse_weights.dtype).eps))

    def constant(a, axes):  # per element: a's spread over ``axes`` within the tolerance of its size
        first = a[(Ellipsis,) + (slice(0, 1),) * len(axes)]
        return np.abs(a - first).max(axis=axes) <= tolerance * np.abs(first).max(axis=axes)

    flat = (constant(ratio, (2, 3, 4)).all(axis=0) & constant(sigma, (1, 2, 3))  # (sigma = 0: exactly)
            & constant(flux, (3, 4)).all(axis=(0, 2)))
    E = ijw.shape[0]
    inverse = ratio[:, :, 0, 0, 0] * ijw[None, :, 0, 0, 0] / w3[0, 0, 0]  # 1 / (J eps_c): (6, E)
    constants = np.concatenate([inverse.T, (sigma[:, 0, 0, 0] * ratio[0:3, :, 0, 0, 0]).T,
                                flux[..., 0, 0].transpose(1, 2, 0).reshape(E, 24)], axis=1)
    return (affine.astype(bool) & flat).astype(np.int8), constants


def _medium_pointers(operator, dtype, E):
    """(arrays, (inverse_weights, loss_weights, flux) pointers) of the operator's per-point
    medium (galerkin_media.GalerkinMedium), NULL for what it lacks (no medium, no conductor)."""
    medium = getattr(operator, "medium", None)
    if medium is None:
        return [], (None, None, None)
    q = operator.points
    # (contiguous copies where needed: clipped interpolants may come strided; the kernel keeps them)
    named = [(np.ascontiguousarray(a), shape, f"medium.{name}") for a, shape, name in
             ((medium.inverse_weights, (6, E, q, q, q), "inverse_weights"), (medium.flux, (4, E, 6, q, q), "flux"),
              (medium.loss_weights, (E, q, q, q), "loss_weights")) if a is not None]
    check_kernel_arrays("galerkin_rhs", dtype, named)
    arrays = [a for a, _, _ in named]
    return arrays, (_ptr(arrays[0]), _ptr(arrays[2]) if len(arrays) > 2 else None, _ptr(arrays[1]))


def rhs_kernel(backend, operator):
    """``rhs(u, sums, geometry, out, epsilon, mu, alpha, elements=None)`` computing
    ``operator.rhs`` (geometry["face_factors"] the boundary factors; with ``operator.medium`` its
    per-point eps, mu, sigma, the scalars epsilon, mu unused) in C, or None where the backend is
    not the compiled CPU one or the library cannot be built, or the operator's volume term is not
    the skew one (``volume="strong"``, kept for comparisons: the array code runs it). The
    operator's arrays (and its medium's) are checked and their addresses kept: it must not
    replace them afterwards."""
    if getattr(operator, "volume", "skew") != "skew":
        return None
    lib = _library(backend, operator)
    if lib is None:
        return None
    function = lib.galerkin_rhs
    function.argtypes = [_VP] * 17 + [_I64] * 3 + [_F64] * 3
    function.restype = ctypes.c_int
    dtype = np.dtype(backend.precision)
    n = operator.order + 1
    E = operator.face_weights.shape[0]
    arrays, pointers = _operator_pointers(operator, dtype, E)
    v, cof, ijw, minv, d, normals, weights = pointers
    media, medium = _medium_pointers(operator, dtype, E)
    affine, constants = affine_constants(operator)
    if media:  # the closed form where the medium is constant over the element too
        affine, closed = medium_constants(operator, affine)
        media.append(closed.astype(dtype))
    medium = medium + ((_ptr(media[-1]),) if media else (None,))
    constants = constants.astype(dtype)
    arrays = arrays + media + [affine, constants]
    rhs_affine = _ptr(affine), _ptr(constants)

    def rhs(u, sums, geometry, out, epsilon, mu, alpha, elements=None):
        factors = geometry["face_factors"]
        if factors.dtype != dtype or not factors.flags.c_contiguous:
            factors = np.ascontiguousarray(factors, dtype=dtype)
        check_kernel_arrays("galerkin_rhs", dtype, ((u, (6, E, n, n, n), "u"), (sums, (6, E, 6, n, n), "sums"),
                                                    (factors, (2, E, 6), "face_factors"),
                                                    (out, (6, E, n, n, n), "out")))
        if not out.flags.writeable:
            raise TypeError("galerkin_rhs: out must be writable")
        first, stop = element_bounds(elements, E)
        status = function(_ptr(u), _ptr(sums), _ptr(factors), v, cof, ijw, minv, d, normals, weights, *rhs_affine,
                          *medium, _ptr(out), E, first, stop, float(epsilon), float(mu), float(alpha))
        if status:
            raise MemoryError("galerkin_rhs: could not allocate the per-thread element buffer")
        return out

    rhs.arrays = arrays  # held alive with the kernel
    rhs.affine_elements = int(affine.sum())
    return rhs


def energy_kernel(backend, operator):
    """``energy_products(xp, u, iterations=100, tolerance=None)`` of ``operator`` in C (each
    component's and element's conjugate gradients stop at their own convergence, the array
    code's all at the worst one's: the products agree to the tolerance; with ``operator.medium``
    the products in M_{eps_c W}, M_{mu_c W}, as the array code's), or None where the kernel does
    not apply."""
    lib = _library(backend, operator)
    if lib is None:
        return None
    function = lib.galerkin_energy
    function.argtypes = [_VP] * 3 + [_I64] + [_VP] * 3 + [_I64, ctypes.c_int, _F64, _VP]
    function.restype = ctypes.c_int
    dtype = np.dtype(backend.precision)
    n, q = operator.order + 1, operator.points
    E = operator.face_weights.shape[0]
    medium = getattr(operator, "medium", None)
    # w / J for every component, or the medium's w / (J eps_c), w / (J mu_c) one component apart
    weights, stride = ((operator.inverse_jacobian_weights, 0) if medium is None else
                       (np.ascontiguousarray(medium.inverse_weights), E * q ** 3))
    arrays = (operator.v, weights, operator.mass_1d, operator.inverse_mass_1d, operator.root_jacobian)
    check_kernel_arrays("galerkin_energy", dtype,
                        zip(arrays, ((q, n), (6, E, q, q, q) if stride else (E, q, q, q), (n, n), (n, n), (E, n, n, n)),
                            ("v", "inverse_jacobian_weights" if medium is None else "medium.inverse_weights",
                             "mass_1d", "inverse_mass_1d", "root_jacobian")))
    v, w, mass, inverse_mass, root = (_ptr(a) for a in arrays)

    def energy_products(xp, u, iterations: int = 100, tolerance: float | None = None):
        if tolerance is None:  # as the array code: round-off of the working precision
            tolerance = max(1e-14, 20 * float(np.finfo(u.dtype).eps))
        check_kernel_arrays("galerkin_energy", dtype, ((u, (6, E, n, n, n), "u"),))
        parts = np.zeros(6)
        if function(_ptr(u), v, w, stride, mass, inverse_mass, root, E, int(iterations), float(tolerance),
                    _ptr(parts)):
            raise MemoryError("galerkin_energy: could not allocate the per-thread element buffer")
        return parts

    energy_products.arrays = arrays
    return energy_products
