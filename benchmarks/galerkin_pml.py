"""The [pml] layer with each volume form: ``python benchmarks/galerkin_pml.py``.

tests/unit/test_maxwell_pml.py's measure, for volume_form "split" and "galerkin" (the Galerkin
form's step factor on the step): a 2D-like pulse from the centre of the unit square, padded by two
layer elements (N = 4, spacing 0.25) with PEC or absorbing walls behind them, against a run on a
domain 0.75 larger on every side; the reflection is the largest energy of the difference in the
interior, relative to the pulse's. Also Silver-Mueller walls without a layer. Prints a table;
writes JSON (``--json``).

    PYTHONPATH=src python benchmarks/galerkin_pml.py        # about a minute on one core
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "unit"))
sys.path.insert(0, str(HERE.parent / "tests"))

from lobatto.bench.report import processor, write_json  # noqa: E402
from lobatto.systems.maxwell import galerkin  # noqa: E402
from test_maxwell_pml import ORDER, H, beam_run  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=str(HERE / "results" / f"galerkin_pml_cpu_{datetime.date.today()}.json"))
    args = ap.parse_args()
    rows = {}
    for form in ("split", "galerkin"):
        factor = galerkin.step_factor(ORDER) if form == "galerkin" else 1.0
        run = lambda pad, layers, boundary: beam_run(pad, layers, boundary, volume_form=form,  # noqa: E731
                                                     step_factor=factor)
        reference, mass, _ = run(0.75, 0, "absorbing")
        energy0 = 0.5 * np.sum(mass * np.sum(reference[0] ** 2, axis=0))

        def reflected(samples):
            return max(0.5 * np.sum(mass * np.sum((s - r) ** 2, axis=0)) for s, r in zip(samples, reference)) / energy0

        rows[form] = {"silver_mueller": reflected(run(0.0, 0, "absorbing")[0]),
                      "layer_pec": reflected(run(2 * H, 2, "pec")[0]),
                      "layer_absorbing": reflected(run(2 * H, 2, "absorbing")[0]), "step_factor": factor}
        r = rows[form]
        print(f"{form:>9}: Silver-Mueller {r['silver_mueller']:.3e}, layer + PEC {r['layer_pec']:.3e}, "
              f"layer + absorbing {r['layer_absorbing']:.3e}", flush=True)
    write_json(args.json, {"what": "reflection of a pulse from two PML elements, each volume form (N = 4)",
                           "machine": processor(), "date": str(datetime.date.today()),
                           "command": " ".join(["python"] + sys.argv), "rows": rows},
               indent=1, default=None, end="\n", say="wrote")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
