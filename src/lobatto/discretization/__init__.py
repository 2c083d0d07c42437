"""Discretisation on the reference element: GLL points, weights and operators."""

from lobatto.discretization.gll import (
    MAX_ORDER,
    derivative_matrix,
    gll_points,
    gll_weights,
    interpolation_matrix,
    legendre,
)

__all__ = ["MAX_ORDER", "derivative_matrix", "gll_points", "gll_weights", "interpolation_matrix", "legendre"]
