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
