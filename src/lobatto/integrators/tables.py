"""Runge–Kutta coefficient tables, kept as data (one registry, one loop per scheme family)."""

from __future__ import annotations

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

SCHEMES = {scheme.name: scheme for scheme in (LSRK45, RK4, SSPRK3)}


def check_tables() -> None:
    """Order conditions up to 3 for every scheme (cheap self-check used by the tests)."""
    for scheme in SCHEMES.values():
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
