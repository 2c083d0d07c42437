"""A-conjugate projection onto previous solutions (Fischer 1998, "Projection techniques for
iterative solution of Ax = b with successive right-hand sides").

Solutions of a sequence of nearby systems (the pressure of successive time steps) lie close
to the span of the previous ones. The basis x_1..x_k is kept A-orthonormal (x_i . A x_j =
delta_ij) with A x_i stored beside it, so the best approximation in the A-norm is
x_bar = sum_i (x_i . b) x_i at k dot products and no application of A, and the solver
only has to find the correction for b - A x_bar = b - sum_i (x_i . b) A x_i.

    projection = SolutionProjection(A, dot)
    x_bar, r = projection.project(b)
    dx = pcg(A, r, ...).x
    x = projection.update(x_bar, dx)     # x_bar + dx; dx joins the basis (one A application)

When the basis is full it restarts from the latest solution alone (nekRS does the same).

Global reductions (``dots``, krylov.fused_dots): ``project`` 1 (the k products x_i . b are
independent), ``update`` 3 (the first Gram-Schmidt pass with ||v||_A before it, the second
pass, the final norm), against k and 2k + 2 with one reduction per product; the same values.

Passes over memory: given ``combine`` (the backend kernel ``linear_combination``),
project() takes the k coefficients in one reduction and forms x_bar and the residual in one
pass each, instead of k dot products and 2k axpys; the values are the same (each dot product
has the same bits; each combination sums in the same order as the axpys did).
"""

from __future__ import annotations

import math

from lobatto.solvers.krylov import euclidean_dot, fused_dots, zeros_like

#: Fischer's and nekRS's default number of stored solutions
DEFAULT_CAPACITY = 8
#: a new direction shorter than this (in the A-norm, relative to before orthogonalisation)
#: lies in the span already: it is dropped instead of being normalised into noise
DEPENDENCE_TOLERANCE = 1e-10


class SolutionProjection:
    def __init__(self, A, dot=None, capacity: int = DEFAULT_CAPACITY, dots=None, combine=None):
        if int(capacity) < 1:
            raise ValueError(f"SolutionProjection: capacity must be >= 1, got {capacity}")
        self.A = A
        self.dot = dot or euclidean_dot
        self.dots = fused_dots(self.dot, dots)
        self.combine = combine or _combine
        self.capacity = int(capacity)
        self.basis: list = []  # x_i, A-orthonormal
        self.images: list = []  # A x_i

    def __len__(self) -> int:
        return len(self.basis)

    def project(self, b):
        """(x_bar, b - A x_bar): the A-norm best approximation in the basis and its residual."""
        if not self.basis:
            return zeros_like(b), b.copy()
        c = self.dots([(x_i, b) for x_i in self.basis])
        x_bar = self.combine(_empty_like(b), c, self.basis)
        residual = self.combine(_empty_like(b), [1.0] + [-x for x in c], [b] + self.images)
        return x_bar, residual

    def update(self, x_bar, dx):
        """The solution x_bar + dx; dx (or, when the basis is full, the whole solution)
        joins the basis after A-orthogonalisation."""
        x = x_bar + dx
        if len(self.basis) >= self.capacity:
            self.basis.clear()
            self.images.clear()
            self._append(x.copy())
        else:
            self._append(dx.copy())
        return x

    def _append(self, v) -> bool:
        av = self.A(v)
        # classical Gram-Schmidt twice: two passes make it as good as modified GS, and each
        # pass's dot products are independent of one another (one reduction each; the
        # first with ||v||_A before it)
        first = self.dots([(v, av)] + [(x_i, av) for x_i in self.basis])
        norm_before = math.sqrt(max(first[0], 0.0))
        if not norm_before > 0:
            return False
        for step in range(2):
            if not self.basis:
                break
            c = first[1:] if step == 0 else self.dots([(x_i, av) for x_i in self.basis])
            minus = [1.0] + [-x for x in c]
            self.combine(v, minus, [v] + self.basis)
            self.combine(av, minus, [av] + self.images)
        norm = math.sqrt(max(self.dot(v, av), 0.0))
        if not norm > DEPENDENCE_TOLERANCE * norm_before:
            return False
        v *= 1.0 / norm
        av *= 1.0 / norm
        self.basis.append(v)
        self.images.append(av)
        return True


def _combine(out, coefficients, arrays):
    """out = sum_j c_j a_j in increasing j (the reference linear_combination)."""
    total = coefficients[0] * arrays[0]
    for c, a in zip(coefficients[1:], arrays[1:]):
        total += c * a
    out[...] = total
    return out


def _empty_like(a):
    """An uninitialised array of a's type, shape and dtype (NumPy or CuPy; no pass over memory)."""
    return type(a)(a.shape, dtype=a.dtype)
