"""Time-integration coefficient tables, kept as data (one registry, one loop per scheme family):
Runge–Kutta schemes, and the BDF/EXT multistep schemes with their variable-step coefficients."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LowStorageScheme:
    """Williamson 2N-storage scheme. Stage s, with residual r and state u:
        r = A[s] r + dt L(u, t + C[s] dt);   u = u + B[s] r
    """

    name: str
    order: int
    A: tuple
    B: tuple
    C: tuple

    @property
    def stages(self) -> int:
        return len(self.A)


@dataclass(frozen=True)
class ButcherScheme:
    """Explicit Runge–Kutta scheme from its Butcher tableau (stores every stage derivative)."""

    name: str
    order: int
    a: tuple  # lower-triangular rows
    b: tuple
    c: tuple

    @property
    def stages(self) -> int:
        return len(self.b)


# Carpenter & Kennedy (1994), five-stage fourth-order 2N-storage RK: NekCEM's integrator.
LSRK45 = LowStorageScheme(
    name="lsrk45",
    order=4,
    A=(
        0.0,
        -567301805773.0 / 1357537059087.0,
        -2404267990393.0 / 2016746695238.0,
        -3550918686646.0 / 2091501179385.0,
        -1275806237668.0 / 842570457699.0,
    ),
    B=(
        1432997174477.0 / 9575080441755.0,
        5161836677717.0 / 13612068292357.0,
        1720146321549.0 / 2090206949498.0,
        3134564353537.0 / 4481467310338.0,
        2277821191437.0 / 14882151754819.0,
    ),
    C=(
        0.0,
        1432997174477.0 / 9575080441755.0,
        2526269341429.0 / 6820363183375.0,
        2006345519317.0 / 3224310063776.0,
        2802321613138.0 / 2924317926251.0,
    ),
)

RK4 = ButcherScheme(
    name="rk4",
    order=4,
    a=((), (0.5,), (0.0, 0.5), (0.0, 0.0, 1.0)),
    b=(1 / 6, 1 / 3, 1 / 3, 1 / 6),
    c=(0.0, 0.5, 0.5, 1.0),
)

# Shu & Osher's three-stage strong-stability-preserving scheme.
SSPRK3 = ButcherScheme(
    name="ssprk3",
    order=3,
    a=((), (1.0,), (0.25, 0.25)),
    b=(1 / 6, 1 / 6, 2 / 3),
    c=(0.0, 1.0, 0.5),
)

@dataclass(frozen=True)
class MultistepScheme:
    """BDFk/EXTk: the time derivative from the k + 1 latest states (implicit, backward
    differences), the explicit terms extrapolated from the k latest steps. The system does the
    step (``multistep_step``); the stepper hands it the coefficients of ``bdf_ext_coefficients``."""

    name: str
    order: int

    @property
    def stages(self) -> int:
        return 1


BDF1, BDF2, BDF3 = (MultistepScheme(name=f"bdf{k}", order=k) for k in (1, 2, 3))

#: constant-step coefficients (the textbook tables): du/dt(t^{n+1}) ~= sum_j BDF[k][j] u^{n+1-j} / dt,
#: f(t^{n+1}) ~= sum_j EXT[k][j-1] f^{n+1-j}
BDF_CONSTANT = {1: (1.0, -1.0), 2: (1.5, -2.0, 0.5), 3: (11 / 6, -3.0, 1.5, -1 / 3)}
EXT_CONSTANT = {1: (1.0,), 2: (2.0, -1.0), 3: (3.0, -3.0, 1.0)}

SCHEMES = {scheme.name: scheme for scheme in (LSRK45, RK4, SSPRK3, BDF1, BDF2, BDF3)}
RUNGE_KUTTA = tuple(name for name, scheme in SCHEMES.items() if not isinstance(scheme, MultistepScheme))
MULTISTEP = tuple(name for name, scheme in SCHEMES.items() if isinstance(scheme, MultistepScheme))


def bdf_ext_coefficients(order: int, dts) -> tuple[tuple, tuple]:
    """(bdf, ext) of BDFk/EXTk, k = order, for the step sizes ``dts``: dts[0] the step being
    taken (t^{n+1} - t^n), dts[1] the one before, ... (at least k of them). With t_j = t^{n+1-j},

        du/dt(t^{n+1}) ~= sum_{j=0..k} bdf[j] u(t_j) / dts[0]     (derivative of the interpolant)
        f(t^{n+1})     ~= sum_{j=1..k} ext[j-1] f(t_j)            (Lagrange extrapolation)

    both exact for polynomials of degree <= k (resp. k - 1). Equal steps give the tables
    BDF_CONSTANT / EXT_CONSTANT themselves."""
    if order not in BDF_CONSTANT:
        raise ValueError(f"BDF/EXT order must be one of {sorted(BDF_CONSTANT)}, got {order}")
    dts = [float(dt) for dt in dts[:order]]
    if len(dts) < order or not all(dt > 0 for dt in dts):
        raise ValueError(f"BDF{order} needs {order} positive step sizes, got {dts}")
    if all(dt == dts[0] for dt in dts):
        return BDF_CONSTANT[order], EXT_CONSTANT[order]
    # times relative to t^{n+1}, in units of the current step: tau_0 = 0, tau_j = -(dts[0]+...+dts[j-1]) / dts[0]
    tau = [0.0]
    for dt in dts:
        tau.append(tau[-1] - dt / dts[0])
    nodes = range(order + 1)
    bdf = []
    for j in nodes:  # l_j'(0) of the Lagrange basis on tau_0..tau_k (times dts[0]: tau is scaled)
        if j == 0:
            bdf.append(sum(1.0 / (0.0 - tau[m]) for m in nodes if m != 0))
        else:
            numerator = math.prod(0.0 - tau[m] for m in nodes if m not in (0, j))
            bdf.append(numerator / math.prod(tau[j] - tau[m] for m in nodes if m != j))
    ext = [math.prod((0.0 - tau[m]) / (tau[j] - tau[m]) for m in nodes if m not in (0, j)) for j in nodes if j > 0]
    return tuple(bdf), tuple(ext)


def check_tables() -> None:
    """Order conditions up to 3 for every Runge-Kutta scheme (cheap self-check used by the tests)."""
    for scheme in (SCHEMES[name] for name in RUNGE_KUTTA):
        a, b, c = butcher_form(scheme)
        assert abs(b.sum() - 1) < 1e-12 and abs(b @ c - 0.5) < 1e-12
        assert abs(b @ c**2 - 1 / 3) < 1e-12 and abs(b @ a @ c - 1 / 6) < 1e-12


def butcher_form(scheme):
    """(a, b, c) arrays of the equivalent Butcher tableau."""
    if isinstance(scheme, ButcherScheme):
        s = scheme.stages
        a = np.zeros((s, s))
        for i, row in enumerate(scheme.a):
            a[i, : len(row)] = row
        return a, np.array(scheme.b), np.array(scheme.c)
    # 2N-storage: u_i = u_0 + sum_j a_ij dt k_j with r recursion unrolled.
    s = scheme.stages
    A, B = np.array(scheme.A), np.array(scheme.B)
    coeff_r = np.zeros((s, s))  # r after stage i as combination of k_j (times dt)
    a = np.zeros((s, s))
    u = np.zeros(s)
    for i in range(s):
        a[i] = u
        coeff_r[i] = (A[i] * coeff_r[i - 1] if i > 0 else 0.0)
        coeff_r[i, i] += 1.0
        u = u + B[i] * coeff_r[i]
    return a, u, a.sum(axis=1)


#: How far each Runge–Kutta scheme's stability region reaches from 0, as (imaginary axis,
#: negative real axis, largest left half-disk), computed from the stability polynomial
#: (stability.reach, sampled every 0.5 degrees for the half-disk) and rounded down. Why: a
#: step dt is stable for an eigenvalue lambda of the operator when dt |lambda| is within the
#: reach in lambda's direction; the central flux's eigenvalues are imaginary, the upwind
#: flux's largest ones near the negative real axis (runner/step_check.py; notes-stability.md).
STABILITY_RADII = {"lsrk45": (3.3407, 4.6567, 3.1685), "rk4": (2.8284, 2.7852, 2.6156),
                   "ssprk3": (1.7320, 2.5127, 1.7320)}
