"""The turbulent channel at Re_tau = 180 against Moser, Kim & Mansour (1999): reads the
profiles of ``[output.statistics] average = ["x", "z"]`` (examples/channel180.toml), folds the
two halves, finds u_tau and prints U+ at y+ = 5, 10, 30, 100 and the centreline, and the peaks
of u_rms+, v_rms+, w_rms+ and -uv+, each beside MKM with the relative error; writes JSON and a
PNG (matplotlib).

    python benchmarks/channel180.py RUN/channel180_statistics.h5 [MORE.h5 ...]
        [--reference ../shared/reference/channel180] [--json out.json] [--plot docs/figures/channel180.png]

Several files: a chain of runs continued with --restart carries its averages along, so the
newest file of a chain holds the whole window and the older ones are left out; files whose
windows do not overlap (separate runs) are joined, weighted by their averaging times.

u_tau = sqrt(nu |dU/dy|) at each wall (the mean of the two), dU/dy from the degree-N polynomial
through the wall element's GLL points (U and y are both polynomials of the reference
coordinate r, so dU/dy = (dU/dr) / (dy/dr) also on a graded mesh). Printed beside it, as a
check, u_tau from the total shear stress nu dU/dy - <u'v'> = u_tau^2 (1 - eta): its
least-squares slope over the channel (eta the distance from the wall).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: the MKM files (README there): $LOBATTO_CHANNEL180, else shared/reference/channel180 in the checkout
#: (where a device machine's copy has it) or beside it (../shared)
_PLACES = [ROOT / "shared" / "reference" / "channel180", ROOT.parent / "shared" / "reference" / "channel180"]
REFERENCE = Path(os.environ.get("LOBATTO_CHANNEL180") or next((p for p in _PLACES if p.exists()), _PLACES[-1]))
TARGETS = (5.0, 10.0, 30.0, 100.0)
TOLERANCE = {"U+": 0.02, "peak": 0.05}  # the bounds: U+ within 2 %, peaks within 5 %


def read_mkm(directory: Path) -> dict:
    means = np.loadtxt(directory / "chan180.means", comments="#")
    stress = np.loadtxt(directory / "chan180.reystress", comments="#")
    return {"y+": means[:, 1], "U+": means[:, 2], "uu": stress[:, 2], "vv": stress[:, 3], "ww": stress[:, 4],
            "uv": stress[:, 5], "re_tau": 178.12}


def read_statistics(path: Path) -> dict:
    import h5py

    with h5py.File(path, "r") as f:
        config = tomllib.loads(str(f.attrs["config"]))
        out = {"y": f["coordinates/y"][...], "weight": float(f.attrs["weight"]), "t_last": float(f.attrs["t_last"]),
               "samples": int(f.attrs["samples"]), "config": config, "path": str(path)}
        for key in ("ux", "ux_ux", "uy_uy", "uz_uz", "ux_uy"):
            out[key] = f[f"mean/{key}"][...]
        for key in ("ux", "uy", "uz"):
            out[f"mean_{key}"] = f[f"mean/{key}"][...]
    return out


def combine(files: list[dict]) -> dict:
    """The newest file, joined with older ones whose windows end before its window starts."""
    files = sorted(files, key=lambda s: s["t_last"], reverse=True)
    chosen = [files[0]]
    for other in files[1:]:
        begins = min(s["t_last"] - s["weight"] for s in chosen)
        if other["t_last"] <= begins + 1e-9 * max(1.0, abs(begins)) and other["weight"] > 0:
            chosen.append(other)
    total = sum(s["weight"] for s in chosen)
    out = dict(chosen[0])
    for key in ("ux", "ux_ux", "uy_uy", "uz_uz", "ux_uy", "mean_ux", "mean_uy", "mean_uz"):
        out[key] = sum(s[key] * s["weight"] for s in chosen) / total
    out["weight"], out["files"] = total, [s["path"] for s in chosen]
    return out


def gll(order: int) -> np.ndarray:
    from numpy.polynomial import legendre

    inner = legendre.Legendre.basis(order).deriv().roots()
    return np.concatenate([[-1.0], np.sort(inner.real), [1.0]])


def wall_gradient(y: np.ndarray, u: np.ndarray, order: int) -> tuple[float, float]:
    """|dU/dy| at y[0] and y[-1], from each wall element's interpolating polynomial in r."""
    r, n = gll(order), order + 1
    out = []
    for ys, us, at in ((y[:n], u[:n], -1.0), (y[-n:], u[-n:], 1.0)):
        pu, py = np.polynomial.Polynomial.fit(r, us, order), np.polynomial.Polynomial.fit(r, ys, order)
        out.append(abs(pu.deriv()(at) / py.deriv()(at)))
    return out[0], out[1]


def analyse(stats: dict) -> dict:
    config = stats["config"]
    nu, order = float(config["physics"]["viscosity"]), int(config["discretization"]["order"])
    y = stats["y"]
    U, V, W = stats["mean_ux"], stats["mean_uy"], stats["mean_uz"]
    uu, vv, ww, uv = stats["ux_ux"] - U * U, stats["uy_uy"] - V * V, stats["uz_uz"] - W * W, stats["ux_uy"] - U * V
    lower, upper = wall_gradient(y, U, order)
    u_tau = float(np.sqrt(nu * 0.5 * (lower + upper)))
    # fold: eta = distance from the nearer wall; uv is odd in y
    half = (y.size + 1) // 2
    eta = (y - y[0])[:half]
    fold = lambda f, sign=1.0: 0.5 * (f[:half] + sign * f[::-1][:half])  # noqa: E731
    U_f, uu_f, vv_f, ww_f, uv_f = fold(U), fold(uu), fold(vv), fold(ww), fold(uv, -1.0)
    # total shear stress nu dU/dy - <u'v'> = u_tau^2 (1 - eta) (eta from the lower wall, h = 1)
    dudy = np.gradient(U_f, eta)
    total = nu * dudy - uv_f
    slope = float(np.sum(total * (1 - eta)) / np.sum((1 - eta) ** 2))
    return {"nu": nu, "order": order, "u_tau": u_tau, "u_tau_walls": [float(np.sqrt(nu * lower)),
                                                                        float(np.sqrt(nu * upper))],
            "u_tau_stress": float(np.sqrt(max(slope, 0.0))), "re_tau": u_tau / nu,
            "y+": eta * u_tau / nu, "U+": U_f / u_tau, "u_rms+": np.sqrt(np.maximum(uu_f, 0)) / u_tau,
            "v_rms+": np.sqrt(np.maximum(vv_f, 0)) / u_tau, "w_rms+": np.sqrt(np.maximum(ww_f, 0)) / u_tau,
            "-uv+": -uv_f / u_tau**2, "bulk": float(getattr(np, "trapezoid", getattr(np, "trapz", None))(U, y) / (y[-1] - y[0]))}


def _spline(x, f):
    try:
        from scipy.interpolate import CubicSpline

        return CubicSpline(x, f)
    except ImportError:  # linear between the points
        return lambda t: np.interp(t, x, f)


def _peak(x, f):
    fine = np.linspace(x[0], x[-1], 20001)
    values = _spline(x, f)(fine)
    i = int(np.argmax(values))
    return float(values[i]), float(fine[i])


def compare(ours: dict, mkm: dict) -> list[dict]:
    rows = []
    centre_ours, centre_mkm = float(ours["U+"][-1]), float(mkm["U+"][-1])
    for target in TARGETS:
        a, b = float(_spline(ours["y+"], ours["U+"])(target)), float(_spline(mkm["y+"], mkm["U+"])(target))
        rows.append({"quantity": f"U+ at y+ = {target:g}", "ours": a, "mkm": b, "kind": "U+"})
    rows.append({"quantity": "U+ at the centreline", "ours": centre_ours, "mkm": centre_mkm, "kind": "U+"})
    mkm_profiles = {"u_rms+": np.sqrt(mkm["uu"]), "v_rms+": np.sqrt(mkm["vv"]), "w_rms+": np.sqrt(mkm["ww"]),
                    "-uv+": -mkm["uv"]}
    for key, reference in mkm_profiles.items():
        (a, at_a), (b, at_b) = _peak(ours["y+"], ours[key]), _peak(mkm["y+"], reference)
        rows.append({"quantity": f"peak {key}", "ours": a, "mkm": b, "at_ours": at_a, "at_mkm": at_b, "kind": "peak"})
    for row in rows:
        row["error"] = (row["ours"] - row["mkm"]) / row["mkm"]
        row["within"] = bool(abs(row["error"]) <= TOLERANCE[row["kind"]])
    return rows


def plot(ours: dict, mkm: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.semilogx(mkm["y+"][1:], mkm["U+"][1:], "k-", label="MKM (1999)")
    left.semilogx(ours["y+"][1:], ours["U+"][1:], "o", ms=3, label="lobatto")
    left.set(xlabel="y+", ylabel="U+", title=f"mean velocity (Re_tau = {ours['re_tau']:.1f})")
    left.legend()
    for key, reference, colour in (("u_rms+", np.sqrt(mkm["uu"]), "C0"), ("v_rms+", np.sqrt(mkm["vv"]), "C1"),
                                   ("w_rms+", np.sqrt(mkm["ww"]), "C2"), ("-uv+", -mkm["uv"], "C3")):
        right.plot(mkm["y+"], reference, "-", color=colour, label=f"{key} MKM")
        right.plot(ours["y+"], ours[key], "o", ms=3, color=colour, label=f"{key} lobatto")
    right.set(xlabel="y+", title="Reynolds stresses (wall units)", xlim=(0, 180))
    right.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="NAME_statistics.h5 of the run (or of several runs)")
    parser.add_argument("--reference", type=Path, default=REFERENCE, help="the MKM directory (chan180.*)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--plot", type=Path, default=None, help="a PNG (matplotlib), e.g. docs/figures/channel180.png")
    args = parser.parse_args(argv)
    stats = combine([read_statistics(path) for path in args.files])
    mkm = read_mkm(args.reference)
    ours = analyse(stats)
    rows = compare(ours, mkm)
    print(f"files: {', '.join(stats['files'])}; samples {stats['samples']}, averaged over {stats['weight']:.4g} time "
          f"units to t = {stats['t_last']:.4g}")
    print(f"u_tau = {ours['u_tau']:.5f} (walls {ours['u_tau_walls'][0]:.5f}, {ours['u_tau_walls'][1]:.5f}; from the "
          f"total stress {ours['u_tau_stress']:.5f}); Re_tau = {ours['re_tau']:.2f} (MKM {mkm['re_tau']}); "
          f"bulk U = {ours['bulk']:.5f}")
    print(f"{'quantity':<24}{'lobatto':>10}{'MKM':>10}{'error':>10}  within")
    for row in rows:
        print(f"{row['quantity']:<24}{row['ours']:>10.4f}{row['mkm']:>10.4f}{100 * row['error']:>9.2f}%  "
              f"{'yes' if row['within'] else 'NO'} ({100 * TOLERANCE[row['kind']]:.0f} %)")
    if args.json is not None:
        record = {"files": stats["files"], "samples": stats["samples"], "weight": stats["weight"],
                  "t_last": stats["t_last"], **{k: ours[k] for k in ("u_tau", "u_tau_walls", "u_tau_stress",
                                                                      "re_tau", "bulk", "nu", "order")},
                  "rows": rows, "profiles": {k: np.asarray(ours[k]).tolist()
                                             for k in ("y+", "U+", "u_rms+", "v_rms+", "w_rms+", "-uv+")}}
        args.json.write_text(json.dumps(record, indent=1))
    if args.plot is not None:
        try:
            plot(ours, mkm, args.plot)
        except ImportError:
            print("no matplotlib: no plot", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
