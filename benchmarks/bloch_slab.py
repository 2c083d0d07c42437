"""Oblique incidence through Bloch-periodic boundaries, as Meep does it: R and T of a dielectric
slab against the transfer-matrix (Airy) result at the angle each frequency has.

A cell periodic in x and y (one element of 0.25 each way, k = [k_par, 0, 0]) and long in z,
with a [pml] at both z ends. A current sheet (a thin Gaussian in z at z_s) carries e^{i k_par x}
(bloch.py applies the phase: J cos(k x) drives the real part, J sin(k x) the imaginary part) and
a Gaussian pulse in time; every frequency then travels at its own angle, sin(theta) = k_par / omega.
The slab (eps = 2.25, 3.0 <= z <= 3.5, on element faces) is run and a run without it; at a probe
between the sheet and the slab the reflected field is E_slab - E_vacuum, behind the slab the
transmitted field is E_slab; the complex field E_re + i E_im is Fourier transformed at each
frequency (the +omega part is the wave at k_par), so

    R(omega) = |E_r|^2 / |E_vacuum|^2 (between),   T(omega) = |E_t|^2 / |E_vacuum|^2 (behind)

(three E components; incident and reflected waves have the same |E| per unit amplitude, so
the ratio is the power ratio). s: the sheet's current along y; p: along x. The reference is the
Airy formula of the slab with the Fresnel coefficients at theta(omega), and T_ref = 1 - R_ref.

    PYTHONPATH=src python3 benchmarks/bloch_slab.py --angles 30 --order 4 --t-end 20   # a quick look
    PYTHONPATH=src python3 benchmarks/bloch_slab.py                                     # the study
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
from lobatto.analysis.resonance_table import probe_series  # noqa: E402
from lobatto.bench.report import write_json  # noqa: E402

EPSILON, LOWER, UPPER = 2.25, 3.0, 3.5
SHEET, BETWEEN, BEHIND, LENGTH = 1.5, 2.25, 4.75, 6.5
#: (band of frequencies checked, pulse centre frequency, pulse width) per angle at f = 1
BANDS = {30: ((0.8, 1.2), 1.0, 2.0), 60: ((0.95, 1.05), 1.0, 6.0)}
#: the [pml]'s (elements, target reflection at normal incidence) per angle: a graded layer reflects
#: R0^cos(theta) at theta, so 60 degrees (66 at the band's low end) needs a far smaller R0 (measured
#: with (4, 1e-6) at 60 degrees: errors of 5.7e-3 in R, s, the same at t_end 60 and 120)
LAYERS = {30: (4, 1e-6), 60: (8, 1e-12)}


def airy(omega, k_par, polarization: str):
    """R of the slab between vacua at (omega, k_par) (c = 1, mu = 1)."""
    kz1 = np.sqrt(omega**2 - k_par**2 + 0j)
    kz2 = np.sqrt(EPSILON * omega**2 - k_par**2 + 0j)
    if polarization == "s":
        r12 = (kz1 - kz2) / (kz1 + kz2)
    else:
        r12 = (EPSILON * kz1 - kz2) / (EPSILON * kz1 + kz2)
    phase = np.exp(2j * kz2 * (UPPER - LOWER))
    r = r12 * (1 - phase) / (1 - r12**2 * phase)
    return np.abs(r) ** 2


def slab_case(k_par, polarization, slab, order, t_end, f0, width, layer=(4, 1e-6)) -> dict:
    current = "Jy" if polarization == "s" else "Jx"
    t0 = 3 * width
    extra = (layer[0] - 4) * 0.25  # a thicker layer lengthens the cell at both ends
    data = {"mesh": {"elements": [1, 1, int(round((LENGTH + 2 * extra) / 0.25))], "periodic": [True, True, False],
                     "lower": [0.0, 0.0, -extra], "upper": [0.25, 0.25, LENGTH + extra], "boundary": "pec"},
            "discretization": {"order": order}, "physics": {"equations": "maxwell", "bloch_k": [k_par, 0.0, 0.0]},
            "pml": {"sides": ["zmin", "zmax"], "elements": layer[0], "reflection": layer[1]},
            "source": {"sheet": {"type": "current", current: f"exp(-((t-{t0})/{width})**2)*cos(2*pi*{f0}*(t-{t0}))"
                                                             f"*exp(-((z-{SHEET})/0.05)**2)"}},
            "time": {"t_end": t_end}, "output": {"formats": [], "every": 0, "probes": {
                "every": 2, "points": [[0.1, 0.1, BETWEEN], [0.1, 0.1, BEHIND]],
                "fields": ["Ex", "Ey", "Ez", "Ex_im", "Ey_im", "Ez_im"]}}}
    if slab:
        data["material"] = {"slab": {"where": f"{(UPPER - LOWER) / 2} - abs(z - {(UPPER + LOWER) / 2})",
                                     "epsilon": EPSILON, "sampling": "element"}}
    return data


def spectra(directory: Path, omegas, taper: float = 0.0) -> dict:
    """{probe: (omega, 3) complex transforms of E_re + i E_im}, and the last sample's size.
    ``taper``: the share of the record at its end brought to zero by a half cosine (the same
    for both runs), which keeps what lingers at the end (waves near the cutoff, grazing, slow to
    leave) from leaking into the band; 0: none."""
    out = {}
    for probe in ("p0", "p1"):
        parts = [probe_series(directory, probe, f) for f in ("Ex", "Ey", "Ez", "Ex_im", "Ey_im", "Ez_im")]
        t = parts[0]["time"]
        field = np.stack([parts[c]["values"] + 1j * parts[c + 3]["values"] for c in range(3)])  # (3, samples)
        dt = np.gradient(t)
        start = t[-1] - taper * (t[-1] - t[0])
        window = np.where(t <= start, 1.0, 0.5 * (1 + np.cos(np.pi * (t - start) / max(t[-1] - start, 1e-300))))
        out[probe] = np.exp(1j * np.outer(omegas, t)) @ (field * dt * window).T
        out[probe + "_tail"] = float(np.abs(field[:, -1]).max() / np.abs(field).max())
    return out


def study(angle, polarization, order, t_end, backend, scratch: Path, taper: float = 0.0) -> dict:
    (f_lo, f_hi), f0, width = BANDS[angle]
    k_par = 2 * np.pi * np.sin(np.radians(angle))
    omegas = 2 * np.pi * np.linspace(f_lo, f_hi, 9)
    got = {}
    for slab in (False, True):
        out = scratch / f"{angle}{polarization}{int(slab)}"
        case = lobatto.case_from_dict(slab_case(k_par, polarization, slab, order, t_end, f0, width, LAYERS[angle]),
                                      name="slab")
        lobatto.run(case, output_dir=out, backend=backend)
        got[slab] = spectra(out, omegas, taper)
    vacuum, slab = got[False], got[True]
    R = np.sum(np.abs(slab["p0"] - vacuum["p0"]) ** 2, axis=1) / np.sum(np.abs(vacuum["p0"]) ** 2, axis=1)
    T = np.sum(np.abs(slab["p1"]) ** 2, axis=1) / np.sum(np.abs(vacuum["p1"]) ** 2, axis=1)
    R_ref = airy(omegas, k_par, polarization)
    return {"angle_at_f1": angle, "polarization": polarization, "order": order, "t_end": t_end, "taper": taper,
            "pml": {"elements": LAYERS[angle][0], "reflection": LAYERS[angle][1]},
            "frequency": (omegas / 2 / np.pi).tolist(), "theta": np.degrees(np.arcsin(k_par / omegas)).tolist(),
            "R": R.tolist(), "T": T.tolist(), "R_ref": R_ref.tolist(), "T_ref": (1 - R_ref).tolist(),
            "R_error": float(np.abs(R - R_ref).max()), "T_error": float(np.abs(T - 1 + R_ref).max()),
            "R_plus_T_minus_1": float(np.abs(R + T - 1).max()),
            "tail": max(vacuum["p0_tail"], vacuum["p1_tail"], slab["p0_tail"], slab["p1_tail"])}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--order", type=int, default=6)
    parser.add_argument("--angles", type=int, nargs="+", default=[30, 60], choices=sorted(BANDS))
    parser.add_argument("--polarizations", nargs="+", default=["s", "p"], choices=["s", "p"])
    parser.add_argument("--t-end", type=float, default=None, help="default: 25 (30 degrees), 60 (60 degrees)")
    parser.add_argument("--taper", type=float, default=0.0, help="share of the record tapered at its end")
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs' outputs in this directory")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        scratch = args.keep or temporary
        for angle in args.angles:
            for pol in args.polarizations:
                t_end = args.t_end or {30: 25.0, 60: 60.0}[angle]
                rows.append(study(angle, pol, args.order, t_end, args.backend, Path(scratch), args.taper))
                row = rows[-1]
                print(f"{angle} deg at f = 1, {pol}: max |R - R_ref| {row['R_error']:.2e}, max |T - T_ref| "
                      f"{row['T_error']:.2e}, max |R + T - 1| {row['R_plus_T_minus_1']:.2e}, field left at the end "
                      f"{row['tail']:.1e}", flush=True)
                for f, th, r, rr, t in zip(row["frequency"], row["theta"], row["R"], row["R_ref"], row["T"]):
                    print(f"   f = {f:.3f}  theta = {th:5.2f}  R = {r:.6f}  R_ref = {rr:.6f}  T = {t:.6f}  "
                          f"T_ref = {1 - rr:.6f}")
    result = {"benchmark": "bloch_slab", "device": device_name(args.backend), "backend": args.backend,
              "commit": commit(), "date": datetime.date.today().isoformat(), "epsilon": EPSILON,
              "slab": [LOWER, UPPER], "rows": rows}
    write_json(Path(args.json) if args.json else HERE / f"bloch_slab_{args.backend}.json", result)


if __name__ == "__main__":
    main()
