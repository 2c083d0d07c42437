"""Incompressible Navier–Stokes, PN-PN: velocity and pressure on the same GLL points, the
high-order splitting of Tomboulides, Orszag and Israeli (as Nek5000, nekRS and Neko), BDFk
in time with the nonlinear terms extrapolated (EXTk).

One step from t^n to t^{n+1} = t^n + dt, with the integrators' coefficients
du/dt(t^{n+1}) ~ sum_j bdf[j] u^{n+1-j} / dt and g(t^{n+1}) ~ sum_j ext[j-1] g^{n+1-j}
(``multistep_step``; docs/navier-stokes.md has the derivation):

1. explicit terms  E^n = -(u.grad)u^n (dealiased) - chi (I - F) u^n (HPF-RT filter, optional),
                   F  = [sum_j ext_j E^{n+1-j} + B f(t^{n+1})] / B - sum_{j>=1} bdf_j u^{n+1-j} / dt
2. pressure        (grad q, grad p) = (grad q, F - nu curl curl u_ext) - bdf_0 / dt <q, n.u_b>,
                   u_ext = sum_j ext_j u^{n+1-j}; p = 0 on outflow faces
3. velocity        (bdf_0 / dt) B u + nu K u = B (F - grad p), u = u_b on walls and inflows

then the constant flow rate correction, when asked for. The passive scalars (scalars.py) are
solved first, from lagged fields only, so that f may use T^{n+1} (buoyancy: force.py). With
[time] substeps > 0 the advection term (and the filter's relaxation) leaves step 1: the lagged
u^{n+1-j} in F are carried along the characteristics by RK4 sub-steps instead (substeps.py). The parts are timed (advection,
pressure, velocity, other) for the run summary; reports.py has the reports and the watch that
stops a run gone unstable.
"""

from __future__ import annotations

import math
import time

import numpy as np

from lobatto.errors import InputError, SolverError
from lobatto.operators.advection import Advection, default_fine_points
from lobatto.operators.differential import (BackendGeometry, mass_minus_gradient, weak_divergence_minus_curl,
                                            weighted_curl)
from lobatto.operators.filter import HighPassFilter
from lobatto.machine.parallel import allreduce, collective_errors
from lobatto.solvers.elliptic import EllipticSolver, Profile, VectorHelmholtzSolver
from lobatto.solvers.multigrid import Level
from lobatto.solvers.settings import elliptic_memory
from lobatto.systems.base import System
from lobatto.systems.dg import check_representable
from lobatto.systems.navier_stokes.boundaries import FlowBoundaries, check_face_tables
from lobatto.systems.navier_stokes.derived import DerivedOutputs, derived_memory
from lobatto.systems.navier_stokes.flow_rate import FlowRate
from lobatto.systems.navier_stokes import forces  # noqa: F401  (registers [output.forces])
from lobatto.systems.navier_stokes.force import Force
from lobatto.systems.navier_stokes.reports import FlowReports
from lobatto.systems.navier_stokes.slip import SlipConstraint
from lobatto.systems.navier_stokes.scalars import ScalarTransport, scalars_from_case
from lobatto.systems.navier_stokes.spec import DIRECTIONS, SPEC, with_scalars
from lobatto.systems.navier_stokes.start import check_planar, check_start, check_tables, initial_speed
from lobatto.systems.navier_stokes.substeps import SubStepper
from lobatto.systems.navier_stokes import statistics  # noqa: F401  (registers [output.statistics])

#: parts of a step, as the summary lists them
PARTS = ("advection", "pressure", "velocity", "flow_rate", "scalars", "diagnostics")
#: classical RK4's stability bound on the negative real axis (h * rate), for the filter's relaxation
RK4_REAL_BOUND = 2.78
#: lagged states kept (BDF3 needs three)
HISTORY = 3


#: a float32 backend's solves stall near its round-off (the Poisson system refuses tolerances below 1e-5)
FLOAT32_HINT = ("; with [backend] precision = \"float32\" a {table} tolerance below about 1e-5 is not reached: "
                "raise it, or keep the backend float64 ([solver.pressure] precision = \"float32\" for a float32 "
                "preconditioner)")


class NavierStokesSystem(FlowReports, DerivedOutputs, System):  # derived.py: [output] derived
    spec = SPEC
    time_dependent = True  # coefficients and boundary data change from step to step
    output_layout = (("ux", "uy", "uz"), "p", ())  # Nek5000 velocity and pressure slots
    #: history numbers a checkpoint may lack (flow_rate_sigma: older checkpoints lack it)
    optional_history = ("flow_rate_sigma",)
    #: arrays of the state's size (ux, uy, uz, p) the memory estimate counts for what the
    #: system keeps: history, both levels' factors, the dealiasing grid's metrics, Krylov and
    #: projection vectors, multigrid; from measured peaks (docs/navier-stokes.md, "Memory")
    memory_states = 40
    #: arrays of the state's points per passive scalar: its field in the state and the
    #: stepper's copies, three lagged values and advection terms, the step's temporaries
    #: (counted from scalars.py, not measured)
    scalar_arrays = 14
    #: values per point that history() returns (three lagged velocities and advection terms)
    history_fields = 18

    def __init__(self, mesh, geometry, backend, comm, physics, pressure_settings, velocity_settings,
                 boundaries: FlowBoundaries, force, wave_speed: float = 1.0, scalars: list = (), substeps: int = 0,
                 levels: int = HISTORY):
        self.mesh, self.geometry, self.backend = mesh, geometry, backend
        self.comm = comm if comm is not None and comm.Get_size() > 1 else None
        self.order = geometry.order
        self.num_elements = mesh.num_elements
        self.dim = mesh.dim  # 2: state (ux, uy, p, scalars...) of (E, 1, n, n) arrays
        self.points = self.num_elements * (self.order + 1) ** self.dim
        self.viscosity = float(physics["viscosity"])
        self.boundaries, self.force = boundaries, force
        self.wave_speed = wave_speed
        self.diagnostics_every = int(physics["diagnostics_every"])
        self.pressure_settings, self.velocity_settings = dict(pressure_settings), dict(velocity_settings)
        self.setup_seconds = {}
        start = time.perf_counter()
        self.device_geometry = BackendGeometry(geometry, backend)
        # the pressure solve's own parts (operator, smoother, coarse solve...): off by default,
        # as timing them synchronises the device after each (benchmarks/bench_tgv.py turns it on)
        self.profile = Profile(backend, enabled=False)
        self.velocity_level = Level.build(mesh, self.order, backend, self.comm, boundaries.velocity_faces,
                                          h1=self.viscosity, h2=1.0, geometry=geometry)
        self.assembly = self.velocity_level.assembly
        mass = self.device_geometry.mass
        self.inverse_assembled_mass = 1.0 / self.assembly.dssum(mass.copy())
        # symmetry / outflow_normal faces on any rank: the constraint's gather-scatter is collective
        if allreduce(self.comm, int(boundaries.slip_faces.any()), "max"):
            boundaries.constraint = SlipConstraint.build(boundaries.kind, geometry, self.assembly, backend)
        boundaries.open.pressure_lifted = bool(allreduce(self.comm, int(boundaries.open.pressure_lifted), "max"))
        self.volume = self.assembly.integral(mass)[0]  # reproducible: the same bits on any partition
        self.setup_seconds["velocity"] = time.perf_counter() - start
        start = time.perf_counter()
        self.pressure_level = Level.build(mesh, self.order, backend, self.comm, boundaries.outflow_faces,
                                          h1=1.0, h2=0.0, geometry=geometry)
        self.null_space = not bool(allreduce(self.comm, int(boundaries.outflow_faces.any()), "max"))
        # whether any rank has velocity data: the lifting's gather-scatter is collective, so
        # every rank makes it (a rank without a velocity face adds zeros) or none does
        boundaries.lifted = bool(allreduce(self.comm, int(bool(boundaries.groups)), "max"))
        self.pressure_solver = EllipticSolver(mesh, self.pressure_level, self.pressure_settings, backend, self.comm,
                                              boundaries.outflow_faces, 1.0, 0.0, self.profile,
                                              null_space=self.null_space, table="solver.pressure")
        self.velocity_solver = VectorHelmholtzSolver(
            self.velocity_level, tolerance=self.velocity_settings["tolerance"],
            max_iterations=self.velocity_settings["max_iterations"],
            absolute_tolerance=self.velocity_settings["absolute_tolerance"], constraint=boundaries.constraint)
        self.setup_seconds["pressure"] = time.perf_counter() - start
        self.advection = Advection(geometry, backend, dealias=bool(physics["dealias"]))
        modes = int(physics["filter_modes"])
        self.filter = HighPassFilter(self.order, backend, modes=modes, weight=physics["filter_weight"]) if modes else None
        # [time] substeps > 0: the advection term sub-stepped along the characteristics
        self.substeps = int(substeps)
        self.substepper = None
        if self.substeps:
            # the HPF-RT relaxation rides along in the sub-steps: extrapolated, it is unstable
            # for filter_weight * dt > 4/3 (BDF2), which CFL 2 passes on coarse meshes
            relaxation = None
            if self.filter is not None:
                mass, relax = self.device_geometry.mass, self.filter.relaxation
                relaxation = lambda w: mass * relax(w)  # noqa: E731
            self.substepper = SubStepper(self.advection, self.assembly, self.inverse_assembled_mass, backend,
                                         self.substeps, levels, relaxation)
        # passive scalars (scalars.py): fields after ux, uy, uz, p, the first in Nek5000's
        # temperature slot and the others in its passive-scalar slots (driver: output_layout)
        self.spec = with_scalars(SPEC, physics, InputError)
        names = self.spec.fields[len(SPEC.fields):]
        velocity_names = ("ux", "uy", "uz")[:self.dim]
        self.output_layout = (velocity_names, "p", ())
        if names:
            self.output_layout = (velocity_names, "p", names[1:], names[0])
        self.scalars = ScalarTransport(self, list(scalars)) if scalars else None
        self.flow_rate = None
        if physics["flow_rate"] > 0:
            self.flow_rate = FlowRate(self, DIRECTIONS.index(physics["flow_direction"]), physics["flow_rate"])
        # no force, driving, inflow or outflow: the kinetic energy can only fall (reports.py watches it)
        self.energy_bounded = (force is None and self.flow_rate is None and not boundaries.lifted
                               and self.null_space)
        self.lowest_energy, self.time = None, 0.0
        self.stability_advice = "lower [time] target_cfl or dt, or raise [time] substeps"
        # history: u^n, u^{n-1}, ... and their explicit terms (weak, element-local)
        self.velocities: list = []
        self.explicit: list = []
        self.h2 = None
        self.steps_taken = 0
        self.steps_this_run = 0  # steps of this process (the per-step averages of the summary)
        self.step_sizes: list = []  # the latest HISTORY - 1 step sizes, newest first (the sub-steps' times)
        self.seconds = dict.fromkeys(PARTS, 0.0)
        self.collectives = {part: {"reductions": 0, "exchanges": 0} for part in PARTS}  # issued per part
        self.last_report: dict = {}
        self.totals = {"pressure_iterations": 0, "velocity_iterations": 0}

    # Set-up ------------------------------------------------------------------------------
    @property
    def field_names(self) -> tuple:
        return self.spec.fields_in(self.dim)  # 2-D: (ux, uy, p, scalars...)

    @classmethod
    def check_dimension(cls, case, dim: int) -> None:
        check_planar(case, dim)  # start.py: the z keys a 2-D run refuses

    @classmethod
    def memory_estimate(cls, case, layout) -> list:
        """The pressure solver's GMRES basis, projection beyond the default 8 and multigrid
        levels (solvers/settings.py), and the passive scalars (memory_states counts the flow's
        four fields only)."""
        items = elliptic_memory(case.tables["solver.pressure"], layout, "solver.pressure", counted_projection=8)
        scalars = layout.fields - len(SPEC.fields_in(layout.dim))
        substeps = case.time.substeps if case.time is not None else 0
        if substeps:  # substeps.py: k stored + 2 combined fine contravariant fields, 4 buffers per field set
            d = layout.dim
            levels, fine = int(case.time.integrator[-1]), (default_fine_points(layout.order) / (layout.order + 1)) ** d
            values = ((levels + 2) * d * fine + 4 * (d + scalars)) * layout.points
            items.append(layout.backend_item(
                f"[time] substeps: the sub-steps' contravariant velocities and buffers ({values / layout.points:.0f} "
                "values per point)", values * layout.value_bytes, advice="use more ranks, or [time] substeps = 0"))
        if scalars > 0:
            items.append(layout.backend_item(
                f"[physics] scalars: {scalars:,} passive scalars ({cls.scalar_arrays} arrays of {layout.points:,} "
                "points each)", cls.scalar_arrays * scalars * layout.points * layout.value_bytes,
                advice="use fewer [physics] scalars"))
        return items + derived_memory(case, layout)

    @classmethod
    def from_case(cls, case, mesh, geometry, backend, comm=None):
        physics = {key.name: getattr(case.physics, key.name) for key in SPEC.keys}
        tables = case.tables.get("boundary", {})
        with collective_errors(comm):
            check_representable(geometry, backend, mesh)  # float32: metrics and mass within its range
            kinds = System.boundary_kind_of(cls, mesh)
            check_tables(case, mesh, tables)
            check_face_tables(kinds, mesh, tables)
            # only tables with velocity data make velocity faces (a scalar's alone leaves a wall one)
            flow_tables = {name: t for name, t in tables.items() if any(c in t for c in ("ux", "uy", "uz"))}
            traction = {name: t for name, t in tables.items() if any(c in t for c in ("tx", "ty", "tz"))}
            boundaries = FlowBoundaries(mesh, geometry, backend, kinds, flow_tables, traction,
                                        backflow=physics["backflow_stabilization"])
            # the data's range at the start and the end, checked here (on every rank, before
            # any work) and not in the steps: a value that leaves it mid-run shows in the
            # fields, which the driver's finite-state check stops collectively
            times = (0.0, float(case.time.t_end))
            scalars = scalars_from_case(case, mesh, geometry, backend, boundaries.kind, len(SPEC.fields_in(mesh.dim)),
                                        times)
            force = Force(physics, geometry, backend, times, {s.name: s.index for s in scalars},
                          comm if comm is not None and comm.Get_size() > 1 else None)
            boundaries.check(times)
            check_start(case, physics, geometry, backend)
            if case.time.substeps and not physics["dealias"]:
                raise InputError(f"{case.source}: [time] substeps needs [physics] dealias = true (the sub-steps "
                                 "combine the dealiasing grid's contravariant velocities); set dealias = true or "
                                 "substeps = 0")
            wave = initial_speed(case, geometry)
        wave = float(allreduce(comm if comm is not None and comm.Get_size() > 1 else None, wave, "max"))
        system = cls(mesh, geometry, backend, comm, physics, case.tables["solver.pressure"],
                     case.tables["solver.velocity"], boundaries, force, wave_speed=wave if wave > 0 else 1.0,
                     scalars=scalars, substeps=case.time.substeps, levels=int(case.time.integrator[-1]))
        step = (f"target_cfl (now {case.time.target_cfl:g})" if case.time.target_cfl is not None else
                f"dt (now {case.time.dt:.3g})" if case.time.dt is not None else f"cfl (now {case.time.cfl:g})")
        system.stability_advice = (f"lower [time] {step} or raise [time] substeps (now {case.time.substeps}; "
                                   "docs/navier-stokes.md, \"Sub-stepping\", says how to choose them)")
        return system

    # The step ----------------------------------------------------------------------------
    def multistep_step(self, u, t, dt, bdf, ext):
        """u (4, E, n, n, n) = (ux, uy, uz, p) at t -> at t + dt, in place ((3, E, 1, n, n) =
        (ux, uy, p) in 2-D; the scalars after p)."""
        k = len(ext)
        t_new = t + dt
        d = self.dim
        velocity = u[:d]
        self.check_filter_step(dt)
        with self.part("advection"):
            self._push_history(velocity, t)
            if self.substepper is not None:
                self.substepper.plan(dt, self.step_sizes, k)
            if self.scalars is None:
                forcing, extrapolated = self._forcing(u, t_new, dt, bdf, ext)
            else:
                self.scalars.push_history(u, HISTORY)
        if self.scalars is not None:
            # the scalars before the velocity: their step uses only lagged fields (scalars.py),
            # so solving them first changes no bit of either, and a force in the scalars
            # (buoyancy) then takes T^{n+1} itself at t^{n+1}, as BDFk asks of f^{n+1}: no
            # extrapolation error (Nek5000 extrapolates f(T^n) as it does advection; both keep
            # order k, the coupling staying explicit through the lagged velocity in T's advection)
            with self.part("scalars"):
                self.scalars.solve(u, t_new, dt, bdf, ext)
            with self.part("advection"):
                forcing, extrapolated = self._forcing(u, t_new, dt, bdf, ext)
        data, open_faces = self.boundaries.values(t_new), self.boundaries.open
        with self.part("pressure"):
            given = open_faces.pressure_lifting(t_new, self.pressure_level.assembly) if open_faces.pressure_lifted else None
            pressure = self.solve_pressure(u[d], forcing, extrapolated, data, bdf[0] / dt, t_new, given)
        with self.part("velocity"):
            natural = open_faces.natural(extrapolated, t_new)  # traction, backflow stabilisation (or None)
            new_velocity = self.solve_velocity(forcing, pressure, extrapolated, data, bdf[0] / dt, t_new, natural)
        if self.flow_rate is not None:
            with self.part("flow_rate"):
                new_velocity, pressure = self.flow_rate.correct(new_velocity, pressure, bdf[0] / dt)
        u[:d] = new_velocity
        u[d] = pressure
        self.steps_taken += 1
        self.steps_this_run += 1
        self.time = t_new
        self.step_sizes = ([float(dt)] + self.step_sizes)[:HISTORY - 1]
        with self.part("diagnostics"):
            self.last_report = self._report(u, dt)

    def _forcing(self, u, t_new, dt, bdf, ext):
        """F (step 1) and u_ext; u: the state with the scalars at t^{n+1} (the force's)."""
        k = len(ext)
        # the BDF/EXT sums, each in one pass (backend kernel linear_combination; the same
        # order, and on the CPU the same bits, as the axpys they replace)
        combine, shape = self.backend.kernel("linear_combination"), u[:self.dim].shape
        if self.substepper is not None:
            forcing = self._substepped_forcing(u, t_new, dt, bdf)
        else:
            weak = combine(self.backend.empty(shape), list(ext[:k]), self.explicit[:k])
            if self.force is not None:
                weak += self.force.weak(t_new, u)
            forcing = self.assembly.dssum(weak) * self.inverse_assembled_mass
            combine(forcing, [1.0] + [-(bdf[j] / dt) for j in range(1, k + 1)], [forcing] + self.velocities[:k])
        return forcing, combine(self.backend.empty(shape), list(ext[:k]), self.velocities[:k])

    def _substepped_forcing(self, u, t_new, dt, bdf):
        """F with the advection term (and the filter's relaxation) sub-stepped (substeps.py,
        the step planned): the body force as without sub-steps, minus sum_j bdf_j u~^{n+1-j} / dt."""
        advected = self.substepper.advected_sum(self.velocities, bdf)
        if self.force is None:
            return advected * (-1.0 / dt)
        forcing = self.assembly.dssum(self.force.weak(t_new, u).copy()) * self.inverse_assembled_mass
        forcing -= (1.0 / dt) * advected
        return forcing

    def _push_history(self, velocity, t):
        """u^n and its explicit term E^n go to the front of the history (sub-stepped: u^n's
        contravariant velocity to the sub-stepper instead of E^n)."""
        if self.substepper is not None:
            self.substepper.push(velocity)
        else:
            explicit = self.advection.convective(velocity, velocity)
            explicit *= -1.0
            if self.filter is not None:
                explicit -= self.device_geometry.mass * self.filter.relaxation(velocity)
            self.explicit = [explicit] + self.explicit[:HISTORY - 1]
        self.velocities = [velocity.copy()] + self.velocities[:HISTORY - 1]

    def solve_pressure(self, previous, forcing, extrapolated, data, sigma, t_new, given=None):
        """p^{n+1} from the curl-curl form of the pressure Poisson equation; ``given``: the
        pressure on the open faces (traction), lifted, or None (zero there)."""
        g = self.device_geometry
        vorticity = weighted_curl(g, self.backend, extrapolated)  # B curl u (one fused kernel)
        self.assembly.dssum(vorticity)
        vorticity *= self.inverse_assembled_mass  # continuous: the mass-weighted average of the copies
        level = self.pressure_level
        b = weak_divergence_minus_curl(g, self.backend, forcing, vorticity, self.viscosity)  # of F - nu curl w
        if self.boundaries.groups:
            b -= sigma * self.boundaries.normal_flux(data)
        if given is not None:
            b -= level.operator.apply_local(given)
            previous = previous - given
        level.assembly.dssum(b)
        b *= level.mask
        result = self.pressure_solver.solve(b, previous * level.mask)
        self.check(result, "pressure", t_new, "[solver.pressure]")
        self.pressure_result = result
        self.totals["pressure_iterations"] += result.iterations
        return result.x if given is None else result.x + given

    def solve_velocity(self, forcing, pressure, extrapolated, data, sigma, t_new, natural=None):
        """u^{n+1}: three Helmholtz solves (nu K + sigma B) u = B (F - grad p) together;
        ``natural``: the open faces' boundary terms (local), or None."""
        if self.h2 != sigma:
            self.velocity_solver.set_coefficients(self.viscosity, sigma)
            self.h2 = sigma
        g, level = self.device_geometry, self.velocity_level
        rhs = mass_minus_gradient(g, self.backend, forcing, pressure)  # B (F - grad p), one fused kernel
        lifting = self.boundaries.lifting(data, self.assembly) if self.boundaries.lifted else None
        if lifting is not None:
            for c in range(self.dim):
                rhs[c] -= level.operator.apply_local(lifting[c])
        if natural is not None:
            rhs += natural
        self.assembly.dssum(rhs)
        rhs *= level.mask
        start = extrapolated * level.mask
        if lifting is not None:
            start -= lifting * level.mask
        result = self.velocity_solver.solve(rhs, start)
        self.check(result, "velocity", t_new, "[solver.velocity]")
        self.velocity_result = result
        self.totals["velocity_iterations"] += result.iterations
        return result.x + lifting if lifting is not None else result.x

    def check_filter_step(self, dt) -> None:
        """Stop (collectively: dt and the weight are the same on every rank) before a sub-stepped
        step whose filter relaxation the RK4 sub-steps cannot integrate: its rate is the filter
        weight, and RK4 is stable on the negative real axis to RK4_REAL_BOUND per sub-step."""
        if self.substepper is None or self.filter is None:
            return
        rate = float(self.filter.weight) * dt / self.substepper.substeps
        if rate <= RK4_REAL_BOUND:
            return
        needed = math.ceil(float(self.filter.weight) * dt / RK4_REAL_BOUND)
        error = SolverError(f"step {self.steps_taken + 1} (dt = {dt:.4g}): the filter's relaxation (filter_weight = "
                            f"{self.filter.weight:g}) is unstable in the RK4 sub-steps for filter_weight * dt / substeps "
                            f"> {RK4_REAL_BOUND} (here {rate:.3g}): raise [time] substeps to {needed} or more, lower "
                            "[time] target_cfl (or dt), or lower [physics] filter_weight")
        error.collective = True
        raise error

    def check(self, result, what, t, table):
        if result.converged:
            return
        error = SolverError(f"the {what} solve of step {self.steps_taken + 1} (t = {t:.6g}) did not converge: "
                            f"{result.reason}; raise {table} max_iterations or tolerance, or lower [time] dt "
                            "(or target_cfl)" + FLOAT32_HINT.format(table=table) * (self.backend.precision == "float32"))
        error.collective = True
        raise error

    # Reports: reports.py (FlowReports)

    def error_sums(self, u, exact_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As System.error_sums, with the pressure compared after removing its mean difference
        from the exact one when no boundary fixes it (collective then)."""
        if not self.null_space:
            return super().error_sums(u, exact_values)
        mass = self.geometry.mass
        d = self.dim
        difference = self.backend.to_host(u[d]).astype(np.float64) - exact_values[d]
        shift = self.assembly.integral(mass * difference)[0] / self.volume
        exact = exact_values.copy()
        exact[d] += shift
        return super().error_sums(u, exact)

    def quadrature_mass(self):
        return self.device_geometry.mass

    def energy(self, u) -> float:
        """Kinetic energy 1/2 sum B |u|^2 on this rank (the driver's finiteness check)."""
        xp = self.backend.xp
        mass = self.device_geometry.mass
        return 0.5 * float(xp.sum(mass * (u[:self.dim] * u[:self.dim]).sum(axis=0)))

    def stable_time_step(self, cfl: float, min_spacing: float) -> float:
        return cfl * min_spacing / self.wave_speed

    # Checkpoints -------------------------------------------------------------------------
    def history(self) -> dict:
        xp = self.backend.xp
        empty = xp.zeros((0,) + self.assembly.shape)
        out = {"steps_taken": self.steps_taken,
               # (3k, E, n, n, n): elements on axis 1, as checkpoints want them
               "velocities": xp.concatenate(self.velocities, axis=0) if self.velocities else empty}
        if self.substepper is None:  # sub-stepped: no explicit terms kept
            out["explicit"] = xp.concatenate(self.explicit, axis=0) if self.explicit else empty
        projection = self.pressure_solver.projection
        if projection is not None:
            shape = (0,) + self.pressure_level.assembly.shape
            out["pressure_basis"] = xp.stack(projection.basis) if len(projection) else xp.zeros(shape)
            out["pressure_images"] = xp.stack(projection.images) if len(projection) else xp.zeros(shape)
        if self.scalars is not None:
            out.update(self.scalars.history(empty))
        if self.substepper is not None:  # the sub-steps' time levels (0.0: not taken yet)
            for i in range(HISTORY - 1):
                out[f"substep_dt_{i + 1}"] = self.step_sizes[i] if i < len(self.step_sizes) else 0.0
        if self.flow_rate is not None:  # the sigma of its response (0.0: none yet; flow_rate.py)
            out["flow_rate_sigma"] = float(self.flow_rate.sigma or self.flow_rate.pending_sigma or 0.0)
        return out

    def restore_history(self, history: dict) -> None:
        backend = self.backend
        self.steps_taken = int(history.get("steps_taken", 0))
        if "velocities" in history:
            v = backend.asarray(history["velocities"])
            e = backend.asarray(history["explicit"]) if "explicit" in history else v[:0]
            d = self.dim
            self.velocities = [v[d * j:d * j + d].copy() for j in range(v.shape[0] // d)]
            self.explicit = [e[d * j:d * j + d].copy() for j in range(e.shape[0] // d)]
        if self.scalars is not None:
            self.scalars.restore_history(history)
        if self.substepper is not None:
            sizes = [float(history.get(f"substep_dt_{i + 1}", 0.0)) for i in range(HISTORY - 1)]
            self.step_sizes = [size for size in sizes if size > 0]
            self.substepper.reset(self.velocities, self.steps_taken)
        if self.flow_rate is not None and history.get("flow_rate_sigma"):  # absent in older checkpoints
            self.flow_rate.sigma, self.flow_rate.response = None, None
            self.flow_rate.pending_sigma = float(history["flow_rate_sigma"])
        projection = self.pressure_solver.projection
        if projection is not None and "pressure_basis" in history:
            basis, images = backend.asarray(history["pressure_basis"]), backend.asarray(history["pressure_images"])
            projection.basis = [basis[i].copy() for i in range(basis.shape[0])]
            projection.images = [images[i].copy() for i in range(images.shape[0])]
