"""What every benchmark of the observatory shares, ``lobatto bench ...``, ``lobatto sysbench``,
``lobatto doctor`` and the scripts of ``benchmarks/`` alike:

* output: ``check_output_options`` (before anything is measured), ``write_json`` (atomic),
  ``rows_table`` and ``number`` (plain-text tables);
* description of the run: ``run_meta`` (date, host, commit, command, device), ``cpu_model``,
  ``processor``, ``gpu_name``, ``device_description`` (``surroundings.git_commit`` is the commit);
* timing: ``Timer`` (CUDA events on the GPU, perf_counter on the CPU), ``median_seconds`` and
  ``best_seconds`` of a call on the host clock.

Nothing here imports the measuring modules or the command line (bench/cli.py).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from lobatto.bench.surroundings import git_commit


# Output ---------------------------------------------------------------------------------------
def check_output_options(args, options=("json", "png")) -> None:
    """Before anything is measured: every output file given (--json, --png) can be written
    there (io.output_dir.check_output_path; the writers create missing directories)."""
    from lobatto.io.output_dir import check_output_path

    for option in options:
        path = getattr(args, option, None)
        if path is not None:
            check_output_path(path, f"--{option} ")


def write_json(path, data, *, indent=2, default=float, end: str = "", say: str | None = "results written to"):
    """Write ``data`` as JSON to ``path`` atomically (io.atomic), creating its directory; print
    ``"{say} {path}"`` unless ``say`` is None. Nothing is written when ``path`` is None."""
    if path is None:
        return None
    from lobatto.io.atomic import atomic_write_text

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=indent, default=default) + end)
    if say is not None:
        print(f"{say} {path}")
    return path


def number(x, fmt: str = ".3e") -> str:
    """``x`` formatted with ``fmt``, or "-" for None (a table cell of a figure not measured)."""
    return "-" if x is None else format(x, fmt)


def rows_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """The lines of a left-aligned table: the header, a rule of dashes, one line per row."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip() for r in rows]
    return lines


# Description of the run -----------------------------------------------------------------------
def processor() -> str:
    """Python's name of this machine's processor, else its architecture."""
    return platform.processor() or platform.machine()


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else ``processor()``."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return processor()


def gpu_name(device_id: int = 0) -> str:
    """The CUDA device's name (CuPy; creates a context on it)."""
    import cupy

    return cupy.cuda.runtime.getDeviceProperties(device_id)["name"].decode()


def device_description(backend: str) -> str:
    """The GPUs from nvidia-smi (no CUDA context in this process), or the CPU's model and cores."""
    if backend == "cuda":
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=30)
            names = [n.strip() for n in out.stdout.splitlines() if n.strip()]
            if names:
                return f"{len(names)} x {names[0]}"
        except (OSError, subprocess.SubprocessError):
            pass
        return "unknown GPU (nvidia-smi did not answer)"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return f"{processor()} ({os.cpu_count()} cores)"


def run_meta() -> dict:
    """Where and when a measurement ran: local date, host, commit, the ``lobatto`` command, processor."""
    return {"date": datetime.datetime.now().isoformat(timespec="seconds"), "hostname": platform.node(),
            "commit": git_commit(), "command": " ".join(["lobatto", *sys.argv[1:]]), "device": processor()}


# Timing ---------------------------------------------------------------------------------------
class Timer:
    """Seconds per call of fn: CUDA events on the GPU, perf_counter on the CPU; the median of
    ``repeats`` samples, each the mean of ``calls`` calls."""

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


def host_seconds(fn, repeats: int) -> list[float]:
    """Wall seconds of each of ``repeats`` calls of fn (perf_counter)."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - start)
    return seconds


def median_seconds(fn, repeats: int) -> float:
    """The median wall seconds of ``repeats`` calls of fn."""
    return statistics.median(host_seconds(fn, repeats))


def best_seconds(fn, repeats: int) -> float:
    """The fewest wall seconds of ``repeats`` calls of fn (others' work on a shared machine only adds)."""
    return min(host_seconds(fn, repeats))
