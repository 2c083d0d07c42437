"""Dispersive media (Drude, Lorentz, Debye poles) by auxiliary differential equations, stepped
inside the Runge-Kutta stages as a StageTerm (terms.py) on the dispersive elements only.

    eps_inf dE/dt = curl H - sigma E - sum_p J_p + (face terms)

eps_inf is the element's epsilon (the [material] value at each point, or [physics] epsilon);
per pole, with a mask w (1 where the pole's table applies, 0 elsewhere in the element):

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
``energy()`` returns the poles' part of W, so the driver's log is the total.

Case file: ``[material.<name>]`` with ``model`` and ``poles``, or ``data`` (a "wavelength, n, k"
CSV), ``wavelength_unit`` and ``fit`` (dispersion_fit.py), parsed here for materials.py.
"""

from __future__ import annotations

import difflib
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from lobatto.config.ranges import LARGE, SMALL, Range, check_number
from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce, collective_errors, rank_and_size
from lobatto.systems.maxwell.dispersion_fit import (AUX_PER_POLE, POLE_KEYS, POSITIVE_KEYS, Fit, Pole, fit_nk_file)
from lobatto.systems.maxwell.dispersive_memory import check_aux_memory
from lobatto.systems.maxwell.terms import StageTerm

MODELS = tuple(POLE_KEYS)
_RATE = "2 pi f (cycles per unit time) is a rate the step must resolve, squared in the pole's equation"
#: the valid values of each pole key, with the reason (frequencies in cycles per unit time)
POLE_RANGES = {
    "plasma_frequency": Range(SMALL, LARGE, reason=_RATE),
    "resonance_frequency": Range(SMALL, LARGE, reason=_RATE),
    "collision_frequency": Range(0.0, LARGE, reason="2 pi f (cycles per unit time) is a damping rate"),
    "damping_frequency": Range(0.0, LARGE, reason="2 pi f (cycles per unit time) is a damping rate"),
    "delta_epsilon": Range(SMALL, LARGE, reason="it multiplies omega0^2 E and divides the pole's energy"),
    "relaxation_time": Range(SMALL, LARGE, reason="1/tau is a rate the step must resolve"),
}
assert set(POLE_RANGES) == {k for keys in POLE_KEYS.values() for k in keys}
assert all(POLE_RANGES[k].low > 0 for k in POSITIVE_KEYS)
#: lobatto lengths per unit of a data file's wavelengths; the largest relative error of a fit
WAVELENGTH_UNIT = Range(SMALL, LARGE, reason="the data's frequencies are 1 / (wavelength * unit)")
FIT_TOLERANCE = Range(0.0, LARGE, low_open=True, reason="a relative error")
FIT_MODELS = ("lorentz", "drude_lorentz")
FIT_KEYS = ("poles", "model", "tolerance")
DEFAULT_FIT_TOLERANCE = 0.02
_FITS: dict = {}  # fits by (file, its size and time, unit, poles): a case parsed twice fits once


# ============================================================================ case file
@dataclass(frozen=True)
class Dispersion:
    """The poles of one [material] table, given or fitted to a data file."""

    poles: tuple
    data: dict | None = None  # {"data", "wavelength_unit", "fit": {...}} as given, when fitted
    fit: Fit | None = None

    @property
    def epsilon_infinity(self) -> float | None:
        """The fitted eps_inf (the table's epsilon), or None when the poles were given."""
        return None if self.fit is None else self.fit.epsilon_infinity

    @property
    def aux_count(self) -> int:
        return sum(AUX_PER_POLE[p.model] for p in self.poles)

    def to_dict(self) -> dict:
        if self.data is not None:
            return dict(self.data)
        return {"poles": [p.to_dict() for p in self.poles]}

    def describe(self) -> dict:
        out = {"poles": [p.to_dict() for p in self.poles]}
        if self.fit is not None:
            fitted = self.fit.describe()
            fitted.pop("poles")
            out["fit"] = {**self.data, **fitted}
        return out


def parse_dispersion(ctx, where: str, table: Mapping) -> Dispersion | None:
    """The dispersion of ``[where]`` (a [material.<name>] table), or None when it has none."""
    if not any(k in table for k in ("model", "poles", "data", "wavelength_unit", "fit")):
        return None
    if "data" in table:
        for key in ("poles", "model", "epsilon"):
            if key in table:
                hint = {"poles": "give poles or data, not both",
                        "model": "with data, the fitted model is fit.model",
                        "epsilon": "with data, epsilon (eps_inf) is fitted"}[key]
                raise ctx.error(f"[{where}] {key} cannot go with data ({hint})")
        return _fitted(ctx, where, table)
    for key in ("wavelength_unit", "fit"):
        if key in table:
            raise ctx.error(f"[{where}] {key} goes with data = \"file.csv\" (a table to fit)")
    if "poles" not in table:
        raise ctx.error(f"[{where}] model needs poles, for example poles = [{{plasma_frequency = 2.0, "
                        "collision_frequency = 0.1}]")
    default_model = table.get("model")
    if default_model is not None and default_model not in MODELS:
        raise ctx.bad(where, "model", "one of " + ", ".join(f'"{m}"' for m in MODELS), default_model)
    given = table["poles"]
    if not isinstance(given, (list, tuple)) or not given:
        raise ctx.bad(where, "poles", "a non-empty list of tables, for example [{plasma_frequency = 2.0, "
                                      "collision_frequency = 0.1}]", given)
    return Dispersion(tuple(_pole(ctx, where, i, p, default_model) for i, p in enumerate(given)))


def _pole(ctx, where: str, index: int, given: Any, default_model) -> Pole:
    name = f"poles[{index}]"
    if not isinstance(given, Mapping):
        raise ctx.bad(where, name, "a table such as {plasma_frequency = 2.0, collision_frequency = 0.1}", given)
    model = given.get("model", default_model)
    if model is None:
        raise ctx.error(f"[{where}] {name} has no model: set model = " + " or ".join(f'"{m}"' for m in MODELS)
                        + " in the table or the pole")
    if model not in MODELS:
        raise ctx.bad(where, f"{name}.model", "one of " + ", ".join(f'"{m}"' for m in MODELS), model)
    keys = POLE_KEYS[model]
    for key in given:
        if key != "model" and key not in keys:
            close = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ctx.error(f"[{where}] unknown key '{name}.{key}' of a {model} pole{hint}; expected "
                            f"{', '.join(keys)}")
    values = {}
    for key in keys:
        if key not in given:
            raise ctx.error(f"[{where}] {name} ({model}) lacks {key}; a {model} pole needs {', '.join(keys)}")
        values[key] = check_number(ctx, where, f"{name}.{key}", given[key], POLE_RANGES[key])
    return Pole(model, values)


def _fitted(ctx, where: str, table: Mapping) -> Dispersion:
    given = table["data"]
    if not isinstance(given, str) or not given:
        raise ctx.bad(where, "data", 'a file name, "wavelength, n, k" rows (CSV)', given)
    unit = table.get("wavelength_unit")
    if unit is None:
        raise ctx.error(f"[{where}] wavelength_unit is required with data: the data's wavelength unit in "
                        "lobatto's unit length (for example 0.001 for nm data and a unit length of 1 um)")
    unit = check_number(ctx, where, "wavelength_unit", unit, WAVELENGTH_UNIT)
    fit = table.get("fit")
    if not isinstance(fit, Mapping):
        raise ctx.error(f"[{where}] fit is required with data, for example fit = {{poles = 2, model = \"lorentz\"}}")
    for key in fit:
        if key not in FIT_KEYS:
            raise ctx.error(f"[{where}] unknown key 'fit.{key}'; expected {', '.join(FIT_KEYS)}")
    model = fit.get("model", "lorentz")
    if model not in FIT_MODELS:
        raise ctx.bad(where, "fit.model", "one of " + ", ".join(f'"{m}"' for m in FIT_MODELS), model)
    drude = model == "drude_lorentz"
    count = fit.get("poles")
    if isinstance(count, bool) or not isinstance(count, int) or count < (0 if drude else 1) or count > 8:
        raise ctx.bad(where, "fit.poles", f"the number of Lorentz poles, an integer from {0 if drude else 1} to 8",
                      count)
    tolerance = check_number(ctx, where, "fit.tolerance", fit.get("tolerance", DEFAULT_FIT_TOLERANCE), FIT_TOLERANCE)
    path = Path(given).expanduser()
    if not path.is_absolute() and not (ctx.source.startswith("<") and ctx.source.endswith(">")):
        path = Path(ctx.source).parent / path
    path = Path(os.path.abspath(path))
    label = f"{ctx.source}: [{where}] data"
    if not path.is_file():
        where_from = "" if Path(given).is_absolute() else " (relative to the case file's directory)"
        raise InputError(f"{label}: no such file {path}{where_from}")
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns, float(unit), count, drude)
    if key not in _FITS:
        _FITS[key] = fit_nk_file(path, float(unit), count, drude, where=label)
    result = _FITS[key]
    if result.max_relative_error > tolerance:
        raise InputError(f"{label}: the fit of {count} Lorentz{' and a Drude' if drude else ''} pole(s) to "
                         f"{path.name} has a relative error of up to {result.max_relative_error:.3g} over its band "
                         f"(f = {result.band[0]:.4g} to {result.band[1]:.4g}), above fit.tolerance = {tolerance:g}; "
                         "fit more poles or raise the tolerance")
    if not result.passivity["passive"]:  # passive by construction: this is a guard against a bug
        raise InputError(f"{label}: the fitted poles are not passive (Im eps = "
                         f"{result.passivity['largest_imaginary_part']:.3g} > 0 somewhere)")
    data = {"data": given, "wavelength_unit": float(unit),
            "fit": {"poles": count, "model": model, "tolerance": float(tolerance)}}
    return Dispersion(result.poles, data, result)


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
        shape = (m,) + (system.order + 1,) * 3
        # w: None where the table covers the whole element (all of them); eps_inf: number or per point
        self.weight = None if weight is None else backend.asarray(np.ascontiguousarray(weight, dtype=np.float64))
        epsilon = np.asarray(epsilon, dtype=np.float64)
        self.minus_inv_epsilon = float(-1.0 / epsilon) if epsilon.ndim == 0 else backend.asarray(
            np.ascontiguousarray(np.broadcast_to(-1.0 / epsilon, shape)))
        self.mass = backend.asarray(np.ascontiguousarray(system.geometry.mass[self.elements])) if m else None
        self.offsets = np.cumsum([0] + [AUX_PER_POLE[p.model] for p in self.poles])[:-1].tolist()
        eps_range = (float(epsilon.min()) if m else math.inf, float(epsilon.max()) if m else -math.inf)
        low, high = allreduce(comm, eps_range[0], "min"), allreduce(comm, eps_range[1], "max")
        rates = np.concatenate([local_rates(self.poles, e) for e in (low, high) if math.isfinite(e)] or [np.zeros(0)])
        self.fastest_rate = float(np.max(np.abs(rates))) if rates.size else 0.0
        self.last_dt = None
        # on CUDA the whole stage of the poles is one kernel (terms_cuda.py); the array
        # operations here are the reference
        self.one_pass = None
        if backend.name == "cuda" and m:
            from lobatto.systems.maxwell.terms_cuda import DispersiveStep

            per_point = not isinstance(self.minus_inv_epsilon, float)
            self.one_pass = DispersiveStep(
                backend, system.order, [(p.model, k, p.angular()) for p, k in zip(self.poles, self.offsets)],
                self.aux_count, self.weight is not None, per_point, 0.0 if per_point else self.minus_inv_epsilon)
            self.writes_traces = self.folds = True  # the fused path's calls (terms.py)

    def prepare(self, u, t) -> None:
        if self.one_pass is None:
            super().prepare(u, t)

    def fold(self, u, residual, t, a, b, dt) -> None:
        self.last_dt = dt
        self.one_pass(u, residual, self.aux, self.aux_residual, self.device_elements, self.weight,
                      None if isinstance(self.minus_inv_epsilon, float) else self.minus_inv_epsilon, a, b, dt, fold=True)

    def rates(self, u, t, s_out, r_out) -> None:
        e = u[0:3, self.index]
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
        s *= self.minus_inv_epsilon

    def finish(self, u, residual, a, b, dt, traces=None) -> None:
        """Only E changes: residual += dt S_E; u += b dt S_E; the poles step as in terms.py."""
        self.last_dt = dt
        if not self.count:
            return
        if self.one_pass is not None:
            self.one_pass(u, residual, self.aux, self.aux_residual, self.device_elements, self.weight,
                          None if isinstance(self.minus_inv_epsilon, float) else self.minus_inv_epsilon, a, b, dt,
                          traces, self.system.device_geometry["normals"] if traces is not None else None)
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
        for pole, k in zip(self.poles, self.offsets):
            a = pole.angular()
            squares = lambda first: xp.sum(self.aux[first:first + 3] ** 2, axis=0)
            if pole.model == "drude":
                density = squares(k) / a["omega_p"] ** 2
            elif pole.model == "lorentz":
                density = (squares(k + 3) / a["omega0"] ** 2 + squares(k)) / a["delta"]
            else:
                density = squares(k) / a["delta"]
            total += 0.5 * float(xp.sum(self.mass * density, dtype=np.float64))
        return total

    def describe(self, comm=None) -> dict:
        out = super().describe(comm)
        out.update(self.dispersion.describe())
        out["fastest_rate"] = self.fastest_rate  # |eigenvalue| of the poles' ODE, angular
        if self.last_dt is not None:
            out["dt_times_fastest_rate"] = self.last_dt * self.fastest_rate
        return out


# ============================================================================== builder
def dispersive_terms(case, system, comm=None) -> list:
    """One DispersiveTerm per [material] table with a dispersion (system.TERM_BUILDERS). A point
    belongs to the last such table that applies there, as for epsilon; an element holds a term
    when any of its points does (w masks the others)."""
    from lobatto.systems.maxwell.materials import table_mask

    tables = case.tables.get("material")
    dispersive = [t for t in (tables.tables if tables is not None else ()) if t.dispersion is not None]
    if not dispersive:
        return []
    coords = system.geometry.coords
    shape = coords.shape[1:]
    centroids = coords.mean(axis=(2, 3, 4))[:, :, None, None, None] * np.ones_like(coords)
    owner = np.full(shape, -1)
    for i, t in enumerate(dispersive):
        owner[table_mask(t, system.mesh, coords, centroids, shape, case.source)] = i
    epsilon = system.medium.epsilon if system.medium is not None else None
    with collective_errors(comm):  # the rank that holds most of a material may fail alone
        check_aux_memory(case, system, dispersive, [np.count_nonzero((owner == i).any(axis=(1, 2, 3)))
                                                     for i in range(len(dispersive))])
    terms = []
    for i, t in enumerate(dispersive):
        mine = owner == i
        elements = np.nonzero(mine.any(axis=(1, 2, 3)))[0]
        weight = mine[elements].astype(np.float64)  # (w E = E where w = 1: the same bits either way)
        eps = system.epsilon if epsilon is None else epsilon[elements]
        terms.append(DispersiveTerm(system, elements, t.dispersion, None if np.all(weight == 1.0) else weight, eps,
                                    t.name, comm))
        _warn_outside_band(case, t, comm)
    return terms


def _warn_outside_band(case, table, comm) -> None:
    """A fitted model is only known over its data's band: say so for DFT frequencies outside it."""
    fit = table.dispersion.fit
    dft = getattr(case.output, "dft", None)
    if fit is None or dft is None:
        return
    low, high = fit.band
    outside = [f for f in dft.frequencies if f > 0 and not low * (1 - 1e-9) <= f <= high * (1 + 1e-9)]
    if outside and rank_and_size(comm)[0] == 0:
        warnings.warn(f"{case.source}: [material.{table.name}] is fitted to f = {low:.4g} to {high:.4g}; the "
                      f"[output.dft] frequencies {', '.join(f'{f:g}' for f in outside)} are outside it (the fitted "
                      "poles are extrapolated there)", stacklevel=2)


__all__ = ["Dispersion", "DispersiveTerm", "dispersive_terms", "parse_dispersion"]
