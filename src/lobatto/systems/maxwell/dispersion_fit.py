"""Pole models of a dispersive permittivity and a passive fit of them to tabulated (n, k) data.

Convention: fields vary as e^(+i omega t) (the sign of lobatto's DFT, which transforms with
e^(-i omega t)), omega = 2 pi f the angular frequency, f in cycles per unit time. Then

    eps(omega) = eps_inf + sum_p chi_p(omega),          eps = (n - i k)^2,  k >= 0

and a passive medium has Im eps(omega) <= 0 for omega > 0. The poles (and their case-file
keys; frequencies in cycles per unit time, turned into angular ones here):

    drude    chi = -omega_p^2 / (omega^2 - i gamma omega)                 plasma_frequency, collision_frequency
    lorentz  chi = delta_eps omega_0^2 / (omega_0^2 - omega^2 + i gamma omega)
                                                                     resonance_frequency, delta_epsilon,
                                                                     damping_frequency
    debye    chi = delta_eps / (1 + i omega tau)                         delta_epsilon, relaxation_time

(omega_p = 2 pi plasma_frequency, gamma = 2 pi collision_frequency or damping_frequency,
omega_0 = 2 pi resonance_frequency). Each is passive when its parameters are >= 0 (omega_p,
omega_0, delta_eps, tau > 0): Im chi = -omega_p^2 gamma / (omega (omega^2 + gamma^2)),
-delta_eps omega_0^2 gamma omega / |.|^2, -delta_eps omega tau / (1 + omega^2 tau^2).

The fit (``fit_permittivity``): K Lorentz poles and optionally one Drude pole plus eps_inf >= 1
by nonlinear least squares on the relative error (eps_model - eps) / |eps| at the data's
frequencies. The model is linear in (eps_inf - 1, delta_eps_k, omega_p^2): those come from a
non-negative least-squares solve (Lawson-Hanson) for every trial of the nonlinear parameters
(omega_0,k in [omega_min / 10, 10 omega_max], gamma in [0, 10 omega_max], through a logistic
map), which Levenberg-Marquardt moves, from several starting points; the best is kept. So
every fitted pole is passive by construction; ``passivity`` checks it on a dense grid anyway.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np

from lobatto.errors import InputError

TWO_PI = 2.0 * math.pi
#: the case-file keys of each pole model (all required)
POLE_KEYS = {
    "drude": ("plasma_frequency", "collision_frequency"),
    "lorentz": ("resonance_frequency", "delta_epsilon", "damping_frequency"),
    "debye": ("delta_epsilon", "relaxation_time"),
}
#: keys that must be > 0 (the others >= 0)
POSITIVE_KEYS = ("plasma_frequency", "resonance_frequency", "delta_epsilon", "relaxation_time")
#: auxiliary fields per pole: J (drude), P and J (lorentz), P (debye)
AUX_PER_POLE = {"drude": 3, "lorentz": 6, "debye": 3}


@dataclass(frozen=True)
class Pole:
    """One pole: its model and its case-file values (frequencies in cycles per unit time)."""

    model: str
    values: Mapping = field(default_factory=dict)

    def angular(self) -> dict:
        """The parameters of the auxiliary equations: omega_p, omega0, gamma (angular), delta, tau."""
        v = self.values
        if self.model == "drude":
            return {"omega_p": TWO_PI * v["plasma_frequency"], "gamma": TWO_PI * v["collision_frequency"]}
        if self.model == "lorentz":
            return {"omega0": TWO_PI * v["resonance_frequency"], "gamma": TWO_PI * v["damping_frequency"],
                    "delta": v["delta_epsilon"]}
        return {"delta": v["delta_epsilon"], "tau": v["relaxation_time"]}

    def susceptibility(self, omega):
        """chi(omega), e^(+i omega t) convention (module docstring)."""
        omega = np.asarray(omega, dtype=np.float64)
        a = self.angular()
        if self.model == "drude":
            return -a["omega_p"] ** 2 / (omega**2 - 1j * a["gamma"] * omega)
        if self.model == "lorentz":
            w0 = a["omega0"] ** 2
            return a["delta"] * w0 / (w0 - omega**2 + 1j * a["gamma"] * omega)
        return a["delta"] / (1.0 + 1j * omega * a["tau"])

    def to_dict(self) -> dict:
        return {"model": self.model, **{k: float(self.values[k]) for k in POLE_KEYS[self.model]}}


def permittivity(epsilon_infinity: float, poles, omega):
    """eps(omega) = eps_inf + sum chi_p(omega)."""
    out = np.full(np.shape(omega), complex(epsilon_infinity))
    for pole in poles:
        out = out + pole.susceptibility(omega)
    return out


def passivity(epsilon_infinity: float, poles, omega_min: float, omega_max: float, points: int = 4000) -> dict:
    """Im eps on a dense log grid from omega_min / 100 to 100 omega_max: passive when <= 0
    everywhere (e^(+i omega t)). A small positive round-off of a lossless pole is tolerated."""
    grid = np.geomspace(omega_min / 100.0, omega_max * 100.0, points)
    eps = permittivity(epsilon_infinity, poles, grid)
    largest = float(np.max(eps.imag))
    return {"passive": bool(largest <= 1e-12 * float(np.max(np.abs(eps)))), "largest_imaginary_part": largest,
            "points": points, "omega_range": [float(grid[0]), float(grid[-1])]}


# ================================================================================= data
def read_nk_table(path, wavelength_unit: float, where: str = "data") -> tuple:
    """(wavelength in lobatto lengths, n, k) of a CSV file of rows "wavelength, n, k" (a header
    row and lines starting with # are skipped), sorted by wavelength. ``wavelength_unit``: the
    data's wavelength unit in lobatto's unit length."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{where}: no such file {path}")
    rows = []
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{where}: cannot read {path}: {error}") from None
    for number, row in enumerate(csv.reader(text.splitlines()), start=1):
        cells = [c.strip() for c in row]
        if not cells or not any(cells) or cells[0].startswith("#"):
            continue
        try:
            values = [float(c) for c in cells]
        except ValueError:
            if not rows and not any(_is_float(c) for c in cells):
                continue  # a header
            raise InputError(f"{where}: {path.name} line {number}: expected three numbers "
                             f"(wavelength, n, k), got {','.join(cells)[:60]!r}") from None
        if len(values) != 3:
            raise InputError(f"{where}: {path.name} line {number}: expected three columns (wavelength, n, k), "
                             f"got {len(values)}")
        lam, n, k = values
        if not (math.isfinite(lam) and math.isfinite(n) and math.isfinite(k)) or lam <= 0 or n <= 0 or k < 0:
            raise InputError(f"{where}: {path.name} line {number}: expected wavelength > 0, n > 0, k >= 0, "
                             f"got {lam:g}, {n:g}, {k:g}")
        rows.append(values)
    if len(rows) < 3:
        raise InputError(f"{where}: {path.name} has {len(rows)} data rows; a fit needs at least 3")
    data = np.array(sorted(rows))
    if np.any(np.diff(data[:, 0]) <= 0):
        raise InputError(f"{where}: {path.name} lists a wavelength twice")
    return data[:, 0] * wavelength_unit, data[:, 1], data[:, 2]


def _is_float(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


# ================================================================================== fit
@dataclass(frozen=True)
class Fit:
    """A fitted permittivity: eps_inf, the poles, and how well and where it fits."""

    epsilon_infinity: float
    poles: tuple
    max_relative_error: float  # max |eps_model - eps| / |eps| over the data
    band: tuple  # (f_min, f_max) of the data, cycles per unit time
    passivity: dict

    def describe(self) -> dict:
        return {"epsilon_infinity": self.epsilon_infinity, "poles": [p.to_dict() for p in self.poles],
                "max_relative_error": self.max_relative_error, "band": list(self.band), **self.passivity}


def _nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min |a x - b| subject to x >= 0 (Lawson and Hanson, 1974, ch. 23)."""
    m, n = a.shape
    x, active = np.zeros(n), np.zeros(n, dtype=bool)
    free_solution = np.linalg.lstsq(a, b, rcond=None)[0]
    if np.all(free_solution >= 0):
        return free_solution  # the unconstrained minimum is feasible (the usual case near a good fit)
    tolerance = 10 * np.finfo(float).eps * np.linalg.norm(a, 1) * max(m, n)
    gradient = a.T @ b
    for _ in range(3 * n + 3):
        free = ~active
        if not free.any() or gradient[free].max() <= tolerance:
            break
        active[np.argmax(np.where(free, gradient, -np.inf))] = True
        while True:
            z = np.zeros(n)
            z[active] = np.linalg.lstsq(a[:, active], b, rcond=None)[0]
            if np.all(z[active] > 0):
                break
            shrinking = active & (z <= 0)
            step = np.min(x[shrinking] / (x[shrinking] - z[shrinking]))
            x = x + step * (z - x)
            active &= x > tolerance
            x[~active] = 0.0
        x = z
        gradient = a.T @ (b - a @ x)
    return x


class _Model:
    """The fit's parametrisation: nonlinear theta -> (omega_0,k, gamma_k, gamma_drude), the
    linear coefficients by NNLS, the weighted residual."""

    def __init__(self, omega, eps, lorentz: int, drude: bool):
        self.omega, self.eps, self.lorentz, self.drude = omega, eps, lorentz, drude
        self.weight = 1.0 / np.abs(eps)
        self.low, self.high = omega.min() / 10.0, omega.max() * 10.0
        self.gamma_max = omega.max() * 10.0

    def parameters(self, theta):
        s = 1.0 / (1.0 + np.exp(-np.clip(theta, -40, 40)))
        k = self.lorentz
        omega0 = self.low * (self.high / self.low) ** s[:k]
        gamma = self.gamma_max * s[k:2 * k]
        gamma_drude = self.gamma_max * s[2 * k] if self.drude else None
        return omega0, gamma, gamma_drude

    def theta_of(self, omega0, gamma, gamma_drude=None):
        def logit(p):
            p = np.clip(p, 1e-15, 1 - 1e-15)
            return np.log(p / (1 - p))
        parts = [logit(np.log(np.asarray(omega0) / self.low) / np.log(self.high / self.low)),
                 logit(np.asarray(gamma) / self.gamma_max)]
        if self.drude:
            parts.append(logit(np.array([gamma_drude / self.gamma_max])))
        return np.concatenate(parts)

    def columns(self, theta):
        omega = self.omega
        omega0, gamma, gamma_drude = self.parameters(theta)
        cols = [np.ones_like(omega, dtype=complex)]
        cols += [w0**2 / (w0**2 - omega**2 + 1j * g * omega) for w0, g in zip(omega0, gamma)]
        if self.drude:
            cols.append(-1.0 / (omega**2 - 1j * gamma_drude * omega))
        return np.stack(cols, axis=1)

    def solve(self, theta):
        """(coefficients, residual vector): coefficients (eps_inf - 1, delta_eps_k, omega_p^2) >= 0."""
        a = self.columns(theta) * self.weight[:, None]
        b = (self.eps - 1.0) * self.weight
        real_a, real_b = np.concatenate([a.real, a.imag]), np.concatenate([b.real, b.imag])
        scale = np.linalg.norm(real_a, axis=0)
        scale[scale == 0] = 1.0
        c = _nnls(real_a / scale, real_b) / scale
        return c, real_a @ c - real_b

    def result(self, theta):
        c, _ = self.solve(theta)
        omega0, gamma, gamma_drude = self.parameters(theta)
        poles = [Pole("lorentz", {"resonance_frequency": w0 / TWO_PI, "delta_epsilon": float(d),
                                  "damping_frequency": g / TWO_PI})
                 for w0, g, d in zip(omega0, gamma, c[1:1 + self.lorentz]) if d > 0]
        if self.drude and c[-1] > 0:
            poles.insert(0, Pole("drude", {"plasma_frequency": math.sqrt(c[-1]) / TWO_PI,
                                           "collision_frequency": gamma_drude / TWO_PI}))
        return 1.0 + float(c[0]), tuple(poles)


def _levenberg_marquardt(model: _Model, theta, iterations: int = 200):
    """Minimise |residual(theta)|^2; forward-difference Jacobian. Returns (theta, cost)."""
    residual = model.solve(theta)[1]
    cost, damping = residual @ residual, 1e-3
    for _ in range(iterations):
        jacobian = np.empty((residual.size, theta.size))
        for j in range(theta.size):
            step = 1e-7 * max(1.0, abs(theta[j]))
            shifted = theta.copy()
            shifted[j] += step
            jacobian[:, j] = (model.solve(shifted)[1] - residual) / step
        normal, gradient = jacobian.T @ jacobian, jacobian.T @ residual
        improved = converged = False
        while damping < 1e12:
            trial = theta - np.linalg.solve(normal + damping * np.diag(np.diag(normal) + 1e-12), gradient)
            trial_residual = model.solve(trial)[1]
            trial_cost = trial_residual @ trial_residual
            if trial_cost < cost:
                converged = cost - trial_cost <= 1e-14 * cost
                theta, residual, cost, damping, improved = trial, trial_residual, trial_cost, damping / 3, True
                break
            damping *= 4
        if not improved or converged:
            break
    return theta, cost


def _vector_fitting(s, f, pairs: int, real: int, slope: bool, iterations: int = 30):
    """Poles of f(s) ~ sum_n r_n / (s - a_n) + d (+ e s when ``slope``) at s = i omega by vector
    fitting (Gustavsen and Semlyen 1999): ``pairs`` complex-conjugate pairs and ``real`` real
    poles, relocated as the zeros of the weighting function sigma, unstable ones flipped.
    Returns (complex poles with Im > 0, real poles)."""
    omega = s.imag
    lo, hi = omega.min(), omega.max()
    complex_poles = np.geomspace(lo, hi, pairs) * (-0.01 + 1j) if pairs else np.zeros(0, complex)
    real_poles = -np.geomspace(lo * 0.1, lo, real) if real else np.zeros(0)
    weight = 1.0 / np.abs(f)

    def basis():
        cols = []
        for a in complex_poles:
            cols += [1 / (s - a) + 1 / (s - a.conjugate()), 1j / (s - a) - 1j / (s - a.conjugate())]
        cols += [1 / (s - a) for a in real_poles]
        return np.stack(cols, axis=1) if cols else np.zeros((s.size, 0), complex)

    for _ in range(iterations):
        phi = basis()
        extra = [np.ones_like(s)] + ([s] if slope else [])
        a = np.concatenate([phi, np.stack(extra, axis=1), -f[:, None] * phi], axis=1) * weight[:, None]
        b = f * weight
        x = np.linalg.lstsq(np.concatenate([a.real, a.imag]), np.concatenate([b.real, b.imag]), rcond=None)[0]
        sigma = x[phi.shape[1] + len(extra):]
        # the zeros of sigma = eigenvalues of A - b c^T (real block form)
        size = phi.shape[1]
        state, column = np.zeros((size, size)), np.zeros(size)
        for n, p in enumerate(complex_poles):
            state[2 * n:2 * n + 2, 2 * n:2 * n + 2] = [[p.real, p.imag], [-p.imag, p.real]]
            column[2 * n] = 2.0
        for n, p in enumerate(real_poles):
            state[2 * pairs + n, 2 * pairs + n] = p
            column[2 * pairs + n] = 1.0
        zeros = np.linalg.eigvals(state - np.outer(column, sigma))
        zeros = np.where(zeros.real > 0, -zeros.conjugate(), zeros)  # flip unstable poles
        found_complex = np.sort_complex(zeros[zeros.imag > 1e-9 * hi])
        found_real = np.sort(zeros[np.abs(zeros.imag) <= 1e-9 * hi].real)
        if found_complex.size != pairs or found_real.size != real:
            break  # a pair turned into two real poles or back: keep the last consistent set
        complex_poles, real_poles = found_complex, found_real
    return complex_poles, real_poles


def _starts(model: _Model, rng):
    """Starting points: the poles of a vector fit first, then resonances spread over the band
    (and beyond it) and random ones (a fixed seed: every rank fits alike)."""
    omega, k = model.omega, model.lorentz
    lo, hi = omega.min(), omega.max()
    s = 1j * omega
    if model.drude:  # s eps(s) = e s + omega_p^2 / (s + gamma) + sum (Lorentz pairs)
        pairs, real = _vector_fitting(s, s * model.eps, k, 1, True)
    else:
        pairs, real = _vector_fitting(s, model.eps, k, 0, False)
    yield model.theta_of(np.abs(pairs), -2 * pairs.real, -real[0] if model.drude else None)
    for spread in ((lo, hi), (lo * 0.5, hi * 2.0), (hi * 0.8, hi * 4.0)):
        omega0 = np.geomspace(*spread, k) if k > 1 else np.array([math.sqrt(spread[0] * spread[1])] * k)
        yield model.theta_of(omega0, 0.3 * omega0, 0.1 * lo if model.drude else None)
    for _ in range(2):
        omega0 = np.exp(rng.uniform(np.log(lo / 3), np.log(hi * 3), k))
        yield model.theta_of(omega0, omega0 * np.exp(rng.uniform(np.log(0.01), np.log(1.0), k)),
                             lo * np.exp(rng.uniform(np.log(0.01), 0.0)) if model.drude else None)


def fit_permittivity(frequency, eps, lorentz: int, drude: bool = False) -> Fit:
    """Fit eps_inf >= 1, ``lorentz`` Lorentz poles and (``drude``) one Drude pole to the complex
    permittivity ``eps`` at ``frequency`` (cycles per unit time; e^(+i omega t), Im eps <= 0)."""
    frequency = np.asarray(frequency, dtype=np.float64)
    omega, eps = TWO_PI * frequency, np.asarray(eps, dtype=np.complex128)
    if lorentz < 0 or (lorentz == 0 and not drude):
        raise ValueError("a fit needs at least one pole")
    model = _Model(omega, eps, lorentz, drude)
    best = None
    for theta in _starts(model, np.random.default_rng(12345)):
        theta, cost = _levenberg_marquardt(model, theta)
        if best is None or cost < best[1]:
            best = (theta, cost)
    epsilon_infinity, poles = model.result(best[0])
    error = float(np.max(np.abs(permittivity(epsilon_infinity, poles, omega) - eps) / np.abs(eps)))
    return Fit(epsilon_infinity, poles, error, (float(frequency.min()), float(frequency.max())),
               passivity(epsilon_infinity, poles, omega.min(), omega.max()))


def fit_nk_file(path, wavelength_unit: float, lorentz: int, drude: bool, where: str = "data") -> Fit:
    """``fit_permittivity`` of a "wavelength, n, k" table; f = 1 / wavelength (c = 1)."""
    wavelength, n, k = read_nk_table(path, wavelength_unit, where)
    if wavelength.size < 2 * lorentz + int(drude) + 2:
        raise InputError(f"{where}: {Path(path).name} has {wavelength.size} rows, too few for "
                         f"{lorentz} Lorentz{' and a Drude' if drude else ''} pole(s)")
    return fit_permittivity(1.0 / wavelength, (n - 1j * k) ** 2, lorentz, drude)
