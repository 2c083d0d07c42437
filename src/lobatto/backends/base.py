"""The backend contract: a small fixed interface every solver talks to.

A backend owns arrays (allocation, host transfer, precision) and kernels. Kernels are looked
up by name; a tuned backend registers overrides for a few of them and every other name falls
back to the reference implementation, which is written against the array namespace `xp`
and therefore runs on any backend (libCEED's delegation). Solver code never imports an
accelerator library: it asks its backend.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

# name -> factory(backend, **specialisation) -> callable; filled by systems at import time.
REFERENCE_KERNELS: dict[str, Callable] = {}


def reference_kernel(name: str):
    """Decorator registering a reference kernel factory under `name`."""

    def register(factory):
        REFERENCE_KERNELS[name] = factory
        return factory

    return register


def element_bounds(elements, num_elements: int) -> tuple[int, int]:
    """(first, stop) of a kernel's ``elements`` argument (None: all elements), checked."""
    first, stop = (0, num_elements) if elements is None else (int(elements[0]), int(elements[1]))
    if not 0 <= first <= stop <= num_elements:
        raise ValueError(f"elements ({first}, {stop}) outside 0..{num_elements}")
    return first, stop


class Backend:
    """Base class; subclasses set `name`, `xp` and may register `tuned_kernels`."""

    name = "abstract"
    xp = np
    tuned_kernels: dict[str, Callable] = {}

    def __init__(self, precision: str = "float64"):
        if precision not in ("float64", "float32"):
            raise ValueError(f"precision must be 'float64' or 'float32', got {precision!r}")
        self.precision = precision
        self.dtype = np.dtype(precision)
        self._kernel_cache: dict = {}

    # Arrays -------------------------------------------------------------------------------
    def asarray(self, host_array, dtype=None):
        return self.xp.asarray(np.asarray(host_array), dtype=dtype or self.dtype)

    def to_host(self, array) -> np.ndarray:
        return np.asarray(array)

    def zeros(self, shape, dtype=None):
        return self.xp.zeros(shape, dtype=dtype or self.dtype)

    def empty(self, shape, dtype=None):
        return self.xp.empty(shape, dtype=dtype or self.dtype)

    def synchronize(self) -> None:
        """Wait for all queued work (no-op where work is synchronous)."""

    # Kernels ------------------------------------------------------------------------------
    def kernel(self, name: str, **specialisation) -> Callable:
        """A callable for kernel `name`, specialised (e.g. on order=N) and cached."""
        key = (name, tuple(sorted(specialisation.items())))
        if key not in self._kernel_cache:
            factory = self.tuned_kernels.get(name) or REFERENCE_KERNELS.get(name)
            if factory is None:
                raise KeyError(f"no kernel named {name!r} on backend {self.name!r}")
            self._kernel_cache[key] = factory(self, **specialisation)
        return self._kernel_cache[key]

    def has_tuned(self, name: str) -> bool:
        return name in self.tuned_kernels

    def whole_step(self, system, stepper):
        """A callable doing whole low-storage steps of `system`, or None (the default).

        A backend may take over entire steps where it can do better than stage by stage
        (the CUDA backend folds a one-rank face exchange into its stage kernel).
        """
        return None

    # Graphs -------------------------------------------------------------------------------
    def capture(self, function: Callable, allowed: Callable | None = None) -> Callable:
        """Return a callable replaying `function`; backends with graph capture record it once
        (unless ``allowed()``, asked just before, returns a reason not to)."""
        return function

    def describe(self) -> dict:
        return {"name": self.name, "precision": self.precision}
