"""Jacobi (diagonal) preconditioning: M r = r / diag(A) on the unmasked points.

For a spectral-element operator the diagonal is computed exactly: the element operator's own
diagonal (``HelmholtzOperator.diagonal_local``), summed over coinciding points by the
gather-scatter (``Assembly.dssum``): no probing with unit vectors.
"""

from __future__ import annotations

from lobatto.errors import SolverError


class Jacobi:
    """``M(r) = inverse_diagonal * r``; ``mask`` (1 free, 0 Dirichlet) zeroes fixed points.

    The diagonal must be positive on the free points (A SPD there): a SolverError says how
    many are not, since a zero or negative entry there means the operator is not SPD."""

    def __init__(self, diagonal, mask=None):
        free = diagonal > 0 if mask is None else (diagonal > 0) | (mask == 0)
        bad = int((~free).sum())
        if bad:
            raise SolverError(f"Jacobi: the diagonal is zero, negative or not finite at {bad} free points "
                              "(the operator is not symmetric positive definite there)")
        safe = diagonal + (diagonal <= 0)  # 1 where a masked point has no positive diagonal
        self.inverse_diagonal = 1.0 / safe if mask is None else mask / safe
        self.diagonal = diagonal

    @classmethod
    def from_operator(cls, operator, assembly) -> "Jacobi":
        """The exact assembled diagonal of ``operator`` (a HelmholtzOperator) on ``assembly``."""
        diagonal = assembly.dssum(operator.diagonal_local())
        return cls(diagonal, assembly.mask.astype(diagonal.dtype))

    def __call__(self, r):
        return self.inverse_diagonal * r
