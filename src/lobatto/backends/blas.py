"""The BLAS library's own thread count, set at run time (no threadpoolctl).

On the CPU backend two thread pools share the cores: OpenMP's, in the compiled kernels
(the Helmholtz operator, the gather-scatter), and the BLAS library's, in NumPy's matrix
products (tensor-product interpolation, the dense coarse solve, dot products). Each pool's
threads spin for a while after their work is done, so alternating between them in a tight
loop leaves each waiting for cores the other is spinning on: a p-multigrid solve of 32,768
points took 0.27-0.37 s with both pools at 2 threads on a 2-core machine, and 0.035 s with
BLAS at 1 thread (docs/elliptic.md). The small products of a solve gain nothing from BLAS
threads, so ``single_threaded_blas()`` holds BLAS at one thread while a solve runs.

The library is found among the shared objects this process has loaded (``/proc/self/maps``,
Linux) and driven through its own setter: OpenBLAS (also NumPy's bundled
``scipy_openblas``, whose symbols carry a prefix and a suffix), BLIS or MKL. Where none is
found (another OS, a BLAS without a setter) nothing is changed; ``OPENBLAS_NUM_THREADS=1``
set before NumPy loads has the same effect there.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from pathlib import Path

#: (get, set) symbol names per library family, tried in order
_SETTERS = (
    ("openblas_get_num_threads", "openblas_set_num_threads"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("bli_thread_get_num_threads", "bli_thread_set_num_threads"),
    ("MKL_Get_Max_Threads", "MKL_Set_Num_Threads"),
)
_MARKERS = ("openblas", "blis", "mkl_rt", "libmkl")

_found: list | None = None  # [(get, set)] once looked up


def _loaded_libraries() -> list[str]:
    maps = Path("/proc/self/maps")
    try:
        text = maps.read_text()
    except OSError:
        return []
    paths = {line.split()[-1] for line in text.splitlines() if "/" in line}
    return sorted(p for p in paths if any(m in Path(p).name.lower() for m in _MARKERS))


def blas_controls() -> list:
    """[(get_threads, set_threads)] of every BLAS library loaded now (NumPy's first loads it)."""
    global _found
    if _found is not None:
        return _found
    import numpy  # noqa: F401  (loads NumPy's BLAS, so it is in the process's maps)

    found = []
    for path in _loaded_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get_name, set_name in _SETTERS:
            getter, setter = getattr(lib, get_name, None), getattr(lib, set_name, None)
            if getter is not None and setter is not None:
                getter.restype, getter.argtypes = ctypes.c_int, []
                setter.restype, setter.argtypes = None, [ctypes.c_int]
                found.append((getter, setter))
                break
    _found = found
    return found


def blas_threads() -> int | None:
    """The first BLAS library's thread count, or None where none was found."""
    controls = blas_controls()
    return int(controls[0][0]()) if controls else None


@contextmanager
def single_threaded_blas():
    """Hold every loaded BLAS library at one thread inside the block; restore on exit."""
    controls = blas_controls()
    before = [int(get()) for get, _ in controls]
    for _, set_threads in controls:
        set_threads(1)
    try:
        yield
    finally:
        for (_, set_threads), count in zip(controls, before):
            set_threads(count)
