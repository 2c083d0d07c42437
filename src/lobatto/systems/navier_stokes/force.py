"""The Navier–Stokes body force ``[physics] force_x, force_y, force_z``: B f(t) in weak form,
element-local, its range checked at the run's start and end.
"""

from __future__ import annotations

import numpy as np

from lobatto.config.ranges import check_expression_values
from lobatto.systems.navier_stokes.spec import SPEC

KEYS = {key.name: key for key in SPEC.keys}


class Force:
    """The body force B f(t) (weak, element-local), evaluated once when it does not depend on t."""

    def __new__(cls, physics, geometry, backend, times=(0.0,)):
        if all(physics[f"force_{a}"].is_constant and float(physics[f"force_{a}"].evaluate(np)) == 0.0 for a in "xyz"):
            return None
        return super().__new__(cls)

    def __init__(self, physics, geometry, backend, times=(0.0,)):
        """``times``: where the force's range is checked (the run's start and end), once here:
        the steps do not check it (a device sync each step, and an error on one rank only)."""
        self.expressions = [physics[f"force_{a}"] for a in "xyz"]
        self.backend = backend
        self.time_dependent = any("t" in e.variables_used for e in self.expressions)
        self.mass = backend.asarray(geometry.mass)
        coords = backend.asarray(geometry.coords)
        self.coords = coords if self.time_dependent else None
        self._check(coords, times if self.time_dependent else (0.0,))
        self._fixed = None if self.time_dependent else self._evaluate(coords, 0.0)

    def _values(self, coords, t):
        xp = self.backend.xp
        x, y, z = coords
        return xp.stack([e.evaluate(xp, x=x, y=y, z=z, t=float(t)) for e in self.expressions])

    def _evaluate(self, coords, t):
        return self._values(coords, t) * self.mass

    def _check(self, coords, times) -> None:
        """InputError unless each component is within its declared range at the ``times``."""
        xp = self.backend.xp
        for t in times:
            for a, e, v in zip("xyz", self.expressions, self._values(coords, t)):
                check_expression_values(v, KEYS[f"force_{a}"].valid_range, f"[physics] force_{a}", e.text, t, xp)

    def weak(self, t):
        return self._fixed if self._fixed is not None else self._evaluate(self.coords, t)
