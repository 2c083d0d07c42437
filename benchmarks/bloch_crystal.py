"""Band edges of a 1-D photonic crystal through Bloch-periodic boundaries and the resonance fit:
a periodic stack of two layers along x (period a = 1: n1 = 2 over 0 < x < 0.5, n2 = 1 over
0.5 < x < 1, the interfaces on element faces), at several Bloch k along x, against the
analytic dispersion relation of normal incidence (c = 1)

    cos(k a) = cos(n1 w d1) cos(n2 w d2) - (n1/n2 + n2/n1)/2 sin(n1 w d1) sin(n2 w d2).

The mesh is 4 x 1 x 1 elements of 0.25, periodic in all three axes (k only along x); a pulse
uniform in y and z (polarised along z) excites the k's modes; central flux, dt = 0.01, to
t = 30; the probe's Ez is fitted by lobatto.analysis.resonances, and every mode with an
amplitude above 1e-3 of the largest is matched: each analytic band below omega = 8 to the
nearest mode found (within 1 %), the rest listed as other modes.

    PYTHONPATH=src python3 benchmarks/bloch_crystal.py            # CPU, a few minutes
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_maxwell_physics import commit, device_name  # noqa: E402

import lobatto  # noqa: E402
from lobatto.analysis import resonances  # noqa: E402
from lobatto.analysis.resonance_table import probe_series, uniform_step  # noqa: E402
from lobatto.bench.report import write_json  # noqa: E402

N1, D1, N2, D2 = 2.0, 0.5, 1.0, 0.5
PERIOD = D1 + D2
OMEGA_MAX = 8.0


def dispersion(w, k):
    """The relation's residual: zero on the bands."""
    return (np.cos(N1 * w * D1) * np.cos(N2 * w * D2)
            - 0.5 * (N1 / N2 + N2 / N1) * np.sin(N1 * w * D1) * np.sin(N2 * w * D2) - np.cos(k * PERIOD))


def band_frequencies(k: float, omega_max: float = 2 * OMEGA_MAX) -> list:
    """The roots omega > 0.1 of the relation at k below omega_max: sign changes refined by
    bisection, and touching roots (where a gap closes, the relation only touches zero: a
    minimum of |residual| near zero) refined by ternary search."""
    w = np.linspace(0.1, omega_max, 40001)
    v = dispersion(w, k)
    roots = []
    for i in np.nonzero(np.sign(v[:-1]) != np.sign(v[1:]))[0]:
        lo, hi = w[i], w[i + 1]
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if np.sign(dispersion(mid, k)) == np.sign(dispersion(lo, k)) else (lo, mid)
        roots.append(0.5 * (lo + hi))
    a = np.abs(v)
    for i in np.nonzero((a[1:-1] < a[:-2]) & (a[1:-1] < a[2:]) & (a[1:-1] < 1e-4))[0] + 1:
        lo, hi = w[i - 1], w[i + 1]
        for _ in range(200):
            m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
            lo, hi = (lo, m2) if abs(dispersion(m1, k)) < abs(dispersion(m2, k)) else (m1, hi)
        root = 0.5 * (lo + hi)
        if all(abs(root - r) > 1e-6 for r in roots):
            roots.append(root)
    return sorted(roots)


def crystal_case(k: float, order: int, t_end: float = 30.0) -> dict:
    return {"mesh": {"elements": [4, 1, 1], "periodic": [True, True, True], "upper": [PERIOD, 0.25, 0.25]},
            "discretization": {"order": order, "flux": "central"},
            "physics": {"equations": "maxwell", "bloch_k": [k, 0.0, 0.0]},
            "material": {"layer": {"where": f"{D1} - x", "epsilon": N1**2, "mu": 1.0, "sampling": "element"}},
            "initial": {"Ez": "exp(-30*(x-0.3)**2)", "Ez_im": "x*exp(-30*(x-0.6)**2)"},
            "time": {"t_end": t_end, "dt": 0.01}, "output": {"every": 0, "formats": [], "probes": {
                "every": 5, "points": [[0.31, 0.1, 0.1]], "fields": ["Ez"]}}}


def crystal_modes(k: float, order: int, directory: Path, backend: str = "cpu", t_end: float = 30.0) -> dict:
    out = directory / f"crystal_{order}_{k:.4f}"
    lobatto.run(lobatto.case_from_dict(crystal_case(k, order, t_end), name="crystal"), output_dir=out,
                backend=backend)
    got = probe_series(out, "p0", "Ez")
    kept, dt = uniform_step(got["time"], got["path"])
    modes = resonances(got["values"][kept], dt)
    bands = [b for b in band_frequencies(k) if b < OMEGA_MAX]
    keep = [i for i, w in enumerate(modes.omega)
            if 0.1 < w < OMEGA_MAX + 0.5 and modes.amplitude[i] > 1e-3 * modes.amplitude.max()]
    found = np.array([float(modes.omega[i]) for i in keep])
    rows = []
    for b in bands:  # the nearest mode found to each band (None: none within 1 %)
        j = int(np.argmin(np.abs(found - b))) if found.size else -1
        hit = j >= 0 and abs(found[j] - b) < 1e-2 * b
        rows.append({"band": b, "omega": float(found[j]) if hit else None,
                     "relative_error": abs(found[j] - b) / b if hit else None})
    matched = {r["omega"] for r in rows}
    return {"k": k, "order": order, "bands": rows,
            "other_modes": [float(w) for w in found if w not in matched]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--orders", type=int, nargs="+", default=[5, 7])
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for order in args.orders:
            for k in (0.0, 0.25 * np.pi, 0.5 * np.pi, 0.75 * np.pi, np.pi):
                rows.append(crystal_modes(float(k), order, Path(scratch), args.backend))
    print("1-D photonic crystal (n = 2 | 1, d = 0.5 | 0.5): each analytic band below omega = 8, the "
          "nearest mode found and its relative error")
    for row in rows:
        cells = "  ".join(f"{b['band']:.8f} ({b['relative_error']:.1e})" if b["omega"] is not None
                          else f"{b['band']:.8f} (not seen)" for b in row["bands"])
        other = f"  other modes: {', '.join(f'{w:.4f}' for w in row['other_modes'])}" if row["other_modes"] else ""
        print(f"k a/pi = {row['k'] / np.pi:4.2f}  N = {row['order']}  {cells}{other}")
    result = {"benchmark": "bloch_crystal", "device": device_name(args.backend), "backend": args.backend,
              "commit": commit(), "date": datetime.date.today().isoformat(), "layers": [[N1, D1], [N2, D2]],
              "rows": rows}
    write_json(Path(args.json) if args.json else HERE / f"bloch_crystal_{args.backend}.json", result)


if __name__ == "__main__":
    main()
