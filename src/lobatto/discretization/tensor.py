"""Tensor-product derivatives on the reference element (seed paper eqs. (13)-(15)).

Arrays end with the element's (k, j, i) axes, i along r. On a 2-D mesh the k axis has one
point (..., 1, n, n): there is no t derivative (``dimension_of``), and the sums over the
reference axes run over r and s only. `xp` is the array namespace
(numpy or cupy), so the same code is the reference on both. On CuPy the contractions run in
``contract.cu`` (each value summed in a fixed order) rather than through cuBLAS, whose
kernel choice, and rounding, depends on the number of elements: a rank's share of the mesh
then gives the whole mesh's bits (docs/parallel.md, reproducible sums).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

CONTRACT_SOURCE = Path(__file__).resolve().parent / "contract.cu"
_KERNELS: dict = {}


def along(xp, u, d, inner: int):
    """out[a, j, c] = sum_l d[j, l] u[a, l, c], u viewed as (A, n, inner), d (m, n): the
    (A, m, inner) result (a new array)."""
    m, n = d.shape
    if xp is np or xp.__name__ != "cupy":
        if inner == 1:
            return (u.reshape(-1, n) @ d.T).reshape(-1, m, 1)
        return xp.matmul(d, u.reshape(-1, n, inner))
    x = xp.ascontiguousarray(u)
    dd = xp.ascontiguousarray(d, dtype=x.dtype)
    outer = x.size // (n * inner) if n * inner else 0
    out = xp.empty((outer, m, inner), dtype=x.dtype)
    total = out.size
    if total:
        _along_kernel(x.dtype)((min((total + 255) // 256, 65536),), (256,),
                               (x, dd, out, np.int64(outer), np.int32(m), np.int32(n), np.int64(inner)))
    return out


def _along_kernel(dtype):
    import cupy

    from lobatto.jit.nvrtc import ctype, get_module

    key = (np.dtype(dtype).str, cupy.cuda.runtime.getDevice())
    fn = _KERNELS.get(key)
    if fn is None:
        names = ("lobatto::along_axis<double>", "lobatto::along_axis<float>")
        fn = _KERNELS[key] = get_module(CONTRACT_SOURCE, names).get_function(f"lobatto::along_axis<{ctype(dtype)}>")
    return fn


def derivative_r(xp, u, d):
    """u_r[..., k, j, i] = sum_l D[i, l] u[..., k, j, l]."""
    return along(xp, u, d, 1).reshape(u.shape)


def derivative_s(xp, u, d):
    """u_s[..., k, j, i] = sum_l D[j, l] u[..., k, l, i]."""
    return along(xp, u, d, d.shape[0]).reshape(u.shape)


def derivative_t(xp, u, d):
    """u_t[..., k, j, i] = sum_l D[k, l] u[..., l, j, i]."""
    if len(u.shape) < 3 or u.shape[-3] != d.shape[1]:
        # the reshape below would succeed on a thin (..., 1, n, n) array whenever the leading
        # sizes happen to divide, and return numbers that mean nothing
        raise ValueError(f"derivative_t: the array's k axis has {u.shape[-3] if len(u.shape) >= 3 else 'no'} "
                         f"points, the derivative matrix takes {d.shape[1]} (a 2-D field has no t derivative)")
    return along(xp, u, d, d.shape[0] ** 2).reshape(u.shape)


def dimension_of(shape) -> int:
    """2 for a (..., 1, n, n) array of a 2-D mesh, else 3 (n >= 2, so a length-1 k axis is thin)."""
    return 2 if shape[-3] == 1 else 3


_DERIVATIVES = (derivative_r, derivative_s, derivative_t)


def _derivatives(u) -> tuple:
    """The reference derivatives that apply to the field u (r, s and, in 3-D, t)."""
    return _DERIVATIVES[:dimension_of(u.shape)]


def reference_gradient(xp, u, d):
    """Stack (u_r, u_s, u_t) along a new leading axis ((u_r, u_s) in 2-D)."""
    return xp.stack([derivative(xp, u, d) for derivative in _derivatives(u)])


def physical_gradient(xp, u, d, metrics):
    """(du/dx, du/dy, du/dz) by the chain rule, metrics[b, a] = d r_b / d x_a (in 2-D the z
    component is 0: metrics[0..1, 2] are 0)."""
    ref = reference_gradient(xp, u, d)
    if len(ref) == 2:
        return xp.stack([metrics[0, a] * ref[0] + metrics[1, a] * ref[1] for a in range(3)])
    if xp is np or xp.__name__ != "cupy":
        return xp.einsum("ba...,b...->a...", metrics, ref)
    # elementwise on CuPy (its einsum may go through cuBLAS, sized by the element count)
    return xp.stack([metrics[0, a] * ref[0] + metrics[1, a] * ref[1] + metrics[2, a] * ref[2]
                     for a in range(3)])


def _cross(xp, a, b):
    return xp.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def chain_rule_curl(xp, f, d, metrics):
    """curl f by the chain rule alone, sum_b a^b x d_b f."""
    out = 0
    for b, derivative in enumerate(_derivatives(f)):
        out = out + _cross(xp, metrics[b], derivative(xp, f, d))
    return out


def split_curl(xp, f, d, metrics, jacobian):
    """curl f of the 3-vector field f in split form, metrics[b, a] = d r_b / d x_a, J = det(dx/dr):

        curl f = 1/2 sum_b ( a^b x d_b f  +  (1/J) d_b (J a^b x f) ),   a^b = grad r_b.

    The two halves are the chain-rule and the conservative forms of the same curl. With GLL
    collocation (a summation-by-parts derivative) the split form's volume terms cancel in the
    discrete energy, leaving face terms only, whatever the metrics do inside a curved element;
    the chain-rule form alone leaves aliasing terms that can feed energy into the field. On an
    affine element J a^b is constant and both halves are the chain rule.
    """
    out = 0
    for b, derivative in enumerate(_derivatives(f)):
        a_b = metrics[b]
        out = out + _cross(xp, a_b, derivative(xp, f, d)) + derivative(xp, _cross(xp, jacobian * a_b, f), d) / jacobian
    return 0.5 * out


def split_gradient(xp, p, d, metrics, jacobian):
    """grad p in split form, 1/2 sum_b (a^b d_b p + (1/J) d_b (J a^b p)): with split_divergence
    the pair whose volume terms cancel in the discrete energy on curved elements (split_curl)."""
    out = 0
    for b, derivative in enumerate(_derivatives(p)):
        a_b = metrics[b]
        out = out + a_b * derivative(xp, p, d) + derivative(xp, jacobian * a_b * p, d) / jacobian
    return 0.5 * out


def split_divergence(xp, v, d, metrics, jacobian):
    """div v in split form, 1/2 sum_b (a^b . d_b v + (1/J) d_b (J a^b . v))."""
    out = 0
    for b, derivative in enumerate(_derivatives(v)):
        a_b = metrics[b]
        out = out + xp.sum(a_b * derivative(xp, v, d), axis=0) + derivative(xp, jacobian * xp.sum(a_b * v, axis=0), d) / jacobian
    return 0.5 * out
