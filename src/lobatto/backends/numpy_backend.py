"""The NumPy backend: the reference every other backend is tested against."""

from __future__ import annotations

import numpy as np

from lobatto.backends.base import Backend


class NumpyBackend(Backend):
    name = "cpu"
    xp = np
