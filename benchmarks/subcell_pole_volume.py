"""The volume an averaged dispersive table's poles act on (the GLL points whose control volume
is more than half inside: materials.pole_mask) against the table's own (sum of M times each
point's share: subcell.shares), for a ball and a thin shell on 4^3 elements of [-1, 1]^3 at
N = 3 and 5 (docs/electromagnetics.md, "Sub-cell averaging", "With dispersive poles"; above a
25 % difference the run warns). Prints a table; --json writes it. A few seconds on one core.
--timing also times subcell.shares (the sub-cell pass, as subcell.average makes it) per element
at N = 3, 5, 7 on 64 elements.

    PYTHONPATH=src python3 benchmarks/subcell_pole_volume.py [--json out.json] [--timing]
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
from lobatto.discretization.gll import gll_points
from lobatto.systems.maxwell import subcell

SHAPES = {"ball r = 0.45": "0.45**2 - x*x - y*y - z*z",
          "shell 0.55 < r < 0.62": "min(0.62 - sqrt(x*x + y*y + z*z), sqrt(x*x + y*y + z*z) - 0.55)"}


def volumes(where: str, order: int, elements: int = 4) -> tuple[float, float]:
    data = {"mesh": {"elements": [elements] * 3, "lower": [-1, -1, -1], "upper": [1, 1, 1]},
            "discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "material": {"b": {"where": where, "sampling": "average", "epsilon": 1.0, "model": "drude",
                               "poles": [{"plasma_frequency": 1.0, "collision_frequency": 0.2}]}},
            "time": {"t_end": 0.1}, "output": {"formats": []}}
    case = case_from_dict(data)
    with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):  # (and the warning)
        system = Simulation(case, backend="cpu", output_dir=out, comm=None).system
    (term,) = [t for t in system.terms if t.name == "dispersion.b"]
    acting = np.zeros(system.geometry.coords.shape[1:])
    acting[term.elements] = 1.0 if term.weight is None else np.asarray(term.weight)
    table = case.tables["material"].tables[0]
    level = lambda x, y, z, part: table.where.evaluate(np, x=x, y=y, z=z)
    shares = subcell.shares(system.mesh, system.geometry.coords, order, level)
    mass = system.geometry.mass
    return float(np.sum(mass * shares)), float(np.sum(mass * acting))


def shares_seconds(order: int, elements: int = 64) -> float:
    """Seconds per element of subcell.shares for a ball in each of a row of unit cubes."""
    x = (gll_points(order) + 1) / 2
    z3, y3, x3 = np.meshgrid(x, x, x, indexing="ij")
    shift = np.arange(elements)[None, :, None, None, None] * np.array([1.0, 0, 0])[:, None, None, None, None]
    coords = np.stack([x3, y3, z3])[:, None] + shift
    level = lambda x, y, z, part: 0.3 - (x % 1 - 0.5) ** 2 - (y - 0.5) ** 2 - (z - 0.5) ** 2
    start = time.perf_counter()
    subcell.shares(None, coords, order, level)
    return (time.perf_counter() - start) / elements


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--timing", action="store_true", help="also time subcell.shares per element")
    args = parser.parse_args()
    rows = []
    print(f"{'table':24s} {'N':>2s} {'volume (shares)':>16s} {'volume (poles)':>15s} {'ratio':>6s}")
    for name, where in SHAPES.items():
        for order in (3, 5):
            inside, poles = volumes(where, order)
            rows.append({"table": name, "order": order, "inside": inside, "poles": poles})
            print(f"{name:24s} {order:2d} {inside:16.4f} {poles:15.4f} {poles / inside:6.3f}")
    timing = {}
    if args.timing:
        for order in (3, 5, 7):
            timing[order] = shares_seconds(order)
            print(f"subcell.shares at N = {order}: {timing[order] * 1e3:.2f} ms per element")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"elements": 4, "rows": rows, "shares_seconds_per_element": timing}, f, indent=1)


if __name__ == "__main__":
    main()
