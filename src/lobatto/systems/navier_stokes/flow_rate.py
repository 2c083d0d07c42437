"""Constant flow rate (Nek5000's and nekRS's constant-flow-rate driving): the mean velocity
in one direction is held at a target by a uniform pressure gradient chosen each step.

The step is linear in a uniform body force, so the velocity it gives with a force alpha e
is u* + alpha u_s, where u* is the step without it and (u_s, p_s) the response of the same
step (same dt, no history, no boundary data) to the force e alone. alpha makes the mean of
u . e over the volume equal the target. u_s is recomputed when bdf_0 / dt changes by more
than SIGMA_TOLERANCE: a step planned to land on t_end (integrators/step_size.landing_dt) differs
from the last by rounding even while the controller keeps dt, and re-solving for that cost the
Re_tau = 180 channel 46 % of its time (docs/benchmarks.md, "Navier–Stokes for real flows"). The sigma of the response in use is kept in checkpoints
(the history number ``flow_rate_sigma``), so a continued run uses the same response.
"""

from __future__ import annotations

from lobatto.errors import InputError

#: relative change of bdf_0 / dt under which the response u_s is kept: rounding (1e-16 to
#: 1e-13 from landing_dt) keeps it, a changed dt (the controller's steps are 5 % or more) not
SIGMA_TOLERANCE = 1e-9


class FlowRate:
    def __init__(self, system, direction: int, target: float):
        self.system, self.direction, self.target = system, int(direction), float(target)
        self.sigma = None
        self.response = None  # (u_s, p_s)
        self.gradient = 0.0  # alpha: the driving pressure gradient -dp/dx of the last step
        self.pending_sigma = None  # a continued run's: the sigma of the response the checkpointed run used

    def mean(self, velocity) -> float:
        """The volume average of the velocity component along the direction (collective)."""
        s = self.system
        return s.assembly.integral(s.device_geometry.mass * velocity[self.direction])[0] / s.volume

    def _respond(self, sigma):
        s = self.system
        xp = s.backend.xp
        force = xp.zeros((s.dim,) + s.assembly.shape, dtype=s.backend.dtype)
        force[self.direction] = 1.0
        zero = xp.zeros_like(force)
        saved = (s.boundaries.groups, s.boundaries.lifted, s.pressure_solver.projection, s.pressure_result,
                 s.velocity_result, dict(s.totals))
        # the response has zero boundary data, and stays out of the pressure projection's basis
        # (so a restarted run, which solves for it again, projects as the uninterrupted one);
        # the step reports its own solves, not the response's, nor counts its iterations in the
        # per-step averages (its time is the flow_rate part's)
        # (lifted is off on every rank alike: no lifting, so no gather-scatter, anywhere)
        s.boundaries.groups, s.boundaries.lifted, s.pressure_solver.projection = [], False, None
        try:
            pressure = s.solve_pressure(xp.zeros(s.assembly.shape, dtype=s.backend.dtype), force, zero, [], sigma,
                                        0.0)
            velocity = s.solve_velocity(force, pressure, zero, [], sigma, 0.0)
        finally:
            (s.boundaries.groups, s.boundaries.lifted, s.pressure_solver.projection, s.pressure_result,
             s.velocity_result, totals) = saved
            s.totals.update(totals)
        self.response = (velocity.copy(), pressure.copy())
        self.response_mean = self.mean(velocity)
        if not abs(self.response_mean) > 0.0:  # zero (or not finite): no alpha reaches the target
            error = InputError(
                f"[physics] flow_rate = {self.target:g}: a force along {'xyz'[self.direction]} moves no fluid on "
                f"this mesh (the mean velocity it drives is {self.response_mean:.3g}): every velocity node lies on a "
                "wall or an inflow, as with one element of order 1 across the channel; use more elements or a "
                "higher [discretization] order")
            error.collective = True  # the mean is summed over the ranks: every rank raises this
            raise error
        self.sigma = sigma

    def correct(self, velocity, pressure, sigma):
        """(u* + alpha u_s, p* + alpha p_s) with the mean velocity on target."""
        if self.sigma is None or abs(sigma - self.sigma) > SIGMA_TOLERANCE * abs(self.sigma):
            pending, self.pending_sigma = self.pending_sigma, None
            self._respond(pending if pending and abs(sigma - pending) <= SIGMA_TOLERANCE * pending else sigma)
        u_s, p_s = self.response
        alpha = (self.target - self.mean(velocity)) / self.response_mean
        self.gradient = alpha
        return velocity + alpha * u_s, pressure + alpha * p_s
