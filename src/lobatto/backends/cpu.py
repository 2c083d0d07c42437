"""The CPU backend: NumPy reference kernels, with compiled C overrides where available."""

from __future__ import annotations

from lobatto.backends.numpy_backend import NumpyBackend


class CpuBackend(NumpyBackend):
    name = "cpu"
