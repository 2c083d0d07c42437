"""Physics-free operators of continuous Galerkin (layer 4): numbering, assembly, element operators.

numbering      continuous_ids: one global id per distinct GLL point (any conforming hex mesh, any rank count)
assembly       Assembly: dssum (Q Q^T through comm.GatherScatter), multiplicity, Dirichlet mask, dot, norm
helmholtz      HelmholtzOperator: h1 K u + h2 B u per element, exact diagonal (reference, C, CUDA kernels)
interpolation  GLL to GLL / Gauss matrices, tensor-product interpolate, prolong / restrict
differential   gradient, curl, divergence, weak divergence, mass; fused forms for Navier–Stokes
combination    backend kernel linear_combination: out = sum_j c_j a_j in one pass
advection      Advection: dealiased (over-integrated) convective term, CFL number
filter         HighPassFilter: nekRS's HPF-RT relaxation weight (u - F u)
fdm            backend kernel fdm_apply: fast-diagonalization solve of separable element operators

See docs/architecture.md ("Operators").
"""

from lobatto.operators import combination  # noqa: F401  (registers the linear_combination kernels)
from lobatto.operators.advection import Advection
from lobatto.operators.assembly import Assembly, dirichlet_faces
from lobatto.operators.differential import BackendGeometry, curl, divergence, gradient, mass, weak_divergence
from lobatto.operators.filter import HighPassFilter
from lobatto.operators.helmholtz import FACTOR_NAMES, HelmholtzOperator, geometric_factors
from lobatto.operators.interpolation import (
    GridTransfer,
    gauss_points,
    gll_to_gauss,
    gll_to_gll,
    interpolate,
    interpolation_matrix,
    prolong,
    restrict,
)
from lobatto.operators.numbering import continuous_ids

__all__ = [
    "FACTOR_NAMES",
    "Advection",
    "Assembly",
    "BackendGeometry",
    "GridTransfer",
    "HelmholtzOperator",
    "HighPassFilter",
    "continuous_ids",
    "curl",
    "dirichlet_faces",
    "divergence",
    "gauss_points",
    "geometric_factors",
    "gll_to_gauss",
    "gll_to_gll",
    "gradient",
    "interpolate",
    "interpolation_matrix",
    "mass",
    "prolong",
    "restrict",
    "weak_divergence",
]
