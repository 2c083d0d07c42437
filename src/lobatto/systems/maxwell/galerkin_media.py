"""Per-point media for the Galerkin form (galerkin.py): eps, mu and sigma at its Gauss points.

With eps, mu, sigma per point (materials.py's HeterogeneousMedium, isotropic or diagonal,
anisotropy.py) the Galerkin form is, per element and component c,

    M_{eps_c W} dE_c/dt = B_s(., H)_c - M_sigma E_c + S_E,c
    M_{mu_c W}  dH_c/dt = -B_s(., E)_c + S_H,c

with the weight-adjusted masses M_{eps W}^-1 = M^-1 M_{1/(eps J)} M^-1 (Chan, Hewett and
Warburton's weight-adjusted DG for heterogeneous media, 2017: symmetric positive definite for
any positive eps, and equal to M_W^-1 / eps where eps is constant in the element) and the
Gauss-integrated loss M_sigma = V^T diag(w J sigma) V (positive semi-definite: the conductor
only removes energy). The volume term B_s does not involve the medium, so its energy identity
(galerkin.py) is unchanged; the face terms take materials.py's Riemann fluxes,

    F_E = a S_H - alpha b n x S_E,    F_H = -(c S_E + alpha d n x S_H),

a = Z+/(Z- + Z+), b = 1/(Z- + Z+), c = Z-/(Z- + Z+), d = Z- Z+/(Z- + Z+), at the Q x Q Gauss
face points instead of 1/eps, 1/mu times the uniform one (which they equal in a uniform
medium; a diagonal medium takes one impedance per face point, face_impedance). So the energy 1/2 sum_c (E_c . M_{eps_c W} E_c + H_c . M_{mu_c W} H_c) is conserved
with the central flux (a + c = 1 and both sides see the same points) and decays with upwind
and sigma >= 0.

The medium's values live at the GLL nodes (material_fields samples the case's tables there, or
averages them over sub-cells). At the Gauss points each property is their interpolant clipped
to the element's (the face's) nodal range: exact where the property is constant in the element
(regions, sampling = "element", interfaces on element faces), and never outside the values the
tables gave (an interpolant across an interface inside an element overshoots; a negative eps
would break the mass's definiteness). Both sides of a face interpolate the same nodal
coefficients (a of one side is c of the other, b and d are symmetric), so they agree.
"""

from __future__ import annotations

import numpy as np

from lobatto.machine.parallel import collective_errors
from lobatto.systems.dg import face_values
from lobatto.systems.maxwell.anisotropy import by_component


def face_impedance(eps, mu, normals, order) -> np.ndarray:
    """(E, 6, n, n) one impedance per face node, sqrt(mu_t / eps_t) of the tangential means
    eps_t = sum_i (1 - n_i^2) eps_i / 2 (sqrt(mu / eps) where isotropic): anisotropy.py's
    formula where the normal is not an axis. Its per-polarisation impedances where the normal is
    an axis are not used: interpolated to the Gauss face points they would mix E_i's and H_k's
    coefficients where aligned and unaligned nodes meet, and the central flux would no longer
    cancel the energy's face terms (measured 4e-7 of the rate on the deformed box); one
    impedance per point keeps a + c = 1 for every component. Only upwind's weights change."""
    n2 = np.asarray(normals, dtype=np.float64) ** 2
    tangential_e = 0.5 * np.sum((1.0 - n2) * face_values(np, eps, order), axis=0)
    tangential_m = 0.5 * np.sum((1.0 - n2) * face_values(np, mu, order), axis=0)
    return np.sqrt(tangential_m / tangential_e)


def clipped(interpolated: np.ndarray, nodal: np.ndarray, axes: tuple) -> np.ndarray:
    """``interpolated`` clipped, per slice, to the range of ``nodal`` over ``axes``."""
    return np.clip(interpolated, nodal.min(axis=axes, keepdims=True), nodal.max(axis=axes, keepdims=True))


class GalerkinMedium:
    """A HeterogeneousMedium at one WeightAdjustedOperator's Gauss points (host arrays, moved
    to the backend by ``to``):

    inverse_weights (6, E, Q, Q, Q): w / (J eps_c) for E_c, w / (J mu_c) for H_c (M_{eps W}^-1's middle)
    energy_weights  (6, E, Q, Q, Q): w J eps_c, w J mu_c (M_{eps W} in the Gauss basis, where Q = N + 1)
    loss_weights    (E, Q, Q, Q):    w J sigma, or None without a conductor
    flux            (4, E, 6, Q, Q): a, b, c, d at the Gauss face points
    """

    def __init__(self, operator, system):
        medium, backend = system.medium, system.backend

        def host(a):
            return np.asarray(a if isinstance(a, np.ndarray) else backend.to_host(a), dtype=np.float64)

        v = host(operator.v)  # (Q, n): GLL nodes -> Gauss points
        shape = np.shape(medium.sigma)  # (E, n, n, n)
        inverse_jw = host(operator.inverse_jacobian_weights)  # w / J
        jw = host(operator.square_energy_weights)  # w J

        def at_gauss(nodal):  # (..., E, n, n, n) -> (..., E, Q, Q, Q), clipped per element
            return clipped(np.einsum("ai,bj,ck,...ijk->...abc", v, v, v, nodal, optimize=True), nodal, (-3, -2, -1))

        eps, mu = by_component(medium.epsilon, shape), by_component(medium.mu, shape)  # (3, E, n, n, n)
        eps_g, mu_g = at_gauss(eps), at_gauss(mu)
        self.inverse_weights = np.concatenate([inverse_jw / eps_g, inverse_jw / mu_g])
        self.energy_weights = np.concatenate([jw * eps_g, jw * mu_g])
        sigma = np.asarray(medium.sigma, dtype=np.float64)
        self.loss_weights = jw * at_gauss(sigma) if np.any(sigma > 0) else None
        z_own = face_impedance(eps, mu, system.geometry.normals, system.order)  # (E, 6, n, n)
        with collective_errors(system.exchange.comm):  # (a face point with more than two sides may be on one rank only)
            z_other = medium.neighbour_impedance(system, z_own)
        total = z_own + z_other
        nodal = np.stack([z_other / total, 1.0 / total, z_own / total, z_own * z_other / total])  # (4, E, 6, n, n)
        # a + c = 1 at every node, so also after interpolation and clipping (c's range is 1 - a's)
        self.flux = clipped(np.einsum("ai,bj,...ij->...ab", v, v, nodal, optimize=True), nodal, (-2, -1))

    def to(self, backend):
        for name in ("inverse_weights", "energy_weights", "loss_weights", "flux"):
            value = getattr(self, name)
            if value is not None:  # (contiguous: the kernels index them flat)
                setattr(self, name, backend.asarray(np.ascontiguousarray(value)))
        return self


__all__ = ["GalerkinMedium", "clipped", "face_impedance"]
