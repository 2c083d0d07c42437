"""``lobatto sysbench``: node micro-benchmarks (docs/sysbench.md).

    lobatto sysbench [--only S ...] [--skip S ...] [--json PATH] [--png DIR | --no-png]
                     [--quick] [--repeats R] [sizes ...] [--compare BASELINE.json [--tolerance 0.8]]
    mpiexec -n 2 lobatto sysbench ...      (ping-pong, allreduce, GPU<->GPU need 2 ranks)

Sections: gpu_stream, gemm, host_device (sysbench_gpu), gpu_gpu (sysbench_gpu_gpu),
mpi_pingpong, mpi_allreduce (sysbench_mpi), cpu_stream (sysbench_cpu). One that cannot run
here reports {"skipped": "<reason>"}. The one-GPU and CPU sections run on rank 0 while the
other ranks wait; rank 0 prints and writes; every rank returns the same exit code: 1 when
``--compare`` finds a regression, 2 for bad input (sysbench_compare). The options are parsed
in bench/cli.py (sysbench_parser).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import socket
import sys

from lobatto.bench.report import cpu_model, write_json
from lobatto.bench.sysbench_compare import compare, flatten_metrics, load_baseline, report
from lobatto.bench.sysbench_mpi import phase_end
from lobatto.bench.surroundings import git_commit
from lobatto.errors import InputError

__all__ = ["command", "compare", "flatten_metrics", "SECTIONS"]

SECTIONS = ("gpu_stream", "gemm", "host_device", "gpu_gpu", "mpi_pingpong", "mpi_allreduce", "cpu_stream")
GPU_SECTIONS = ("gpu_stream", "gemm", "host_device", "gpu_gpu")
#: size flags: (full default, --quick default)
SIZES = {
    "gpu_stream_bytes": (2**27 * 8, 2**22 * 8),
    "gemm_n": (8192, 1024),
    "max_bytes": (2**30, 2**24),
    "gpu_gpu_bytes": (2**26, 2**22),
    "chunks": ([2**16, 2**18, 2**20, 2**22, 2**24], [2**18, 2**20]),
    "mpi_max_bytes": (2**26, 2**20),
    "allreduce_max_bytes": (2**23, 2**16),
    "cpu_stream_bytes": (2**25 * 8, 2**21 * 8),
    "repeats": (5, 2),
}
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}


def byte_count(text: str) -> int:
    """'1048576', '64M', '1G', '4K', '1e6' -> bytes (K, M, G binary)."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1] if t and t[-1] in _UNITS else ""
    try:
        value = float(t[: len(t) - len(unit)]) * _UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (expected bytes, e.g. 4096, 64M, 1G)") from None
    if value < 1 or value != int(value):
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive whole number of bytes")
    return int(value)


def _settings(args) -> dict:
    s = {k: getattr(args, k) if getattr(args, k) is not None else v[1 if args.quick else 0] for k, v in SIZES.items()}
    if s["repeats"] < 1:
        raise InputError(f"--repeats must be at least 1 (got {s['repeats']})")
    if s["gemm_n"] < 1:
        raise InputError(f"--gemm-n must be at least 1 (got {s['gemm_n']})")
    if s["max_bytes"] < 1024:
        raise InputError(f"--max-bytes must be at least 1K (got {s['max_bytes']})")
    if s["gpu_gpu_bytes"] < 8:
        raise InputError(f"--gpu-gpu-bytes must be at least 8 (got {s['gpu_gpu_bytes']})")
    if args.threads and min(args.threads) < 1:
        raise InputError(f"--threads must be positive (got {args.threads})")
    if not 0 < args.tolerance <= 1:
        raise InputError(f"--tolerance must be in (0, 1] (got {args.tolerance})")
    return s



def _mpi_library(comm) -> str | None:
    if comm is None:
        return None
    from mpi4py import MPI

    return MPI.Get_library_version().strip().splitlines()[0]


def _on_rank0(name: str, comm, run) -> dict | None:
    """A section measured by rank 0 alone; a failure becomes its skip reason (LOBATTO_DEBUG
    raises it)."""
    rank = 0 if comm is None else comm.Get_rank()
    result = None
    if rank == 0:
        try:
            result = run()
        except Exception as exc:  # noqa: BLE001 - one broken measurement must not lose the others
            if os.environ.get("LOBATTO_DEBUG"):
                raise
            result = {"skipped": f"failed ({type(exc).__name__}: {' '.join(str(exc).split())})"}
            print(f"lobatto sysbench: {name} failed: {result['skipped']}", file=sys.stderr, flush=True)
    phase_end(comm, rank == 0)
    return result


def measure(args, settings: dict, comm) -> tuple[dict, dict | None]:
    """(results, device info) on rank 0; every rank calls it."""
    from lobatto.bench import sysbench_cpu, sysbench_gpu, sysbench_gpu_gpu, sysbench_mpi

    rank = 0 if comm is None else comm.Get_rank()
    chosen = [s for s in (args.only or SECTIONS) if s not in args.skip]
    device, why = (None, "not run")
    if any(s in GPU_SECTIONS for s in chosen):
        device, why = sysbench_gpu.select_device(comm)
    s = settings
    one_gpu = {
        "gpu_stream": lambda: sysbench_gpu.gpu_stream(s["gpu_stream_bytes"], s["repeats"]),
        "gemm": lambda: sysbench_gpu.gemm(s["gemm_n"], s["repeats"]),
        "host_device": lambda: sysbench_gpu.host_device(s["max_bytes"], s["repeats"]),
    }
    results = {}
    for name in SECTIONS:
        if name not in chosen:
            results[name] = {"skipped": "not selected (--only/--skip)"}
            continue
        if rank == 0:
            print(f"lobatto sysbench: {name} ...", file=sys.stderr, flush=True)
        if name in one_gpu:
            results[name] = _on_rank0(name, comm, one_gpu[name] if device is not None else lambda: {"skipped": why})
        elif name == "gpu_gpu":
            results[name] = sysbench_gpu_gpu.run(comm, why if device is None else None, s["gpu_gpu_bytes"],
                                                 s["chunks"], s["repeats"])
        elif name == "mpi_pingpong":
            results[name] = sysbench_mpi.pingpong(comm, s["mpi_max_bytes"], s["repeats"])
        elif name == "mpi_allreduce":
            results[name] = sysbench_mpi.allreduce(comm, s["allreduce_max_bytes"], s["repeats"])
        else:
            results[name] = _on_rank0(name, comm, lambda: sysbench_cpu.run(s["cpu_stream_bytes"], s["repeats"],
                                                                           args.threads))
    info = sysbench_gpu.device_info(device) if device is not None and rank == 0 else None
    return results, info


def command(args, argv: list[str]) -> int:
    """``lobatto sysbench`` (options of bench/cli.py, ``argv`` as given): every rank measures its
    part; rank 0 writes the JSON and plots, prints the table; every rank returns the same code."""
    from lobatto.bench.sysbench_table import format_table
    from lobatto.machine.parallel import collective_errors, rank_and_size, world_comm

    comm = world_comm()
    rank, size = rank_and_size(comm)
    baseline = None
    with collective_errors(comm):
        settings = _settings(args)
        if rank == 0:  # rank 0 writes: its paths are checked before anything is measured
            from lobatto.io.output_dir import check_output_path

            check_output_path(args.json, "--json ")
            if args.png is not None and not args.no_png:
                check_output_path(args.png, "--png ", directory=True)
        if args.compare is not None and rank == 0:
            baseline = load_baseline(args.compare)
    results, device = measure(args, settings, comm)
    code = 0
    with collective_errors(comm):
        if rank == 0:
            doc = {
                "benchmark": "sysbench", "version": 1,
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "commit": git_commit(), "hostname": socket.gethostname(),
                "command": "lobatto sysbench" + ("" if not argv else " " + shlex.join(argv)),
                "ranks": size, "mpi_library": _mpi_library(comm),
                "cpu": {"model": cpu_model(), "cores": os.cpu_count()},
                "settings": settings, "device": device, "results": results,
            }
            text = None
            if baseline is not None:
                doc["compare"], text = report(doc, baseline, args.compare, args.tolerance)
                code = 1 if doc["compare"]["regressions"] else 0
            write_json(args.json, doc, indent=1, default=None, end="\n", say=None)
            if not args.no_png:
                from lobatto.bench.sysbench_plot import plot_all

                pngs = plot_all(doc, args.png or args.json.parent, args.json.stem)
                print(f"plots skipped: {pngs}" if isinstance(pngs, str) else
                      f"plots written: {', '.join(map(str, pngs)) or 'none (no rows)'}")
            print(f"results written to {args.json}")
            print()
            print(format_table(doc))
            if text:
                print()
                print(text)
            sys.stdout.flush()
    return code if comm is None else comm.bcast(code, root=0)


if __name__ == "__main__":  # the command line is bench/cli.py's (this module cannot import it: a cycle)
    raise SystemExit("run it as `lobatto sysbench` or `python -m lobatto sysbench` (its options: lobatto sysbench --help)")
