"""The case-file face of incompressible Navier–Stokes: fields, boundary kinds, [physics],
[solver.pressure] / [solver.velocity] and [boundary.<name>] keys, and the passive scalars
a case names in [physics] scalars (each a field, a [scalar.<name>] table and boundary keys
<name> / <name>_flux: ``with_scalars``)."""

from __future__ import annotations

import dataclasses

from lobatto.config import Derived, Integrand, Key, PhysicsSpec
from lobatto.config.ranges import STEPS, Range
from lobatto.solvers.settings import ITERATIONS, RELATIVE, elliptic_solver_keys

FIELD_NAMES = ("ux", "uy", "uz", "p")
#: on a 2-D mesh (docs/navier-stokes.md, "2-D"): no uz; the scalars follow p
FIELD_NAMES_2D = ("ux", "uy", "p")
BOUNDARY_KINDS = ("wall", "velocity", "outflow", "symmetry", "traction", "outflow_normal")
DIRECTIONS = ("x", "y", "z")

PRESSURE_KEYS = elliptic_solver_keys(tolerance=1e-8, max_iterations=200, projection=8, method="fcg",
                                     what="the pressure Poisson equation")
VELOCITY_KEYS = (
    Key("tolerance", "positive", 1e-10, "stop the velocity Jacobi-PCG at ||r|| <= tolerance ||b|| (assembled norms)",
        range=RELATIVE),
    Key("absolute_tolerance", "nonnegative", 0.0, "or at ||r|| <= absolute_tolerance"),
    Key("max_iterations", "positive_integer", 200, "iterations before the step stops as not converged",
        range=ITERATIONS),
)


SCALAR_KEYS = (
    Key("diffusivity", "positive", None, "the scalar's diffusivity kappa", required=True),
    Key("source", "expression_t", "0", "volume source in x, y, z, t: dT/dt + u . grad T = kappa lap T + source"),
    Key("tolerance", "positive", 1e-10, "stop the scalar's Jacobi-PCG at ||r|| <= tolerance ||b||", range=RELATIVE),
    Key("max_iterations", "positive_integer", 200, "iterations before the step stops as not converged",
        range=ITERATIONS),
)
#: names a scalar may not take: the flow's fields, and u (VTK joins ux, uy, uz as u)
RESERVED = ("ux", "uy", "uz", "p", "u")


def with_scalars(spec: PhysicsSpec, physics: dict, error) -> PhysicsSpec:
    """The spec of a case whose [physics] scalars names passive scalars: their fields after
    ux, uy, uz, p; a [scalar.<name>] table each; boundary keys <name> (a Dirichlet value)
    and <name>_flux (kappa dT/dn, n the outward normal)."""
    names = tuple(physics.get("scalars", ()))
    if not names:
        return spec
    for name in names:
        if name in RESERVED:
            raise error(f"[physics] scalars: '{name}' is a name of the flow's fields ({', '.join(RESERVED)}); "
                        "call the scalar something else")
        if name.endswith("_flux") and name[:-5] in names:
            raise error(f"[physics] scalars: '{name}' is the flux key of the scalar '{name[:-5]}'; call it "
                        "something else")
    boundary = tuple(key for name in names for key in (
        Key(name, "expression_t", None, f"value of the scalar {name} on the boundary (x, y, z, t)"),
        Key(f"{name}_flux", "expression_t", None, f"flux of the scalar {name} on the boundary: kappa d{name}/dn, "
            "n the outward normal (x, y, z, t)")))
    tables = dict(spec.tables, **{f"scalar.{name}": SCALAR_KEYS for name in names})
    return dataclasses.replace(spec, fields=spec.fields + names, tables=tables,
                               boundary_keys=spec.boundary_keys + boundary,
                               fields_2d=spec.fields_2d + names if spec.fields_2d else None)


def _kinetic(system, f):
    return 0.5 * sum(f[c] * f[c] for c in range(getattr(system, "dim", 3)))


INTEGRANDS = {
    "kinetic_energy": Integrand("volume", "kinetic energy density |u|^2 / 2", _kinetic),
    "volume_flux": Integrand("surface", "u . n, the volume leaving through the surface",
                             lambda s, f, n: sum(f[c] * n[c] for c in range(getattr(s, "dim", 3)))),
}

#: what [output] derived may add to the snapshots (derived.py computes them; docs/navier-stokes.md,
#: "Derived fields"); S and Omega are the symmetric and antisymmetric parts of grad u
DERIVED = {
    "vorticity": Derived("omega = curl u", ("vorticityx", "vorticityy", "vorticityz")),
    "vorticity_magnitude": Derived("|curl u|", ("vorticity_magnitude",)),
    "q_criterion": Derived("Q = (|Omega|^2 - |S|^2) / 2", ("q_criterion",)),
    "lambda2": Derived("the middle eigenvalue of S^2 + Omega^2 (a vortex where < 0)", ("lambda2",)),
    "divergence": Derived("div u", ("divergence",)),
    "wall_shear": Derived("tangential part of nu (grad u + grad u^T) n on wall and velocity faces, 0 elsewhere",
                          ("wall_shearx", "wall_sheary", "wall_shearz")),
}

SPEC = PhysicsSpec(
    name="navier_stokes",
    description="incompressible Navier-Stokes, PN-PN continuous Galerkin, BDF/EXT splitting",
    fields=FIELD_NAMES,
    dimensions=(2, 3),
    fields_2d=FIELD_NAMES_2D,
    boundary_kinds=BOUNDARY_KINDS,
    default_boundary="wall",
    keys=(
        Key("viscosity", "positive", 1e-2, "kinematic viscosity nu"),
        Key("force_x", "expression_t", "0", "body force per unit mass, x component, in x, y, z, t and the scalars "
            "(buoyancy)", variables_from="scalars"),
        Key("force_y", "expression_t", "0", "body force per unit mass, y component", variables_from="scalars"),
        Key("force_z", "expression_t", "0", "body force per unit mass, z component", variables_from="scalars"),
        Key("flow_rate", "nonnegative", 0.0, "drive a constant mean velocity (bulk velocity) in flow_direction; "
            "0: off"),
        Key("flow_direction", "choice", "x", "direction of the constant flow rate", choices=DIRECTIONS),
        Key("dealias", "bool", True, "over-integrate the advection term (3/2 rule)"),
        Key("filter_modes", "count", 0, "HPF-RT relaxation: highest modes filtered (0: off)",
            range=Range(0, 23, "at most [discretization] order - 1 (the mean and one mode stay), and the order is "
                        "at most 24")),
        Key("filter_weight", "positive", 10.0, "HPF-RT relaxation strength chi (per unit time)"),
        Key("diagnostics_every", "count", 1, "steps between kinetic energy / enstrophy / dissipation records "
            "(0: never)", range=STEPS),
        Key("backflow_stabilization", "bool", False, "on outflow and outflow_normal faces add the "
            "traction 1/2 min(u.n, 0) u, which removes the energy inflow there would bring (off: as before)"),
        Key("scalars", "names", (), "passive scalars advected by the flow, each with a [scalar.<name>] table"),
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
        Key("tx", "expression_t", None, "traction -p n + nu du/dn on a traction face, x component (x, y, z, t); "
            "missing components are 0"),
        Key("ty", "expression_t", None, "traction on a traction face, y component"),
        Key("tz", "expression_t", None, "traction on a traction face, z component"),
    ),
    boundary_keys_together=True,
    extend=with_scalars,
    substeps=True,
    derived=DERIVED,
)
