"""``lobatto bench helmholtz``: the Helmholtz operator alone, BK5-like (the CEED bake-off's
kernel 5, with the mass term: A u = h1 K u + h2 B u on curved elements).

For each order N in ``orders``, element counts E = 1, 2, 4, ... up to ``max_points`` local
points (default: what fits in half the free memory where the arrays live) are timed, one
``helmholtz_apply`` kernel call at a time (CUDA events on the GPU, perf_counter on the CPU;
calls repeated for ``min_seconds``, median of ``repeats``). Reported per size:

* points/s   E (N+1)^3 local points per second
* GDOF/s     E N^3 per second / 1e9, the bake-off's count (unique points of a periodic mesh)
* GB/s       by the byte model ``HelmholtzOperator.bytes_per_point``: u read, A u written,
             six geometric factors and the mass read, 72 bytes per point in float64
* % of copy  of the copy bandwidth measured in the same run (bytes read plus written): a
             device-to-device copy on the GPU (bench.maxwell.copy_bandwidth), a NumPy copy of
             a large array on the CPU (one thread, like np.copyto)

The factors of a curved block of up to 64 elements are tiled to E elements on the backend
(values do not change the cost; the host never holds the large arrays), so sizes up to the
device's memory are reachable.
"""

from __future__ import annotations

import datetime
import gc
import math
import platform
import time

import numpy as np

from lobatto.backends import get_backend
from lobatto.bench.maxwell import copy_bandwidth
from lobatto.bench.maxwell_sweep import box_dims
from lobatto.bench.report import Timer, write_json
from lobatto.errors import InputError
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.operators import HelmholtzOperator

#: curved block (every element's factors differ) tiled to the timed sizes
BLOCK_ELEMENTS = 64


def curved(x, y, z):
    s = np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * z)
    return 0.08 * s, 0.06 * s * np.cos(np.pi * x), 0.05 * s


def host_copy_bandwidth(nbytes: int = 1 << 28, repeats: int = 5) -> dict:
    """Bytes read plus written per second by np.copyto of a float64 array of ``nbytes``."""
    a = np.arange(nbytes // 8, dtype=np.float64)
    b = np.empty_like(a)
    np.copyto(b, a)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(b, a)
        samples.append(time.perf_counter() - start)
    rate = 2.0 * a.nbytes / min(samples)
    return {"bytes": int(a.nbytes), "numpy_copy": rate, "peak": rate}


def default_max_points(backend, bytes_per_point: int) -> int:
    """Half of the free memory where the arrays live, in points of ``bytes_per_point``."""
    free = backend.memory_available() or 4 << 30
    return int(0.5 * free / bytes_per_point)


def time_apply(timer, kernel, arrays, min_seconds: float, repeats: int) -> float:
    """Median seconds per kernel call."""
    kernel(*arrays)
    once = timer(lambda: kernel(*arrays), 1, 1)
    calls = max(1, math.ceil(min_seconds / max(once, 1e-9)))
    return timer(lambda: kernel(*arrays), calls, repeats)


def order_rows(backend, order: int, max_points: int, h2: float, dtype, timer, min_seconds, repeats) -> list[dict]:
    n = order + 1
    block = box_dims(int(math.log2(BLOCK_ELEMENTS)))
    geometry = compute_geometry(box_mesh(block, deform=curved), order)
    operator = HelmholtzOperator(geometry, backend, 1.0, h2, dtype=dtype)
    kernel = backend.kernel("helmholtz_apply", order=order)
    xp, rows = backend.xp, []
    elements = 1
    while elements * n**3 <= max_points:
        reps = math.ceil(elements / BLOCK_ELEMENTS)
        factors = xp.ascontiguousarray(xp.tile(operator.geometric_factors, (1, reps, 1, 1, 1))[:, :elements])
        mass = None
        if operator.h2 != 0.0:
            mass = xp.ascontiguousarray(xp.tile(operator.mass, (reps, 1, 1, 1))[:elements])
        u = xp.sin(xp.arange(elements * n**3, dtype=dtype)).reshape(elements, n, n, n)  # made where it lives
        out = xp.empty_like(u)
        seconds = time_apply(timer, kernel, (u, out, factors, mass, 1.0, float(h2)), min_seconds, repeats)
        points = elements * n**3
        rows.append({"order": order, "elements": elements, "points": points, "seconds": seconds,
                     "points_per_second": points / seconds, "gdof_per_second": elements * order**3 / seconds / 1e9,
                     "bytes_per_point": operator.bytes_per_point,
                     "bandwidth": operator.bytes_per_point * points / seconds,
                     "flops_per_point": operator.flops_per_point,
                     "gflops": operator.flops_per_point * points / seconds / 1e9})
        del factors, mass, u, out
        gc.collect()
        elements *= 2
    return rows


def run(backend_name: str = "cuda", orders=range(1, 16), max_points: float | None = None, precision="float64",
        h2: float = 1.0, min_seconds: float = 0.1, repeats: int = 3, copy_bytes: int | None = None,
        device: int | None = None) -> dict:
    backend = get_backend(backend_name, precision=precision, device_id=device)
    dtype = np.dtype(precision)
    bytes_per_point = (2 + 6 + (1 if h2 else 0)) * dtype.itemsize
    limit = int(max_points) if max_points else default_max_points(backend, bytes_per_point)
    timer = Timer(backend)
    rows = []
    for order in orders:
        found = order_rows(backend, int(order), limit, h2, dtype, timer, min_seconds, repeats)
        rows += found
        if found:
            top = found[-1]
            print(f"  N={order:2d}  E={top['elements']:8d}  {top['points_per_second']:.3e} points/s  "
                  f"{top['bandwidth'] / 1e9:8.1f} GB/s", flush=True)
    if backend.name == "cuda":
        copy = copy_bandwidth(int(copy_bytes or 2 << 30))
    else:
        copy = host_copy_bandwidth(int(copy_bytes or 1 << 28))
    for row in rows:
        row["percent_of_copy"] = 100.0 * row["bandwidth"] / copy["peak"]
    return {"benchmark": "helmholtz", "date": datetime.date.today().isoformat(), "backend": backend.describe(),
            "host": platform.processor() or platform.machine(), "precision": precision, "h1": 1.0, "h2": h2,
            "max_points": limit, "min_seconds": min_seconds, "repeats": repeats, "copy_bandwidth": copy,
            "rows": rows}


def format_table(result: dict, all_rows: bool = False) -> str:
    """One line per order at its largest size (every size with ``all_rows``)."""
    rows = result["rows"]
    if not all_rows:
        last = {}
        for row in rows:
            last[row["order"]] = row
        rows = list(last.values())
    copy = result["copy_bandwidth"]["peak"]
    lines = [f"helmholtz operator  backend={result['backend']['name']}  precision={result['precision']}  "
             f"h2={result['h2']}  bytes/point={rows[0]['bytes_per_point'] if rows else '-'}  "
             f"copy bandwidth {copy / 1e9:.1f} GB/s",
             "",
             f"{'N':>3s} {'E':>9s} {'points':>11s} {'us/apply':>10s} {'points/s':>10s} {'GDOF/s':>8s} "
             f"{'GB/s':>8s} {'% copy':>7s} {'GFLOP/s':>8s}"]
    for r in rows:
        lines.append(f"{r['order']:3d} {r['elements']:9d} {r['points']:11d} {r['seconds'] * 1e6:10.1f} "
                     f"{r['points_per_second']:10.3e} {r['gdof_per_second']:8.3f} {r['bandwidth'] / 1e9:8.1f} "
                     f"{r['percent_of_copy']:7.1f} {r['gflops']:8.1f}")
    return "\n".join(lines)


def command(args) -> int:
    """``lobatto bench helmholtz`` (options of bench/cli.py): check, run, print, write the JSON."""
    if not args.orders or min(args.orders) < 1 or args.repeats < 1 or args.min_seconds <= 0:
        raise InputError("--orders must be >= 1, --repeats >= 1 and --min-seconds > 0")
    result = run(args.backend, args.orders, args.max_points, args.precision, args.h2,
                 args.min_seconds, args.repeats, args.copy_bytes, args.device)
    print()
    print(format_table(result, args.all_rows))
    write_json(args.json, result)
    return 0
