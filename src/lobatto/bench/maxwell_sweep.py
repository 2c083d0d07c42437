"""Throughput against problem size (``lobatto bench maxwell --sweep``): sizes from one element
up to ``max_points``, and the fit of the half-performance size n_1/2 of t(n) = t0 + n / R_inf
(n_1/2 = t0 R_inf), like the seed paper's Figure 7."""

from __future__ import annotations

import datetime
import gc

import numpy as np

from lobatto.backends import get_backend
from lobatto.bench.maxwell import build, time_steps


def box_dims(p: int) -> tuple[int, int, int]:
    """Near-cubic (nx, ny, nz) with nx*ny*nz = 2**p."""
    q, r = divmod(p, 3)
    return (2 ** (q + (r > 0)), 2 ** (q + (r > 1)), 2**q)


def fit_half_performance(points, seconds_per_stage) -> dict:
    """Fit t = t0 + n / R_inf (relative least squares); n_1/2 = t0 R_inf."""
    n = np.asarray(points, dtype=float)
    t = np.asarray(seconds_per_stage, dtype=float)
    w = 1.0 / t
    a = np.stack([np.ones_like(n), n], axis=1) * w[:, None]
    (t0, slope), *_ = np.linalg.lstsq(a, t * w, rcond=None)
    peak = 1.0 / slope
    thr = n / t
    measured_peak = float(thr.max())
    half = measured_peak / 2
    n_half_measured = None
    order = np.argsort(n)
    ns, ths = n[order], thr[order]
    for i in range(1, len(ns)):
        if ths[i - 1] < half <= ths[i]:
            # log-linear interpolation between the two sizes that bracket half the peak
            f = (half - ths[i - 1]) / (ths[i] - ths[i - 1])
            n_half_measured = float(np.exp(np.log(ns[i - 1]) + f * (np.log(ns[i]) - np.log(ns[i - 1]))))
            break
    return {
        "t0": float(t0),
        "peak_fit": float(peak),
        "n_half_fit": float(t0 * peak),
        "peak_measured": measured_peak,
        "n_half_measured": n_half_measured,
    }


def sweep(
    backend_name="cuda",
    orders=(7, 14),
    curved=True,
    precision="float64",
    max_points=3.4e7,
    device=None,
    repeats=3,
    log=print,
    stages=False,
) -> dict:
    backend = get_backend(backend_name, precision=precision, device_id=device)
    out = {
        "benchmark": "maxwell-sweep",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "backend": backend.describe(),
        "precision": precision,
        "curved": bool(curved),
        "step_path": "stages" if stages else "solver default",
        "orders": {},
    }
    for order in orders:
        n3 = (order + 1) ** 3
        rows = []
        p = 0
        while (2**p) * n3 <= max_points:
            dims = box_dims(p)
            system, stepper, u, dt, setup = build(backend, order, dims, curved)
            if stages:
                stepper.whole_step = None
            timing = time_steps(backend, stepper, u, dt, None, repeats, True, min_seconds=0.1)
            t = timing["seconds_per_step"]
            row = {
                "elements": list(dims),
                "num_elements": system.num_elements,
                "points": system.points,
                "seconds_per_step": t,
                "point_stage_updates_per_s": system.points * 5 / t,
                "setup_seconds": setup,
                "graph": timing.get("graph"),
            }
            rows.append(row)
            log(
                f"N={order:2d} E={system.num_elements:7d} n={system.points:10d}  "
                f"{row['point_stage_updates_per_s']:.3e} pt-stage/s  ({t * 1e3:.3f} ms/step, setup {setup:.1f} s)"
            )
            del system, stepper, u
            _release(backend)
            p += 1
        fit = fit_half_performance([r["points"] for r in rows], [r["seconds_per_step"] / 5 for r in rows])
        out["orders"][str(order)] = {"rows": rows, "fit": fit}
        log(
            f"N={order}: peak {fit['peak_measured']:.3e} measured, {fit['peak_fit']:.3e} fitted; "
            f"n_1/2 {fit['n_half_fit']:.3g} fitted, {fit['n_half_measured']} measured"
        )
    return out


def _release(backend):
    gc.collect()
    if backend.name == "cuda":
        import cupy

        from lobatto.comm import local_cuda

        local_cuda.clear_buffers()
        cupy.get_default_memory_pool().free_all_blocks()
