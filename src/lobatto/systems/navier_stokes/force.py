"""The Navier–Stokes body force ``[physics] force_x, force_y, force_z``: B f in weak form,
element-local. f is an expression in x, y, z, t and the scalars a case names (buoyancy: the
Boussinesq force ``force_z = "3550*temperature"``, Ra Pr written out, docs/navier-stokes.md, "Buoyancy"); its
range is checked at the run's start and end for the components in x, y, z, t alone.
"""

from __future__ import annotations

import numpy as np

from lobatto.config.ranges import check_expression_values, show_value
from lobatto.errors import SolverError
from lobatto.machine.parallel import allreduce
from lobatto.systems.navier_stokes.spec import SPEC

KEYS = {key.name: key for key in SPEC.keys}


class Force:
    """The body force B f(t, T) (weak, element-local), evaluated once when it depends on
    neither t nor a scalar."""

    def __new__(cls, physics, geometry, backend, times=(0.0,), fields=None, comm=None):
        axes = "xyz"[:int(getattr(geometry, "dim", 3))]  # 2-D: force_x, force_y (force_z is refused)
        if all(physics[f"force_{a}"].is_constant and float(physics[f"force_{a}"].evaluate(np)) == 0.0 for a in axes):
            return None
        return super().__new__(cls)

    def __init__(self, physics, geometry, backend, times=(0.0,), fields=None, comm=None):
        """``times``: where the force's range is checked (the run's start and end), once here:
        the steps do not check it (a device sync each step, and an error on one rank only),
        except for a force in the scalars (``_checked``). ``fields``: name -> row of the state,
        for the scalars the expressions may use; ``comm``: the ranks that check it together."""
        self.axes = "xyz"[:int(getattr(geometry, "dim", 3))]
        self.expressions = [physics[f"force_{a}"] for a in self.axes]
        self.backend, self.comm = backend, comm
        used = {name for e in self.expressions for name in e.variables_used}
        #: the scalars the force uses: name -> row of the state
        self.fields = {name: row for name, row in (fields or {}).items() if name in used}
        self.time_dependent = "t" in used
        varying = self.time_dependent or bool(self.fields)
        self.mass = backend.asarray(geometry.mass)
        coords = backend.asarray(geometry.coords)
        self.coords = coords if varying else None
        self._check(coords, times if self.time_dependent else (0.0,))
        self._fixed = None if varying else self._evaluate(coords, 0.0)

    def _component(self, e, coords, t, state):
        x, y, z = coords
        named = {name: state[row] for name, row in self.fields.items()} if state is not None else {}
        return e.evaluate(self.backend.xp, x=x, y=y, z=z, t=float(t), **named)

    def _evaluate(self, coords, t, state=None):
        values = self.backend.xp.stack([self._component(e, coords, t, state) for e in self.expressions])
        if state is not None and self.fields:
            self._checked(values, t)
        return values * self.mass

    def _checked(self, values, t) -> None:
        """Stop the run (SolverError, exit 1) where the scalars took a component out of its
        range (a value of 1 / (T - 0.5), say): before it reaches the solves, whose NaN would
        otherwise stop them with no word of why. Collective: one reduction (and device sync) a
        step, every rank raising the same error."""
        xp = self.backend.xp
        ranges = [KEYS[f"force_{a}"].valid_range for a in self.axes]
        outside = xp.stack([~r.within(v, xp).all() for r, v in zip(ranges, values)])
        outside = allreduce(self.comm, np.asarray(self.backend.to_host(outside), dtype=np.int64), "max")
        if not outside.any():
            return
        c = int(np.argmax(outside))
        local = values[c][~ranges[c].within(values[c], xp)]
        example = f" (here {show_value(float(local.reshape(-1)[0]))})" if local.size else ""
        error = SolverError(f"[physics] force_{'xyz'[c]} = \"{self.expressions[c].text}\" left its range "
                            f"{ranges[c].describe()} at t = {float(t):.6g}{example}: the scalars' values took it "
                            "there; bound the expression (or the scalars)")
        error.collective = True
        raise error

    def _check(self, coords, times) -> None:
        """InputError unless each component in x, y, z, t alone is within its declared range at
        the ``times`` (one in the scalars is not known before the steps: a value out of range
        shows in the fields, which the run's finite-state check stops on)."""
        xp = self.backend.xp
        for t in times:
            for a, e in zip(self.axes, self.expressions):
                if not set(e.variables_used) & set(self.fields):
                    check_expression_values(self._component(e, coords, t, None), KEYS[f"force_{a}"].valid_range,
                                            f"[physics] force_{a}", e.text, t, xp)

    def weak(self, t, state=None):
        """B f at time t; ``state``: the state whose scalar rows the force uses (at t)."""
        return self._fixed if self._fixed is not None else self._evaluate(self.coords, t, state)
