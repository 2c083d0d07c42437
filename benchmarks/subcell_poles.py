"""Sub-cell averaging with dispersive poles (systems/maxwell/subcell.py, materials.pole_mask):
"point" against "average" sampling of a Lorentz slab whose faces cut through elements, for a
weak and a strong pole, as the elements shrink.

A Gaussian pulse Ey = Hz = exp(-((x - 0.6)/0.15)^2) hits the slab 1.125 < x < 1.875 (eps_inf 2,
one Lorentz pole: resonance 1, damping 0.3, delta_eps 0.1 or 1.5) on 0 < x < 2.5, absorbing ends,
periodic in y, z; at t = 1.6 E_y is sampled at 300 points and compared with a run whose element
faces follow the slab's (40 elements, "element" sampling, the same N): the RMS difference over
the reference's peak. "average" averages eps_inf (the Farjadpour/Kottke rule) and keeps the poles
per point, as Meep does (its docs, "Subpixel Smoothing", "What about dispersive materials?").

    PYTHONPATH=src python3 benchmarks/subcell_poles.py [--elements 7 13 25] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time

import numpy as np

from lobatto.api import Simulation, case_from_dict
from lobatto.discretization.gll import interpolation_matrix

ORDER, REFERENCE, SAMPLES = 4, 40, np.linspace(0.01, 2.49, 300)


def profile(elements: int, sampling: str, delta: float, directory: str) -> np.ndarray:
    """E_y at t_end on SAMPLES (the fields do not vary in y, z)."""
    data = {"mesh": {"elements": [elements, 1, 1], "upper": [2.5, 0.2, 0.2], "periodic": [False, True, True],
                     "boundary": "absorbing"},
            "discretization": {"order": ORDER}, "physics": {"equations": "maxwell"},
            "initial": {"Ey": "exp(-((x-0.6)/0.15)**2)", "Hz": "exp(-((x-0.6)/0.15)**2)"},
            "time": {"t_end": 1.6, "cfl": 0.5}, "output": {"formats": []},
            "material": {"slab": {"where": "min(x - 1.125, 1.875 - x)", "epsilon": 2.0, "sampling": sampling,
                                  "model": "lorentz", "poles": [{"resonance_frequency": 1.0, "delta_epsilon": delta,
                                                                 "damping_frequency": 0.3}]}}}
    with contextlib.redirect_stdout(io.StringIO()):
        sim = Simulation(case_from_dict(data), backend="cpu", output_dir=directory, comm=None)
        sim.run()
    x = np.asarray(sim.system.geometry.coords[0])[:, 0, 0, :]  # (E, n): x is the last axis
    ey = np.asarray(sim.u)[1][:, 0, 0, :]
    out = np.empty(SAMPLES.size)
    for e in range(elements):
        at = (SAMPLES >= x[e, 0]) & (SAMPLES <= x[e, -1])
        out[at] = interpolation_matrix(ORDER, 2 * (SAMPLES[at] - x[e, 0]) / (x[e, -1] - x[e, 0]) - 1) @ ey[e]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, nargs="*", default=[7, 13, 25])
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as root:
        print("| delta_eps | elements | h | error, point | error, average |")
        print("| --- | --- | --- | --- | --- |")
        for delta in (0.1, 1.5):
            reference = profile(REFERENCE, "element", delta, f"{root}/ref")
            for elements in args.elements:
                start = time.perf_counter()
                errors = {s: float(np.sqrt(np.mean((profile(elements, s, delta, f"{root}/{s}") - reference) ** 2))
                                   / np.abs(reference).max()) for s in ("point", "average")}
                rows.append({"delta_epsilon": delta, "elements": elements, "h": 2.5 / elements, **errors,
                             "seconds": time.perf_counter() - start})
                print(f"| {delta} | {elements} | {2.5 / elements:.3f} | {errors['point']:.3g} | "
                      f"{errors['average']:.3g} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"order": ORDER, "reference_elements": REFERENCE, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
