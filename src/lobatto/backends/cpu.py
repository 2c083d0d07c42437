"""The CPU backend: NumPy reference kernels, with compiled C overrides where available.

The Maxwell kernels (maxwell_traces, maxwell_rhs and the fused maxwell_stage) are C,
specialised on the order and precision, compiled at first use with the system compiler and
cached on disk (lobatto.backends.cpu_kernels). Without a working compiler, or with
LOBATTO_NO_CKERNELS=1, every kernel is the NumPy reference (one warning) and has_tuned()
reports False, so systems take their unfused path.
"""

from __future__ import annotations

from typing import ClassVar

from lobatto.backends import cpu_kernels
from lobatto.backends.base import REFERENCE_KERNELS
from lobatto.backends.numpy_backend import NumpyBackend


def _reference(backend, name, order):
    if name == "maxwell_stage":
        return _reference_stage(backend, order)
    return REFERENCE_KERNELS[name](backend, order=order)


def _reference_stage(backend, order):
    """The fused stage's contract from the reference rhs (used only if compilation fails)."""
    rhs = REFERENCE_KERNELS["maxwell_rhs"](backend, order=order)
    scratch: list = [None]

    def stage(u, residual, sums, geometry, epsilon, mu, alpha, a, b, dt, elements=None):
        if scratch[0] is None or scratch[0].shape != u.shape or scratch[0].dtype != u.dtype:
            scratch[0] = backend.xp.empty_like(u)
        du = rhs(u, sums, geometry, scratch[0], epsilon, mu, alpha, elements)
        part = slice(None) if elements is None else slice(*elements)
        u, residual, du = u[:, part], residual[:, part], du[:, part]
        residual *= a
        residual += dt * du
        u += b * residual

    return stage


def _compiled(name):
    def factory(backend, order):
        kernels = cpu_kernels.maxwell_kernels(order, backend.precision)
        if kernels is None:
            return _reference(backend, name, order)
        return kernels[name]

    factory.__name__ = f"compiled_{name}"
    return factory


class CpuBackend(NumpyBackend):
    name = "cpu"
    tuned_kernels: ClassVar[dict] = {name: _compiled(name) for name in ("maxwell_traces", "maxwell_rhs", "maxwell_stage")}

    def has_tuned(self, name: str) -> bool:
        return name in self.tuned_kernels and cpu_kernels.available()

    def set_threads(self, threads: int | None) -> None:
        """OpenMP threads of the compiled kernels (None: OMP_NUM_THREADS, else all cores)."""
        cpu_kernels.set_num_threads(threads)

    def describe(self) -> dict:
        info = super().describe()
        tc = cpu_kernels.toolchain() if cpu_kernels.available() else None
        info["compiled_kernels"] = bool(tc)
        if tc:
            info["compiler"] = tc["version"].splitlines()[0] if tc["version"] else " ".join(tc["cc"])
            info["openmp"] = tc["openmp"]
            info["threads"] = cpu_kernels.get_num_threads()
        return info
