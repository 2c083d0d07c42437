"""The NumPy backend: the reference every other backend is tested against."""

from __future__ import annotations

import numpy as np

from lobatto.backends.base import Backend


class NumpyBackend(Backend):
    """Arrays on the host; reference kernels only (CpuBackend adds the compiled ones)."""

    name = "cpu"
    xp = np
    uses_tuned = False
