"""What a physical system is to the rest of lobatto: the contract the driver and the
integrators use, and the parts every system shares.

A system class declares

* ``spec``: its :class:`~lobatto.config.physics.PhysicsSpec` (field names, boundary kinds,
  ``[physics]`` keys and fluxes, checked by the case-file schema);
* ``from_case(case, mesh, geometry, backend, comm)``: how it is built from a checked case;
* ``rhs(u, t, out)`` (and optionally a fused ``stage``) for the integrators, and
  ``whole_step(stepper)`` where it has a faster path for entire steps (None otherwise);
* ``stable_time_step(cfl, min_spacing)``, ``energy(u)``, ``error_sums(u, exact)``,
  ``flops_per_step(stages)`` and ``summary(stepper, comm)``: its diagnostics and the
  entries it adds to the run summary; ``homogeneous_operator()`` for the time step's check;
* ``output_layout``: how its fields map onto Nek5000's velocity / pressure / scalar slots;
* ``derived_fields(u, names)`` and ``check_derived(names)``: the fields of ``[output]
  derived`` its spec declares (``PhysicsSpec.derived``), computed at each snapshot;
* ``quadrature_mass()``: the diagonal mass w_i w_j w_k J on the backend, for the monitors
  that integrate its fields (probes.py, dft.py);
* ``memory_estimate(case, layout)``: the arrays it allocates beyond the mesh, the geometry
  and the states, as memory_items.MemoryItem entries (runner.build.check_memory).
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.errors import InputError
from lobatto.mesh import DEFAULT_BOUNDARY


class System:
    """A semi-discrete system du/dt = L(u, t) over backend arrays of shape (fields, E, n, n, n).

    Subclasses set ``spec`` and implement ``from_case`` and ``rhs``; ``stage`` may be
    overridden by a fused kernel (low-storage RK update in the same pass as the operator).
    They set ``backend``, ``order``, ``geometry`` (host :class:`~lobatto.mesh.Geometry`),
    ``mesh``, ``num_elements`` and ``points``.
    """

    spec = None  # a PhysicsSpec
    time_dependent = False  # True when L depends on t (sources, time-varying boundaries)
    #: True when the discrete energy cannot grow (no sources, passive boundaries and fluxes):
    #: the driver then stops a run whose energy grows (an unstable step)
    energy_bounded = False
    #: a linear system without active media, in which any exponential growth of the energy is
    #: an instability of the discretisation (runner/growth_guard.py); False where the equations
    #: have physical instabilities (convection, transition in navier_stokes)
    growth_guarded = False
    trace_components = 0  # face values exchanged per face point (DG systems)
    #: Nek5000 file slots: (three velocity fields or None, pressure field or None, scalars),
    #: and optionally a fourth entry, the field in the temperature slot T
    output_layout: tuple = (None, None, ())
    #: values per point of what ``history()`` returns (the checkpoints' buffers hold them too)
    history_fields = 0
    #: names of history numbers that a checkpoint may lack (added after checkpoints were written
    #: without them); restore_history must then do without them
    optional_history: tuple = ()

    @property
    def field_names(self) -> tuple:
        return tuple(self.spec.fields)

    @property
    def name(self) -> str:
        return self.spec.name

    @classmethod
    def from_case(cls, case, mesh, geometry, backend, comm=None):
        raise NotImplementedError

    @classmethod
    def tuned_on(cls, backend) -> bool:
        """Whether this system runs compiled kernels on ``backend`` (else the reference ones,
        whose temporaries the memory estimate counts)."""
        return False

    # Operator -----------------------------------------------------------------------------
    def rhs(self, u, t, out):
        raise NotImplementedError

    def stage(self, u, residual, t, a, b, dt):
        """One 2N-storage stage: residual = a*residual + dt*L(u, t); u += b*residual."""
        du = self.rhs(u, t, self._scratch(u))
        residual *= a
        residual += dt * du
        u += b * residual

    def whole_step(self, stepper):
        """A callable doing entire steps for ``stepper`` faster than stage by stage, or None.

        It must offer ``step(u, t, dt)``, ``describe() -> dict`` and ``graph_veto() -> str |
        None`` (why a step may not be recorded as a graph now)."""
        return None

    def _scratch(self, u):
        scratch = getattr(self, "_rhs_scratch", None)
        if scratch is None or scratch.shape != u.shape or scratch.dtype != u.dtype:
            scratch = self._rhs_scratch = self.backend.xp.empty_like(u)
        return scratch

    def history(self) -> dict:
        """State beyond ``u`` that later steps depend on (lagged terms, earlier pressures),
        saved in checkpoints: {name: backend or host array (k, E, ...), elements on axis 1,
        or a number}. Systems without any return {}."""
        return {}

    def restore_history(self, history: dict) -> None:
        """Take back what ``history()`` gave, as host arrays of this rank's elements."""
        if history:
            raise ValueError(f"{self.name} keeps no history, got {', '.join(sorted(history))}")

    # Set-up -------------------------------------------------------------------------------
    def allocate_state(self):
        # (n, n, n) per element, (1, n, n) on a 2-D mesh: the geometry's points
        return self.backend.zeros((len(self.field_names), self.num_elements) + self.geometry.coords.shape[2:])

    def evaluate_fields(self, expressions: dict, t: float) -> np.ndarray:
        """Host array (fields, E, n, n, n) of the named expressions at time t (missing ones zero)."""
        x, y, z = self.geometry.coords
        values = np.zeros((len(self.field_names),) + x.shape)
        for c, name in enumerate(self.field_names):
            expr = expressions.get(name)
            if expr is not None:
                values[c] = expr.evaluate(np, x=x, y=y, z=z, t=np.float64(t))
        return values

    def boundary_kind_of(self, mesh) -> list:
        """The spec's boundary kind of each of ``mesh.boundary_names`` (the mesh's unnamed
        boundary is the spec's default); a name that is no kind is an error naming both."""
        kinds = []
        for name in mesh.boundary_names:
            if name == DEFAULT_BOUNDARY:
                name = self.spec.default_boundary
            if name not in self.spec.boundary_kinds:
                raise InputError(f"boundary '{name}' is not a boundary kind of {self.spec.name} "
                                 f"(expected one of {', '.join(self.spec.boundary_kinds)})")
            kinds.append(name)
        return kinds

    def check_constants(self, keys: str, **constants) -> None:
        """InputError unless every derived constant (wave speed, impedance, their inverses...)
        is a positive finite number: [physics] values so large or small that they overflow."""
        for name, compute in constants.items():
            try:
                value = float(compute())
            except (OverflowError, ZeroDivisionError):
                value = float("nan")
            if not (math.isfinite(value) and value > 0):
                raise InputError(f"[physics] {keys} give {name.replace('_', ' ')} = {value:.3g}, which must be a "
                                 "positive finite number: choose values nearer 1 (rescale the units)")

    # Diagnostics --------------------------------------------------------------------------
    def stable_time_step(self, cfl: float, min_spacing: float) -> float:
        """dt = CFL * (smallest GLL spacing) / (fastest wave speed)."""
        return cfl * min_spacing / self.wave_speed

    def cfl_bound_factor(self) -> float:
        """The factor on the spec's cfl bounds for this instance (1; an operator with a larger
        spectral radius than the one the bounds were measured for says less)."""
        return 1.0

    def energy(self, u) -> float:
        raise NotImplementedError

    def flux_spectrum(self, transform):
        """The transforms whose surface densities give the flux spectra (monitors/dft.py), from
        those of the state's fields (frequencies, fields, ...): the same, unless the state
        carries a complex field as two real parts (Maxwell's Bloch pair)."""
        return transform

    def injection_measure(self, comm=None):
        """Collective: None, or an object whose ``start(t)`` and ``measure(t)`` (collective)
        give per source the integral of a bound of its rate up to t, for the growth guard
        (runner/growth_guard.py; systems/maxwell/injection.py is one). None: no sources."""
        return None

    def growth_hints(self, comm=None) -> list:
        """Collective: lines for the growth guard's message (the terms present and what to
        try), asked once at set-up."""
        return []

    def homogeneous_operator(self):
        """(apply(u, out), energy(u)): the operator without sources or forcing (collective) and
        this rank's part of the energy in whose norm it is stable, for the check of the time step
        against its spectral radius (runner/step_check.py); None: the step is not checked so."""
        return None

    def quadrature_mass(self):
        """(E, n, n, n) the diagonal mass w_i w_j w_k J of this rank's elements on the backend,
        in its dtype: what ``[output.integrals]`` sums with (the same as the system's energy).
        Systems that keep it on the backend already return theirs; this default copies the
        host geometry's once."""
        mass = getattr(self, "_quadrature_mass", None)
        if mass is None:
            mass = self._quadrature_mass = self.backend.asarray(self.geometry.mass)
        return mass

    @classmethod
    def check_dimension(cls, case, dim: int) -> None:
        """InputError for a key of ``case`` this system cannot run on a ``dim``-D mesh, called
        once the mesh's dimension is known and before the runner's own checks (which refuse the
        generic tables, runner/dimension.py): the system's refusal names its own key first."""

    @classmethod
    def memory_estimate(cls, case, layout) -> list:
        """What a run of ``case`` allocates for this system beyond what
        ``resources.estimate_run_memory`` counts (mesh, geometry, face exchange, states): a list
        of ``memory_items.MemoryItem`` for ``layout`` (a ``memory_items.RunLayout``), called before
        anything is built. Systems with auxiliary fields, solvers or extra fields override it."""
        return []

    def error_sums(self, u, exact_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per field: sum of M (u - exact)^2 and max |u - exact| on this rank (host arrays)."""
        diff = self.backend.to_host(u).astype(np.float64) - exact_values
        mass = self.geometry.mass
        count = len(self.field_names)
        squares = np.array([np.sum(mass * diff[c] ** 2) for c in range(count)])
        maxima = np.abs(diff).reshape(count, -1).max(axis=1) if diff.size else np.zeros(count)
        return squares, maxima

    def check_derived(self, names) -> None:
        """InputError, on every rank alike (collective), for a derived field of ``names`` this
        run cannot give (the wall shear with no wall); called once at set-up."""

    def derived_fields(self, u, names) -> dict:
        """{component name: host float64 (E, n, n, n)} of the derived fields ``names`` (keys of
        ``spec.derived``) of the state ``u``; collective (every rank calls it with the same names)."""
        if names:
            raise NotImplementedError(f"{self.name} computes no derived fields")
        return {}

    def flops_per_step(self, stages: int) -> float | None:
        """Floating-point operations of one step on this rank, where the system models them."""
        return None

    def summary(self, stepper, comm=None) -> dict:
        """Entries this system adds to the run summary (collective across ranks)."""
        return {}
