"""The constant null space of a singular elliptic operator: h2 = 0 and no Dirichlet point
(the pressure of an enclosed or periodic flow, a pure-Neumann diffusion problem).

There the assembled operator A (symmetric in the assembled Euclidean product, ``Level.dot``)
maps the constant vector 1 to zero, so A x = b has a solution only if 1.b = 0 (the sum of b
over distinct points), and then a whole line of them, x + c 1. Two choices make the answer
unique and the iteration well posed:

- ``consistent(b) = b - (1.b / 1.m) m``, m the assembled mass (the diagonal B summed over
  each point's copies, m = B 1). Any b - c w with 1.w != 0 satisfies 1.b = 0; w = m is the
  smallest change of b in the dual L2 norm (b^T B^-1 b): it is the Galerkin right-hand side
  of f - mean(f), a constant taken off the source, whatever the point spacing. (w = 1, the
  plain Euclidean projection, would take off a source that varies like 1 / B from point to
  point.) The inconsistency of a discretised b is small (quadrature of a source whose
  integral is zero), so the two differ by that much; the solution's accuracy is the same.
- ``remove_mean(x) = x - (m.x / 1.m)``: integral of x dV = 0, GLL quadrature, a property
  of the field that does not depend on the points' distribution (the plain point average
  does: GLL points cluster at element boundaries).

Neither choice changes the Krylov iteration: A 1 = 0, so a multiple of 1 in the
preconditioner's output moves only x's component along 1, and every residual stays
orthogonal to 1 (1.r = 1.b - (A 1).x = 0), where r.(M r' - c 1) = r.M r'. Removing the mean
from the preconditioner's output keeps x from drifting along 1 by round-off; removing it
from the solution fixes the answer.

Each of the two costs one assembled reduction (``Level.dot``, over every rank).
"""

from __future__ import annotations

import numpy as np

from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce


def check_singular(level, who: str) -> None:
    """InputError unless ``level``'s operator has the constants as null space: h2 = 0 and no
    Dirichlet point on any rank (collective)."""
    h2 = level.operator.h2
    comm = level.assembly.comm
    reaction = allreduce(comm, int(np.any(np.asarray(h2) != 0)), "max")
    fixed = allreduce(comm, int(level.assembly.backend.to_host((level.mask == 0).any())), "max")
    if reaction or fixed:
        why = "h2 is not zero" if reaction else "some points are Dirichlet points"
        raise InputError(f"{who}: null_space=True is for an operator whose null space is the constants (h2 = 0 and "
                         f"no Dirichlet point), but {why}: the problem is not singular; use null_space=False")


class ConstantNullSpace:
    """``consistent(b)`` and ``remove_mean(x)`` on the space of ``level`` (a
    ``solvers.multigrid.Level``), in its dtype; both return new arrays."""

    def __init__(self, level):
        self.level = level
        self.ones = level.mask * 0 + 1
        self.mass = level.assembly.dssum(level.operator.mass.astype(level.dtype, copy=True))
        self.volume = level.dot(self.mass, self.ones)  # 1.m = sum of the element masses
        if not self.volume > 0:
            raise InputError(f"ConstantNullSpace: the assembled mass sums to {self.volume}; expected a positive volume")

    def total(self, b) -> float:
        """1.b: the sum of b over distinct points, over every rank."""
        return self.level.dot(b, self.ones)

    def consistent(self, b):
        """b - (1.b / 1.m) m: orthogonal to the constants."""
        return b - (self.total(b) / self.volume) * self.mass

    def mean(self, x) -> float:
        """The mass-weighted mean m.x / 1.m (the integral of x over the volume)."""
        return self.level.dot(self.mass, x) / self.volume

    def remove_mean(self, x):
        """x - mean(x): zero integral."""
        return x - self.mean(x)
