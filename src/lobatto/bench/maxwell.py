"""Maxwell throughput benchmark: whole lsrk45 steps of the SEDG operator on a box.

Builds its own MaxwellSystem + Stepper (no case file), times whole time steps (on the GPU a
step is recorded once as a CUDA graph and replayed; timed with CUDA events), and reports

* point-stage updates/s  = points * stages * steps / time, and point-steps/s,
* GFLOP/s by the seed paper's work model W = [180(N+1) + 420] n per 5-stage step,
* achieved bandwidth from the byte model (docs/cuda.md) and, in the same run, the measured
  device-to-device copy bandwidth (bytes read + written) with the percentage reached,
* the time of each kernel of a stage (traces, gather-scatter and its take / gather /
  scatter kernels, fused stage), each timed alone.

``sweep`` runs sizes from one element up to ``max_points`` and fits the half-performance
size n_1/2 of t(n) = t0 + n / R_inf (n_1/2 = t0 R_inf), like the seed paper's Figure 7.
"""

from __future__ import annotations

import datetime
import gc
import math
import os
import platform
import statistics
import time

import numpy as np

from lobatto.backends import get_backend
from lobatto.integrators import Stepper, get_scheme
from lobatto.integrators.tables import LowStorageScheme
from lobatto.mesh import box_mesh
from lobatto.machine.power import EnergyMeter, energy_per_step
from lobatto.systems.maxwell.fused import FusedExchangeStepper
from lobatto.systems.maxwell.system import MaxwellSystem, flops_per_step

PI = np.pi
CURVED_AMPLITUDE = 0.05


class _Smooth:
    def __init__(self, f):
        self.f = f

    def evaluate(self, xp, x, y, z, t):
        return self.f(x, y, z)


#: Smooth non-zero initial fields (timing on zeros hides unwritten outputs and can run faster).
INITIAL = {
    "Ex": _Smooth(lambda x, y, z: np.sin(2 * PI * y) * np.cos(2 * PI * z)),
    "Ey": _Smooth(lambda x, y, z: np.sin(2 * PI * z) * np.cos(2 * PI * x)),
    "Ez": _Smooth(lambda x, y, z: np.sin(2 * PI * x) * np.sin(2 * PI * y)),
    "Hx": _Smooth(lambda x, y, z: 0.5 * np.cos(2 * PI * (x + y + z))),
    "Hy": _Smooth(lambda x, y, z: 0.25 * np.sin(2 * PI * (x - z))),
    "Hz": _Smooth(lambda x, y, z: 0.1 * np.cos(2 * PI * y)),
}


def curved_deformation(x, y, z):
    s = CURVED_AMPLITUDE * np.sin(PI * x) * np.sin(PI * y) * np.sin(PI * z)
    return (s, s, 0.5 * s)


# Timers ---------------------------------------------------------------------------------------
class Timer:
    """Seconds per call of fn: CUDA events on the GPU, perf_counter on the CPU."""

    def __init__(self, backend):
        self.backend = backend
        self.gpu = backend.name == "cuda"

    def __call__(self, fn, calls: int, repeats: int = 3) -> float:
        samples = []
        for _ in range(repeats):
            if self.gpu:
                import cupy

                start, end = cupy.cuda.Event(), cupy.cuda.Event()
                start.record()
                for _ in range(calls):
                    fn()
                end.record()
                end.synchronize()
                samples.append(cupy.cuda.get_elapsed_time(start, end) * 1e-3 / calls)
            else:
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                samples.append((time.perf_counter() - t0) / calls)
        return statistics.median(samples)


def copy_bandwidth(nbytes: int = 2 << 30, repeats: int = 10) -> dict:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus bytes written."""
    import cupy

    count = nbytes // 8
    a = cupy.arange(count, dtype=np.float64)
    b = cupy.empty_like(a)
    out = {"bytes": int(count * 8)}

    def memcpy():
        b.data.copy_from_device_async(a.data, count * 8)

    def kernel_copy():
        cupy.copyto(b, a)

    timer = Timer(type("B", (), {"name": "cuda"})())
    for name, fn in (("memcpy", memcpy), ("copy_kernel", kernel_copy)):
        fn()
        cupy.cuda.Device().synchronize()
        t = timer(fn, repeats, 3)
        out[name] = 2.0 * count * 8 / t
    assert bool(cupy.all(b[-5:] == a[-5:]))
    out["peak"] = max(out["memcpy"], out["copy_kernel"])
    return out


# Set-up -----------------------------------------------------------------------------------------
def build(backend, order, elements, curved=False, periodic=False, scheme="lsrk45"):
    t0 = time.perf_counter()
    mesh = box_mesh(
        elements,
        periodic=(periodic,) * 3,
        deform=curved_deformation if curved else None,
    )
    system = MaxwellSystem(mesh, order, backend, flux="upwind")
    stepper = Stepper(system, get_scheme(scheme))
    u = backend.asarray(system.evaluate_fields(INITIAL, 0.0))
    dt = system.stable_time_step(0.5, system.geometry.min_spacing)
    setup = time.perf_counter() - t0
    return system, stepper, u, dt, setup


def fused_byte_model(system, stepper) -> dict:
    """Bytes per stage of the fused-exchange step (lobatto.systems.maxwell.fused), averaged."""
    from lobatto.systems.maxwell import cuda as cm

    order, e = system.order, system.num_elements
    n = order + 1
    item = np.dtype(system.backend.dtype).itemsize
    frac = float(np.mean(system.geometry.affine))
    a_values = list(stepper.scheme.A)
    stages = len(a_values)
    total = e * cm.traces_bytes(order, item)  # traces of u at the start of the step
    for i, a in enumerate(a_values):
        per = frac * cm.stage_bytes(order, item, True, a != 0) + (1 - frac) * cm.stage_bytes(order, item, False, a != 0)
        # sums (36 n^2) replaced by the partner's traces (36 n^2) and the partner index (6 n^2 int32);
        # all but the last stage write the traces of the updated u (36 n^2)
        per += 6 * n**2 * 4 + (36 * n**2 * item if i < stages - 1 else 0)
        total += e * per
    return {"total_per_stage": total / stages, "per_point_per_stage": total / stages / system.points}


def byte_model(system, stepper) -> dict:
    """Bytes per stage of each kernel (fewest: each input read once, each output written once)."""
    from lobatto.systems.maxwell import cuda as cm

    order, e = system.order, system.num_elements
    item = np.dtype(system.backend.dtype).itemsize
    frac = float(np.mean(system.geometry.affine))  # affine elements read (E, 9) metrics
    a_values = list(stepper.scheme.A) if isinstance(stepper.scheme, LowStorageScheme) else [1.0]
    reads = sum(1 for a in a_values if a != 0) / len(a_values)  # stages that read the residual

    def per_element(affine):
        return reads * cm.stage_bytes(order, item, affine, True) + (1 - reads) * cm.stage_bytes(order, item, affine, False)

    stage = e * (frac * per_element(True) + (1 - frac) * per_element(False))
    traces = e * cm.traces_bytes(order, item)
    plan = system.exchange.plan
    vn = 6
    isz = 4 if plan.n < 2**31 else 8
    t, g, d = len(plan.perm), plan.ncompact, len(plan.dest_local)
    take = vn * t * item * 2 + t * isz
    gather = vn * t * item + vn * g * item + g * isz if g != t else 0
    scatter = vn * g * item + vn * d * item + 2 * d * isz
    combine = 2 * vn * t * item + t * isz + g * isz  # one pass: each participating value read + written
    if system.exchange.comm is None:  # serial: GatherScatter runs the one-pass compiled combine
        take, gather, scatter = combine, 0, 0
    total = stage + traces + take + gather + scatter
    return {
        "gs_combine": combine,
        "stage": stage,
        "traces": traces,
        "gs_take": take,
        "gs_gather": gather,
        "gs_scatter": scatter,
        "exchange": take + gather + scatter,
        "total_per_stage": total,
        "per_point_per_stage": total / system.points,
    }


#: index arrays of the gather-scatter's local phases (fields of its LocalPlan)
LOCAL_INDEX_NAMES = ("perm", "starts", "dest_local", "src_local")


def local_index_arrays(exchange, k) -> dict:
    """The gather-scatter ``exchange``'s local index arrays as kernel module ``k`` takes them
    (``k.asindex`` of each field of ``exchange.plan``, built once here), to time the take /
    gather / scatter / combine kernels of ``k`` (lobatto.comm.local_cuda) alone."""
    return {name: k.asindex(getattr(exchange.plan, name)) for name in LOCAL_INDEX_NAMES}


def kernel_times(system, stepper, u, dt, timer, calls=20) -> dict:
    """Seconds per call of each kernel of a stage, each timed alone."""
    g = system.device_geometry
    buf = system.trace_buffer
    times = {}
    times["traces"] = timer(lambda: system.traces_kernel(u, g["normals"], buf), calls)
    times["exchange"] = timer(lambda: system.exchange.apply(buf.reshape(6, -1), "sum"), calls)
    if system.backend.name == "cuda":
        from lobatto.comm import local_cuda as k

        u2 = buf.reshape(6, -1)
        idx = local_index_arrays(system.exchange, k)
        taken = k.take(u2, idx["perm"])
        compact = k.gather(taken, idx["starts"], "sum")
        times["gs_take"] = timer(lambda: k.take(u2, idx["perm"]), calls)
        times["gs_gather"] = timer(lambda: k.gather(taken, idx["starts"], "sum"), calls)
        times["gs_scatter"] = timer(lambda: k.scatter(compact, u2, idx["dest_local"], idx["src_local"]), calls)
        comb = k.compiled_combine(u2.dtype) if system.exchange.comm is None else None
        if comb is not None:
            # the one-pass serial exchange that GatherScatter uses on one rank
            times["gs_combine"] = timer(lambda: comb(u2, idx["perm"], idx["starts"], "sum"), calls)
        system.traces_kernel(u, g["normals"], buf)
        system.exchange.apply(buf.reshape(6, -1), "sum")
    scheme = stepper.scheme
    low_storage = isinstance(scheme, LowStorageScheme)  # a 2N-storage scheme: the Stepper keeps a residual
    a = scheme.A[1] if low_storage else 0.0
    b = scheme.B[1] if low_storage else 0.0
    res = stepper.residual if low_storage else system.backend.xp.zeros_like(u)
    if system.stage_kernel is not None:
        args = (system.epsilon, system.mu, system.alpha)
        times["stage"] = timer(lambda: system.stage_kernel(u, res, buf, g, *args, a, b, dt), calls)
        times["stage_a0"] = timer(lambda: system.stage_kernel(u, res, buf, g, *args, 0.0, b, dt), calls)
    else:
        out = system.backend.xp.empty_like(u)
        times["rhs"] = timer(lambda: system.rhs_kernel(u, buf, g, out, system.epsilon, system.mu, system.alpha), calls)
    return times


def time_steps(backend, stepper, u, dt, steps=None, repeats=5, graph=True, min_seconds=0.2, meter=None) -> dict:
    """Median seconds per whole step; on the GPU a step is replayed from a CUDA graph.

    ``stepper`` is anything with ``step(u, t, dt)`` (a Stepper or a FusedExchangeStepper).
    ``meter``: an EnergyMeter (lobatto.machine.power) around all timed repeats; its report is "energy".
    """

    def plain():
        stepper.step(u, 0.0, dt)

    step = backend.capture(plain) if (graph and backend.name == "cuda") else plain
    timer = Timer(backend)
    for _ in range(3):  # plain call, recording, one replay
        step()
    backend.synchronize()
    once = timer(step, 1, 1)
    if steps is None:
        steps = int(min(5000, max(3, math.ceil(min_seconds / max(once, 1e-7)))))
    if meter is not None:
        meter.start()
    t = timer(step, steps, repeats)  # each repeat waits for the device at its end
    info = {"seconds_per_step": t, "steps_per_repeat": steps, "repeats": repeats}
    if meter is not None:
        info["energy"] = meter.stop()
    if step is not plain:  # a recorded step (Backend.capture): whether it replays a graph
        info["graph"] = bool(step.captured)
        if not step.captured:
            info["graph_fallback_reason"] = step.fallback_reason
    return info


def run(
    backend_name="cuda",
    order=7,
    elements=(32, 32, 32),
    curved=False,
    precision="float64",
    steps=None,
    repeats=5,
    device=None,
    graph=True,
    periodic=False,
    launch=None,
    copy_bytes=2 << 30,
    kernels=True,
    stages=False,
) -> dict:
    backend = get_backend(backend_name, precision=precision, device_id=device)
    if launch and backend.name == "cuda":
        backend.launch_overrides[(order, np.dtype(precision).name)] = tuple(launch)
    system, stepper, u, dt, setup = build(backend, order, elements, curved, periodic)
    if stages:  # the system's stage-by-stage path (gather-scatter), not its whole-step path
        stepper.whole_step = None  # Stepper.path then reads "stages"
    fused = stepper.whole_step if isinstance(stepper.whole_step, FusedExchangeStepper) else None
    meter = EnergyMeter(backend.name, getattr(backend, "device_id", None))
    timing = time_steps(backend, stepper, u, dt, steps, repeats, graph, meter=meter)
    # joules of all timed repeats over their steps (docs/energy.md)
    energy = energy_per_step(timing.pop("energy"), timing["steps_per_repeat"] * repeats, system.points)
    stages = stepper.stages
    t = timing["seconds_per_step"]
    points = system.points
    result = {
        "benchmark": "maxwell",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "backend": backend.describe(),
        "order": order,
        "elements": list(elements),
        "num_elements": system.num_elements,
        "points": points,
        "curved": bool(curved),
        "affine_fraction": float(np.mean(system.geometry.affine)),
        "precision": precision,
        "step_path": stepper.path,
        "scheme": stepper.scheme.name,
        "stages": stages,
        "setup_seconds": setup,
        **timing,
        "point_stage_updates_per_s": points * stages / t,
        "point_steps_per_s": points / t,
        "gflops": flops_per_step(order, points, stages) / t / 1e9,
        "energy": energy,
    }
    if backend.name == "cuda":
        model = fused_byte_model(system, stepper) if fused else byte_model(system, stepper)
        result["bytes_model"] = model
        result["bandwidth_model_bytes_per_s"] = model["total_per_stage"] * stages / t
        result["copy_bandwidth"] = copy_bandwidth(copy_bytes) if copy_bytes else None
        if result["copy_bandwidth"]:
            result["percent_of_copy"] = 100.0 * result["bandwidth_model_bytes_per_s"] / result["copy_bandwidth"]["peak"]
    else:
        result["threads"] = os.environ.get("OMP_NUM_THREADS")
    if kernels and fused:
        timer = Timer(backend)
        g = system.device_geometry
        a, b = stepper.scheme.A[1], stepper.scheme.B[1]
        result["kernel_seconds"] = {
            "traces": timer(lambda: system.traces_kernel(u, g["normals"], fused.buffers[0]), 20),
            "stage_pairs": timer(lambda: fused.stage(u, 0, a, b, dt, True), 20),
            "stage_pairs_nowrite": timer(lambda: fused.stage(u, 0, a, b, dt, False), 20),
        }
    elif kernels:
        kt = kernel_times(system, stepper, u, dt, Timer(backend))
        result["kernel_seconds"] = kt
        if backend.name == "cuda":
            model = result["bytes_model"]
            result["kernel_bandwidth"] = {k: model[k] / v for k, v in kt.items() if k in model and v > 0}
    finite = bool(backend.xp.all(backend.xp.isfinite(u)))
    result["finite"] = finite
    return result


# Sweep ------------------------------------------------------------------------------------------
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
