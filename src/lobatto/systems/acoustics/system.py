"""Linear acoustics, first-order form, by DG with an upwind (or central) flux.

    dp/dt + rho c^2 div(u) = 0          rho du/dt + grad(p) = 0

Fields p, ux, uy, uz; on a 2-D mesh p, ux, uy (``FIELDS_2D``: the state's velocity has the
mesh's dim components, u[1:1+dim], and the kernels read dim from the state's shape). Strong form at GLL points like Maxwell: volume terms by tensor-product
derivatives; face terms from one gather–scatter sum of the traces (p, n.u) (systems/dg.py).
With own values p-, u_n- = n.u- and the sums S_p = p- + p+, S_n = n.u- + n+.u+ = [u_n], the
flux of the exact Riemann solution (impedance Z = rho c; alpha = 1 upwind, 0 central) adds
at face points, times the lift,

    dp/dt += rho c^2 / 2 ([u_n] - alpha [p] / Z)        [p] = 2 p- - S_p
    du/dt += n / (2 rho) ([p] - alpha Z [u_n])

Boundaries as ghost states, i.e. factors on the sums at a boundary face (where the sum is the
element's own trace): wall (p+ = p-, u+.n = -u-.n, so u.n = 0) doubles both; absorbing
(p+ = u+ = 0, the characteristic condition: nothing enters with the upwind flux) keeps them.
"""

from __future__ import annotations

import numpy as np

from lobatto.backends.base import reference_kernel
from lobatto.config import Integrand, Key, PhysicsSpec
from lobatto.discretization.tensor import physical_gradient, split_divergence, split_gradient
from lobatto.systems.dg import FaceExchangeSystem, add_to_faces, face_values, over_elements

FIELD_NAMES = ("p", "ux", "uy", "uz")
#: the state on a 2-D mesh: the velocity in the plane (a z-independent field has no uz to carry)
FIELDS_2D = FIELD_NAMES[:3]
FLUX_ALPHA = {"upwind": 1.0, "central": 0.0}
#: factors on the sums (S_p, S_n) at a boundary face
BOUNDARY_FACTORS = {"wall": (2.0, 2.0), "absorbing": (1.0, 1.0)}


def _potential(s, f):
    return 0.5 / (s.density * s.sound_speed * s.sound_speed) * (f[0] * f[0])


def _kinetic(s, f):
    return 0.5 * s.density * sum(f[c] * f[c] for c in range(1, len(f)))  # ux, uy (, uz)


#: what [output.integrals] can integrate (docs/probes.md); "energy" is what energy() sums
INTEGRANDS = {
    "energy": Integrand("volume", "acoustic energy density p^2 / (2 rho c^2) + rho |u|^2 / 2",
                        lambda s, f: _potential(s, f) + _kinetic(s, f)),
    "potential_energy": Integrand("volume", "potential (compression) energy density p^2 / (2 rho c^2)", _potential),
    "kinetic_energy": Integrand("volume", "kinetic energy density rho |u|^2 / 2", _kinetic),
    # on a 2-D mesh both are per unit depth (the mass and the edges' weights have w_k = 1)
    "intensity_flux": Integrand("surface", "outward acoustic intensity p u . n, the power leaving",
                                lambda s, f, n: f[0] * sum(f[1 + a] * n[a] for a in range(len(f) - 1))),
}

SPEC = PhysicsSpec(
    name="acoustics",
    description="linear acoustics, first-order form (pressure and velocity), DG",
    fields=FIELD_NAMES,
    boundary_kinds=tuple(BOUNDARY_FACTORS),
    default_boundary="wall",
    keys=(
        Key("density", "positive", 1.0, "rho, the mean density"),
        Key("sound_speed", "positive", 1.0, "c, the speed of sound"),
    ),
    fluxes=tuple(FLUX_ALPHA),
    # largest stable cfl, every order 1-16 and boxes of wall/absorbing/periodic sides, affine and
    # curved, and the Bloch modes of larger periodic meshes, rounded down (benchmarks/notes-stability.md)
    cfl_bounds={("upwind", "lsrk45"): 0.48, ("upwind", "rk4"): 0.28, ("upwind", "ssprk3"): 0.25,
                ("central", "lsrk45"): 0.74, ("central", "rk4"): 0.62, ("central", "ssprk3"): 0.38},
    integrands=INTEGRANDS,
    dimensions=(2, 3),
    fields_2d=FIELDS_2D,
)


@reference_kernel("acoustics_traces")
def make_traces(backend, order):
    xp = backend.xp

    def traces(u, normals, out):
        faces = face_values(xp, u, order)
        out[0] = faces[0]
        out[1] = xp.sum(normals[:len(u) - 1] * faces[1:], axis=0)  # n . u: 2 or 3 components
        return out

    return traces


@reference_kernel("acoustics_rhs")
def make_rhs(backend, order):
    xp = backend.xp

    @over_elements
    def rhs(u, sums, geometry, out, density, sound_speed, alpha):
        d, metrics, jacobian = geometry["derivative"], geometry["metrics"], geometry["jacobian"]
        dim = len(u) - 1  # velocity components: 3, or 2 on a 2-D mesh (u is (1 + dim, E, 1, n, n))
        bulk = density * sound_speed * sound_speed  # rho c^2
        impedance = density * sound_speed
        if geometry.get("split_form", True):  # the volume terms cancel in the discrete energy on curved elements too
            in_plane = metrics[:, :dim]  # d r_b / d x_a for the physical axes the velocity has
            grad_p = split_gradient(xp, u[0], d, in_plane, jacobian)
            divergence = split_divergence(xp, u[1:], d, in_plane, jacobian)
        else:  # the chain rule alone ([discretization] volume_form = "chain")
            grad_p = physical_gradient(xp, u[0], d, metrics)[:dim]
            divergence = sum(physical_gradient(xp, u[1 + a], d, metrics)[a] for a in range(dim))
        out[0] = -bulk * divergence
        out[1:] = -grad_p / density

        normals, lift, factors = geometry["normals"], geometry["lift"], geometry["face_factors"]
        faces = face_values(xp, u, order)
        jump_p = 2.0 * faces[0] - sums[0] * factors[0][:, :, None, None]
        jump_n = sums[1] * factors[1][:, :, None, None]
        add_to_faces(out[0], 0.5 * bulk * (jump_n - (alpha / impedance) * jump_p) * lift, order)
        add_to_faces(out[1:], normals[:dim] * (0.5 / density * (jump_p - alpha * impedance * jump_n) * lift), order)
        return out

    return rhs


class AcousticsSystem(FaceExchangeSystem):
    spec = SPEC
    energy_bounded = True  # no sources; PEC/PMC/walls and the fluxes are passive
    growth_guarded = True  # linear: exponential growth is an instability (runner/growth_guard.py)
    trace_components = 2
    boundary_factors = BOUNDARY_FACTORS
    output_layout = (FIELD_NAMES[1:4], "p", ())  # Nek5000 velocity and pressure (3-D; see output_layout_for)

    def __init__(self, mesh, order, backend, density=1.0, sound_speed=1.0, flux="upwind", comm=None,
                 geometry=None, exchange_method="auto", exchange="auto", overlap="auto", volume_form="split"):
        if flux not in FLUX_ALPHA:
            raise ValueError(f"unknown flux {flux!r}; expected one of {sorted(FLUX_ALPHA)}")
        self.density, self.sound_speed, self.flux = float(density), float(sound_speed), flux
        self.alpha = FLUX_ALPHA[flux]
        rho, c = self.density, self.sound_speed
        self.check_constants("density and sound_speed", bulk_modulus=lambda: rho * c * c,
                             inverse_bulk_modulus=lambda: 1.0 / (rho * c * c), impedance=lambda: rho * c,
                             inverse_impedance=lambda: 1.0 / (rho * c), inverse_density=lambda: 1.0 / rho)
        self.wave_speed = self.sound_speed
        self.setup_faces(mesh, order, backend, geometry, comm, exchange_method, exchange, overlap, volume_form)
        self.dim = mesh.dim
        if self.dim == 2:  # the 2-D velocity in Nek5000's 2-D velocity slot (an instance attribute)
            self.output_layout = (FIELDS_2D[1:], "p", ())
        self.traces_kernel = backend.kernel("acoustics_traces", order=self.order)
        self.rhs_kernel = backend.kernel("acoustics_rhs", order=self.order)

    @classmethod
    def from_case(cls, case, mesh, geometry, backend, comm=None):
        return cls(mesh, case.discretization.order, backend, geometry=geometry, density=case.physics.density,
                   sound_speed=case.physics.sound_speed, flux=case.discretization.flux, comm=comm,
                   volume_form=case.discretization.volume_form, **cls.parallel_options(case))

    @property
    def field_names(self) -> tuple:
        return self.spec.fields_in(self.dim)

    def rhs(self, u, t, out):
        self.with_exchange(u, lambda elements, sums: self.rhs_kernel(
            u, sums, self.device_geometry, out, self.density, self.sound_speed, self.alpha, elements))
        return out

    def energy(self, u) -> float:
        """Acoustic energy 1/2 sum M (p^2 / (rho c^2) + rho |u|^2) on this rank."""
        bulk = self.density * self.sound_speed * self.sound_speed
        return 0.5 * self.mass_weighted_sum(u, (1.0 / bulk,) + (self.density,) * self.dim)

    def homogeneous_operator(self):
        """rhs itself (no sources; the boundaries are homogeneous) and the acoustic energy."""
        return (lambda u, out: self.rhs(u, 0.0, out)), self.energy
