"""The SEDG Maxwell system (seed paper eqs. (1)-(9)): declarative set-up over the backend.

    eps dE/dt =  curl H + lift * F_E        mu dH/dt = -curl E + lift * F_H

Volume terms by tensor-product derivatives and the chain rule, in split form on curved
elements (tensor.split_curl: the discrete energy then never grows on any mesh; collocation at
GLL points, so the mass matrix is diagonal and cancels in the strong form); face terms from a
gather–scatter sum of -n x E and -n x H over face-point ids (systems/dg.py, fluxes.py,
boundaries.py). Kernels: reference.py (any backend), cpu.py (C), cuda.py (CUDA) and the
whole-step path with the exchange fused into the stage kernel (fused.py). Sources (-J/eps,
-M/mu: currents, dipoles; [source.<name>]) are a stage term (sources.py, source_term.py). Per-point
eps, mu and conductivity ([material.<name>], [physics] sigma): materials.py. Bloch-periodic
boundaries ([physics] bloch_k: the state carries real and imaginary parts): bloch.py.
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.config import Integrand, Key, PhysicsSpec
from lobatto.config.ranges import MAGNITUDE
from lobatto.errors import InputError
from lobatto.mesh import compute_geometry
from lobatto.systems.dg import FaceExchangeSystem
from lobatto.systems.maxwell import cpu, cuda, far_field, reference  # noqa: F401  (register the kernels, [output.far_field])
from lobatto.systems.maxwell import galerkin, planar
from lobatto.systems.maxwell.bloch import BlochWrap, with_bloch
from lobatto.systems.maxwell.boundaries import BOUNDARY_FACTORS
from lobatto.systems.maxwell.dispersive import dispersive_terms
from lobatto.systems.maxwell.dispersive_memory import memory_estimate as dispersive_memory
from lobatto.systems.maxwell.galerkin_memory import memory_estimate as galerkin_memory
from lobatto.systems.maxwell.fluxes import FLUX_ALPHA
from lobatto.systems.maxwell.injection import SourceInjection, growth_hints
from lobatto.systems.maxwell.loss import check_pole_rates, fit_loss_step, loss_time_step
from lobatto.systems.maxwell.materials import PROPERTY_RANGES, HeterogeneousMedium, parse_material_tables
from lobatto.systems.maxwell.media import medium_from_case
from lobatto.systems.maxwell.plane_waves import build_plane_waves
from lobatto.systems.maxwell.pml import build_pml, parse_pml
from lobatto.systems.maxwell.pml_memory import memory_estimate as pml_memory
from lobatto.systems.maxwell.port_launch import build_ports
from lobatto.systems.maxwell.port_results import PortRuns
from lobatto.systems.maxwell.ports import parse_port_tables, parse_ports
from lobatto.systems.maxwell.source_term import SourceTerm
from lobatto.systems.maxwell.sources import MaxwellSources, parse_sources
from lobatto.systems.maxwell.volume_form import note as note_volume_form, resolve as resolve_volume_form

FIELD_NAMES = ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz")


def _square(v):
    return v[0] * v[0] + v[1] * v[1] + v[2] * v[2]


def _poynting(fields, n):
    """(E x H) . n"""
    e, h = fields[0:3], fields[3:6]
    return ((e[1] * h[2] - e[2] * h[1]) * n[0] + (e[2] * h[0] - e[0] * h[2]) * n[1]
            + (e[0] * h[1] - e[1] * h[0]) * n[2])


def _coefficient(system, key, elements):
    """eps or mu on a block of elements: the scalar, or the heterogeneous medium's per-point
    values there (materials.py)."""
    if getattr(system, "medium", None) is None:
        return getattr(system, key)
    value = system.medium.device_property(system, key)
    return value[:, elements] if value.ndim == 5 else value[elements]  # (3, E, ...): diagonal (anisotropy.py)


def _weighted_square(system, key, v, elements):
    """eps |E|^2 or mu |H|^2 per point: sum c_i v_i^2 with a diagonal c (anisotropy.py)."""
    c = _coefficient(system, key, elements)
    if getattr(c, "ndim", 0) == 5:
        return c[0] * v[0] * v[0] + c[1] * v[1] * v[1] + c[2] * v[2] * v[2]
    return c * _square(v)


#: what [output.integrals] can integrate (docs/probes.md); "energy" is what energy() sums
INTEGRANDS = {
    # (with the Galerkin form, its own weight-adjusted masses: galerkin.energy_integral)
    "energy": Integrand("volume", "electromagnetic energy density (eps |E|^2 + mu |H|^2) / 2",
                        lambda s, f, e: 0.5 * (_weighted_square(s, "epsilon", f[0:3], e)
                                               + _weighted_square(s, "mu", f[3:6], e)), per_element=True,
                        integral=lambda s, f, e: galerkin.energy_integral(s, f, e)),
    "electric_energy": Integrand("volume", "electric energy density eps |E|^2 / 2",
                                 lambda s, f, e: 0.5 * _weighted_square(s, "epsilon", f[0:3], e),
                                 per_element=True, integral=lambda s, f, e: galerkin.energy_integral(s, f, e, (0,))),
    "magnetic_energy": Integrand("volume", "magnetic energy density mu |H|^2 / 2",
                                 lambda s, f, e: 0.5 * _weighted_square(s, "mu", f[3:6], e), per_element=True,
                                 integral=lambda s, f, e: galerkin.energy_integral(s, f, e, (1,))),
    "poynting_flux": Integrand("surface", "outward Poynting flux (E x H) . n, the power leaving",
                               lambda s, f, n: _poynting(f, n)),
}

SPEC = PhysicsSpec(
    name="maxwell",
    description="time-domain Maxwell equations, SEDG (NekCEM formulation)",
    fields=FIELD_NAMES,
    dimensions=(2, 3),  # 2-D: z-invariant fields, TE (Ex, Ey, Hz) and TM (Hx, Hy, Ez) carried together
    fields_2d=FIELD_NAMES,
    boundary_kinds=tuple(BOUNDARY_FACTORS),
    default_boundary="pec",
    keys=(
        Key("epsilon", "positive", 1.0, "permittivity", range=PROPERTY_RANGES["epsilon"],
            hint="a diagonal (anisotropic) epsilon = [ex, ey, ez] goes in a [material.<name>] table"),
        Key("mu", "positive", 1.0, "permeability", range=PROPERTY_RANGES["mu"],
            hint="a diagonal (anisotropic) mu = [mx, my, mz] goes in a [material.<name>] table"),
        Key("sigma", "nonnegative", 0.0, "electric conductivity (uniform; per region: [material.<name>])",
            range=PROPERTY_RANGES["sigma"]),
        Key("bloch_k", "vector", None, "Bloch wave vector [kx, ky, kz] (radians per unit length, along periodic "
            "axes only): u(x + d) = exp(i k . d) u(x) across each periodic wrap d; the fields gain their "
            "imaginary parts Ex_im .. Hz_im (bloch.py). Absent: plain periodic", range=MAGNITUDE),
    ),
    extend=with_bloch,  # bloch_k: the imaginary parts' fields
    fluxes=tuple(FLUX_ALPHA),
    # largest stable cfl, every order 1-16 and boxes of PEC/PMC/absorbing/periodic sides, affine
    # and curved, and the Bloch modes of larger periodic meshes, rounded down (benchmarks/notes-stability.md)
    cfl_bounds={("upwind", "lsrk45"): 0.63, ("upwind", "rk4"): 0.37, ("upwind", "ssprk3"): 0.33,
                ("central", "lsrk45"): 0.74, ("central", "rk4"): 0.62, ("central", "ssprk3"): 0.38},
    integrands=INTEGRANDS,
    named_tables={"source": parse_sources,  # [source.<name>]: sources.py
                  "material": parse_material_tables,  # [material.<name>]: materials.py
                  "pml": parse_pml,  # [pml]: pml.py
                  "port": parse_port_tables, "ports": parse_ports},  # [port.<name>], [ports]: ports.py
)


#: functions (case, system, comm) -> StageTerms (terms.py) built from the case's tables
TERM_BUILDERS: tuple = (build_pml, dispersive_terms, build_plane_waves, build_ports)  # poles before the surfaces that check the medium


def flops_per_step(order: int, points: int, stages: int = 5) -> float:
    """The seed paper's work model, W = [180(N+1) + 420] n per 5-stage step, scaled by stages."""
    return (180.0 * (order + 1) + 420.0) * points * stages / 5.0


class MaxwellSystem(FaceExchangeSystem):
    spec = SPEC
    energy_bounded = True  # no sources; PEC/PMC/walls and the fluxes are passive
    growth_guarded = True  # linear: exponential growth is an instability (runner/growth_guard.py)
    port_runs = PortRuns  # [port.<name>]: the runs' cases, the decomposition, the S-parameters (runner/ports.py)
    trace_components = 6
    boundary_factors = BOUNDARY_FACTORS
    volume_forms = ("split", "chain", "galerkin")
    # E to Nek5000's velocity, H to its first three passive scalars
    output_layout = (FIELD_NAMES[0:3], None, FIELD_NAMES[3:6])

    @classmethod
    def memory_estimate(cls, case, layout) -> list:
        """The [pml] layer's and the dispersive poles' arrays (pml.py, dispersive.py) and the
        Galerkin volume form's operator (galerkin.py)."""
        return pml_memory(case, layout) + dispersive_memory(case, layout) + galerkin_memory(case, layout)

    def __init__(self, mesh, order, backend, epsilon=1.0, mu=1.0, flux="upwind", comm=None, geometry=None,
                 exchange_method="auto", exchange="auto", overlap="auto", sources=(), source_file="case",
                 material=None, volume_form="split", bloch_k=None):
        if flux not in FLUX_ALPHA:
            raise ValueError(f"unknown flux {flux!r}; expected one of {sorted(FLUX_ALPHA)}")
        self.epsilon, self.mu, self.flux = float(epsilon), float(mu), flux
        self.alpha = FLUX_ALPHA[flux]
        planar.check_system(mesh.dim, volume_form, source_file)  # what a 2-D mesh refuses (planar.py)
        eps, mu = self.epsilon, self.mu
        self.check_constants("epsilon and mu", wave_speed=lambda: 1.0 / math.sqrt(eps * mu),
                             impedance=lambda: math.sqrt(mu / eps), inverse_impedance=lambda: math.sqrt(eps / mu),
                             inverse_epsilon=lambda: 1.0 / eps, inverse_mu=lambda: 1.0 / mu)
        self.wave_speed = 1.0 / math.sqrt(eps * mu)
        self.setup_faces(mesh, order, backend, geometry, comm, exchange_method, exchange, overlap, volume_form)
        if mesh.dim == 2:  # Nek5000's 2-D velocity slot has two components: (Ex, Ey); Ez, H as scalars
            self.output_layout = (FIELD_NAMES[0:2], None, FIELD_NAMES[2:6])
        dim = mesh.dim  # every Maxwell kernel is specialised on the mesh's dimension (2: thin k axis)
        self.traces_kernel = backend.kernel("maxwell_traces", order=self.order, dim=dim)
        self.rhs_kernel = backend.kernel("maxwell_rhs", order=self.order, dim=dim)
        self.stage_kernel = (backend.kernel("maxwell_stage", order=self.order, dim=dim)
                             if backend.has_tuned("maxwell_stage") else None)
        # per-point eps, mu, sigma (materials.py): the reference rhs, no fused or tuned stage
        self.medium = None if material is None else HeterogeneousMedium(self, material, comm)
        if self.medium is not None:
            self.stage_kernel, self.wave_speed = None, self.medium.wave_speed
        self.galerkin = None  # the Galerkin form's operator (galerkin.py), when chosen
        if volume_form == "galerkin":
            galerkin.attach(self)
        #: the Bloch wraps' phases and the pair's exchange (bloch.py); None: plain periodic
        self.bloch = None if bloch_k is None else BlochWrap(self, bloch_k, comm, source_file)
        if self.bloch is not None:  # the state: real parts, then imaginary parts
            self.spec = with_bloch(SPEC, {"bloch_k": bloch_k})
        #: terms on some elements around the stage kernel (terms.py): sources, dispersion, PML, TF/SF
        self.terms = []
        #: the fused path's device array holding the stage's time while the terms run (fused.py)
        self.stage_clock = None
        # [source.<name>]: L depends on t and the energy may grow (SourceTerm says so); the
        # first term, so that S is added where sources.py added it before the other terms
        self.sources = MaxwellSources(sources, self, comm, source_file) if sources else None
        if self.sources is not None:
            if self.bloch is not None:  # the real part's: times cos(k . x) (bloch.py)
                self.bloch.phase_sources(self, self.sources, 0)
            self.add_term(SourceTerm(self.sources, self))
        if self.sources is not None and self.bloch is not None:  # the imaginary part's: sin(k . x)
            imaginary = self.bloch.phase_sources(self, MaxwellSources(sources, self, comm, source_file), 1)
            self.add_term(self.bloch.imaginary_term(SourceTerm(imaginary, self)))
        #: False keeps the stage path on CUDA with terms (tests compare the two paths)
        self.fused_with_terms = True
        self._listed_traces = None
        #: (sigma/eps, cfl bound, reach) where a conductor shortens the step (loss.py)
        self.loss_fit = None

    def add_term(self, term) -> None:
        """Add a StageTerm (terms.py). Terms make L depend on t where they say so; terms that
        exchange energy with auxiliary fields or absorb it lift the energy bound."""
        self.terms.append(term)
        self.time_dependent = self.time_dependent or getattr(term, "time_dependent", False)
        self.energy_bounded = self.energy_bounded and getattr(term, "energy_bounded", False)

    def stable_time_step(self, cfl: float, min_spacing: float) -> float:
        """The wave's step (cfl h / c), shortened where a term's own rates need it (a PML's
        stiff ones: StageTerm.limit_time_step)."""
        dt = super().stable_time_step(cfl, min_spacing)
        if self.galerkin is not None:  # its exact mass has a larger spectral radius (galerkin.py)
            dt *= galerkin.step_factor(self.order)
        for term in self.terms:
            dt = term.limit_time_step(dt, cfl)
        return loss_time_step(dt, cfl, self.loss_fit)  # a conductor's decay rate (loss.py)

    def cfl_bound_factor(self) -> float:
        """The Galerkin form's step factor (its spectral radius is larger, galerkin.py), else 1."""
        return galerkin.step_factor(self.order) if self.galerkin is not None else 1.0

    def check_integrator(self, integrator: str, where: str = "case") -> None:
        """Terms with auxiliary fields need a 2N-storage scheme (their fields step with it)."""
        stateful = [t.name for t in self.terms if t.aux_count]
        if stateful and integrator != "lsrk45":
            raise InputError(f"{where}: [time] integrator = '{integrator}' cannot step the auxiliary fields of "
                             f"{', '.join(stateful)}; use integrator = 'lsrk45'")

    @classmethod
    def check_dimension(cls, case, dim: int) -> None:
        planar.check_case(case, dim, case.source)

    @classmethod
    def from_case(cls, case, mesh, geometry, backend, comm=None):
        planar.check_case(case, mesh.dim, case.source)
        if case.discretization.volume_form == "auto" and geometry is None:  # "auto" asks whether it is curved
            geometry = compute_geometry(mesh, case.discretization.order)
        form, why = resolve_volume_form(case, mesh, geometry, comm)
        note_volume_form(case, form, why, comm)
        epsilon, mu, material = medium_from_case(case, mesh, geometry, comm)
        sources = [s for s in case.tables.get("source", ()) if s.type != "plane_wave"]  # tfsf.py
        system = cls(mesh, case.discretization.order, backend, geometry=geometry, epsilon=epsilon, material=material,
                     mu=mu, flux=case.discretization.flux, comm=comm, **cls.parallel_options(case),
                     volume_form=form, sources=sources, source_file=case.source,
                     bloch_k=case.physics.values.get("bloch_k"))
        system.volume_form_choice = {"setting": case.discretization.volume_form, "form": form, "reason": why}
        for build in TERM_BUILDERS:
            for term in build(case, system, comm):
                system.add_term(term)
        if system.bloch is not None:  # the terms it takes, the imaginary part's [pml] (bloch.py)
            system.bloch.check_case(system, case.source)
            for term in (build_pml(case, system, comm) if case.tables.get("pml") is not None else ()):
                system.add_term(system.bloch.imaginary_term(term))
        if system.galerkin is not None:
            galerkin.check_supported(system, case.source)
        system.check_integrator(case.time.integrator, case.source)
        fit_loss_step(case, system, comm)
        check_pole_rates(case, system, comm)
        if system.sources is not None:
            system.sources.check_times(case.time.t_end, comm, case.source)
        return system

    @classmethod
    def tuned_on(cls, backend) -> bool:
        return backend.has_tuned("maxwell_stage") or backend.has_tuned("maxwell_rhs")

    # Operator -----------------------------------------------------------------------------
    def rhs(self, u, t, out):
        timed = [term for term in self.terms if getattr(term, "corrects_sums", False)]  # tfsf_galerkin.py
        for term in timed:
            term.at_time(t)
        try:
            self.core_rhs(u, t, out)
        finally:
            for term in timed:
                term.at_time(None)
        for term in self.terms:
            if term.aux_count:
                raise InputError(f"{term.name} has auxiliary fields, which only a 2N-storage integrator "
                                 "(lsrk45) steps")
            part = slice(None) if self.bloch is None else self.bloch.part(term)  # a Bloch pair's part
            term.add_to_rhs(u[part], t, out[part])
        return out

    def core_rhs(self, u, t, out):
        """L(u) alone: no terms (the sources are one); a stage adds those itself."""
        if self.bloch is not None:  # each part on its own, the wraps' sums rotated (bloch.py)
            return self.bloch.rhs(self, u, out, self.part_rhs)
        return self.part_rhs(u, out)

    def part_rhs(self, u, out):
        """L(u) of a 6-field state (of one part of a Bloch pair)."""
        if self.medium is not None and self.galerkin is None:  # (the Galerkin kernels take the medium)
            self.medium.rhs(self, u, out)
        else:
            self.background_rhs(u, out)
        return out

    def with_exchange(self, u, update):
        """The face exchange (dg.py); for one part of a Bloch pair, its sums already rotated."""
        ready = None if self.bloch is None else self.bloch.ready
        if ready is None:
            return super().with_exchange(u, update)
        update(None, ready)

    def background_rhs(self, u, out):
        """L(u) in the uniform background (the [physics] eps, mu; no medium, sources or terms),
        for any full-size array u (the discrete incident wave, tfsf_discrete.py). Collective:
        the face exchange runs on every rank."""
        self.with_exchange(u, lambda elements, sums: self.rhs_kernel(
            u, sums, self.device_geometry, out, self.epsilon, self.mu, self.alpha, elements))
        return out

    def stage(self, u, residual, t, a, b, dt):
        if self.bloch is not None:  # each part with its terms and rotated sums (bloch.py)
            return self.bloch.stage(self, u, residual, t, a, b, dt)
        # terms with compiled CPU kernels fold S into the residual before the kernel where
        # a != 0 (terms_cpu.py): one pass over their elements, nothing after the kernel
        folded = [a != 0 and getattr(term, "folds_in_stage", False) for term in self.terms]
        for term, fold in zip(self.terms, folded):
            if fold:
                term.fold(u, residual, t, a, b, dt)
            else:
                term.prepare(u, t)
        self.part_stage(u, residual, a, b, dt)
        for term, fold in zip(self.terms, folded):
            if not fold:
                term.finish(u, residual, a, b, dt)

    def part_stage(self, u, residual, a, b, dt) -> None:
        """The stage of a 6-field state without the terms (of one part of a Bloch pair)."""
        if self.stage_kernel is None and self.galerkin is None and getattr(self.medium, "stage_kernel", None):
            self.medium.stage(self, u, residual, a, b, dt)  # compiled on the CPU (cpu.py); sources: a term
        elif self.stage_kernel is None:
            du = self.part_rhs(u, self._scratch(u))
            residual *= a
            residual += dt * du
            u += b * residual
        else:
            self.with_exchange(u, lambda elements, sums: self.stage_kernel(
                u, residual, sums, self.device_geometry, self.epsilon, self.mu, self.alpha, a, b, dt, elements))

    def refresh_traces(self, u, traces) -> None:
        """Rewrite, in place, the traces of the elements a term changed after the fused stage
        kernel (the fused path runs on CUDA only)."""
        from lobatto.systems.maxwell.terms_cuda import ListedTraces

        if self._listed_traces is None:
            self._listed_traces = ListedTraces(self.backend, self.order, dim=self.mesh.dim)
        for term in self.terms:
            if term.count and term.changes_fields and not term.writes_traces:
                self._listed_traces(u, self.device_geometry["normals"], traces, term.device_elements, term.count)

    def whole_step(self, stepper):
        """On CUDA with a 2N-storage scheme: steps with the face exchange fused into the stage
        kernel (fused.py), which saves the gather–scatter's passes over the face data (581 ->
        363 bytes per point and stage at N=7, docs/cuda.md); across ranks only the shared face
        points' traces travel. Needs a conforming mesh (every face point has at most one
        partner); otherwise None on every rank alike, and the stages run."""
        if (self.backend.name != "cuda" or not hasattr(stepper.scheme, "A") or not self.fused_with_terms
                or self.galerkin is not None or self.bloch is not None):
            return None  # (the fused stage computes the collocated forms, not the Galerkin one, nor Bloch wraps)
        from lobatto.systems.maxwell.fused import FusedExchangeStepper

        try:
            return FusedExchangeStepper(self, stepper)
        except ValueError:
            return None

    # Diagnostics --------------------------------------------------------------------------
    def energy(self, u) -> float:
        """Discrete electromagnetic energy 1/2 sum M (eps |E|^2 + mu |H|^2) on this rank, and
        the terms' (their auxiliary fields')."""
        return self.field_energy(u) + sum(term.energy() for term in self.terms)

    def field_energy(self, u) -> float:
        """The fields' part of energy(u) (of a Bloch pair: the sum of both parts')."""
        if self.bloch is not None and u.shape[0] == 2 * self.trace_components:
            return self.field_energy(u[:self.trace_components]) + self.field_energy(u[self.trace_components:])
        if self.galerkin is not None:  # its own (weight-adjusted) mass matrices, with the medium's eps, mu
            return galerkin.energy(self, u)
        if self.medium is not None:
            return self.medium.energy(self, u)
        xp, mass = self.backend.xp, self.device_geometry["mass"]
        with np.errstate(all="ignore"):  # an overflow gives inf, which the driver reports
            e2 = xp.sum(mass * xp.sum(u[0:3] ** 2, axis=0), dtype=np.float64)
            h2 = xp.sum(mass * xp.sum(u[3:6] ** 2, axis=0), dtype=np.float64)
            return 0.5 * float(self.epsilon * e2 + self.mu * h2)

    def homogeneous_operator(self):
        """curl terms, fluxes and conductivity, no sources and no stage terms (a PML's, the
        poles' rates limit the step themselves: StageTerm.limit_time_step); the fields' energy."""
        def apply(u, out):
            return self.core_rhs(u, 0.0, out)

        return apply, self.field_energy

    def flux_spectrum(self, transform):
        """With bloch_k the complex field E + i E_im goes as e^(i(k.x - wt)) (Meep's sign,
        bloch.py), while the DFT's kernel e^(-2 pi i f t) takes the e^(+iwt) part: the field
        transformed is the conjugate pair E - i E_im (its transform the real part's minus i the
        imaginary part's), and the flux 1/2 Re(E x H*) . n is that field's. (E + i E_im has
        almost nothing at +f for a continuous TF/SF wave: its flux was ~1e-5 of the true one.)"""
        if self.bloch is None:
            return transform
        half = len(self.field_names) // 2
        return transform[:, :half] - 1j * transform[:, half:]

    def injection_measure(self, comm=None):
        """The sources' and plane waves' injection bound (injection.py), None without them."""
        if self.sources is None and not any(getattr(term, "wave", None) is not None for term in self.terms):
            return None
        return SourceInjection(self, comm)

    def growth_hints(self, comm=None) -> list:
        names = [term.name for term in self.terms]
        return ([f"terms present: {', '.join(names)}"] if names else []) + growth_hints(self, comm)

    def flops_per_step(self, stages: int = 5) -> float | None:
        # the model counts 3-D's work (three derivative directions, six faces): not a 2-D mesh's
        return flops_per_step(self.order, self.points, stages) if self.mesh.dim == 3 else None

    def summary(self, stepper, comm=None) -> dict:
        out = super().summary(stepper, comm)
        for term in self.terms:
            if not isinstance(term, SourceTerm):
                out[term.name] = term.describe(comm)
        if self.sources is not None:
            out["sources"] = self.sources.describe(comm, stepper.path)
        if self.bloch is not None:
            out["bloch"] = self.bloch.describe(comm)
        if getattr(self, "volume_form_choice", None) is not None:  # (from_case's; "auto" resolved)
            out["volume_form"] = dict(self.volume_form_choice)
        return out

    def history(self) -> dict:
        out = {}
        for term in self.terms:
            out.update(term.history())
        return out

    def restore_history(self, history: dict) -> None:
        mine = set(self.history())
        if set(history) != mine:
            raise ValueError(f"maxwell keeps {', '.join(sorted(mine)) or 'no history'}, got "
                             f"{', '.join(sorted(history)) or 'none'}")
        for term in self.terms:
            term.restore_history(history)
