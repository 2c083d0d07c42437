"""The CPU backend: NumPy arrays; reference kernels, with compiled C overrides where a
system registers them (``tuned_kernel("cpu", name)``).

Compiled kernels are C, specialised on the order and precision, compiled at first use with
the system compiler and cached on disk (lobatto.jit.c). Without a working compiler, or with
LOBATTO_NO_CKERNELS=1, every kernel is the NumPy reference (one warning) and has_tuned()
reports False, so systems take their unfused path.
"""

from __future__ import annotations

from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.jit import c as cbuild
from lobatto.machine.resources import available_host_memory


class CpuBackend(NumpyBackend):
    name = "cpu"
    uses_tuned = True

    def tuned_available(self) -> bool:
        return cbuild.available()

    def memory_available(self) -> int | None:
        """The host's available memory (MemAvailable): the arrays live there."""
        return available_host_memory()

    def set_threads(self, threads: int | None) -> None:
        """OpenMP threads of the compiled kernels (None: OMP_NUM_THREADS, else all cores)."""
        cbuild.set_num_threads(threads)

    def describe(self) -> dict:
        info = super().describe()
        tc = cbuild.toolchain() if cbuild.available() else None
        info["compiled_kernels"] = bool(tc)
        if tc:
            info["compiler"] = tc["version"].splitlines()[0] if tc["version"] else " ".join(tc["cc"])
            info["openmp"] = tc["openmp"]
            info["threads"] = cbuild.get_num_threads()
        return info
