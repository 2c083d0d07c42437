"""The backend contract: a small fixed interface every solver talks to.

A backend owns arrays (allocation, host transfer, precision), kernels and graph capture; it
knows no physics. Kernels are looked up by name. A system registers a reference kernel
(``@reference_kernel(name)``, written against the array namespace ``xp``, so it runs on any
backend) and, where it pays, tuned kernels for particular backends
(``@tuned_kernel("cuda", name)``); every name without a tuned kernel on a backend falls back
to the reference (libCEED's delegation). Solver code never imports an accelerator library:
it asks its backend.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

# name -> factory(backend, **specialisation) -> callable; filled by systems at import time.
REFERENCE_KERNELS: dict[str, Callable] = {}
# (backend name, kernel name) -> factory(backend, **specialisation) -> callable.
TUNED_KERNELS: dict[tuple[str, str], Callable] = {}


def reference_kernel(name: str):
    """Decorator registering a reference kernel factory under `name`."""

    def register(factory):
        REFERENCE_KERNELS[name] = factory
        return factory

    return register


def tuned_kernel(backend_name: str, name: str):
    """Decorator registering a factory of kernel `name` tuned for backend `backend_name`."""

    def register(factory):
        TUNED_KERNELS[(backend_name, name)] = factory
        return factory

    return register


def check_kernel_arrays(kernel: str, dtype, arrays) -> None:
    """TypeError unless each (array, shape, name) of ``arrays`` is C-contiguous, of ``dtype``
    and of that shape: what a compiled kernel reads through raw pointers needs."""
    for a, shape, name in arrays:
        if a.dtype != dtype or tuple(a.shape) != shape or not a.flags.c_contiguous:
            raise TypeError(f"{kernel}: {name} must be a C-contiguous {dtype} array of shape {shape}, "
                            f"got {a.dtype} {tuple(a.shape)}")


def element_bounds(elements, num_elements: int) -> tuple[int, int]:
    """(first, stop) of a kernel's ``elements`` argument (None: all elements), checked."""
    first, stop = (0, num_elements) if elements is None else (int(elements[0]), int(elements[1]))
    if not 0 <= first <= stop <= num_elements:
        raise ValueError(f"elements ({first}, {stop}) outside 0..{num_elements}")
    return first, stop


class PlainStep:
    """A recorded step that is not recorded: calls ``function`` each time (see Backend.capture)."""

    captured = False
    fallback_reason: str | None = None

    def __init__(self, function: Callable):
        self.function = function

    def __call__(self):
        return self.function()


class Backend:
    """Base class; subclasses set `name` and `xp`."""

    name = "abstract"
    xp = np
    uses_tuned = True  # False: reference kernels only (the NumPy backend, every kernel's oracle)

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

    def sparse_matrix(self, matrix, dtype=None):
        """A sparse matrix where this backend keeps its arrays, from a host SciPy sparse
        matrix (copied, CSR, in ``dtype``): ``A @ x`` for a 1-D array x of this backend.
        Here: SciPy's CSR."""
        import scipy.sparse  # setup only; SciPy comes with pyamg, the one user

        return scipy.sparse.csr_matrix(matrix, dtype=dtype or self.dtype, copy=True)

    def synchronize(self) -> None:
        """Wait for all queued work (no-op where work is synchronous)."""

    def memory_available(self) -> int | None:
        """Bytes a run may still allocate where this backend keeps its arrays, or None
        when unknown (compared with lobatto.machine.resources.estimate_run_memory before a run)."""
        return None

    # Kernels ------------------------------------------------------------------------------
    def kernel(self, name: str, **specialisation) -> Callable:
        """A callable for kernel `name`, specialised (e.g. on order=N) and cached."""
        key = (name, tuple(sorted(specialisation.items())))
        if key not in self._kernel_cache:
            tuned = TUNED_KERNELS.get((self.name, name)) if self.uses_tuned else None
            factory = tuned or REFERENCE_KERNELS.get(name)
            if factory is None:
                raise KeyError(f"no kernel named {name!r} on backend {self.name!r}")
            self._kernel_cache[key] = factory(self, **specialisation)
        return self._kernel_cache[key]

    def tuned_available(self) -> bool:
        """Whether this backend can build tuned kernels here (the CPU one needs a C compiler)."""
        return True

    def has_tuned(self, name: str) -> bool:
        """Whether kernel `name` runs a tuned implementation on this backend."""
        return self.uses_tuned and (self.name, name) in TUNED_KERNELS and self.tuned_available()

    # Graphs -------------------------------------------------------------------------------
    def capture(self, function: Callable, allowed: Callable | None = None):
        """A callable replaying `function` (with ``captured`` and ``fallback_reason``);
        backends with graph capture record it once (unless ``allowed()``, asked just before,
        returns a reason not to). Here: plain calls."""
        return PlainStep(function)

    def describe(self) -> dict:
        return {"name": self.name, "precision": self.precision}
