"""CPU STREAM by thread count for ``lobatto sysbench`` (section ``cpu_stream``).

McCalpin's four kernels (kernels/stream.c) compiled by lobatto.jit.c with OpenMP; where the
compiler has no OpenMP they run on one thread, and where no library can be built at all, NumPy
runs them on one thread (triad then takes two passes but is counted as one, as STREAM counts
it). Bytes are counted as STREAM does: 2 arrays moved by copy and scale, 3 by add and triad.
Each thread count runs ``repeats + 1`` rounds of the four kernels; the first is a warm-up and
the best of the others is reported. After the last round every element is checked against the
same sequence applied to scalars, so a wrong kernel cannot report a rate.
"""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path

import numpy as np

from lobatto.jit import c as cjit

#: arrays each kernel reads or writes (STREAM's byte count: this many x 8 bytes x n)
STREAM_ARRAYS = {"copy": 2, "scale": 2, "add": 3, "triad": 3}
SCALAR = 3.0
INITIAL = (1.0, 2.0, 0.0)  # a, b, c
SOURCE = Path(__file__).with_name("kernels") / "stream.c"


def expected_values(rounds: int) -> tuple[float, float, float]:
    """(a, b, c) after ``rounds`` rounds of copy, scale, add, triad from INITIAL."""
    a, b, c = INITIAL
    for _ in range(rounds):
        c = a
        b = SCALAR * c
        c = a + b
        a = b + SCALAR * c
    return a, b, c


class StreamKernels:
    """The four kernels on float64 NumPy arrays: compiled, or NumPy where they cannot be built."""

    def __init__(self):
        self.lib = None
        self.note = None
        if not SOURCE.is_file():
            self.note = f"numpy fallback: {SOURCE} is missing from this installation"
        elif not cjit.available():
            self.note = "numpy fallback: no C compiler (or LOBATTO_NO_CKERNELS is set)"
        else:
            self.lib = cjit.load(SOURCE)
            if self.lib is None:
                self.note = f"numpy fallback: {cjit.error(SOURCE) or 'the kernel did not build'}"
        if self.lib is not None:
            p, i64, d = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
            self.lib.stream_init.argtypes = [p, p, p, i64, d, d, d]
            self.lib.stream_copy.argtypes = [p, p, i64]
            self.lib.stream_scale.argtypes = [p, p, d, i64]
            self.lib.stream_add.argtypes = [p, p, p, i64]
            self.lib.stream_triad.argtypes = [p, p, p, d, i64]
            if not self.lib.lobatto_has_openmp():
                self.note = "the compiler has no OpenMP: one thread only"

    @property
    def implementation(self) -> str:
        if self.lib is None:
            return "numpy"
        return "C/OpenMP" if self.lib.lobatto_has_openmp() else "C (no OpenMP)"

    @property
    def threaded(self) -> bool:
        return self.lib is not None and bool(self.lib.lobatto_has_openmp())

    def set_threads(self, n: int) -> None:
        if self.lib is not None:
            self.lib.lobatto_set_num_threads(int(n))

    def max_threads(self) -> int:
        return int(self.lib.lobatto_get_max_threads()) if self.lib is not None else 1

    def init(self, a, b, c, values=INITIAL):
        if self.lib is None:
            a[:], b[:], c[:] = values
        else:
            self.lib.stream_init(_p(a), _p(b), _p(c), a.size, *map(float, values))

    def copy(self, a, c):
        if self.lib is None:
            np.copyto(c, a)
        else:
            self.lib.stream_copy(_p(a), _p(c), a.size)

    def scale(self, b, c, q=SCALAR):
        if self.lib is None:
            np.multiply(c, q, out=b)
        else:
            self.lib.stream_scale(_p(b), _p(c), float(q), b.size)

    def add(self, a, b, c):
        if self.lib is None:
            np.add(a, b, out=c)
        else:
            self.lib.stream_add(_p(a), _p(b), _p(c), a.size)

    def triad(self, a, b, c, q=SCALAR):
        if self.lib is None:
            np.multiply(c, q, out=a)
            a += b
        else:
            self.lib.stream_triad(_p(a), _p(b), _p(c), float(q), a.size)


def _p(x: np.ndarray) -> int:
    if x.dtype != np.float64 or not x.flags.c_contiguous:
        raise ValueError("STREAM kernels take contiguous float64 arrays")
    return x.ctypes.data


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def thread_counts(cores: int) -> list[int]:
    """1, 2, 4, ... below ``cores``, then ``cores``."""
    counts, n = [], 1
    while n < cores:
        counts.append(n)
        n *= 2
    return counts + [cores]


def run(array_bytes: int, repeats: int = 5, threads: list[int] | None = None) -> dict:
    """The cpu_stream section: {"array_bytes", "implementation", "rows": [{"threads", copy, ...}]}."""
    kernels = StreamKernels()
    n = max(1, int(array_bytes) // 8)
    counts = threads or thread_counts(usable_cores())
    if not kernels.threaded:
        counts = [1]
    out = {"array_bytes": n * 8, "repeats": int(repeats), "implementation": kernels.implementation, "rows": []}
    if kernels.note:
        out["note"] = kernels.note
    before = kernels.max_threads()
    try:
        for t in counts:
            kernels.set_threads(t)
            out["rows"].append({"threads": int(t), **_rates(kernels, n, repeats)})
    finally:
        kernels.set_threads(before)
    return out


def _rates(kernels: StreamKernels, n: int, repeats: int) -> dict:
    a, b, c = np.empty(n), np.empty(n), np.empty(n)  # untouched: stream_init places the pages
    kernels.init(a, b, c)
    calls = {
        "copy": lambda: kernels.copy(a, c),
        "scale": lambda: kernels.scale(b, c),
        "add": lambda: kernels.add(a, b, c),
        "triad": lambda: kernels.triad(a, b, c),
    }
    best = {name: float("inf") for name in calls}
    rounds = int(repeats) + 1
    for r in range(rounds):
        for name, call in calls.items():
            t0 = time.perf_counter()
            call()
            dt = time.perf_counter() - t0
            if r > 0:
                best[name] = min(best[name], dt)
    for name, got, want in zip("abc", (a, b, c), expected_values(rounds)):
        if not np.all(got == want):
            bad = int(np.flatnonzero(got != want)[0])
            raise RuntimeError(f"cpu_stream: array {name}[{bad}] = {got[bad]!r} after {rounds} rounds, "
                               f"expected {want!r}: the STREAM kernel is wrong")
    return {name: STREAM_ARRAYS[name] * 8.0 * n / max(best[name], 1e-12) for name in calls}
