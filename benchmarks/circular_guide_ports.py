"""An empty circular waveguide through the ports with the solved and the analytic circular modes
(docs/electromagnetics.md, "Port modes of any cross-section"): S11 = 0 and S21 = exp(-i beta L) for TE11, shape = "circle" (circular_mode)
and shape = "any" (mode "TE1" from solved_modes), and the two against each other.

The O-grid cylinder of tests/cylwave.py (radius 0.5, m = 1: 5 elements per layer, circle-arc
walls), 0 <= z <= 4 in 16 layers, PEC ends behind a [pml] 1.0 deep at each; port "in" launched
at z = 1.25 and measured at z = 1.5, port "out" launched at z = 2.75 and measured at z = 2.5
(L = 1). TE11's cutoff is f_c = j'_11 / (2 pi R) = 0.586; TM01 cuts on at 0.766 and TE21 at 0.972,
but neither is excited in the empty guide.

    python benchmarks/circular_guide_ports.py --orders 4      # CPU: about 5 minutes (four runs)
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.special import jnp_zeros

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent / "tests"))  # cylwave.py

from cylwave import cylinder_rea  # noqa: E402

import lobatto  # noqa: E402
from lobatto.bench.report import write_json  # noqa: E402
from lobatto.systems.maxwell import port_modes  # noqa: E402  (the ports' registry)
from lobatto.systems.maxwell.port_mode_solver import any_shape, circle_shape  # noqa: E402

RADIUS, LENGTH, LAYERS = 0.5, 4.0, 16
PLANES = (1.5, 2.5)
FREQUENCIES = [0.65, 0.7, 0.8, 0.9]


def case(mesh: Path, order: int, shape: str, mode: str, t_end: float) -> dict:
    return {"mesh": {"generator": "nek", "file": str(mesh), "boundaries": {"PEC": "pec"}},
            "discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "time": {"t_end": t_end},
            "pml": {"sides": ["zmin", "zmax"], "thickness": 1.0, "reflection": 1e-8},
            "port": {"in": {"plane": f"z = {PLANES[0]}", "source": "z = 1.25", "direction": "+", "shape": shape,
                            "mode": mode},
                     "out": {"plane": f"z = {PLANES[1]}", "source": "z = 2.75", "direction": "-", "shape": shape,
                             "mode": mode}},
            "ports": {"frequencies": FREQUENCIES}, "output": {"formats": [], "name": "guide"}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--orders", type=int, nargs="+", default=[4])
    parser.add_argument("--t-end", type=float, default=50.0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    import h5py

    for shape, function in (("circle", circle_shape), ("any", any_shape)):
        if shape not in port_modes.MODES:  # before the lead's wiring
            port_modes.register_shape(shape, function)
    f = np.array(FREQUENCIES)
    fc = jnp_zeros(1, 1)[0] / (2 * np.pi * RADIUS)
    s21 = np.exp(-1j * 2 * np.pi * np.sqrt(f * f - fc * fc) * (PLANES[1] - PLANES[0]))
    rows = []
    print(f"{'N':>3}{'shape':>8}{'f':>7}{'|S11|':>10}{'|S21-exact|':>13}{'|S12-S21|':>11}{'seconds':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        mesh = Path(tmp) / "guide.rea"
        cylinder_rea(mesh, m=1, layers=LAYERS, radius=RADIUS, length=LENGTH, ends="PEC")
        for order in args.orders:
            s_of = {}
            for shape, mode in (("circle", "TE11"), ("any", "TE1")):
                start = time.perf_counter()
                lobatto.run(case(mesh, order, shape, mode, args.t_end), backend=args.backend,
                            output_dir=str(Path(tmp) / f"{shape}{order}"))
                seconds = time.perf_counter() - start
                with h5py.File(Path(tmp) / f"{shape}{order}" / "guide_sparams.h5", "r") as h5:
                    s = s_of[shape] = h5["S"][()]
                for k in range(len(f)):
                    row = {"order": order, "shape": shape, "frequency": float(f[k]), "s11": float(abs(s[k, 0, 0])),
                           "error_s21": float(abs(s[k, 1, 0] - s21[k])),
                           "reciprocity": float(abs(s[k, 0, 1] - s[k, 1, 0])), "seconds": seconds}
                    rows.append(row)
                    print(f"{order:>3}{shape:>8}{f[k]:>7.3f}{row['s11']:>10.2e}{row['error_s21']:>13.2e}"
                          f"{row['reciprocity']:>11.2e}{seconds:>9.1f}")
            print(f"N = {order}: max |S_circle - S_any| = {np.abs(s_of['circle'] - s_of['any']).max():.2e}")
    write_json(args.json, {"benchmark": "circular_guide_ports", "backend": args.backend,
                           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                           "arguments": vars(args), "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
