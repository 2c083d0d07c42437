"""Waveguide ports and S-parameters against exact results (docs/electromagnetics.md, "Ports and
S-parameters").

A PEC rectangular guide a x b = 1 x 0.5 along z (0 <= z <= 5.5, elements 0.5 x 0.5 x DZ,
[pml] on zmin and zmax, 1.0 deep each), TE10 (cutoff f_c = 0.5; TE20 cuts on at f = 1), the
band 0.6 - 0.95. Port "in" at z = 2 (launched at z = 1.5, into +z), port "out" at z = 3.5
(launched at z = 4, into -z), both driven (two runs). Cases:

* empty: S21 = S12 = exp(-i beta L), L = 1.5, S11 = S22 = 0;
* slab: eps = 2 for 2.5 <= z <= 3 (whole elements, the whole cross-section): the exact
  S-parameters of the section from the transfer matrix with beta_i = sqrt(eps_i (2 pi f)^2 -
  (pi/a)^2) and Z_i = omega mu / beta_i, moved to the port planes (0.5 on either side).

Printed per case, order and frequency: |S - S_exact| for S11 and S21, the passivity defect
|S11|^2 + |S21|^2 - 1 and the reciprocity defect |S21 - S12|; read back from the .s2p file with
scikit-rf. Each S-parameter is read at the frequencies of [ports]; the runs stop at t_end.

    PYTHONPATH=src python3 benchmarks/ports_waveguide.py --orders 4 --t-end 40    # a quick look
    PYTHONPATH=src python3 benchmarks/ports_waveguide.py --json benchmarks/ports_waveguide_cpu.json
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_maxwell_physics import commit, device_name  # noqa: E402

import lobatto  # noqa: E402
from lobatto.bench.report import write_json  # noqa: E402

A, B, LENGTH, EPSILON = 1.0, 0.5, 5.5, 2.0
PLANES, SOURCES, SLAB = (2.0, 3.5), (1.5, 4.0), (2.5, 3.0)
FREQUENCIES = [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]


def case(order: int, dz: float, t_end: float, slab: bool, layer: int, until: float | None) -> dict:
    out = {
        "mesh": {"elements": [2, 1, int(round(LENGTH / dz))], "upper": [A, B, LENGTH]},
        "discretization": {"order": order},
        "physics": {"equations": "maxwell"},
        "time": {"t_end": t_end, **({"until_decayed": until} if until else {})},
        "pml": {"sides": ["zmin", "zmax"], "thickness": 1.0, "reflection": 10.0 ** -layer},
        "port": {"in": {"plane": f"z = {PLANES[0]}", "source": f"z = {SOURCES[0]}", "direction": "+", "mode": "TE10"},
                 "out": {"plane": f"z = {PLANES[1]}", "source": f"z = {SOURCES[1]}", "direction": "-", "mode": "TE10"}},
        "ports": {"frequencies": FREQUENCIES},
        "output": {"formats": [], "name": "guide"},
    }
    if slab:
        out["material"] = {"slab": {"where": f"(z - {SLAB[0]})*({SLAB[1]} - z)", "sampling": "element",
                                    "epsilon": EPSILON}}
    return out


def exact(f: np.ndarray, slab: bool):
    """(S11, S21) at the port planes."""
    omega = 2 * np.pi * f
    beta1 = np.sqrt(omega**2 - (np.pi / A) ** 2)
    if not slab:
        return 0 * f, np.exp(-1j * beta1 * (PLANES[1] - PLANES[0]))
    beta2 = np.sqrt(EPSILON * omega**2 - (np.pi / A) ** 2)
    z1, z2 = omega / beta1, omega / beta2
    gamma = (z2 - z1) / (z2 + z1)
    d = SLAB[1] - SLAB[0]
    p = np.exp(-2j * beta2 * d)
    s11 = gamma * (1 - p) / (1 - gamma**2 * p)
    s21 = (1 - gamma**2) * np.exp(-1j * beta2 * d) / (1 - gamma**2 * p)
    l1, l2 = SLAB[0] - PLANES[0], PLANES[1] - SLAB[1]
    return s11 * np.exp(-2j * beta1 * l1), s21 * np.exp(-1j * beta1 * (l1 + l2))


def read_s(directory: Path):
    """(f, S) of the run: the .s2p as scikit-rf reads it, or the HDF5 file where scikit-rf is not
    installed (the GPU machine)."""
    try:
        import skrf
    except ImportError:
        import h5py

        with h5py.File(directory / "guide_sparams.h5", "r") as file:
            return file["frequencies"][()], file["S"][()]
    network = skrf.Network(str(directory / "guide.s2p"))
    return network.f, network.s


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--orders", type=int, nargs="+", default=[4, 6])
    parser.add_argument("--dz", type=float, default=0.5, help="element length along the guide")
    parser.add_argument("--t-end", type=float, default=60.0)
    parser.add_argument("--until-decayed", type=float, default=None)
    parser.add_argument("--layer", type=int, default=8, help="the [pml]'s target reflection is 10^-LAYER")
    parser.add_argument("--cases", nargs="+", default=["empty", "slab"], choices=["empty", "slab"])
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rows = []
    print(f"{'case':<6}{'N':>3}{'f':>7}{'|dS11|':>11}{'|dS21|':>11}{'passivity':>11}{'recipr.':>11}{'seconds':>9}")
    for name in args.cases:
        for order in args.orders:
            with tempfile.TemporaryDirectory() as tmp:
                start = time.perf_counter()
                lobatto.run(case(order, args.dz, args.t_end, name == "slab", args.layer, args.until_decayed),
                            backend=args.backend, output_dir=tmp)
                seconds = time.perf_counter() - start
                f, s = read_s(Path(tmp))
            s11, s21 = exact(f, name == "slab")
            for k in range(len(f)):
                row = {"case": name, "order": order, "frequency": float(f[k]),
                       "error_s11": float(abs(s[k, 0, 0] - s11[k])), "error_s21": float(abs(s[k, 1, 0] - s21[k])),
                       "error_s22": float(abs(s[k, 1, 1] - s11[k])), "error_s12": float(abs(s[k, 0, 1] - s21[k])),
                       "passivity": float(abs(s[k, 0, 0]) ** 2 + abs(s[k, 1, 0]) ** 2 - 1),
                       "reciprocity": float(abs(s[k, 1, 0] - s[k, 0, 1])), "seconds": seconds}
                rows.append(row)
                print(f"{name:<6}{order:>3}{f[k]:>7.3f}{row['error_s11']:>11.2e}{row['error_s21']:>11.2e}"
                      f"{row['passivity']:>11.2e}{row['reciprocity']:>11.2e}{seconds:>9.1f}")
    write_json(args.json, {"benchmark": "ports_waveguide", "device": device_name(args.backend),
                           "backend": args.backend, "commit": commit(),
                           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                           "arguments": vars(args), "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
