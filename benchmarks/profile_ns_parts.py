"""Where a Navier–Stokes step's time goes, operation by operation (device synchronised
around each): the derivative contraction, curl, weak divergence, gather-scatter, assembled
dot, the residual projection, the dealiased convective term, the filter, and the two solves.

    PYTHONPATH=src python3 benchmarks/profile_ns_parts.py --backend cuda --elements 24 36 --json out.json

Each operation is repeated --repeat times after one warm-up call; the table gives ms per
call and the effective bandwidth of one pass over a scalar field (bytes of E (N+1)^3 values
divided by the time), to compare with the device's copy bandwidth.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tgv import tgv  # noqa: E402

from lobatto.api import Simulation  # noqa: E402
from lobatto.discretization import gll_points  # noqa: E402
from lobatto.discretization.tensor import derivative_r, derivative_s, derivative_t  # noqa: E402
from lobatto.operators import curl, weak_divergence  # noqa: E402


def timed(backend, fn, repeat):
    fn()
    backend.synchronize()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    backend.synchronize()
    return (time.perf_counter() - start) / repeat


def profile(backend_name, elements, order, repeat):
    x = gll_points(order)
    dt = 0.5 * (x[1] - x[0]) / 2 * (2 * math.pi / elements)
    sim = Simulation(tgv(elements, order, dt, 0), backend=backend_name, output_dir="/tmp/profile_ns", comm=None)
    with contextlib.redirect_stdout(io.StringIO()):
        sim.advance(10)
    s, b = sim.system, sim.backend
    xp = b.xp
    g = s.device_geometry
    u = sim.u
    v = u[:3].copy()
    f = u[0].copy()
    d = g.derivative
    rows = {}
    rows["derivative_r (1 field)"] = timed(b, lambda: derivative_r(xp, f, d), repeat)
    rows["derivative_s (1 field)"] = timed(b, lambda: derivative_s(xp, f, d), repeat)
    rows["derivative_t (1 field)"] = timed(b, lambda: derivative_t(xp, f, d), repeat)
    rows["curl (3 fields)"] = timed(b, lambda: curl(g, b, v), repeat)
    rows["weak_divergence"] = timed(b, lambda: weak_divergence(g, b, v), repeat)
    rows["dssum (3 fields)"] = timed(b, lambda: s.assembly.dssum(v.copy()), repeat)
    rows["dssum (1 field)"] = timed(b, lambda: s.assembly.dssum(f.copy()), repeat)
    rows["copy (1 field)"] = timed(b, lambda: f.copy(), repeat)
    rows["axpy f += 2 f"] = timed(b, lambda: f.__iadd__(2.0 * f), repeat)
    rows["assembled dot"] = timed(b, lambda: s.pressure_level.assembly.dot(f, f), repeat)
    rows["pressure operator apply"] = timed(b, lambda: s.pressure_level.apply(f), repeat)
    proj = s.pressure_solver.projection
    if proj is not None and len(proj):
        rows[f"projection.project ({len(proj)} vectors)"] = timed(b, lambda: proj.project(f), repeat)
    rows["convective (u, u) dealiased"] = timed(b, lambda: s.advection.convective(v, v), repeat)
    if s.filter is not None:
        rows["filter relaxation"] = timed(b, lambda: s.filter.relaxation(v), repeat)
    rows["whole step"] = timed(b, lambda: sim.advance(1), max(3, repeat // 4))
    bytes_field = s.points * 8
    print(f"\n{backend_name} {elements}^3 N={order}: {s.points:,} points, one field {bytes_field / 1e6:.0f} MB")
    for k, t in rows.items():
        print(f"  {k:36s} {t * 1e3:9.3f} ms   {bytes_field / t / 1e9:8.1f} GB/s per field-pass")
    return {"elements": elements, "order": order, "points": s.points, "ms": {k: t * 1e3 for k, t in rows.items()}}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="cuda")
    p.add_argument("--elements", type=int, nargs="+", default=[24])
    p.add_argument("--order", type=int, default=7)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--json")
    a = p.parse_args(argv)
    out = [profile(a.backend, e, a.order, a.repeat) for e in a.elements]
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
