"""Resonances of a PEC unit cube (c = 1) against omega = pi sqrt(l^2 + m^2 + n^2), at several
orders N (docs/electromagnetics.md, "Resonances"). CPU; about half a minute at N = 8.

    python benchmarks/cavity_resonances.py [--orders 4 6 8] [--elements 2] [--dt 0.005] [--t-end 20]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import lobatto
from lobatto.analysis import resonances
from lobatto.analysis.resonance_table import probe_series, uniform_step

INITIAL = {"Ez": "x*(1-x)*y*(1-y)*(1+x+2*y)*exp(z)", "Ex": "y*(1-y)*z*(1-z)*(1+2*z-y+x)"}
PROBE = [0.31, 0.43, 0.27]
#: l^2 + m^2 + n^2 of the modes reported, and their (l, m, n)
MODES = {2: "(1,1,0)", 3: "(1,1,1)", 5: "(1,2,0)", 6: "(1,1,2)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, nargs="+", default=[4, 6, 8])
    parser.add_argument("--elements", type=int, default=2)
    parser.add_argument("--dt", type=float, default=0.005)
    parser.add_argument("--t-end", type=float, default=20.0)
    parser.add_argument("--every", type=int, default=8, help="steps between probe samples")
    args = parser.parse_args()
    print(f"{args.elements}^3 elements, dt {args.dt}, t_end {args.t_end}, probe {PROBE} every {args.every} steps")
    print("N     " + "  ".join(f"{MODES[s]:>20}" for s in MODES) + "   run s")
    for order in args.orders:
        data = {"mesh": {"elements": [args.elements] * 3, "boundary": "pec"}, "discretization": {"order": order},
                "physics": {"equations": "maxwell"}, "initial": INITIAL,
                "time": {"t_end": args.t_end, "dt": args.dt},
                "output": {"every": 0, "formats": [],
                           "probes": {"every": args.every, "points": [PROBE], "fields": ["Ez"]}}}
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            lobatto.run(lobatto.case_from_dict(data, name="cavity"), output_dir=Path(tmp), backend="cpu")
            seconds = time.perf_counter() - start
            series = probe_series(tmp, "p0", "Ez")
        kept, step = uniform_step(series["time"], series["path"])
        modes = resonances(series["values"][kept], step)
        cells = []
        for squares in MODES:
            exact = np.pi * np.sqrt(squares)
            i = int(np.argmin(np.abs(modes.omega - exact)))
            cells.append(f"{abs(modes.omega[i] - exact) / exact:9.2e} (est {modes.relative_error[i]:7.1e})")
        print(f"{order:<5} " + "  ".join(cells) + f"   {seconds:5.1f}")


if __name__ == "__main__":
    main()
