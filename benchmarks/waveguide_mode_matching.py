"""Reference S-parameters of a symmetric inductive iris in a rectangular guide by mode matching,
for the ports' validation (docs/electromagnetics.md, "Port modes of any cross-section").

The guide a x b (x across, y the height, z along it, c = eps = mu = 1) carries TE10 below
f = 1/a; a PEC diaphragm of thickness t across it leaves a centred window of width w in x and
full height. Everything is uniform in y, so only TE_m0 modes take part, and a centred window
couples TE10 only to the odd m (the field is even about x = a/2). Each junction between the guide
(width a) and the window (width w, from x0 = (a - w)/2) is matched mode by mode:

    e_m(x) = sqrt(2/a) sin(m pi x / a),  f_n(x) = sqrt(2/w) sin(n pi (x - x0) / w),
    X[n, m] = int_window f_n e_m dx,
    V = sqrt(Z) (a + b), I = (a - b) / sqrt(Z) per mode (Z = omega mu / beta, the TE wave impedance;
    beta = -i |beta| for evanescent modes, so sqrt(Z) is the pseudo-power normalisation: S = S^T),
    E_t continuous on the window and zero on the diaphragm:  V_guide = X^T V_window,
    H_t continuous on the window:                            I_window = X I_guide,

which gives the junction's generalised scattering matrix (all the modes kept, evanescent ones
included). The window's length t is the diagonal e^{-i beta_n t}; junction, line and the mirrored
junction are joined by the Redheffer star product. The phasors are e^{+i omega t} (waves
e^{-i beta z}), as lobatto's DFT (F = int u e^{-2 pi i f t} dt). The number of modes is raised
until S converges, with the window's count in the ratio w/a to the guide's (the relative
convergence of mode matching: a different ratio converges to a wrong edge field).

Checks (printed; the test tests/unit/test_waveguide_mode_matching.py asserts them): |S11|^2 +
|S21|^2 = 1 and S12 = S21 to round-off; convergence in the mode count; the zero-thickness limit
against the quasi-static susceptance of a symmetric inductive diaphragm (Marcuvitz, Waveguide
Handbook, 1951, sec. 5.1a, leading term; also Pozar, Microwave Engineering, table of waveguide
discontinuities): B / Y0 = -(lambda_g / a) cot^2(pi w / (2 a)).

    python benchmarks/waveguide_mode_matching.py                 # table + JSON (about a second)
    python benchmarks/waveguide_mode_matching.py --json out.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import scipy.sparse
import scipy.sparse.linalg

#: the lobatto case's iris (examples/waveguide_iris.toml): a = 1, b = 0.5, w = 0.5, t = 0.125
A, W, T = 1.0, 0.5, 0.125
BAND = np.round(np.arange(0.6, 0.951, 0.05), 10)
#: the finite-difference cross-check's frequencies and grids (cells across a)
FD_FREQUENCIES, FD_CELLS = (0.6, 0.8, 0.95), (40, 80, 160)


def beta(f, kc):
    """Propagation constants of cutoff wavenumbers kc at frequency f: real >= 0 above cutoff,
    -i |beta| below (so e^{-i beta z} decays along +z)."""
    k = 2 * np.pi * f
    return np.conj(np.sqrt(k * k - np.asarray(kc, dtype=float) ** 2 + 0j))


def impedance(f, kc):
    """TE wave impedance omega mu / beta (eta = 1)."""
    return 2 * np.pi * f / beta(f, kc)


def coupling(a: float, w: float, x0: float, m, n) -> np.ndarray:
    """X[i, j] = int_{x0}^{x0+w} f_{n_i}(x) e_{m_j}(x) dx by Gauss-Legendre quadrature with enough
    points for the highest oscillation (exact to round-off for these trigonometric products)."""
    points = 2 * (int(np.max(m)) + int(np.max(n))) + 40
    s, weights = np.polynomial.legendre.leggauss(points)
    x = x0 + 0.5 * w * (s + 1)
    e = np.sqrt(2 / a) * np.sin(np.outer(m, x) * np.pi / a)
    f = np.sqrt(2 / w) * np.sin(np.outer(n, x - x0) * np.pi / w)
    return (f * (0.5 * w * weights)) @ e.T


def junction(f: float, a: float, w: float, m, n) -> np.ndarray:
    """GSM of the step from the guide (width a; modes TE_m0, port 1, on the left) to the centred
    window (width w; modes TE_n0, port 2, on the right), ports ordered [guide modes, window modes]."""
    m, n = np.asarray(m), np.asarray(n)
    x = coupling(a, w, 0.5 * (a - w), m, n)
    p = np.sqrt(impedance(f, m * np.pi / a))
    q = np.sqrt(impedance(f, n * np.pi / w))
    mm = (x.T * q[None, :]) / p[:, None]  # P^-1 X^T Q: V-continuity in wave amplitudes
    na, nw = m.size, n.size
    # unknowns [b_guide, b_window] from [a_guide, a_window]:
    #   a_g + b_g = M (a_w + b_w)  and  b_w - a_w = M^T (a_g - b_g)
    lhs = np.block([[np.eye(na), -mm], [mm.T, np.eye(nw)]])
    rhs = np.block([[-np.eye(na), mm], [mm.T, np.eye(nw)]])
    return np.linalg.solve(lhs, rhs)


def split(s: np.ndarray, first: int):
    return s[:first, :first], s[:first, first:], s[first:, :first], s[first:, first:]


def star(s1, s2):
    """Redheffer star product of two GSMs given as (S11, S12, S21, S22) blocks."""
    a11, a12, a21, a22 = s1
    b11, b12, b21, b22 = s2
    eye = np.eye(a22.shape[0])
    left = np.linalg.solve(eye - b11 @ a22, b11)  # (I - B11 A22)^-1 B11
    right = np.linalg.solve(eye - a22 @ b11, a21)  # (I - A22 B11)^-1 A21
    return (a11 + a12 @ left @ a21,
            a12 @ np.linalg.solve(eye - b11 @ a22, b12),
            b21 @ right,
            b22 + b21 @ np.linalg.solve(eye - a22 @ b11, a22 @ b12))


def iris_gsm(f: float, a: float = A, w: float = W, t: float = T, modes: int = 40):
    """The iris's GSM blocks over the guide's `modes` odd TE_m0 modes (m = 1, 3, ...) on both
    sides, reference planes on the diaphragm's two faces; the window keeps round(modes w / a)."""
    m = 2 * np.arange(modes) + 1
    n = 2 * np.arange(max(1, int(round(modes * w / a)))) + 1
    one = split(junction(f, a, w, m, n), m.size)
    phase = np.diag(np.exp(-1j * beta(f, n * np.pi / w) * t))
    zero = np.zeros_like(phase)
    line = (zero, phase, phase, zero)
    mirrored = (one[3], one[2], one[1], one[0])
    return star(star(one, line), mirrored)


def iris_sparameters(f, a: float = A, w: float = W, t: float = T, modes: int = 40,
                     before: float = 0.0, after: float = 0.0) -> np.ndarray:
    """(F, 2, 2) TE10 S-matrix of the iris at frequencies f, reference planes `before` ahead of
    its front face and `after` behind its back face (the evanescent modes have decayed there when
    the distances are long enough; the TE10 phases are shifted exactly)."""
    out = []
    for freq in np.atleast_1d(f):
        s11, s12, s21, s22 = (b[0, 0] for b in iris_gsm(float(freq), a, w, t, modes))
        g = np.exp(-1j * beta(freq, np.pi / a) * np.array([before, after]))
        out.append([[s11 * g[0] ** 2, s12 * g[0] * g[1]], [s21 * g[0] * g[1], s22 * g[1] ** 2]])
    return np.array(out)


def marcuvitz_thin(f, a: float = A, w: float = W) -> np.ndarray:
    """(F, 2, 2) S of the zero-thickness symmetric inductive diaphragm from the quasi-static
    shunt susceptance b = B/Y0 = -(lambda_g / a) cot^2(pi w / 2a) (Marcuvitz 5.1a, leading
    term): S11 = -i b / (2 + i b), S21 = 2 / (2 + i b)."""
    f = np.atleast_1d(np.asarray(f, dtype=float))
    lam_g = 2 * np.pi / beta(f, np.pi / a).real
    b = -(lam_g / a) / np.tan(np.pi * w / (2 * a)) ** 2
    s11, s21 = -1j * b / (2 + 1j * b), 2 / (2 + 1j * b)
    return np.stack([np.stack([s11, s21], -1), np.stack([s21, s11], -1)], -2)


def susceptance(s11):
    """b = B / Y0 of a shunt element from its S11 = -i b / (2 + i b)."""
    return (2j * s11 / (1 + s11)).real


def fd_iris(f: float, cells: int, a: float = A, w: float = W, t: float = T, length: float = 0.5):
    """(S11, S21) of the same iris by an independent method: the 2-D scalar Helmholtz equation
    for E_y(x, z) (the TE_m0 fields) by second-order finite differences on a grid of h = a/cells,
    z from -length to t + length, E_y = 0 on the walls and the diaphragm (its edges included),
    and at both ends the discrete modal radiation condition (each discrete sine mode's exact
    discrete wave, so the ends reflect nothing). Reference planes on the diaphragm's faces, like
    iris_sparameters. The diaphragm's edges are singular, so S converges slowly (about h^1.3 here):
    extrapolate."""
    h, k = a / cells, 2 * np.pi * f
    if abs((w / 2) / h - round((w / 2) / h)) > 1e-9 or abs(t / h - round(t / h)) > 1e-9:
        raise ValueError("the window's edges and the thickness must lie on grid lines")
    nx, lead, thick = cells - 1, int(round(length / h)), int(round(t / h))
    nz = 2 * lead + thick + 1
    x = h * np.arange(1, cells)
    m = np.arange(1, cells)
    sine = np.sqrt(2 / cells) * np.sin(np.outer(m, m) * np.pi / cells)  # orthonormal DST-I
    c = 2 - h * h * (k * k - (2 / h * np.sin(m * np.pi * h / (2 * a))) ** 2)  # lam + 1/lam = c
    lam = (c - np.sqrt(c * c - 4 + 0j)) / 2
    alt = 1 / lam
    on_circle = np.abs(np.abs(lam) - 1) < 1e-12
    lam_in = np.where(on_circle, np.where(lam.imag < 0, lam, alt), np.where(np.abs(lam) < 1, lam, alt))
    ids = np.arange(nx * nz).reshape(nz, nx)
    wall = np.zeros((nz, nx), dtype=bool)
    wall[lead:lead + thick + 1] = (x <= (a - w) / 2 + 1e-12) | (x >= (a + w) / 2 - 1e-12)
    diag = np.full((nz, nx), -4 / h ** 2 + k * k, dtype=complex)
    rows, cols, vals = [ids.ravel()], [ids.ravel()], [diag.ravel()]
    for lo, hi in ((ids[:-1, :], ids[1:, :]), (ids[:, :-1], ids[:, 1:])):  # the 5-point neighbours
        rows += [lo.ravel(), hi.ravel()]
        cols += [hi.ravel(), lo.ravel()]
        vals += [np.full(2 * lo.size, 1 / h ** 2, dtype=complex)]
    # the ends: a ghost row from the modes (incident TE10 of unit amplitude at the left end)
    # u_{-1} = sum_m lam_in (u_0)_m (the reflected waves, 1 / lam_out = lam_in) + the incidence;
    # u_{nz} = sum_m lam_in (u_{nz-1})_m (outgoing only)
    block = sine.T @ np.diag(lam_in) @ sine
    for end in (0, nz - 1):
        rows.append(np.repeat(ids[end], nx)), cols.append(np.tile(ids[end], nx)), vals.append(block.ravel() / h ** 2)
    matrix = scipy.sparse.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                                     shape=(nx * nz,) * 2).tocsr()
    rhs = np.zeros(nx * nz, dtype=complex)
    rhs[ids[0]] = -sine[0] * (1 / lam_in[0] - lam_in[0]) / h ** 2
    # PEC points: the identity row, no coupling into them
    fixed = ids[wall]
    keep = np.ones(nx * nz, dtype=bool)
    keep[fixed] = False
    matrix = scipy.sparse.diags(keep.astype(float)) @ matrix @ scipy.sparse.diags(keep.astype(float)) + \
        scipy.sparse.diags((~keep).astype(float))
    u = scipy.sparse.linalg.spsolve(matrix.tocsc(), rhs).reshape(nz, nx)
    reflected = sine[0] @ u[0] - 1.0
    transmitted = sine[0] @ u[-1]
    s11 = reflected * lam_in[0] ** (-2 * lead)  # lam_out = 1 / lam_in
    s21 = transmitted / lam_in[0] ** (2 * lead)
    return complex(s11), complex(s21)


def study(modes=(5, 10, 20, 40, 80, 160), band=BAND, t: float = T):
    """Passivity, reciprocity and convergence over the band, and the thin iris against Marcuvitz."""
    rows = []
    best = iris_sparameters(band, t=t, modes=modes[-1])
    for count in modes:
        s = iris_sparameters(band, t=t, modes=count)
        rows.append({
            "modes": count, "window_modes": max(1, round(count * W / A)),
            "passivity": float(np.abs(np.abs(s[:, 0, 0]) ** 2 + np.abs(s[:, 1, 0]) ** 2 - 1).max()),
            "reciprocity": float(np.abs(s[:, 0, 1] - s[:, 1, 0]).max()),
            "change_vs_finest": float(np.abs(s - best).max()),
        })
    fd = []
    for f in FD_FREQUENCIES:
        grids = [fd_iris(f, cells, t=t) for cells in FD_CELLS]
        s1, s2, s3 = (np.array(g) for g in grids[-3:])
        extrapolated = s3 - (s3 - s2) ** 2 / ((s3 - s2) - (s2 - s1))  # Aitken: the rate is the edges' (about h^1.3)
        ref = iris_sparameters([f], t=t, modes=modes[-1])[0]
        fd.append({"f": f, "cells": list(FD_CELLS),
                   "difference": [float(np.abs(np.array(g) - [ref[0, 0], ref[1, 0]]).max()) for g in grids],
                   "extrapolated_difference": float(np.abs(extrapolated - [ref[0, 0], ref[1, 0]]).max())})
    thin = iris_sparameters(band, t=0.0, modes=modes[-1])
    marc = marcuvitz_thin(band)
    b_mm, b_marc = susceptance(thin[:, 0, 0]), susceptance(marc[:, 0, 0])
    return {
        "a": A, "w": W, "t": t, "frequencies": list(map(float, band)),
        "S11": [[float(z.real), float(z.imag)] for z in best[:, 0, 0]],
        "S21": [[float(z.real), float(z.imag)] for z in best[:, 1, 0]],
        "convergence": rows, "finite_differences": fd,
        "thin": {"b_mode_matching": b_mm.tolist(), "b_marcuvitz": b_marc.tolist(),
                 "relative_difference": (np.abs(b_mm / b_marc - 1)).tolist()},
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, default=Path(__file__).with_name("waveguide_mode_matching.json"))
    parser.add_argument("--thickness", type=float, default=T)
    args = parser.parse_args(argv)
    out = study(t=args.thickness)
    print(f"inductive iris a = {A}, w = {W}, t = {args.thickness}: TE10 S at the diaphragm's faces "
          f"({out['convergence'][-1]['modes']} odd modes)")
    print(f"{'f':>6} {'|S11|':>9} {'arg S11':>9} {'|S21|':>9} {'arg S21':>9}")
    for f, s11, s21 in zip(out["frequencies"], out["S11"], out["S21"]):
        z11, z21 = complex(*s11), complex(*s21)
        print(f"{f:6.3f} {abs(z11):9.6f} {np.angle(z11):9.5f} {abs(z21):9.6f} {np.angle(z21):9.5f}")
    print(f"\n{'modes':>6} {'window':>7} {'| |S11|^2+|S21|^2-1 |':>22} {'|S12-S21|':>10} {'max |S - S_finest|':>19}")
    for r in out["convergence"]:
        print(f"{r['modes']:6d} {r['window_modes']:7d} {r['passivity']:22.2e} {r['reciprocity']:10.2e} "
              f"{r['change_vs_finest']:19.2e}")
    print("\nindependent check: 2-D finite differences (h = a/cells), max |S - S_mode matching| over S11, S21")
    print(f"{'f':>6} " + " ".join(f"{'cells ' + str(c):>10}" for c in FD_CELLS) + f" {'extrapolated':>13}")
    for r in out["finite_differences"]:
        print(f"{r['f']:6.3f} " + " ".join(f"{d:10.2e}" for d in r["difference"]) + f" {r['extrapolated_difference']:13.2e}")
    print("\nzero thickness: B/Y0 by mode matching against Marcuvitz's quasi-static formula")
    print(f"{'f':>6} {'mode matching':>14} {'Marcuvitz':>10} {'rel. diff':>10}")
    thin = out["thin"]
    for f, x, y, d in zip(out["frequencies"], thin["b_mode_matching"], thin["b_marcuvitz"], thin["relative_difference"]):
        print(f"{f:6.3f} {x:14.6f} {y:10.6f} {d:10.2e}")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from lobatto.bench.report import write_json

    write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
