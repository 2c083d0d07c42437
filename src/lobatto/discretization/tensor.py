"""Tensor-product derivatives on the reference element (seed paper eqs. (13)-(15)).

Arrays end with the element's (k, j, i) axes, i along r. `xp` is the array namespace
(numpy or cupy), so the same code is the reference on both.
"""

from __future__ import annotations


def derivative_r(xp, u, d):
    """u_r[..., k, j, i] = sum_l D[i, l] u[..., k, j, l]."""
    n = d.shape[0]
    return (u.reshape(-1, n) @ d.T).reshape(u.shape)


def derivative_s(xp, u, d):
    """u_s[..., k, j, i] = sum_l D[j, l] u[..., k, l, i]."""
    n = d.shape[0]
    return xp.matmul(d, u.reshape(-1, n, n)).reshape(u.shape)


def derivative_t(xp, u, d):
    """u_t[..., k, j, i] = sum_l D[k, l] u[..., l, j, i]."""
    n = d.shape[0]
    return xp.matmul(d, u.reshape(-1, n, n * n)).reshape(u.shape)


def reference_gradient(xp, u, d):
    """Stack (u_r, u_s, u_t) along a new leading axis."""
    return xp.stack([derivative_r(xp, u, d), derivative_s(xp, u, d), derivative_t(xp, u, d)])


def physical_gradient(xp, u, d, metrics):
    """(du/dx, du/dy, du/dz) by the chain rule, metrics[b, a] = d r_b / d x_a."""
    ref = reference_gradient(xp, u, d)
    return xp.einsum("ba...,b...->a...", metrics, ref)


def _cross(xp, a, b):
    return xp.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


_DERIVATIVES = (derivative_r, derivative_s, derivative_t)


def chain_rule_curl(xp, f, d, metrics):
    """curl f by the chain rule alone, sum_b a^b x d_b f."""
    out = 0
    for b, derivative in enumerate(_DERIVATIVES):
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
    for b, derivative in enumerate(_DERIVATIVES):
        a_b = metrics[b]
        out = out + _cross(xp, a_b, derivative(xp, f, d)) + derivative(xp, _cross(xp, jacobian * a_b, f), d) / jacobian
    return 0.5 * out


def split_gradient(xp, p, d, metrics, jacobian):
    """grad p in split form, 1/2 sum_b (a^b d_b p + (1/J) d_b (J a^b p)): with split_divergence
    the pair whose volume terms cancel in the discrete energy on curved elements (split_curl)."""
    out = 0
    for b, derivative in enumerate(_DERIVATIVES):
        a_b = metrics[b]
        out = out + a_b * derivative(xp, p, d) + derivative(xp, jacobian * a_b * p, d) / jacobian
    return 0.5 * out


def split_divergence(xp, v, d, metrics, jacobian):
    """div v in split form, 1/2 sum_b (a^b . d_b v + (1/J) d_b (J a^b . v))."""
    out = 0
    for b, derivative in enumerate(_DERIVATIVES):
        a_b = metrics[b]
        out = out + xp.sum(a_b * derivative(xp, v, d), axis=0) + derivative(xp, jacobian * xp.sum(a_b * v, axis=0), d) / jacobian
    return 0.5 * out
