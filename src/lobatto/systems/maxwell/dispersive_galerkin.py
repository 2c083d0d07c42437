"""The dispersive poles (dispersive.py) with ``volume_form = "galerkin"`` (galerkin.py).

The Galerkin form keeps eps in the weight-adjusted mass, M_{eps W} dE/dt = B_s(., H) - ...
(galerkin_media.py). Its poles' coupling is then

    M_{eps W} dE/dt = ... - W M_W sum_p J_p,   i.e.   S_E = -M_{eps W}^-1 W M_W sum_p J_p,

W the poles' nodal mask w (the identity where the table covers the element), M_W the form's
mass without eps (M_W = V^T diag(w_q J_q) V at the Q = N + 1 Gauss points), and each pole's
energy W_p (dispersive.py's docstring) is measured in M_W instead of the nodal mass. The poles'
equations stay pointwise at the GLL nodes (dJ/dt = -gamma J + omega_p^2 W E, ...), so the
coupling's energy exchange -E . W M_W J and the poles' J . M_W (W E) cancel exactly: the total
1/2 (E . M_{eps W} E + H . M_{mu W} H) + sum_p W_p does not grow with central or upwind fluxes
and decays by the poles' losses D_p (in M_W), on any curved element.

Where eps_inf is constant in an element (per component) and w = 1 there, M_{eps W} = eps_inf
M_W and the coupling is dispersive.py's pointwise -J / eps_inf, which its compiled CPU and CUDA
kernels compute: only the other ("cut") elements, a ``where`` table or an interpolated eps_inf
inside them, need the consistent form. A term with any cut element runs its whole stage in the
array code (rates: the consistent form on its cut elements, on any backend); a term without
keeps its compiled CPU and CUDA kernels. On cut elements the pointwise form's energy identity
fails: its exchange -E . M_{eps W} (J / eps_inf) does not cancel J . M_W (W E) (the central
flux's lossless rate 6e-4 of its scale instead of round-off, the total grew 1.2 % in 400 steps:
tests/unit/test_maxwell_galerkin_dispersive.py).
"""

from __future__ import annotations

import numpy as np

from lobatto.systems.maxwell.galerkin import along3


def cut_elements(weight, epsilon, count: int) -> np.ndarray:
    """Positions (in the term's element list) of the elements where the pointwise coupling is
    not the Galerkin one: a mask w that is not 1 everywhere in the element, or eps_inf (per
    component) not constant in it. ``weight`` (m, n, n, n) or None, ``epsilon`` a number,
    (m, n, n, n) or (3, m, n, n, n) (host arrays)."""
    cut = np.zeros(count, dtype=bool)
    if weight is not None:
        cut |= np.any(np.asarray(weight) != 1.0, axis=(1, 2, 3))
    epsilon = np.asarray(epsilon, dtype=np.float64)
    if epsilon.ndim:
        axes = tuple(range(epsilon.ndim - 3, epsilon.ndim))
        varies = epsilon.max(axis=axes) != epsilon.min(axis=axes)
        cut |= np.any(varies, axis=0) if epsilon.ndim == 5 else varies
    return np.flatnonzero(cut)


class GalerkinCoupling:
    """One DispersiveTerm's coupling and energy norm in the Galerkin form (module docstring).

    cut: device index of the cut elements' positions in the term's list (None: no cut element);
    couple(current): S_E = -M_{eps W}^-1 W M_W current on the cut elements;
    at_points(x), weights(): the Gauss values of nodal fields on the term's elements and w J
    there, whose weighted sum of squares is x . M_W x (the poles' energy)."""

    def __init__(self, system, elements: np.ndarray, weight, epsilon):
        operator = system.galerkin
        if operator.points != operator.order + 1:  # M_W's closed form (galerkin.energy_products)
            raise ValueError(f"dispersive poles take the Galerkin form at Q = N + 1 points only, "
                             f"not Q = {operator.points}")
        self.system, xp = system, system.backend.xp
        self.elements = xp.asarray(np.asarray(elements, dtype=np.int64))
        positions = cut_elements(weight, epsilon, int(np.size(elements)))
        self.cut_count = int(positions.size)
        self.cut = xp.asarray(positions) if positions.size else None
        self.cut_elements = xp.asarray(np.asarray(elements, dtype=np.int64)[positions])
        self.mask = None if weight is None or not positions.size else system.backend.asarray(
            np.ascontiguousarray(np.asarray(weight)[positions], dtype=np.float64))
        self._arrays = (None, None)  # (operator, its arrays for these elements): galerkin.attach may run again

    def _of_operator(self) -> dict:
        operator = self.system.galerkin
        if self._arrays[0] is not operator:
            if operator.points != operator.order + 1:
                raise ValueError("dispersive poles take the Galerkin form at Q = N + 1 points only")
            cut = self.cut_elements
            if operator.medium is not None:  # w / (J eps_c) for E_c (galerkin_media.py)
                inverse = operator.medium.inverse_weights[0:3][:, cut]
            else:
                inverse = operator.inverse_jacobian_weights[cut] / self.system.epsilon
            self._arrays = (operator, {"energy": operator.square_energy_weights[self.elements],
                                       "cut_energy": operator.square_energy_weights[cut], "inverse": inverse})
        return self._arrays[1]

    def at_points(self, x):
        """Nodal values (..., m, n, n, n) on the term's elements at the Gauss points."""
        return along3(self.system.backend.xp, self.system.galerkin.v, x)

    def weights(self):
        """w J at the Gauss points of the term's elements (M_W's diagonal in the Gauss basis)."""
        return self._of_operator()["energy"]

    def couple(self, current):
        """-M_{eps W}^-1 W M_W current for the cut elements' current (3, c, n, n, n)."""
        xp, operator, arrays = self.system.backend.xp, self.system.galerkin, self._of_operator()
        load = along3(xp, operator.v.T, arrays["cut_energy"] * along3(xp, operator.v, current))  # M_W J
        if self.mask is not None:
            load *= self.mask
        return -operator.inverse_mass(xp, load, weights=arrays["inverse"])


__all__ = ["GalerkinCoupling", "cut_elements"]
