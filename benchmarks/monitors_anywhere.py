"""The two studies of docs/electromagnetics.md's "Stopping when the fields have decayed" and
"Frequency-domain monitors" (interior surfaces), on the CPU; prints the tables, writes JSON.

    python benchmarks/monitors_anywhere.py [--json monitors_anywhere.json]

1. examples/drude_slab.toml stopped by [time] until_decayed (1e-6, 1e-12; the probes or the
   energy watched, decay_interval 1) against the same case run to its t_end = 20 (the same dt):
   where it stops and the largest difference of the DFT transforms on both ends, relative to
   their largest value.
2. A Gaussian pulse through 6 x 1 x 1 elements with absorbing ends (tests/unit/test_dft_planes.py's
   case) at N = 3, 4, 5: the flux through the interior planes x = 0.75, 1.25 against the boundary
   face xmax and the analytic flux, and the net flux out of the closed box 0.75 <= x <= 1.25.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import tomllib
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit"))

from lobatto.api import parse_case  # noqa: E402
from lobatto.runner.simulation import Simulation  # noqa: E402


def slab(**time) -> dict:
    data = tomllib.loads((ROOT / "examples" / "drude_slab.toml").read_text())
    for key in ("until_decayed", "decay_interval", "decay_watch"):
        data["time"].pop(key, None)
    data["time"].update(time)
    return data


def transforms(directory: Path) -> list:
    with h5py.File(next(directory.glob("*_dft.h5")), "r") as f:
        return [f[f"surfaces/{side}/Ey"][()] for side in ("xmin", "xmax")]


def decay_study(work: Path) -> list:
    Simulation(parse_case(slab(), name="ref"), "cpu", work / "ref", comm=None).run()
    reference = transforms(work / "ref")
    rows = []
    for fraction in (1e-6, 1e-12):
        for watch in ("probes", "energy"):
            name = f"{watch}_{fraction:g}"
            case = parse_case(slab(until_decayed=fraction, decay_interval=1.0, decay_watch=watch), name=name)
            summary = Simulation(case, "cpu", work / name, comm=None).run()
            error = max(float(np.abs(a - r).max() / np.abs(r).max()) for a, r in zip(transforms(work / name), reference))
            rows.append({"until_decayed": fraction, "watch": watch, "stopped": summary["stopped"],
                         "t": summary["t_final"], "steps": summary["steps"], "dft_difference": error})
    return rows


def planes_study(work: Path) -> list:
    from test_dft_planes import BOX, pulse

    analytic = 0.5 * (0.1 * np.sqrt(np.pi) * np.exp(-(np.pi * np.array([0.5, 1.0, 1.5]) * 0.1) ** 2)) ** 2 / 16
    rows = []
    for order in (3, 4, 5):
        case = pulse(order=order, planes=["x = 0.75", "x = 1.25"],
                     boxes=[{"lower": [0.75, 0, 0], "upper": [1.25, 0.25, 0.25]}])
        Simulation(case, "cpu", work / f"n{order}", comm=None).run()
        with h5py.File(work / f"n{order}" / "p_dft.h5", "r") as f:
            side = f["surfaces/xmax/flux/poynting_flux"][()]
            planes = [f[f"surfaces/{n}/flux/poynting_flux"][()] for n in ("x = 0.75", "x = 1.25")]
            box = f[f"surfaces/{BOX}/flux/poynting_flux"][()]
        rows.append({"order": order, "planes_vs_side": max(float(np.abs(p / side - 1).max()) for p in planes),
                     "planes_vs_analytic": max(float(np.abs(p / analytic - 1).max()) for p in planes),
                     "side_vs_analytic": float(np.abs(side / analytic - 1).max()),
                     "box_net_over_through": float((np.abs(box) / side).max())})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default="monitors_anywhere.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        decay, planes = decay_study(Path(tmp) / "decay"), planes_study(Path(tmp) / "planes")
    print("until_decayed  watch    stopped  t       steps  DFT difference")
    for r in decay:
        print(f"{r['until_decayed']:<14g} {r['watch']:<8} {r['stopped']:<8} {r['t']:<7.4g} {r['steps']:<6} "
              f"{r['dft_difference']:.2e}")
    print("\nN  planes vs xmax  planes vs analytic  xmax vs analytic  box net / through")
    for r in planes:
        print(f"{r['order']}  {r['planes_vs_side']:<15.2e} {r['planes_vs_analytic']:<19.2e} "
              f"{r['side_vs_analytic']:<17.2e} {r['box_net_over_through']:.2e}")
    Path(args.json).write_text(json.dumps({"decay": decay, "planes": planes}, indent=1))


if __name__ == "__main__":
    main()
