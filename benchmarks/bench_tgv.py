"""Taylor-Green vortex (Re = 1600) throughput: now ``lobatto bench navier-stokes``; this script
passes its arguments on and keeps ``tgv()``, the case the other scripts of benchmarks/ time.

    PYTHONPATH=src python3 benchmarks/bench_tgv.py --backend cuda --elements 36 --order 7 \
        --steps 20 --json out.json

is ``lobatto bench navier-stokes`` with the same options (src/lobatto/bench/navier_stokes.py,
docs/benchmarks.md). One difference from the script before it: ``--cfl C`` is now the case
file's [time] cfl, dt = C over the initial flow's largest CFL number per unit dt, where the
script took dt = C h_min / max|u|. On the 36^3 x N = 7 TGV the old rule's steps measured CFL
0.4998, so the two should agree there to a fraction of a percent (not compared directly); on
coarse meshes the new dt is larger (6^3 x N = 5: 0.0683 against 0.0615).
"""

from __future__ import annotations

import sys

from lobatto.api import case_from_dict
from lobatto.bench.navier_stokes import tgv_data


def tgv(elements: int, order: int, dt: float, diagnostics_every: int):
    """The built-in TGV of ``lobatto bench navier-stokes`` at a fixed dt, as a checked case."""
    data = tgv_data(elements, order)
    data["time"]["dt"] = dt
    data["physics"]["diagnostics_every"] = diagnostics_every
    data["output"]["log_every"] = 0
    return case_from_dict(data, name="tgv_bench")


def main(argv=None) -> int:
    from lobatto.cli import main as lobatto_main

    return lobatto_main(["bench", "navier-stokes", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
