"""``lobatto bench roofline``: each Maxwell kernel's achieved bandwidth and flop rate against
the ceilings measured on the same device (docs/roofline.md).

    lobatto bench roofline --backend cuda --orders 7 14 --elements 32 32 32 [--curved]
                           [--precision float32] [--sysbench SYSBENCH.json] [--json PATH] [--png PATH]

Ceilings: the memory roof is the larger of STREAM copy and triad, the compute roof the GEMM
rate of the run's precision (cuBLAS on the GPU; NumPy's BLAS on the CPU), from a
``lobatto sysbench`` JSON of the same device or measured here first. Kernel bytes are the
byte models of bench/maxwell_models.py and systems/maxwell/cuda.py (each input read once, each output
written once: a lower bound on the traffic, so the achieved bandwidth is a lower bound too);
the stage kernels' flops are the seed paper's count, 36 (N + 1) + 84 per point and stage.
"""

from __future__ import annotations

import datetime
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from lobatto.bench.report import check_output_options, gpu_name, processor, write_json
from lobatto.bench.surroundings import git_commit
from lobatto.errors import InputError

#: the kernels whose flops the paper's count covers (the others only move data)
STAGE_KERNELS = ("stage", "stage_a0", "fused_stage", "rhs")


# Ceilings -------------------------------------------------------------------------------------
def device_name(backend) -> str:
    """The GPU's name on CUDA, else the processor's."""
    return gpu_name(backend.device_id or 0) if backend.name == "cuda" else processor()


def ceilings_from_sysbench(path: Path, device: str, precision: str, backend_name: str) -> dict:
    try:
        data = json.loads(Path(path).read_text())
        results = data["results"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a lobatto sysbench JSON ({exc})") from None
    if backend_name == "cuda":
        recorded = (data.get("device") or {}).get("name")
        if recorded != device:
            raise InputError(f"{path}: measured on {recorded!r}, this run is on {device!r}: the ceilings must "
                             "come from the same device")
        stream, gemm = results.get("gpu_stream") or {}, results.get("gemm") or {}
        if "skipped" in stream or "copy" not in stream:
            raise InputError(f"{path}: results.gpu_stream is missing or skipped")
        if precision not in gemm:
            raise InputError(f"{path}: results.gemm has no {precision} entry")
        memory = max(stream["copy"]["bytes_per_second"], stream["triad"]["bytes_per_second"])
        return {"bytes_per_second": memory, "flops_per_second": gemm[precision]["flops_per_second"],
                "memory_source": f"{path}: gpu_stream max(copy, triad)",
                "compute_source": f"{path}: gemm {precision} n = {gemm[precision]['n']}"}
    rows = (results.get("cpu_stream") or {}).get("rows")
    if not rows:
        raise InputError(f"{path}: results.cpu_stream has no rows")
    memory = max(max(r["copy"], r["triad"]) for r in rows)
    flops = cpu_gemm(2048, precision)
    return {"bytes_per_second": memory, "flops_per_second": flops,
            "memory_source": f"{path}: cpu_stream max(copy, triad) over thread counts",
            "compute_source": f"NumPy matmul {precision} n = 2048, measured here"}


def cpu_gemm(n: int, precision: str, repeats: int = 3) -> float:
    rng = np.random.default_rng(1)
    a, b = rng.random((n, n)).astype(precision), rng.random((n, n)).astype(precision)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2.0 * n**3 / best


def measure_ceilings(backend_name: str, precision: str, stream_bytes: float, gemm_n: int) -> dict:
    if backend_name == "cuda":
        from lobatto.bench import sysbench_gpu

        stream = sysbench_gpu.gpu_stream(int(stream_bytes), 5)
        gemm = sysbench_gpu.gemm(gemm_n, 3)
        return {"bytes_per_second": max(stream["copy"]["bytes_per_second"], stream["triad"]["bytes_per_second"]),
                "flops_per_second": gemm[precision]["flops_per_second"],
                "memory_source": f"gpu_stream max(copy, triad), {stream['array_bytes']} bytes per array, measured here",
                "compute_source": f"cuBLAS gemm {precision} n = {gemm_n}, measured here"}
    from lobatto.bench import sysbench_cpu

    stream = sysbench_cpu.run(int(min(stream_bytes, 2**28)), 5)
    memory = max(max(r["copy"], r["triad"]) for r in stream["rows"])
    return {"bytes_per_second": memory, "flops_per_second": cpu_gemm(min(gemm_n, 2048), precision),
            "memory_source": "cpu_stream max(copy, triad) over thread counts, measured here",
            "compute_source": f"NumPy matmul {precision} n = {min(gemm_n, 2048)}, measured here"}


# Kernels --------------------------------------------------------------------------------------
def kernel_rows(backend, order: int, elements, curved: bool, calls: int) -> list[dict]:
    """Seconds, model bytes and flops per call of each kernel of a Maxwell step."""
    from lobatto.bench.maxwell import build, time_steps
    from lobatto.bench.maxwell_models import byte_model, kernel_times
    from lobatto.bench.report import Timer
    from lobatto.systems.maxwell import cuda as cm
    from lobatto.systems.maxwell.fused import FusedExchangeStepper
    from lobatto.systems.maxwell.system import flops_per_step

    system, stepper, u, dt, _ = build(backend, order, elements, curved)
    fused = stepper.whole_step if isinstance(stepper.whole_step, FusedExchangeStepper) else None
    item = np.dtype(backend.dtype).itemsize
    e, n, points = system.num_elements, order + 1, system.points
    affine = float(np.mean(system.geometry.affine))

    def stage_bytes(read_residual):
        return e * (affine * cm.stage_bytes(order, item, True, read_residual)
                    + (1 - affine) * cm.stage_bytes(order, item, False, read_residual))

    flops = cm.stage_flops(order) * points
    timer = Timer(backend)
    rows = []
    whole = time_steps(backend, stepper, u, dt, None, 3, backend.name == "cuda")
    stages = stepper.stages
    if fused is not None:
        a, b = stepper.scheme.A[1], stepper.scheme.B[1]
        seconds = timer(lambda: fused.stage(u, 0, a, b, dt, True), calls)
        # the stage kernel, the partner's traces and index in place of the sums, the traces written
        moved = stage_bytes(True) + e * (6 * n * n * 4 + 36 * n * n * item)
        rows.append({"kernel": "fused_stage", "seconds": seconds, "bytes": moved, "flops": flops})
        rows.append({"kernel": "traces", "seconds": timer(
            lambda: system.traces_kernel(u, system.device_geometry["normals"], fused.buffers[0]), calls),
            "bytes": e * cm.traces_bytes(order, item), "flops": 0.0})
        step_bytes = moved * stages
    stepper.whole_step = None  # the stage-by-stage kernels (the path with the gather-scatter)
    model = byte_model(system, stepper)
    times = kernel_times(system, stepper, u, dt, timer, calls)
    for name, seconds in times.items():
        if name == "traces" and fused is not None:
            continue
        moved = {"stage": stage_bytes(True), "stage_a0": stage_bytes(False),
                 "rhs": e * (affine * cm.rhs_bytes(order, item, True) + (1 - affine) * cm.rhs_bytes(order, item, False))
                 }.get(name, model.get(name))
        rows.append({"kernel": name, "seconds": seconds, "bytes": moved,
                     "flops": flops if name in STAGE_KERNELS else 0.0})
    if fused is None:
        step_bytes = model["total_per_stage"] * stages
    rows.append({"kernel": "whole step", "seconds": whole["seconds_per_step"], "bytes": step_bytes,
                 "flops": flops_per_step(order, points, stages)})
    for row in rows:
        row.update(order=order, points=points, path="whole-step" if fused is not None else "stages")
    return rows


def place(rows: list[dict], ceilings: dict) -> None:
    """Achieved rates and where each kernel sits under the roofline."""
    memory, compute = ceilings["bytes_per_second"], ceilings["flops_per_second"]
    for r in rows:
        seconds, moved = r["seconds"], r["bytes"]
        r["bytes_per_second"] = moved / seconds if moved else None
        r["flops_per_second"] = r["flops"] / seconds if r["flops"] else None
        r["intensity"] = r["flops"] / moved if moved and r["flops"] else None
        r["percent_of_memory_roof"] = 100.0 * r["bytes_per_second"] / memory if moved else None
        if r["intensity"] is not None:
            bound = min(compute, r["intensity"] * memory)
            r["roof_flops_per_second"] = bound
            r["percent_of_roof"] = 100.0 * r["flops_per_second"] / bound
            r["bound_by"] = "memory" if r["intensity"] * memory < compute else "compute"


def table(result: dict) -> str:
    c = result["ceilings"]
    lines = [f"{result['device']} ({result['precision']}): memory roof {c['bytes_per_second'] / 1e9:.0f} GB/s, "
             f"compute roof {c['flops_per_second'] / 1e12:.2f} TFLOP/s, ridge {c['ridge_flops_per_byte']:.2f} flop/B",
             f"{'N':>3} {'kernel':>12} {'ms':>9} {'B/pt':>8} {'flop/B':>7} {'GB/s':>8} {'% mem':>6} "
             f"{'GFLOP/s':>9} {'% roof':>7}"]
    for r in result["kernels"]:
        def num(v, fmt):
            return format(v, fmt) if v is not None else "-"
        lines.append(f"{r['order']:>3} {r['kernel']:>12} {1e3 * r['seconds']:9.4f} "
                     f"{num(r['bytes'] / r['points'] if r['bytes'] else None, '8.1f')} {num(r['intensity'], '7.3f')} "
                     f"{num(r['bytes_per_second'] and r['bytes_per_second'] / 1e9, '8.1f')} "
                     f"{num(r['percent_of_memory_roof'], '6.1f')} "
                     f"{num(r['flops_per_second'] and r['flops_per_second'] / 1e9, '9.1f')} "
                     f"{num(r.get('percent_of_roof'), '7.1f')}")
    return "\n".join(lines)


def plot(result: dict, path: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return f"no PNG: matplotlib is not installed (the JSON has the numbers; `lobatto bench roofline` needs it for {path})"
    c = result["ceilings"]
    points = [r for r in result["kernels"] if r["intensity"] is not None]
    low = min([0.05] + [0.5 * r["intensity"] for r in points])
    high = max([4 * c["ridge_flops_per_byte"]] + [2 * r["intensity"] for r in points])
    x = np.geomspace(low, high, 200)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.loglog(x, np.minimum(c["flops_per_second"], x * c["bytes_per_second"]) / 1e9, "k-",
              label=f"roof: {c['bytes_per_second'] / 1e9:.0f} GB/s, {c['flops_per_second'] / 1e12:.1f} TFLOP/s")
    for r in points:
        # the whole step has the fused stage's intensity: an open square keeps that kernel's dot visible
        style = (dict(marker="s", markersize=10, markerfacecolor="none") if r["kernel"] == "whole step"
                 else dict(marker="o"))
        ax.loglog(r["intensity"], r["flops_per_second"] / 1e9, linestyle="none",
                  label=f"N = {r['order']} {r['kernel']}", **style)
    ax.set_xlabel("arithmetic intensity (flop / byte, model bytes)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"{result['device']}, {result['precision']}")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    tmp = path.with_name(path.name + ".tmp.png")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    plt.close(fig)
    tmp.replace(path)
    return f"wrote {path}"


def run(args) -> dict:
    from lobatto.backends import get_backend
    backend = get_backend(args.backend, precision=args.precision)
    device = device_name(backend)
    if args.sysbench is not None:
        ceilings = ceilings_from_sysbench(args.sysbench, device, args.precision, backend.name)
    else:
        ceilings = measure_ceilings(backend.name, args.precision, args.stream_bytes, args.gemm_n)
    ceilings["ridge_flops_per_byte"] = ceilings["flops_per_second"] / ceilings["bytes_per_second"]
    rows = []
    for order in args.orders:
        print(f"roofline: N = {order}, {args.elements} elements ...", file=sys.stderr, flush=True)
        rows += kernel_rows(backend, order, tuple(args.elements), args.curved, args.calls)
    place(rows, ceilings)
    return {"benchmark": "roofline", "date": datetime.date.today().isoformat(), "commit": git_commit(),
            "host": platform.node(), "command": " ".join(["lobatto", "bench", "roofline"] + sys.argv[3:]),
            "device": device, "backend": backend.name, "precision": args.precision,
            "elements": list(args.elements), "curved": bool(args.curved), "ceilings": ceilings, "kernels": rows}


def command(args) -> int:
    """``lobatto bench roofline`` (options of bench/cli.py): measure, print, write the JSON and PNG."""
    for order in args.orders:
        if not 1 <= order <= 15:
            raise InputError(f"--orders: {order} is outside 1..15")
    check_output_options(args)
    result = run(args)
    print(table(result))
    write_json(args.json, result, indent=1, default=None, say="wrote")
    if args.png is not None:
        print(plot(result, args.png))
    return 0
