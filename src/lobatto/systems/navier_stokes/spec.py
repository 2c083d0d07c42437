"""The case-file face of incompressible Navier–Stokes: fields, boundary kinds, [physics],
[solver.pressure] / [solver.velocity] and [boundary.<name>] keys."""

from __future__ import annotations

from lobatto.config import Integrand, Key, PhysicsSpec
from lobatto.solvers.settings import elliptic_solver_keys

FIELD_NAMES = ("ux", "uy", "uz", "p")
BOUNDARY_KINDS = ("wall", "velocity", "outflow")
DIRECTIONS = ("x", "y", "z")

PRESSURE_KEYS = elliptic_solver_keys(tolerance=1e-8, max_iterations=200, projection=8, method="fcg",
                                     what="the pressure Poisson equation")
VELOCITY_KEYS = (
    Key("tolerance", "positive", 1e-10, "stop the velocity Jacobi-PCG at ||r|| <= tolerance ||b|| (assembled norms)"),
    Key("absolute_tolerance", "nonnegative", 0.0, "or at ||r|| <= absolute_tolerance"),
    Key("max_iterations", "positive_integer", 200, "iterations before the step stops as not converged"),
)


def _kinetic(system, f):
    return 0.5 * (f[0] * f[0] + f[1] * f[1] + f[2] * f[2])


INTEGRANDS = {
    "kinetic_energy": Integrand("volume", "kinetic energy density |u|^2 / 2", _kinetic),
    "volume_flux": Integrand("surface", "u . n, the volume leaving through the surface",
                             lambda s, f, n: f[0] * n[0] + f[1] * n[1] + f[2] * n[2]),
}

SPEC = PhysicsSpec(
    name="navier_stokes",
    description="incompressible Navier-Stokes, PN-PN continuous Galerkin, BDF/EXT splitting",
    fields=FIELD_NAMES,
    boundary_kinds=BOUNDARY_KINDS,
    default_boundary="wall",
    keys=(
        Key("viscosity", "positive", 1e-2, "kinematic viscosity nu"),
        Key("force_x", "expression_t", "0", "body force per unit mass, x component, in x, y, z, t"),
        Key("force_y", "expression_t", "0", "body force per unit mass, y component"),
        Key("force_z", "expression_t", "0", "body force per unit mass, z component"),
        Key("flow_rate", "nonnegative", 0.0, "drive a constant mean velocity (bulk velocity) in flow_direction; "
            "0: off"),
        Key("flow_direction", "choice", "x", "direction of the constant flow rate", choices=DIRECTIONS),
        Key("dealias", "bool", True, "over-integrate the advection term (3/2 rule)"),
        Key("filter_modes", "count", 0, "HPF-RT relaxation: highest modes filtered (0: off)"),
        Key("filter_weight", "positive", 10.0, "HPF-RT relaxation strength chi (per unit time)"),
        Key("diagnostics_every", "count", 1, "steps between kinetic energy / enstrophy / dissipation records "
            "(0: never)"),
    ),
    fluxes=("none",),  # continuous Galerkin: no numerical flux
    integrators=("bdf2", "bdf3", "bdf1"),
    default_integrator="bdf2",
    integrands=INTEGRANDS,
    tables={"solver.pressure": PRESSURE_KEYS, "solver.velocity": VELOCITY_KEYS},
    boundary_keys=(
        Key("ux", "expression_t", None, "boundary velocity, x component (x, y, z, t); missing components are 0"),
        Key("uy", "expression_t", None, "boundary velocity, y component"),
        Key("uz", "expression_t", None, "boundary velocity, z component"),
    ),
    boundary_keys_together=True,
)
