"""Oblique TF/SF plane waves with Bloch-periodic boundaries: R and T of a dielectric slab from a
continuous plane wave, against the transfer-matrix (Airy) result at that angle.

The cell of benchmarks/bloch_slab.py (periodic in x and y, one element of 0.25 each way, a
[pml] at both z ends (4 elements, 8 at 60 degrees, as there), the slab eps = 2.25 at 3.0 <= z <= 3.5 on element faces),
but lit by a `type = "plane_wave"` source: waveform "continuous" at f = 1 with a ramp,
direction (sin theta, 0, cos theta), [physics] bloch_k = [2 pi sin theta, 0, 0], the
total-field box 1.5 <= z <= 5.0 across the whole cell in x and y. Only the reflected wave is in
the scattered-field region upstream (a probe at z = 1.25), only the transmitted wave behind the
slab (z = 4.75, total field), so with the complex field U = E + i E_im (unit incident |E|)

    R = sum_c |U_c(f)|^2 upstream,   T = sum_c |U_c(f)|^2 behind

where U_c(f) is the mean of U_c(t) e^{2 pi i f t} over the run's last `--periods` periods (the
+f part: what the ramp's transient leaves at other frequencies averages out, the better the more
periods: at 60 degrees the grazing waves near the cutoff f sin(theta) = 0.87 linger). Without the
slab the same transforms upstream and downstream (z = 5.25, scattered field) measure the TF/SF
leak.

    PYTHONPATH=src python3 benchmarks/bloch_tfsf_slab.py --order 4 --polarizations s   # a quick look
    PYTHONPATH=src python3 benchmarks/bloch_tfsf_slab.py                                # 30 degrees
    PYTHONPATH=src python3 benchmarks/bloch_tfsf_slab.py --angles 60 --ramp 16 --t-end 50 --periods 4 8 16 \
        --json benchmarks/bloch_tfsf_slab_60_cpu.json
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_maxwell_physics import commit, device_name  # noqa: E402
from bloch_slab import EPSILON, LAYERS, LENGTH, LOWER, UPPER, airy  # noqa: E402

import lobatto  # noqa: E402
from lobatto.analysis.resonance_table import probe_series  # noqa: E402
from lobatto.bench.report import write_json  # noqa: E402

TF_LOWER, TF_UPPER = 1.5, 5.0
PROBES = {"upstream": 1.25, "behind": 4.75, "downstream": 5.25}
FIELDS = ("Ex", "Ey", "Ez", "Ex_im", "Ey_im", "Ez_im")


def tfsf_case(angle, polarization, slab, order, t_end, ramp) -> dict:
    theta = math.radians(angle)
    direction = [math.sin(theta), 0.0, math.cos(theta)]
    p = [0.0, 1.0, 0.0] if polarization == "s" else [math.cos(theta), 0.0, -math.sin(theta)]
    layer = LAYERS.get(round(angle), LAYERS[30])  # bloch_slab.py's (a thicker layer at 60 degrees)
    extra = (layer[0] - 4) * 0.25  # which lengthens the cell at both ends
    data = {"mesh": {"elements": [1, 1, int(round((LENGTH + 2 * extra) / 0.25))], "periodic": [True, True, False],
                     "lower": [0.0, 0.0, -extra], "upper": [0.25, 0.25, LENGTH + extra], "boundary": "pec"},
            "discretization": {"order": order},
            "physics": {"equations": "maxwell", "bloch_k": [2 * math.pi * math.sin(theta), 0.0, 0.0]},
            "pml": {"sides": ["zmin", "zmax"], "elements": layer[0], "reflection": layer[1]},
            "source": {"inc": {"type": "plane_wave", "direction": direction, "polarization": p,
                               "waveform": "continuous", "frequency": 1.0, "ramp": ramp,
                               "lower": [0.0, 0.0, TF_LOWER], "upper": [0.25, 0.25, TF_UPPER]}},
            "time": {"t_end": t_end}, "output": {"formats": [], "every": 0, "probes": {
                "every": 2, "points": [[0.1, 0.1, z] for z in PROBES.values()], "fields": list(FIELDS)}}}
    if slab:
        data["material"] = {"slab": {"where": f"{(UPPER - LOWER) / 2} - abs(z - {(UPPER + LOWER) / 2})",
                                     "epsilon": EPSILON, "sampling": "element"}}
    return data


def power_at_f(directory: Path, probe: str, periods: float, f: float = 1.0) -> float:
    """sum_c |U_c(f)|^2, U_c(f) the mean of U_c e^{2 pi i f t} over the last ``periods``."""
    parts = [probe_series(directory, probe, name) for name in FIELDS]
    t = parts[0]["time"]
    keep = t >= t[-1] - periods / f
    u = np.stack([parts[c]["values"] + 1j * parts[c + 3]["values"] for c in range(3)])[:, keep]
    w = np.gradient(t[keep])
    return float(np.sum(np.abs((u * np.exp(2j * np.pi * f * t[keep]) * w).sum(axis=1) / w.sum()) ** 2))


def study(angle, polarization, order, t_end, ramp, periods, backend, scratch: Path) -> dict:
    """The row of one angle and polarisation: R, T and the leak from the last ``periods[-1]``
    periods, and ``by_periods`` the same for each of ``periods`` (what the transient leaves)."""
    k_par = 2 * np.pi * np.sin(np.radians(angle))
    runs, seconds = {}, {}
    for slab in (False, True):
        out = scratch / f"{angle}{polarization}{int(slab)}"
        case = lobatto.case_from_dict(tfsf_case(angle, polarization, slab, order, t_end, ramp), name="slab")
        start = time.perf_counter()
        lobatto.run(case, output_dir=out, backend=backend)
        seconds[slab], runs[slab] = time.perf_counter() - start, out
    R_ref = float(airy(2 * np.pi, k_par, polarization))
    by_periods = {}
    for count in periods:
        got = {slab: {name: power_at_f(runs[slab], f"p{i}", count) for i, name in enumerate(PROBES)}
               for slab in runs}
        R, T = got[True]["upstream"], got[True]["behind"]
        by_periods[count] = {"R": R, "T": T, "R_error": abs(R - R_ref), "T_error": abs(T - 1 + R_ref),
                             "R_plus_T_minus_1": abs(R + T - 1), "leak_upstream": math.sqrt(got[False]["upstream"]),
                             "leak_downstream": math.sqrt(got[False]["downstream"]),
                             "vacuum_behind": math.sqrt(got[False]["behind"])}
    return {"angle": angle, "polarization": polarization, "order": order, "t_end": t_end, "ramp": ramp,
            "periods": periods[-1], "R_ref": R_ref, "T_ref": 1 - R_ref, **by_periods[periods[-1]],
            "by_periods": {str(k): v for k, v in by_periods.items()}, "seconds": seconds[True]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--order", type=int, default=5)
    parser.add_argument("--angles", type=float, nargs="+", default=[30.0])
    parser.add_argument("--polarizations", nargs="+", default=["s", "p"], choices=["s", "p"])
    parser.add_argument("--t-end", type=float, default=30.0)
    parser.add_argument("--ramp", type=float, default=8.0)
    parser.add_argument("--periods", type=float, nargs="+", default=[4.0],
                        help="periods at the end transformed (the row's values: the last; each in by_periods)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for angle in args.angles:
            for pol in args.polarizations:
                row = study(angle, pol, args.order, args.t_end, args.ramp, args.periods, args.backend, Path(scratch))
                rows.append(row)
                print(f"{angle:g} deg, {pol}, N = {args.order}: R = {row['R']:.6f} (Airy {row['R_ref']:.6f}, error "
                      f"{row['R_error']:.1e}), T = {row['T']:.6f} (error {row['T_error']:.1e}), |R + T - 1| "
                      f"{row['R_plus_T_minus_1']:.1e}; without the slab: scattered |E| upstream "
                      f"{row['leak_upstream']:.1e}, downstream {row['leak_downstream']:.1e}, total |E| behind "
                      f"{row['vacuum_behind']:.6f}; {row['seconds']:.0f} s a run", flush=True)
                for count, got in row["by_periods"].items():
                    print(f"   over the last {count} periods: R error {got['R_error']:.1e}, T error "
                          f"{got['T_error']:.1e}, leak {got['leak_upstream']:.1e}, {got['leak_downstream']:.1e}")
    result = {"benchmark": "bloch_tfsf_slab", "device": device_name(args.backend), "backend": args.backend,
              "commit": commit(), "date": datetime.date.today().isoformat(), "epsilon": EPSILON,
              "slab": [LOWER, UPPER], "total_field_box_z": [TF_LOWER, TF_UPPER], "rows": rows}
    write_json(Path(args.json) if args.json else HERE / f"bloch_tfsf_slab_{args.backend}.json", result)


if __name__ == "__main__":
    main()
