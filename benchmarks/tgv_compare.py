"""Compare a Taylor-Green vortex run (Re = 1600) with the 512^3 spectral reference.

    python benchmarks/tgv_compare.py RUN_DIR [--reference PATH] [--png docs/figures/tgv.png]
                                              [--json PATH]

Reads RUN_DIR/steps.jsonl (the per-step records of `lobatto run`: t, kinetic_energy,
dissipation = 2 nu enstrophy), differentiates the kinetic energy in time (centred
differences), and prints the peak of -dE/dt and its time beside the reference's
(0.0128575 at t = 8.97), with the relative difference; plots E(t) and -dE/dt(t) against the
reference when --png is given.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "tgv" / "spectral_Re1600_512.gdiag"


def read_run(run_dir: Path) -> dict:
    rows = [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "kinetic_energy" in r]
    t = np.array([r["t"] for r in rows])
    energy = np.array([r["kinetic_energy"] for r in rows])
    dissipation = np.array([r["dissipation"] for r in rows])
    return {"t": t, "energy": energy, "dissipation": dissipation}


def rate(t, energy):
    """-dE/dt at t by centred differences (one-sided at the ends)."""
    return -np.gradient(energy, t)


def peak(t, values):
    """(time, value) of the maximum, refined by a parabola through the three largest samples."""
    i = int(np.argmax(values))
    if 0 < i < len(values) - 1:
        a, b, c = values[i - 1:i + 2]
        h0, h1 = t[i] - t[i - 1], t[i + 1] - t[i]
        if abs(h0 - h1) < 1e-9 * max(h0, 1e-30) and (a - 2 * b + c) != 0:
            shift = 0.5 * (a - c) / (a - 2 * b + c)
            return t[i] + shift * h0, b - 0.25 * (a - c) * shift
    return float(t[i]), float(values[i])


def compare(run_dir: Path, reference: Path = REFERENCE) -> dict:
    run = read_run(run_dir)
    ref = np.loadtxt(reference, comments="#")
    minus_dedt = rate(run["t"], run["energy"])
    t_peak, eps_peak = peak(run["t"], minus_dedt)
    t_peak_ref, eps_peak_ref = peak(ref[:, 0], ref[:, 2])
    t_diss, diss_peak = peak(run["t"], run["dissipation"])
    return {
        "run": str(run_dir), "reference": str(reference),
        "t_final": float(run["t"][-1]), "samples": int(len(run["t"])),
        "peak_minus_dEdt": float(eps_peak), "peak_time": float(t_peak),
        "reference_peak": float(eps_peak_ref), "reference_peak_time": float(t_peak_ref),
        "relative_difference": float(eps_peak / eps_peak_ref - 1.0),
        "time_difference": float(t_peak - t_peak_ref),
        "peak_2nu_enstrophy": float(diss_peak), "peak_2nu_enstrophy_time": float(t_diss),
        "within_targets": bool(abs(eps_peak / eps_peak_ref - 1.0) <= 0.02 and abs(t_peak - t_peak_ref) <= 0.15),
    }, run, ref, minus_dedt


def plot(path: Path, run, ref, minus_dedt, label: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.plot(ref[:, 0], ref[:, 1], "k-", lw=1, label="spectral 512³")
    left.plot(run["t"], run["energy"], "r--", lw=1.2, label=label)
    left.set_xlabel("t")
    left.set_ylabel("E")
    left.legend()
    right.plot(ref[:, 0], ref[:, 2], "k-", lw=1, label="spectral 512³: −dE/dt")
    right.plot(run["t"], minus_dedt, "r--", lw=1.2, label=f"{label}: −dE/dt")
    right.plot(run["t"], run["dissipation"], "b:", lw=1.2, label=f"{label}: 2ν enstrophy")
    right.set_xlabel("t")
    right.set_ylabel("dissipation rate")
    right.legend()
    fig.suptitle("Taylor–Green vortex, Re = 1600")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--reference", type=Path, default=REFERENCE)
    parser.add_argument("--png", type=Path, default=None)
    parser.add_argument("--label", default="lobatto")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    result, run, ref, minus_dedt = compare(args.run_dir, args.reference)
    print(f"peak -dE/dt  {result['peak_minus_dEdt']:.7f} at t = {result['peak_time']:.3f}   reference "
          f"{result['reference_peak']:.7f} at t = {result['reference_peak_time']:.3f}   difference "
          f"{100 * result['relative_difference']:+.2f} %, {result['time_difference']:+.3f}")
    print(f"peak 2 nu enstrophy {result['peak_2nu_enstrophy']:.7f} at t = {result['peak_2nu_enstrophy_time']:.3f}")
    print(f"targets (2 %, 0.15): {'met' if result['within_targets'] else 'NOT met'}")
    if args.png:
        plot(args.png, run, ref, minus_dedt, args.label)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
