"""Variable step size from a target CFL number (``[time] target_cfl``, docs/case-file.md).

After each step the driver measures the step's CFL number (the system's ``courant(u, dt)``,
the largest over ranks) and asks :func:`next_dt` for the next step; :func:`landing_dt` then
shortens that step where needed so that the run ends on t_end exactly.
"""

from __future__ import annotations

import math

#: the next step is at most this factor longer than the last: a multistep scheme's variable-
#: step coefficients stay close to the constant ones (BDF2 is zero-stable for step ratios below
#: 1 + sqrt(2), BDF3 below about 1.5), and a flow that speeds up is caught before it has moved far
MAX_GROWTH = 1.2
#: t within this fraction of a step of t_end counts as t_end (sums of dt's are not exact)
LANDING_SLACK = 1e-10


def first_dt(target_cfl: float, cfl_per_unit_dt: float) -> float | None:
    """The first step from the initial state's CFL number per unit dt; None when that is zero
    (a fluid at rest: the case must give the first step)."""
    if not cfl_per_unit_dt > 0:
        return None
    return target_cfl / cfl_per_unit_dt


def next_dt(dt: float, cfl: float, target_cfl: float) -> float:
    """The step after one of size dt whose CFL number was cfl: the CFL number scales with dt, so
    dt * target / cfl reaches the target where the velocity stays the same; growth is limited
    to MAX_GROWTH per step, shrinking is not limited."""
    if not cfl > 0:
        return dt * MAX_GROWTH
    return dt * min(MAX_GROWTH, target_cfl / cfl)


def landing_dt(t: float, t_end: float, dt: float) -> tuple[float, bool]:
    """(the step to take from t, whether it lands on t_end). The remaining time is taken whole
    when it is at most dt; when it is under two steps, half of it is taken, so that the run
    does not end on a sliver of a step (a step ratio far from 1 hurts a multistep scheme)."""
    remaining = t_end - t
    if remaining <= dt * (1 + LANDING_SLACK):
        return remaining, True
    if remaining < 2 * dt:
        return remaining / 2, False
    return dt, False


def steps_left(t: float, t_end: float, dt: float) -> int:
    """An estimate of the steps still to take (for the progress bar and the step budget)."""
    remaining = t_end - t  # exactly 0 after the landing step (t is set to t_end)
    if remaining <= 0:
        return 0
    return max(1, math.ceil(remaining / dt * (1 - LANDING_SLACK)))
