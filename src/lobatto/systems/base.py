"""What an integrator needs from a physical system."""

from __future__ import annotations


class System:
    """A semi-discrete system du/dt = L(u, t) over backend arrays.

    Subclasses set `field_names` and implement `rhs`; `stage` may be overridden by a fused
    kernel (low-storage RK update in the same pass as the operator).
    """

    field_names: tuple[str, ...] = ()
    time_dependent = False  # True when L depends on t (sources, time-varying boundaries)

    def rhs(self, u, t, out):
        raise NotImplementedError

    def stage(self, u, residual, t, a, b, dt):
        """One 2N-storage stage: residual = a*residual + dt*L(u, t); u += b*residual."""
        du = self.rhs(u, t, self._scratch(u))
        residual *= a
        residual += dt * du
        u += b * residual

    def _scratch(self, u):
        scratch = getattr(self, "_rhs_scratch", None)
        if scratch is None or scratch.shape != u.shape or scratch.dtype != u.dtype:
            scratch = self._rhs_scratch = self.backend.xp.empty_like(u)
        return scratch
