"""Chebyshev smoothing of A x = b with a preconditioned operator M A, and the estimate of
M A's largest eigenvalue that places its interval.

M is a symmetric positive definite preconditioner: the inverse diagonal D^-1 (Jacobi; pass
the array) or any linear map ``z = M(r)`` (e.g. additive Schwarz, schwarz.py; pass the
callable). The smoother damps the part of the error in the eigenvalue interval [lmin, lmax]
of M A by the scaled Chebyshev polynomial of the given degree: with a zero initial guess it
is the fixed linear map x = p(M A) M b, symmetric whenever A and M are, so a V-cycle that
smooths with it before and after the coarse correction is a symmetric preconditioner. The
interval is [0.1, 1.1] times the estimated largest eigenvalue, nekRS's default
(src/elliptic/MG/ellipticMultiGridLevelSetup.cpp; nekRS estimates it by Arnoldi, here by
CG-Lanczos since M A is self-adjoint in the M^-1 inner product).
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.solvers.krylov import euclidean_dot

#: the smoothing interval, as multiples of the estimated largest eigenvalue of D^-1 A
LOWER_FACTOR, UPPER_FACTOR = 0.1, 1.1


def as_preconditioner(preconditioner):
    """``z = M(r)``: a callable as it is; an array d as the map r -> d * r (an inverse diagonal)."""
    if callable(preconditioner):
        return preconditioner
    inverse_diagonal = preconditioner
    return lambda r: inverse_diagonal * r


def estimate_max_eigenvalue(A, preconditioner, start, dot=None, steps: int = 20) -> float:
    """Largest eigenvalue of M A by ``steps`` M-preconditioned CG steps from the right-hand
    side ``start``: CG's coefficients give the Lanczos tridiagonal matrix T, whose largest
    eigenvalue approaches M A's from below, fast at the end of the spectrum. ``preconditioner``:
    an inverse diagonal (array) or a symmetric positive definite map ``M(r)`` (callable).

    ``start`` should have a part along the top eigenvector (any rough vector has); for the
    same estimate on every rank count it must not depend on the partition (build it from
    global point ids or coordinates, not from a per-rank random generator)."""
    dot = dot or euclidean_dot
    M = as_preconditioner(preconditioner)
    r = start.copy()
    z = M(r)
    rz = dot(r, z)
    if not rz > 0:
        raise ValueError(f"estimate_max_eigenvalue: start.M start = {rz}; expected a nonzero start vector")
    p = z.copy()
    alphas, betas = [], []
    for _ in range(int(steps)):
        w = A(p)
        pw = dot(p, w)
        if not pw > 0:
            break
        alpha = rz / pw
        r -= alpha * w
        z = M(r)
        rz_new = dot(r, z)
        alphas.append(alpha)
        if not rz_new > 1e-28 * rz:  # the Krylov space is invariant: T already holds its eigenvalues
            break
        betas.append(rz_new / rz)
        p *= betas[-1]
        p += z
        rz = rz_new
    if not alphas:
        raise ValueError("estimate_max_eigenvalue: A is not positive definite along the start vector")
    k = len(alphas)
    t = np.zeros((k, k))
    for i in range(k):
        t[i, i] = 1.0 / alphas[i] + (betas[i - 1] / alphas[i - 1] if i > 0 else 0.0)
        if i + 1 < k:
            t[i, i + 1] = t[i + 1, i] = math.sqrt(betas[i]) / alphas[i]
    return float(np.linalg.eigvalsh(t)[-1])


class Chebyshev:
    """Chebyshev iteration of the given ``degree`` on M A x = M b over [lmin, lmax].

    ``preconditioner``: the inverse diagonal D^-1 (an array: Chebyshev-Jacobi) or a callable
    ``M(r)``. ``smoother(b)`` starts from zero (degree - 1 applications of A and degree of
    M); ``smoother(b, x)`` from x, returning a new array (degree applications of each). The
    error in each eigenvector of M A with eigenvalue lam is multiplied by
    T_k((theta - lam) / delta) / T_k(theta / delta), theta and delta the centre and
    half-width of the interval."""

    def __init__(self, A, preconditioner, lmax: float, lmin: float | None = None, degree: int = 2):
        lmin = LOWER_FACTOR / UPPER_FACTOR * lmax if lmin is None else lmin
        if not 0 < lmin < lmax:
            raise ValueError(f"Chebyshev: need 0 < lmin < lmax, got lmin={lmin}, lmax={lmax}")
        if int(degree) < 1:
            raise ValueError(f"Chebyshev: degree must be >= 1, got {degree}")
        self.A, self.preconditioner = A, preconditioner
        self.M = as_preconditioner(preconditioner)
        self.inverse_diagonal = None if callable(preconditioner) else preconditioner
        self.lmin, self.lmax, self.degree = float(lmin), float(lmax), int(degree)

    @classmethod
    def with_estimate(cls, A, preconditioner, start, dot=None, degree: int = 2, steps: int = 20) -> "Chebyshev":
        """Interval [0.1, 1.1] x the largest eigenvalue of M A estimated from ``start``."""
        lam = estimate_max_eigenvalue(A, preconditioner, start, dot, steps)
        smoother = cls(A, preconditioner, UPPER_FACTOR * lam, LOWER_FACTOR * lam, degree)
        smoother.estimated_max_eigenvalue = lam
        return smoother

    def __call__(self, b, x=None):
        theta = 0.5 * (self.lmax + self.lmin)
        delta = 0.5 * (self.lmax - self.lmin)
        sigma = theta / delta
        rho = 1.0 / sigma
        if x is None:
            r = self.M(b)
            x = r * (1.0 / theta)
            d = x.copy()
        else:
            r = self.M(b - self.A(x))
            d = r * (1.0 / theta)
            x = x + d
        for _ in range(self.degree - 1):
            r -= self.M(self.A(d))
            rho_next = 1.0 / (2.0 * sigma - rho)
            d *= rho_next * rho
            d += (2.0 * rho_next / delta) * r
            rho = rho_next
            x += d
        return x
