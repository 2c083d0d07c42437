"""Variable step size from a target CFL number (``[time] target_cfl``, docs/case-file.md).

After each step the driver measures the step's CFL number (the system's ``courant(u, dt)``,
the largest over ranks) and asks :func:`next_dt` for the next step; :func:`landing_dt` then
divides the time left into whole steps no longer than that, so that the run ends on t_end
exactly without a short last step.
"""

from __future__ import annotations

import math

#: the next step is at most this factor longer than the last: a multistep scheme's variable-
#: step coefficients stay close to the constant ones (BDF2 is zero-stable for step ratios below
#: 1 + sqrt(2), BDF3 below about 1.5), and a flow that speeds up is caught before it has moved far
MAX_GROWTH = 1.2
#: t within this fraction of a step of t_end counts as t_end (sums of dt's are not exact)
LANDING_SLACK = 1e-10


def first_dt(target_cfl: float, cfl_per_unit_dt: float, force_cfl_per_unit_dt2: float = 0.0) -> float | None:
    """The first step from the initial state's CFL number per unit dt, c_u, and that of the
    body force's acceleration per unit dt squared, c_f (the CFL number that a velocity equal
    to the force has per unit dt); None when both are zero (a fluid at rest and no force: the
    case must give the first step).

    Under a force the fluid speeds up during the step: from u to at most u + |f| dt, so the
    CFL number at the step's end is at most (c_u + c_f dt) dt. The first dt makes that bound
    equal to the target, c_f dt^2 + c_u dt = target, i.e. dt = 2 target / (c_u + sqrt(c_u^2
    + 4 c_f target)): target / c_u without a force, sqrt(target h / |f|) from rest (the
    time a fluid accelerated by f from rest takes to reach the target CFL number). From the
    velocity alone, a buoyant flow starting from rest (Rayleigh–Bénard) had no first step,
    and one starting from slow rolls a first step that overshot the target at once. The
    bound is pessimistic where the force is mostly balanced by the pressure (its hydrostatic
    part), so the step is shorter than needed; the controller then grows it (MAX_GROWTH)."""
    c_u = cfl_per_unit_dt if cfl_per_unit_dt > 0 else 0.0
    c_f = force_cfl_per_unit_dt2 if force_cfl_per_unit_dt2 > 0 else 0.0
    if c_u == 0.0 and c_f == 0.0:
        return None
    return 2.0 * target_cfl / (c_u + math.sqrt(c_u * c_u + 4.0 * c_f * target_cfl))


#: dt is kept while the step's CFL number stays within [KEEP_BELOW, 1] x target, and a changed
#: dt aims at AIM x target, inside that band: a dt that changes every step makes the step
#: rebuild what depends on it (the Helmholtz coefficient bdf_0 / dt, its preconditioner's
#: diagonal, the constant-flow-rate response: a full Stokes solve), and the Re_tau = 180
#: channel, whose CFL number wanders by a few per cent from step to step, spent 46 % of its time
#: re-solving that response (docs/benchmarks.md, "Navier–Stokes for real flows")
KEEP_BELOW = 0.85
AIM = 0.95


def next_dt(dt: float, cfl: float, target_cfl: float) -> float:
    """The step after one of size dt whose CFL number was cfl: dt itself while cfl stays within
    [KEEP_BELOW, 1] x target; otherwise dt * AIM x target / cfl (the CFL number scales with dt,
    so that reaches AIM x target where the velocity stays the same), its growth limited to
    MAX_GROWTH per step, shrinking not limited."""
    if not cfl > 0:
        return dt * MAX_GROWTH
    if KEEP_BELOW * target_cfl <= cfl <= target_cfl:
        return dt
    return dt * min(MAX_GROWTH, AIM * target_cfl / cfl)


def landing_dt(t: float, t_end: float, dt: float) -> tuple[float, bool]:
    """(the step to take from t, whether it lands on t_end): the time left divided evenly into
    the fewest steps no longer than dt, ``(t_end - t) / ceil((t_end - t) / dt)``.

    Every step, not only the last few, is taken so: while the flow is steady the controller's dt
    stays the same, the number of steps left falls by one per step and the step taken stays the
    same to the end, so the run lands on t_end with no step of another size. A shortened last
    step (taking dt until under two steps were left, then halves or the rest) changed a steady
    flow's end values: at steady state PN-PN's pressure carries bdf_0 / dt times the velocity's
    small discrete divergence, so a step of another size moves it (the cylinder case's pressure
    difference went from 0.1174950 to 0.1175008) and end values depended on how t_end fell
    between steps. The step is at most dt (the CFL number stays at or below the target) and at
    least dt (n - 1) / n with n steps left; it changes only when the controller's dt does (or
    the count of steps left changes with it), by a ratio no further from 1 than that change
    or (n - 1) / n."""
    remaining = t_end - t
    if remaining <= dt * (1 + LANDING_SLACK):
        return remaining, True
    return remaining / steps_left(t, t_end, dt), False


def steps_left(t: float, t_end: float, dt: float) -> int:
    """An estimate of the steps still to take (for the progress bar and the step budget)."""
    remaining = t_end - t  # exactly 0 after the landing step (t is set to t_end)
    if remaining <= 0:
        return 0
    return max(1, math.ceil(remaining / dt * (1 - LANDING_SLACK)))
