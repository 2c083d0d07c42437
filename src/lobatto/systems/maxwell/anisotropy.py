"""Diagonal anisotropic media: eps = diag(ex, ey, ez), mu = diag(mx, my, mz) at every point.

    e_i dE_i/dt = (curl H)_i - sigma E_i + lift * F_E,i      m_i dH_i/dt = -(curl E)_i + lift * F_H,i

The face flux (materials.py's Riemann solver, per polarisation). At a face whose normal n is
a coordinate axis d, a wave along n splits into two polarisations that do not couple: E along
axis i (not d) with H along k = the third axis, travelling at 1/sqrt(e_i m_k) with impedance
Z = sqrt(m_k / e_i) (the 2 x 2 system e_i dE_i/dt = -+ d_n H_k, m_k dH_k/dt = -+ d_n E_i). The
exact Riemann solution is then materials.py's per component, each with its pair's impedance:

    E*_i = (Y-_i E-_i + Y+_i E+_i - (n x [H])_i) / (Y-_i + Y+_i),   Z_E,i = sqrt(m_k / e_i)
    H*_k = (Z-_k H-_k + Z+_k H+_k + (n x [E])_k) / (Z-_k + Z+_k),   Z_H,k = sqrt(m_k / e_i)

and F_E,i, F_H,k are materials.py's formulas with these (the normal components' rows vanish).
Each pair (E_i, H_k) keeps complementary weights in E* and H*, so the central flux conserves
the discrete energy sum M (e_i E_i^2 + m_i H_i^2) / 2 as in the isotropic case, and the upwind
flux only removes energy.

At a face point whose normal is not a coordinate axis (curved elements, a rotated box) the
polarisations couple and the exact solver needs the full tangential tensor: there we take one
impedance for all components (the approximation), Z = sqrt(m_t / e_t) with the tangential
means e_t = sum_i (1 - n_i^2) e_i / 2 (and m_t): the isotropic formula, so energy is still
conserved (central) or dissipated (upwind); only the upwind dissipation's weights are
approximate. A face point counts as axis-aligned when max n_i^2 > 1 - 1e-9, judged the same
on both sides (n- = -n+).

Kernels read (3, ...) arrays: 1/e_i, 1/m_i, sigma/e_i per component and per component i the
four coefficients a, b (for E_i), c, d (for H_i) at the face points, (3, 4, E, 6, n, n); the
isotropic path's (E, ...) arrays are these with component stride 0.
"""

from __future__ import annotations

import numpy as np

from lobatto.machine.parallel import allreduce, collective_errors
from lobatto.systems.dg import face_values
from lobatto.systems.maxwell.terms_cpu import array_terms_asked

ALIGNED = 1.0 - 1e-9  # n_d^2 above this: the face is normal to axis d


def is_anisotropic(fields) -> bool:
    """True when eps or mu has a component axis (3, E, n, n, n)."""
    return any(np.ndim(fields[k]) == 5 for k in ("epsilon", "mu"))


def by_component(value, shape) -> np.ndarray:
    """(3,) + shape, a new array: a per-point array given with or without its component axis."""
    value = np.asarray(value, dtype=np.float64)
    if value.ndim == len(shape) + 1:
        return np.array(np.broadcast_to(value, (3,) + shape))  # a copy (writable)
    return np.broadcast_to(value, shape)[None].repeat(3, axis=0)


def wave_speed(eps, mu) -> float:
    """The fastest of the pairs' speeds 1/sqrt(e_i m_k), i != k, on this rank."""
    if eps.size == 0:
        return 0.0
    return max(float(np.max(1.0 / np.sqrt(eps[i] * mu[k]))) for i in range(3) for k in range(3) if i != k)


def face_impedances(eps, mu, normals, order) -> tuple:
    """(Z_E, Z_H): (3, E, 6, n, n) this side's impedance of E_i's and H_i's polarisation at the
    face points (module docstring); ``normals`` (3, E, 6, n, n) the outward unit normals."""
    ef, mf = face_values(np, eps, order), face_values(np, mu, order)  # (3, E, 6, n, n)
    n2 = np.asarray(normals, dtype=np.float64) ** 2
    tangential_e = 0.5 * np.sum((1.0 - n2) * ef, axis=0)
    tangential_m = 0.5 * np.sum((1.0 - n2) * mf, axis=0)
    scalar = np.sqrt(tangential_m / tangential_e)
    aligned = np.max(n2, axis=0) > ALIGNED
    axis = np.argmax(n2, axis=0)
    z_e = np.repeat(scalar[None], 3, axis=0)
    z_h = z_e.copy()
    for d in range(3):
        for i in range(3):
            if i == d:
                continue  # the normal component's flux is zero
            k = 3 - d - i
            at = aligned & (axis == d)
            z_e[i] = np.where(at, np.sqrt(mf[k] / ef[i]), z_e[i])  # E_i with H_k
            z_h[k] = np.where(at, np.sqrt(mf[k] / ef[i]), z_h[k])  # H_k with E_i
    return z_e, z_h


def flux_coefficients(z_e_own, z_e_other, z_h_own, z_h_other) -> np.ndarray:
    """(3, 4, E, 6, n, n): per component i, a = Z+/(Z- + Z+), b = 1/(Z- + Z+) of E_i's
    impedances and c = Z-/(Z- + Z+), d = Z- Z+/(Z- + Z+) of H_i's (materials.py)."""
    te, th = z_e_own + z_e_other, z_h_own + z_h_other
    return np.stack([z_e_other / te, 1.0 / te, z_h_own / th, z_h_own * z_h_other / th], axis=1)


def set_up(medium, system, fields, shape, comm) -> None:
    """A HeterogeneousMedium's arrays for a diagonal eps and mu: (3,) + shape per point and
    (3, 4, E, 6, n, n) face coefficients from each component's pair impedances."""
    backend, order = system.backend, system.order
    eps, mu = (by_component(fields[k], shape) for k in ("epsilon", "mu"))
    sigma = np.ascontiguousarray(np.broadcast_to(np.asarray(fields["sigma"], dtype=np.float64), shape))
    medium.epsilon, medium.mu, medium.sigma = eps, mu, sigma
    medium.wave_speed = float(allreduce(comm, wave_speed(eps, mu), "max"))
    z_e, z_h = face_impedances(eps, mu, system.geometry.normals, order)
    with collective_errors(comm):  # a face point with more than two sides may be on one rank only
        other = medium.neighbour_impedance(system, np.stack([z_e, z_h]))
    coefficients = flux_coefficients(z_e, other[0], z_h, other[1])
    to_dev = backend.asarray
    medium.arrays = {"inv_epsilon": to_dev(1.0 / eps), "inv_mu": to_dev(1.0 / mu),
                     "sigma_over_epsilon": to_dev(sigma / eps) if np.any(sigma > 0) else None}
    medium.arrays.update({k: to_dev(np.ascontiguousarray(coefficients[:, j]))
                          for j, k in enumerate(("flux_a", "flux_b", "flux_c", "flux_d"))})
    if backend.name in ("cuda", "cpu"):  # the tuned kernels read the coefficients as one array
        medium.arrays["flux_coefficients"] = to_dev(coefficients)
    medium.kernel = backend.kernel("maxwell_rhs_materials", order=order, dim=system.mesh.dim)
    medium.stage_kernel = None
    if backend.has_tuned("maxwell_stage_materials") and not array_terms_asked():
        medium.stage_kernel = backend.kernel("maxwell_stage_materials", order=order, dim=system.mesh.dim)


__all__ = ["by_component", "face_impedances", "flux_coefficients", "is_anisotropic", "set_up", "wave_speed"]
