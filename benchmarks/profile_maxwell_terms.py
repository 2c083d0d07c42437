"""Where a Maxwell step with physics terms spends its time on the GPU: the fused stage kernel,
each term's prepare and finish, and the trace rewrite after them, each timed alone with CUDA
events (mean over repeated calls), beside the whole step with and without a CUDA graph.

The cases are bench_maxwell_physics.py's (PML one element thick on all sides, a TF/SF box).

    PYTHONPATH=src python3 benchmarks/profile_maxwell_terms.py --elements 28 --order 7
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_maxwell_physics import case_data, commit  # noqa: E402

from lobatto.api import Simulation, case_from_dict  # noqa: E402
from lobatto.bench.report import Timer, gpu_name, write_json  # noqa: E402


def timed(backend, function, repeats: int) -> float:
    """Mean seconds of function() over repeats, by CUDA events around the batch (after one call)."""
    function()
    backend.synchronize()
    return Timer(backend)(function, repeats, 1)


def gpu_time(backend, function, load, repeats: int = 10) -> tuple[float, float]:
    """(GPU seconds per call, host seconds per call): the calls are queued behind ``load``
    (enough queued GPU work to hide their launch cost), so the events around them time the
    GPU alone; the host time is that of issuing them."""
    import cupy

    function()
    backend.synchronize()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    for _ in range(4):
        load()
    start.record()
    begin = time.perf_counter()
    for _ in range(repeats):
        function()
    host = (time.perf_counter() - begin) / repeats
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) * 1e-3 / repeats, host


def profile(label: str, data: dict, repeats: int) -> dict:
    sim = Simulation(case_from_dict(data, name="profile"), backend="cuda", output_dir="/tmp/profile_terms", comm=None)
    sim.advance(3)
    backend, system = sim.backend, sim.system
    whole = sim.stepper.whole_step
    u, dt = sim.u, sim.dt
    scheme = whole.scheme
    a, b = float(scheme.A[1]), float(scheme.B[1])
    row = {"case": label, "step_path": sim.stepper.describe().get("step_path"),
           "graph": bool(sim.advance_one is not None and getattr(sim.advance_one, "captured", False))}

    def steps(n=10):
        start = time.perf_counter()
        sim.advance(n)
        backend.synchronize()
        return (time.perf_counter() - start) / n

    steps(3)
    row["step_ms"] = 1e3 * min(steps() for _ in range(3))
    row["step_nograph_ms"] = 1e3 * timed(backend, lambda: whole.step(u, 0.0, dt), repeats)
    row["stage_kernel_ms"] = 1e3 * timed(backend, lambda: whole.stage(u, 1, a, b, dt, True), repeats)
    gpu, host = gpu_time(backend, lambda: whole.step(u, 0.0, dt), lambda: whole.stage(u, 1, a, b, dt, True), 3)
    row["step_gpu_ms"], row["step_host_ms"] = 1e3 * gpu, 1e3 * host
    row["initial_traces_ms"] = 1e3 * timed(
        backend, lambda: whole.traces_kernel(u, system.device_geometry["normals"], whole.buffers[0]), repeats)
    for term in system.terms:
        key = term.name
        row[f"{key}.elements"] = term.count
        row[f"{key}.prepare_ms"] = 1e3 * timed(backend, lambda: term.prepare(u, 1.0), repeats)
        row[f"{key}.finish_ms"] = 1e3 * timed(backend, lambda: term.finish(u, whole.residual, a, b, dt), repeats)
        gpu, host = gpu_time(backend, lambda: term.finish(u, whole.residual, a, b, dt),
                             lambda: whole.stage(u, 1, a, b, dt, True))
        row[f"{key}.finish_gpu_ms"], row[f"{key}.finish_host_ms"] = 1e3 * gpu, 1e3 * host
        if term.folds:
            gpu, host = gpu_time(backend, lambda: term.fold(u, whole.residual, 1.0, a, b, dt),
                                 lambda: whole.stage(u, 1, a, b, dt, True))
            row[f"{key}.fold_gpu_ms"], row[f"{key}.fold_host_ms"] = 1e3 * gpu, 1e3 * host
    if system.terms:
        row["refresh_traces_ms"] = 1e3 * timed(backend, lambda: system.refresh_traces(u, whole.buffers[1]), repeats)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elements", type=int, default=28)
    parser.add_argument("--order", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    k, order = args.elements, args.order
    cases = {"plain": (False, False), "pml": (True, False), "tfsf": (False, True), "pml+tfsf": (True, True)}
    rows = [profile(label, case_data(k, order, pml, tfsf, 0.0), args.repeats) for label, (pml, tfsf) in cases.items()]
    device = gpu_name()
    print(f"{device}, {k}^3 elements, N = {order}; ms, mean of {args.repeats} calls (CUDA events)")
    for r in rows:
        print("  " + ", ".join(f"{key} = {value:.4g}" if isinstance(value, float) else f"{key} = {value}"
                               for key, value in r.items()))
    result = {"benchmark": "profile_maxwell_terms", "device": device, "elements": k**3, "order": order,
              "commit": commit(), "date": datetime.date.today().isoformat(), "rows": rows}
    out = Path(args.json or HERE / "results" / f"profile_maxwell_terms_{result['date']}.json")
    write_json(out, result, indent=1, default=None, say="wrote")


if __name__ == "__main__":
    main()
