"""Maxwell throughput benchmark: whole lsrk45 steps of the SEDG operator on a box.

Builds its own MaxwellSystem + Stepper (no case file), times whole time steps (on the GPU a
step is recorded once as a CUDA graph and replayed; timed with CUDA events), and reports

* point-stage updates/s  = points * stages * steps / time, and point-steps/s,
* GFLOP/s by the seed paper's work model W = [180(N+1) + 420] n per 5-stage step,
* achieved bandwidth from the byte model (docs/cuda.md) and, in the same run, the measured
  device-to-device copy bandwidth (bytes read + written) with the percentage reached,
* the time of each kernel of a stage (traces, gather-scatter and its take / gather /
  scatter kernels, fused stage), each timed alone.

The byte models and the per-kernel timings are in bench/maxwell_models.py, the throughput
sweep (n_1/2) in bench/maxwell_sweep.py, the tables and option checks in bench/maxwell_report.py.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import time

import numpy as np

from lobatto.backends import get_backend
from lobatto.bench.maxwell_models import byte_model, fused_byte_model, kernel_times
from lobatto.bench.report import Timer
from lobatto.integrators import Stepper, get_scheme
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


# Timing -----------------------------------------------------------------------------------------
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
def curved_deformation_2d(x, y, z):
    s = CURVED_AMPLITUDE * np.sin(PI * x) * np.sin(PI * y)  # the 3-D one vanishes in the plane z = 0
    return (s, s, 0.0 * s)


def build(backend, order, elements, curved=False, periodic=False, scheme="lsrk45", volume_form="split"):
    """Two counts: a 2-D box of quadrilaterals (TE and TM fields, docs/two-d.md). ``volume_form``:
    the system's (the bench's default "split"; "galerkin" the weight-adjusted Galerkin form that a
    case's default "auto" runs on curved 3-D meshes)."""
    t0 = time.perf_counter()
    deform = (curved_deformation if len(elements) == 3 else curved_deformation_2d) if curved else None
    mesh = box_mesh(elements, periodic=(periodic,) * len(elements), deform=deform)
    system = MaxwellSystem(mesh, order, backend, flux="upwind", volume_form=volume_form)
    stepper = Stepper(system, get_scheme(scheme))
    u = backend.asarray(system.evaluate_fields(INITIAL, 0.0))
    dt = system.stable_time_step(0.5, system.geometry.min_spacing)
    setup = time.perf_counter() - t0
    return system, stepper, u, dt, setup


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
    volume_form="split",
) -> dict:
    backend = get_backend(backend_name, precision=precision, device_id=device)
    if launch and backend.name == "cuda":
        backend.launch_overrides[(order, np.dtype(precision).name)] = tuple(launch)
    system, stepper, u, dt, setup = build(backend, order, elements, curved, periodic, volume_form=volume_form)
    collocated = system.galerkin is None  # the byte and work models and the kernel timings are the collocated forms'
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
        "volume_form": volume_form,
        "affine_fraction": float(np.mean(system.geometry.affine)),
        "precision": precision,
        "step_path": stepper.path,
        "scheme": stepper.scheme.name,
        "stages": stages,
        "setup_seconds": setup,
        **timing,
        "point_stage_updates_per_s": points * stages / t,
        "point_steps_per_s": points / t,
        # the work model (benchmarks/notes) counts the 3-D operator: no figure for a 2-D mesh
        "gflops": flops_per_step(order, points, stages) / t / 1e9 if len(elements) == 3 and collocated else None,
        "energy": energy,
    }
    if backend.name == "cuda" and collocated:
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
    elif kernels and collocated:
        kt = kernel_times(system, stepper, u, dt, Timer(backend))
        result["kernel_seconds"] = kt
        if backend.name == "cuda":
            model = result["bytes_model"]
            result["kernel_bandwidth"] = {k: model[k] / v for k, v in kt.items() if k in model and v > 0}
    finite = bool(backend.xp.all(backend.xp.isfinite(u)))
    result["finite"] = finite
    return result
