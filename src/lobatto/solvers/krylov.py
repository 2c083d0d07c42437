"""Krylov methods on callables: preconditioned CG, flexible CG, restarted flexible GMRES.

Each method takes ``A`` and ``M`` as callables on arrays (NumPy or CuPy: only array methods
and arithmetic are used here, so the same code runs on every backend) and ``dot``, the inner
product of the discrete space: for an assembled spectral-element vector that is
``Assembly.dot`` (reduced over ranks), so every norm below is the global one. The default
``dot`` is the plain Euclidean product of one process's arrays.

The iteration stops when ``||r|| <= max(tol * ||b||, atol)`` (norms from ``dot``), after
``maxiter`` applications of ``A`` inside the loop, or on a breakdown; the result says which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

Operator = Callable  # array -> array (a new array; the argument is not changed)


def euclidean_dot(u, v) -> float:
    """sum(u * v) over one process's arrays (no assembly weights, no reduction)."""
    return float((u.ravel() * v.ravel()).sum())


def zeros_like(a):
    z = a.copy()
    z.fill(0)
    return z


def _copy(r):
    return r.copy()


@dataclass
class SolveResult:
    """x: the solution; iterations: applications of A in the loop; residuals[k]: ||r|| after
    k iterations (residuals[0] is the initial one; GMRES: the least-squares estimate,
    replaced by the true residual at each restart and at the end); converged; reason: why
    the iteration stopped, in words; reference_norm: ||b||, the scale of ``tol``."""

    x: object
    iterations: int
    residuals: list = field(default_factory=list)
    converged: bool = False
    reason: str = ""
    reference_norm: float = 0.0

    @property
    def relative_residual(self) -> float:
        last = self.residuals[-1] if self.residuals else math.nan
        return last / self.reference_norm if self.reference_norm > 0 else last


class _Stop:
    """Shared bookkeeping: target, history, the words for each way of stopping."""

    def __init__(self, name, b, dot, tol, atol, maxiter):
        if not (tol >= 0 and atol >= 0):
            raise ValueError(f"{name}: tol and atol must be >= 0, got tol={tol}, atol={atol}")
        if int(maxiter) < 0:
            raise ValueError(f"{name}: maxiter must be >= 0, got {maxiter}")
        self.name = name
        self.bnorm = math.sqrt(dot(b, b))
        self.target = max(tol * self.bnorm, atol)
        self.tol, self.atol, self.maxiter = tol, atol, int(maxiter)
        self.residuals: list[float] = []

    def record(self, rnorm: float) -> str | None:
        """Append ||r||; a reason to stop (converged or not finite) or None."""
        self.residuals.append(rnorm)
        if not math.isfinite(rnorm):
            return f"{self.name}: the residual is not finite ({rnorm}) after {len(self.residuals) - 1} iterations"
        if rnorm <= self.target:
            return "converged"
        return None

    def result(self, x, iterations, reason=None) -> SolveResult:
        if reason is None:
            rel = self.residuals[-1] / self.bnorm if self.bnorm > 0 else self.residuals[-1]
            reason = (f"{self.name}: not converged in {self.maxiter} iterations: relative residual {rel:.3e}"
                      f" (target {self.target / self.bnorm if self.bnorm > 0 else self.target:.3e})")
        converged = reason == "converged"
        if converged:
            reason = f"{self.name}: converged in {iterations} iterations"
        return SolveResult(x, iterations, self.residuals, converged, reason, self.bnorm)


def _start(A, b, x0):
    if x0 is None:
        return zeros_like(b), b.copy()
    x = x0.copy()
    return x, b - A(x)


def fused_dots(dot, dots=None):
    """``dots(pairs)`` -> [dot(u, v) for (u, v) in pairs], with one global reduction where
    the inner product has a fused form: ``dots`` itself when given, else the ``dots`` of the
    object whose bound ``dot`` method was passed (``Assembly.dot``), else one ``dot`` per
    pair. The values are those ``dot`` gives (``Assembly.dots``), so fusing changes the
    number of reductions, not the iterates."""
    if dots is not None:
        return dots
    owner = getattr(dot, "__self__", None)
    fused = getattr(owner, "dots", None) if getattr(dot, "__name__", "") == "dot" else None
    if callable(fused):
        return fused
    return lambda pairs: [dot(u, v) for u, v in pairs]


def pcg(A: Operator, b, x0=None, M: Operator | None = None, dot=None, tol: float = 1e-8,
        maxiter: int = 1000, atol: float = 0.0, dots=None, fused: bool = True) -> SolveResult:
    """Preconditioned conjugate gradients for symmetric positive definite A and M.

    Global reductions (``dot`` over ranks): with ``fused`` (the default) r.r and r.Mr are one
    reduction (``fused_dots``): 1 at the start and 2 per iteration (p.Ap; r.r with r.Mr),
    against 2 and 3 unfused, for the same iterates bit for bit; the price is M applied to the
    final residual, whose r.r then stops the iteration: nothing for a Jacobi M, one cycle for
    a multigrid M (pass ``fused=False`` there)."""
    dot = dot or euclidean_dot
    dots = fused_dots(dot, dots)
    M = M or _copy
    stop = _Stop("pcg", b, dot, tol, atol, maxiter)
    x, r = _start(A, b, x0)
    if fused:
        z = M(r)
        rr, rz = dots([(r, r), (r, z)])
        why = stop.record(math.sqrt(rr))
        if why is not None:
            return stop.result(x, 0, why)
    else:
        why = stop.record(math.sqrt(dot(r, r)))
        if why is not None:
            return stop.result(x, 0, why)
        z = M(r)
        rz = dot(r, z)
    p = z
    for k in range(1, stop.maxiter + 1):
        w = A(p)
        pw = dot(p, w)
        if not pw > 0:
            return stop.result(x, k - 1, f"pcg: breakdown at iteration {k}: p.Ap = {pw:.3e} (A is not positive "
                                         "definite on this space)")
        alpha = rz / pw
        x += alpha * p
        r -= alpha * w
        if fused:
            z = M(r)
            rr, rz_new = dots([(r, r), (r, z)])
            why = stop.record(math.sqrt(rr))
        else:
            why = stop.record(math.sqrt(dot(r, r)))
        if why is not None:
            return stop.result(x, k, why)
        if not fused:
            z = M(r)
            rz_new = dot(r, z)
        if not rz_new > 0:
            return stop.result(x, k, f"pcg: breakdown at iteration {k}: r.Mr = {rz_new:.3e} (the preconditioner "
                                     "is not positive definite)")
        p = p * (rz_new / rz)  # a new array: p may be the first z, which M may own
        p += z
        rz = rz_new
    return stop.result(x, stop.maxiter)


def flexible_cg(A: Operator, b, x0=None, M: Operator | None = None, dot=None, tol: float = 1e-8,
                maxiter: int = 1000, atol: float = 0.0, dots=None) -> SolveResult:
    """Flexible CG (Polak-Ribiere beta, Notay's FCG(1)): M may change from one application to
    the next (an inner iteration, a multigrid cycle with an iterative coarse solve, float32
    rounding). With a fixed SPD M it is PCG in exact arithmetic, at one more dot product.

    Global reductions: 2 at the start (r.r, then r.Mr) and 3 per iteration: p.Ap; r.r (the
    stopping test, before M is applied: M is a multigrid cycle, too costly to apply to a
    residual that has converged); z.r_old with z.r_new, fused (``fused_dots``; 4 per
    iteration before, for the same iterates bit for bit)."""
    dot = dot or euclidean_dot
    dots = fused_dots(dot, dots)
    M = M or _copy
    stop = _Stop("flexible_cg", b, dot, tol, atol, maxiter)
    x, r = _start(A, b, x0)
    why = stop.record(math.sqrt(dot(r, r)))
    if why is not None:
        return stop.result(x, 0, why)
    z = M(r)
    rz = dot(r, z)
    p = z.copy()
    for k in range(1, stop.maxiter + 1):
        w = A(p)
        pw = dot(p, w)
        if not pw > 0:
            return stop.result(x, k - 1, f"flexible_cg: breakdown at iteration {k}: p.Ap = {pw:.3e} (A is not "
                                         "positive definite on this space)")
        alpha = rz / pw
        x += alpha * p
        r_new = r - alpha * w
        why = stop.record(math.sqrt(dot(r_new, r_new)))
        if why is not None:
            return stop.result(x, k, why)
        z = M(r_new)
        z_dot_old_r, rz_new = dots([(z, r), (z, r_new)])
        if not rz_new > 0:
            return stop.result(x, k, f"flexible_cg: breakdown at iteration {k}: r.Mr = {rz_new:.3e} (the "
                                     "preconditioner is not positive definite)")
        p *= (rz_new - z_dot_old_r) / rz
        p += z
        r, rz = r_new, rz_new
    return stop.result(x, stop.maxiter)


def fgmres(A: Operator, b, x0=None, M: Operator | None = None, dot=None, tol: float = 1e-8,
           maxiter: int = 1000, atol: float = 0.0, restart: int = 30, dots=None) -> SolveResult:
    """Restarted flexible GMRES (Saad 1993): right preconditioning with the preconditioned
    vectors kept, so M may vary; for any nonsingular A. Arnoldi by modified Gram-Schmidt,
    the small least-squares problem by Givens rotations on the host. Modified Gram-Schmidt
    needs its j + 2 reductions at step j one after the other: ``dots`` is accepted (the same
    call as the CG methods) and not used."""
    if int(restart) < 1:
        raise ValueError(f"fgmres: restart must be >= 1, got {restart}")
    dot = dot or euclidean_dot
    M = M or _copy
    m = int(restart)
    stop = _Stop("fgmres", b, dot, tol, atol, maxiter)
    x, r = _start(A, b, x0)
    beta = math.sqrt(dot(r, r))
    why = stop.record(beta)
    total = 0
    while why is None and total < stop.maxiter:
        basis = [r * (1.0 / beta)]
        directions = []
        hessenberg = np.zeros((m + 1, m))
        cos, sin = np.zeros(m), np.zeros(m)
        g = np.zeros(m + 1)
        g[0] = beta
        steps = 0
        for j in range(min(m, stop.maxiter - total)):
            z = M(basis[j])
            w = A(z)
            directions.append(z)
            for i in range(j + 1):
                h = dot(w, basis[i])
                hessenberg[i, j] = h
                w -= h * basis[i]
            h_next = math.sqrt(dot(w, w))
            hessenberg[j + 1, j] = h_next
            for i in range(j):  # earlier rotations on the new column
                a, c = hessenberg[i, j], hessenberg[i + 1, j]
                hessenberg[i, j], hessenberg[i + 1, j] = cos[i] * a + sin[i] * c, -sin[i] * a + cos[i] * c
            d = math.hypot(hessenberg[j, j], h_next)
            steps, total = j + 1, total + 1
            if d == 0.0 or not math.isfinite(d):
                why = f"fgmres: breakdown at iteration {total}: the Arnoldi column is {d} (A or M is singular)"
                stop.residuals.append(abs(g[j]))
                steps -= 1
                break
            cos[j], sin[j] = hessenberg[j, j] / d, h_next / d
            hessenberg[j, j], hessenberg[j + 1, j] = d, 0.0
            g[j + 1], g[j] = -sin[j] * g[j], cos[j] * g[j]
            estimate = abs(g[j + 1])
            stop.residuals.append(estimate)
            if estimate <= stop.target or h_next == 0.0:  # converged, or the exact solution is in the space
                break
            basis.append(w * (1.0 / h_next))
        if steps:
            y = np.linalg.solve(np.triu(hessenberg[:steps, :steps]), g[:steps])
            for i in range(steps):
                x += float(y[i]) * directions[i]
        r = b - A(x)
        beta = math.sqrt(dot(r, r))
        stop.residuals.pop()  # the last estimate gives way to the true residual
        why = stop.record(beta) or why
    return stop.result(x, total, why)
