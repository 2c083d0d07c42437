"""Dispersive media (Drude, Lorentz, Debye poles) by auxiliary differential equations, stepped
inside the Runge-Kutta stages as a StageTerm (terms.py) on the dispersive elements only.

    eps_inf dE/dt = curl H - sigma E - sum_p J_p + (face terms)

eps_inf is the element's epsilon (the [material] value at each point, or [physics] epsilon; in a
diagonal medium (anisotropy.py, or sub-cell averaging) eps_inf,c per component c: the poles'
susceptibility is isotropic, only E_c's update divides by its own eps_inf,c); per pole, with a
mask w (1 where the pole's table applies, 0 elsewhere in the element):

    drude    dJ/dt = -gamma J + omega_p^2 w E                      aux: J       (3 per pole)
    lorentz  dP/dt = J,  dJ/dt = -gamma J - omega_0^2 P + delta_eps omega_0^2 w E
                                                                   aux: P, J    (6 per pole)
    debye    dP/dt = (delta_eps w E - P) / tau,  J = dP/dt          aux: P       (3 per pole)

Their susceptibilities (e^(+i omega t)) are in dispersion_fit.py. Energy: each pole's equation
dotted with its J gives E.J = d/dt W_p + D_p with D_p >= 0, so the total

    W = 1/2 sum M (eps_inf |E|^2 + mu |H|^2) + sum_p W_p
    W_drude = |J|^2 / (2 omega_p^2)     W_lorentz = (|J|^2 / omega_0^2 + |P|^2) / (2 delta_eps)
    W_debye = |P|^2 / (2 delta_eps)

does not grow (D: gamma |J|^2 / omega_p^2, gamma |J|^2 / (delta_eps omega_0^2), tau |J|^2 / delta_eps).
``energy()`` returns the poles' part of W, so the driver's log is the total. With
``volume_form = "galerkin"`` eps_inf lives in the form's weight-adjusted mass: the coupling is
-M_{eps W}^-1 W M_W sum_p J_p (pointwise -J / eps_inf where eps_inf is constant in the element
and w = 1: the kernels' form) and W_p is measured in M_W instead of M, so the same identity
holds in the form's norm (dispersive_galerkin.py).

Case file: ``[material.<name>]`` with ``model`` and ``poles``, or ``data`` (a "wavelength, n, k"
CSV), ``wavelength_unit`` and ``fit`` (dispersion_fit.py), parsed by dispersion_tables.py for
materials.py.
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce, collective_errors, rank_and_size
from lobatto.mesh.topology import element_shape
from lobatto.systems.maxwell import subcell
from lobatto.systems.maxwell.dispersion_fit import AUX_PER_POLE
from lobatto.systems.maxwell.dispersion_tables import Dispersion, parse_dispersion
from lobatto.systems.maxwell.dispersive_galerkin import GalerkinCoupling
from lobatto.systems.maxwell.dispersive_memory import check_aux_memory
from lobatto.systems.maxwell.materials import pole_mask, table_level
from lobatto.systems.maxwell.pml import PerfectlyMatchedLayer
from lobatto.systems.maxwell.terms import StageTerm
from lobatto.systems.maxwell.terms_cpu import MODEL_CODES, term_kernels


# ============================================================================= the term
def local_rates(poles, epsilon: float) -> np.ndarray:
    """Eigenvalues of the poles' ODE with a uniform E (no curl) at eps_inf = ``epsilon``, and of
    the poles alone (w = 0): the rates the time step must resolve."""
    size = 1 + sum(AUX_PER_POLE[p.model] // 3 for p in poles)
    coupled = np.zeros((size, size))
    row = 1
    for p in poles:
        a = p.angular()
        if p.model == "drude":  # J
            coupled[row, 0], coupled[row, row], coupled[0, row] = a["omega_p"] ** 2, -a["gamma"], -1 / epsilon
        elif p.model == "lorentz":  # P, J
            w2 = a["omega0"] ** 2
            coupled[row, row + 1] = 1.0
            coupled[row + 1, 0], coupled[row + 1, row], coupled[row + 1, row + 1] = a["delta"] * w2, -w2, -a["gamma"]
            coupled[0, row + 1] = -1 / epsilon
        else:  # P;  E' = -(delta E - P) / (tau eps)
            coupled[row, 0], coupled[row, row] = a["delta"] / a["tau"], -1 / a["tau"]
            coupled[0, 0] -= a["delta"] / (a["tau"] * epsilon)
            coupled[0, row] += 1 / (a["tau"] * epsilon)
        row += AUX_PER_POLE[p.model] // 3
    alone = coupled[1:, 1:]
    return np.concatenate([np.linalg.eigvals(coupled), np.linalg.eigvals(alone)])


class DispersiveTerm(StageTerm):
    """The poles of one [material] table on the elements where it applies (module docstring)."""

    energy_bounded = False
    time_dependent = False

    def __init__(self, system, elements, dispersion: Dispersion, weight, epsilon, label: str, comm=None):
        self.name = f"dispersion.{label}"
        self.label, self.dispersion, self.poles = label, dispersion, dispersion.poles
        self.aux_count = dispersion.aux_count
        held = {"drude": ("J",), "lorentz": ("P", "J"), "debye": ("P",)}
        self.aux_names = tuple(f"{kind}{axis}_{i}" for i, p in enumerate(self.poles) for kind in held[p.model]
                               for axis in "xyz")
        self.setup_storage(system, elements)
        backend, m = system.backend, self.count
        shape = (m,) + element_shape(system.mesh.dim, system.order)
        # w: None where the table covers the whole element (all of them); eps_inf: number, per
        # point (m, n, n, n) or per component and point (3, m, n, n, n): a diagonal medium
        self.weight = None if weight is None else backend.asarray(np.ascontiguousarray(weight, dtype=np.float64))
        epsilon = np.asarray(epsilon, dtype=np.float64)
        self.per_component = epsilon.ndim == len(shape) + 1
        self.minus_inv_epsilon = float(-1.0 / epsilon) if epsilon.ndim == 0 else backend.asarray(
            np.ascontiguousarray(np.broadcast_to(-1.0 / epsilon, ((3,) if self.per_component else ()) + shape)))
        self.mass = backend.asarray(np.ascontiguousarray(system.geometry.mass[self.elements])) if m else None
        self.offsets = np.cumsum([0] + [AUX_PER_POLE[p.model] for p in self.poles])[:-1].tolist()
        eps_range = (float(epsilon.min()) if m else math.inf, float(epsilon.max()) if m else -math.inf)
        low, high = allreduce(comm, eps_range[0], "min"), allreduce(comm, eps_range[1], "max")
        rates = np.concatenate([local_rates(self.poles, e) for e in (low, high) if math.isfinite(e)] or [np.zeros(0)])
        self.fastest_rate = float(np.max(np.abs(rates))) if rates.size else 0.0
        self.last_dt = None
        self.stretch = None  # Lambda E - E where the poles share elements with a PML (stretch_with)
        # the Galerkin form's coupling and energy norm (dispersive_galerkin.py): on its cut
        # elements the coupling is not pointwise, which only the array code here computes
        self.galerkin = None if system.galerkin is None or not m else GalerkinCoupling(
            system, self.elements, weight, epsilon)
        pointwise = self.galerkin is None or not self.galerkin.cut_count
        # on CUDA the whole stage of the poles is one kernel (dispersive_cuda.py); the array
        # operations here are the reference
        self.one_pass = self.compiled = None
        if backend.name == "cuda" and m and pointwise:
            from lobatto.systems.maxwell.dispersive_cuda import DispersiveStep

            per_point = not isinstance(self.minus_inv_epsilon, float)
            self.one_pass = DispersiveStep(
                backend, system.order, [(p.model, k, p.angular()) for p, k in zip(self.poles, self.offsets)],
                self.aux_count, self.weight is not None, per_point, 0.0 if per_point else self.minus_inv_epsilon,
                per_component=self.per_component, dim=system.mesh.dim)
            self.writes_traces = self.folds = True  # the fused path's calls (terms.py)
        # on the CPU: one compiled pass over the poles' elements per stage (terms_cpu.py)
        self.compiled = term_kernels(system) if m and pointwise else None
        if self.compiled is not None:
            self._poles = compiled_poles(self.poles, self.offsets)
            self.folds_in_stage = True

    def stretch_with(self, layer) -> None:
        """Inside a PML (pml.py) the medium is the stretched one, i omega eps(omega) Lambda E =
        curl H: the poles are driven by Lambda E = w_3 = E + q_1 + q_2 + q_3 (the layer's chain),
        not by E. On the elements both hold, the layer hands over q_1 + q_2 + q_3 of E at each
        stage's input (take_stretch, called from its prepare and fold before its own fields
        step). Called once, after both terms are built; a rank where they share no element
        keeps no buffer."""
        mine = np.nonzero(np.isin(self.elements, layer.elements))[0]
        if not mine.size:
            return
        theirs = np.searchsorted(layer.elements, self.elements[mine])
        xp = self.backend.xp
        self.stretch = self.backend.zeros((3,) + self.rate.shape[1:])
        self._stretch_at = (xp.asarray(mine), xp.asarray(theirs))
        layer.stretched.append(self)
        if self.one_pass is not None:  # the kernel with the stretch read in
            self.one_pass = self.one_pass.stretched()

    def take_stretch(self, layer_aux) -> None:
        """stretch = q_1 + q_2 + q_3 of E (the layer's auxiliary fields 0-2, 6-8, 12-14: pml.py)."""
        mine, theirs = self._stretch_at
        s = layer_aux[0:3, theirs]
        s += layer_aux[6:9, theirs]
        s += layer_aux[12:15, theirs]
        self.stretch[:, mine] = s

    def _compiled(self, u, residual, fold, a, b, dt) -> None:
        self.compiled.dispersive(u, residual, self.rate, self.aux, self.aux_residual, self.aux_rate, self.weight,
                                 self.minus_inv_epsilon, self._poles, self.elements, fold, a, b, dt, self.stretch)

    def prepare(self, u, t) -> None:
        if self.compiled is not None:
            self._compiled(u, u, False, 0.0, 0.0, 0.0)
        elif self.one_pass is None:
            super().prepare(u, t)

    def fold(self, u, residual, t, a, b, dt) -> None:
        self.last_dt = dt
        if self.compiled is not None:
            return self._compiled(u, residual, True, a, b, dt)
        self.one_pass(u, residual, self.aux, self.aux_residual, self.device_elements, self.weight,
                      None if isinstance(self.minus_inv_epsilon, float) else self.minus_inv_epsilon, a, b, dt,
                      fold=True, stretch=self.stretch)

    def rates(self, u, t, s_out, r_out) -> None:
        e = u[0:3, self.index]
        if self.stretch is not None:
            e = e + self.stretch
        drive = e if self.weight is None else e * self.weight
        s = s_out[0:3]
        for i, (pole, k) in enumerate(zip(self.poles, self.offsets)):
            a = pole.angular()
            if pole.model == "drude":
                current, r = self.aux[k:k + 3], r_out[k:k + 3]
                r[...] = drive
                r *= a["omega_p"] ** 2
                r -= a["gamma"] * current
            elif pole.model == "lorentz":
                polarisation, current = self.aux[k:k + 3], self.aux[k + 3:k + 6]
                r_out[k:k + 3] = current
                r = r_out[k + 3:k + 6]
                w2 = a["omega0"] ** 2
                r[...] = drive
                r *= a["delta"] * w2
                r -= w2 * polarisation
                r -= a["gamma"] * current
            else:  # debye: J = dP/dt
                polarisation, r = self.aux[k:k + 3], r_out[k:k + 3]
                current = r
                r[...] = drive
                r *= a["delta"]
                r -= polarisation
                r *= 1.0 / a["tau"]
            if i == 0:
                s[...] = current
            else:
                s += current
        cut = None if self.galerkin is None else self.galerkin.cut
        consistent = None if cut is None else self.galerkin.couple(s[:, cut])  # -M_{eps W}^-1 W M_W J
        s *= self.minus_inv_epsilon
        if consistent is not None:
            s[:, cut] = consistent

    def finish(self, u, residual, a, b, dt, traces=None) -> None:
        """Only E changes: residual += dt S_E; u += b dt S_E; the poles step as in terms.py."""
        self.last_dt = dt
        if not self.count:
            return
        if self.compiled is not None:
            return self.compiled.finish(u, residual, self.rate, self.aux, self.aux_residual, self.aux_rate,
                                        self.elements, 3, a, b, dt)
        if self.one_pass is not None:
            self.one_pass(u, residual, self.aux, self.aux_residual, self.device_elements, self.weight,
                          None if isinstance(self.minus_inv_epsilon, float) else self.minus_inv_epsilon, a, b, dt,
                          traces, self.system.device_geometry["normals"] if traces is not None else None,
                          stretch=self.stretch)
            return
        s = self.rate[0:3]
        s *= dt
        residual[0:3, self.index] += s
        s *= b
        u[0:3, self.index] += s
        self.aux_residual *= a
        self.aux_rate *= dt
        self.aux_residual += self.aux_rate
        self.aux_rate[...] = self.aux_residual
        self.aux_rate *= b
        self.aux += self.aux_rate

    def energy(self) -> float:
        """sum_p W_p on this rank (module docstring)."""
        if not self.count:
            return 0.0
        xp, total = self.backend.xp, 0.0
        # the Galerkin form's norm M_W: the Gauss values and w J there (dispersive_galerkin.py)
        mass = self.mass if self.galerkin is None else self.galerkin.weights()
        values = (lambda x: x) if self.galerkin is None else self.galerkin.at_points
        for pole, k in zip(self.poles, self.offsets):
            a = pole.angular()
            squares = lambda first: xp.sum(values(self.aux[first:first + 3]) ** 2, axis=0)
            if pole.model == "drude":
                density = squares(k) / a["omega_p"] ** 2
            elif pole.model == "lorentz":
                density = (squares(k + 3) / a["omega0"] ** 2 + squares(k)) / a["delta"]
            else:
                density = squares(k) / a["delta"]
            total += 0.5 * float(xp.sum(mass * density, dtype=np.float64))
        return total

    def describe(self, comm=None) -> dict:
        out = super().describe(comm)
        out.update(self.dispersion.describe())
        out["fastest_rate"] = self.fastest_rate  # |eigenvalue| of the poles' ODE, angular
        # elements where a PML stretches the drive (stretch_with)
        out["elements_in_layer"] = int(allreduce(comm, 0 if self.stretch is None else int(self._stretch_at[0].size)))
        if self.system.galerkin is not None:  # (the same on every rank: the allreduce is collective)
            # elements whose coupling is the Galerkin one, not pointwise (dispersive_galerkin.py)
            out["cut_elements"] = int(allreduce(comm, 0 if self.galerkin is None else self.galerkin.cut_count))
        if self.last_dt is not None:
            out["dt_times_fastest_rate"] = self.last_dt * self.fastest_rate
        return out


def compiled_poles(poles, offsets) -> tuple:
    """The poles as terms.c reads them: (model codes, first aux field, c0, c1, c2)."""
    coefficients = []
    for p in poles:
        a = p.angular()
        if p.model == "drude":
            coefficients.append((a["omega_p"] ** 2, a["gamma"], 0.0))
        elif p.model == "lorentz":
            coefficients.append((a["delta"] * a["omega0"] ** 2, a["omega0"] ** 2, a["gamma"]))
        else:
            coefficients.append((a["delta"], 1.0 / a["tau"], 0.0))
    c = np.array(coefficients, dtype=np.float64).reshape(-1, 3).T
    return (np.array([MODEL_CODES[p.model] for p in poles], dtype=np.int32), np.array(offsets, dtype=np.int32),
            *(np.ascontiguousarray(row) for row in c))


# ============================================================================== builder
def dispersive_terms(case, system, comm=None) -> list:
    """One DispersiveTerm per [material] table with a dispersion (system.TERM_BUILDERS). The
    poles are part of the permittivity: a point takes those of the last table that gives its
    epsilon there (a later table with epsilon and no poles, a dielectric hole in a metal, has
    none; one that gives only mu or sigma keeps them; an averaged table gives it where more than
    half of the point's control volume is inside: materials.pole_mask); an element holds a term
    when any of its points does (w masks the others)."""
    tables = case.tables.get("material")
    listed = tables.tables if tables is not None else ()
    dispersive = [t for t in listed if t.dispersion is not None]
    if not dispersive:
        return []
    coords = system.geometry.coords
    shape = coords.shape[1:]
    centroids = coords.mean(axis=(2, 3, 4))[:, :, None, None, None] * np.ones_like(coords)
    owner = np.full(shape, -1)
    shares = {t.name: subcell.shares(system.mesh, coords, system.order, table_level(t, system.mesh, case.source))
              for t in dispersive if t.sampling == "average"}  # (each point's share of its volume inside)
    for t in listed:
        if t.dispersion is not None or "epsilon" in t.values:
            owner[pole_mask(t, system.mesh, coords, centroids, shape, case.source, shares.get(t.name))] = (
                dispersive.index(t) if t.dispersion is not None else -1)
    epsilon = system.medium.epsilon if system.medium is not None else None
    with collective_errors(comm):  # the rank that holds most of a material may fail alone
        check_aux_memory(case, system, dispersive, [np.count_nonzero((owner == i).any(axis=(1, 2, 3)))
                                                     for i in range(len(dispersive))])
    terms = []
    for i, t in enumerate(dispersive):
        mine = owner == i
        if t.sampling == "average":  # (collective: every rank has the same tables)
            _check_poles_somewhere(t, int(allreduce(comm, int(np.count_nonzero(mine)))), case.source, comm)
            _check_poles_volume(t, system, shares[t.name], case.source, comm)
        elements = np.nonzero(mine.any(axis=(1, 2, 3)))[0]
        weight = mine[elements].astype(np.float64)  # (w E = E where w = 1: the same bits either way)
        eps = system.epsilon if epsilon is None else epsilon[:, elements] if epsilon.ndim == 5 else epsilon[elements]
        terms.append(DispersiveTerm(system, elements, t.dispersion, None if np.all(weight == 1.0) else weight, eps,
                                    t.name, comm))
        for layer in system.terms:  # a PML built before (system.TERM_BUILDERS): its poles see Lambda E
            if isinstance(layer, PerfectlyMatchedLayer) and layer.count and terms[-1].count:
                terms[-1].stretch_with(layer)
        _warn_outside_band(case, t, comm)
    return terms


def _check_poles_somewhere(table, points: int, source: str, comm=None) -> None:
    """An averaged dispersive table whose poles act at no point (no control volume is more than
    half inside it, or later tables cover it) would keep only its averaged eps_inf: refused on
    every rank alike, naming the table."""
    if points:
        return
    error = InputError(f"{source}: [material.{table.name}] sampling = \"average\": its poles act at no point of the "
                       "mesh (they act where more than half of a point's control volume is inside the table, and "
                       "where no later table gives epsilon); use sampling = \"point\", refine the mesh, or widen "
                       "the material")
    error.collective = comm is not None
    raise error


def _check_poles_volume(table, system, shares, source: str, comm=None) -> None:
    """Collective: warn (rank 0, a "lobatto: warning:" line) where an averaged table's poles,
    which act on whole control volumes more than half inside it, cover a volume off by over
    POLE_VOLUME_SLACK from the table's own (sum M share): a film or shell about as thin as the
    control volumes loses (or gains) that much of its dispersion silently otherwise. Later
    tables are not subtracted (a hole is the user's choice)."""
    mass = system.geometry.mass
    acting = pole_mask(table, system.mesh, None, None, shares.shape, source, shares)
    inside, poles = (float(allreduce(comm, float(np.sum(mass * w)))) for w in (shares, acting))
    if abs(poles - inside) > POLE_VOLUME_SLACK * inside and rank_and_size(comm)[0] == 0:
        print(f"lobatto: warning: {source}: [material.{table.name}] sampling = \"average\": its poles act on a "
              f"volume of {poles:.4g} against the table's {inside:.4g} (on the points whose control volume is more "
              "than half inside it); refine the mesh across the table, or use sampling = \"point\"", flush=True)


#: the relative difference between the volume an averaged table's poles act on and its own
#: volume above which _check_poles_volume warns (a coarse ball at N = 3 is off by 13 %, a shell
#: of a seventh of an element's width by 80 %)
POLE_VOLUME_SLACK = 0.25


def _warn_outside_band(case, table, comm) -> None:
    """A fitted model is only known over its data's band: say so for DFT frequencies outside it."""
    fit = table.dispersion.fit
    dft = getattr(case.output, "dft", None)
    if fit is None or dft is None:
        return
    low, high = fit.band
    outside = [f for f in dft.frequencies if f > 0 and not low * (1 - 1e-9) <= f <= high * (1 + 1e-9)]
    if outside and rank_and_size(comm)[0] == 0:
        # one line as the run's other warnings (a Python warning would print its source line)
        print(f"lobatto: warning: {case.source}: [material.{table.name}] is fitted to f = {low:.4g} to {high:.4g}; "
              f"the [output.dft] frequencies {', '.join(f'{f:g}' for f in outside)} are outside it (the fitted "
              "poles are extrapolated there)", flush=True)


__all__ = ["Dispersion", "DispersiveTerm", "dispersive_terms", "parse_dispersion"]
