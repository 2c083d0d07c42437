"""What a physical system declares to the case-file schema: its fields, boundary kinds and
``[physics]`` keys (the systems themselves live in lobatto.systems, above this layer).

A system module builds one :class:`PhysicsSpec`; ``parse_case`` is handed a mapping
``equations name -> PhysicsSpec`` and checks a case against the spec it names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from lobatto.config.ranges import Range, kind_range

#: key kinds understood by the schema, with the phrase used in error messages
KEY_KINDS = {
    "positive": "a positive number",
    "number": "a finite number",
    "nonnegative": "a number >= 0",
    "bool": "true or false",
    "choice": "one of the listed values",
    # checked by config/toolkit.py key_value (steady systems' [physics] and [solver] keys)
    "expression": "an expression in x, y, z (a string such as \"sin(pi*x)\", or a number)",
    "expression_t": "an expression in x, y, z, t (a string such as \"sin(pi*x)*exp(-t)\", or a number)",
    "positive_integer": "an integer >= 1",
    "count": "an integer >= 0",
    "orders": "a list of decreasing orders >= 1 (for example [7, 3, 1])",
    "names": "a list of distinct names (letters, digits and _, starting with a letter)",
    # declared by tables that read them with their own code (config/toolkit.py Table): for
    # the known keys and the docs, not read by config/toolkit.py key_value
    "integer": "an integer",
    "string": "a string",
    "vector": "a list of 3 numbers",
    "list": "a list",
    "table": "a table",
    "bool_or_auto": "true, false or \"auto\"",
}


@dataclass(frozen=True)
class Key:
    """One declared key of a table ([physics], a system's or a monitor's table, the generic
    ones: config/toolkit.py Table): name, kind (KEY_KINDS), default and a line of documentation;
    ``required``: a key of a system table that has no default (config/system_tables.py);
    ``range``: its valid values, with the reason (config/ranges.py; None: its kind's);
    ``variables_from``: for an expression key, a ``names`` key of the same table whose names
    the expression may use as variables too (fields known only in the run, such as the
    scalars a case names: config/sections.py ``physics_values``)."""

    name: str
    kind: str
    default: Any
    doc: str
    choices: tuple = ()
    required: bool = False
    range: Range | None = None
    variables_from: str | None = None
    #: a sentence a wrong value's error ends with (where a related form of the key belongs)
    hint: str = ""

    @property
    def valid_range(self) -> Range | None:
        """The declared range, or the kind's (None for a kind without one: choices, names...)."""
        return self.range if self.range is not None else kind_range(self.kind)

    def __post_init__(self):
        if self.kind not in KEY_KINDS:
            raise ValueError(f"physics key {self.name!r}: unknown kind {self.kind!r}")
        if self.variables_from is not None and not self.kind.startswith("expression"):
            raise ValueError(f"physics key {self.name!r}: variables_from needs an expression key, not {self.kind!r}")


#: where an Integrand is integrated: over regions of the mesh, or over named surfaces
INTEGRAND_KINDS = ("volume", "surface")


@dataclass(frozen=True)
class Integrand:
    """A quantity that ``[output.integrals]`` integrates (docs/probes.md).

    kind:     "volume" (a density, integrated over regions) or "surface" (a flux density
              through the outward unit normal n, integrated over named surfaces)
    doc:      what it is, in one line
    density:  ``(system, fields) -> values`` at the points (volume) or ``(system, fields,
              normals) -> values`` at face points (surface); fields (F, ...) in the state's
              order, normals (3, ...). Plain array arithmetic, so NumPy and CuPy arrays alike.
    per_element: a volume density that also takes ``elements`` (the block's element indices),
              for coefficients that vary per point (a heterogeneous medium's eps and mu)
    integral: ``(system, fields, elements) -> the volume integral over those elements`` where the
              system's own inner product is not the nodal mass (a Galerkin form's weight-adjusted masses),
              or None from it (and the default): the nodal mass times the density
    """

    kind: str
    doc: str
    density: Callable
    per_element: bool = False
    integral: Callable | None = None

    def __post_init__(self):
        if self.kind not in INTEGRAND_KINDS:
            raise ValueError(f"integrand kind must be one of {INTEGRAND_KINDS}, not {self.kind!r}")


@dataclass(frozen=True)
class Derived:
    """A field that ``[output] derived`` may add to the snapshots (computed by the system from
    its state at each snapshot: ``System.derived_fields``; docs/output.md).

    doc:         what it is, in one line
    components:  the names of the fields it writes (three for a vector, whose names end in
                 x, y, z so that VTK shows them as one vector array)
    """

    doc: str
    components: tuple


@dataclass(frozen=True)
class PhysicsSpec:
    """The case-file face of a system.

    name:              the ``[physics] equations`` value
    fields:            field names, in the order of the state array (``[initial]``, ``[exact]``)
    boundary_kinds:    names allowed in ``[mesh] boundary`` and ``[mesh.boundaries]``
    default_boundary:  the ``[mesh] boundary`` default
    keys:              the system's own ``[physics]`` keys
    fluxes:            ``[discretization] flux`` values; the first is the default
    cfl_bounds:        (flux, integrator) -> the largest stable ``[time] cfl`` (dt = cfl *
                       smallest GLL spacing / wave speed), for every order; a run above it is
                       refused unless ``[time] cfl_check = false``
    integrands:        name -> :class:`Integrand`, what ``[output.integrals]`` may integrate
    steady:            True for a system solved once (no [time], no steps: lobatto/runner/steady.py)
    tables:            table name -> tuple of :class:`Key`: top-level tables of the system's
                       own (``[solver]``), checked like ``[physics]`` (config/system_tables.py)
    boundary_keys:     keys of ``[boundary.<name>]`` tables (data per named boundary); each
                       such table sets exactly one of them, unless ``boundary_keys_together``
    boundary_keys_together: a ``[boundary.<name>]`` table may set several of its keys (the
                       components of a boundary velocity), at least one
    integrators:       the ``[time] integrator`` values the system takes (the Runge-Kutta
                       schemes; "bdf1".."bdf3" for a system with ``multistep_step``)
    default_integrator: the ``[time] integrator`` default, one of ``integrators``
    extend:            ``(spec, physics values, error) -> PhysicsSpec`` for a system whose
                       fields, tables or boundary keys depend on its ``[physics]`` values
                       (Navier-Stokes' named scalars): the case's spec, a copy with them added
                       (``error(message)`` makes the InputError of a bad value); None: fixed
    substeps:          the system sub-steps its advection term along the characteristics, so
                       ``[time] substeps`` > 0 is allowed (Navier-Stokes); refused for others
    named_tables:      top-level tables of freely named subtables that the system checks itself
                       (``[source.<name>]``): table name -> ``parse(ctx, value)``, given the
                       schema's context and the raw value, returning an object with
                       ``to_dict()`` (kept in ``Case.tables``, written back by ``Case.to_dict``)
    derived:           name -> :class:`Derived`, what ``[output] derived`` may add to the snapshots
    dimensions:        the mesh dimensions the system runs in: (3,), or (2, 3) for a system that
                       also runs on a 2-D mesh (quadrilaterals at z = 0, a thin k axis: volume
                       arrays (F, E, 1, n, n)); runner/build.py refuses a 2-D mesh for a system
                       without 2 here (InputError naming the case file, the system and "2-D")
    fields_2d:         the state's fields on a 2-D mesh, in the state array's order: the
                       names of ``fields`` that exist in 2-D (a system with 2 in ``dimensions``
                       must give them). The case-file schema reads ``[initial]``/``[exact]``
                       by ``fields`` (a file mesh's dimension is known once it is read);
                       runner/dimension.py then refuses an expression for a field not in
                       ``fields_2d`` on a 2-D mesh. A velocity keeps its x and y components
                       (ux, uy: no uz to carry), a scalar stays, and a system may keep every
                       field (a z-invariant 3-D field, its z components included) where its
                       terms need them; the kernels read the count from the state's shape.
    """

    name: str
    description: str
    fields: tuple
    boundary_kinds: tuple
    default_boundary: str
    keys: tuple = ()
    fluxes: tuple = ("upwind", "central")
    cfl_bounds: dict = field(default_factory=dict)
    integrands: dict = field(default_factory=dict)
    steady: bool = False
    tables: dict = field(default_factory=dict)
    boundary_keys: tuple = ()
    boundary_keys_together: bool = False
    integrators: tuple = ("lsrk45", "rk4", "ssprk3")
    default_integrator: str = "lsrk45"
    extend: Callable | None = None
    named_tables: dict = field(default_factory=dict)
    substeps: bool = False
    derived: dict = field(default_factory=dict)
    dimensions: tuple = (3,)
    fields_2d: tuple | None = None

    def __post_init__(self):
        if not self.dimensions or not set(self.dimensions) <= {2, 3}:
            raise ValueError(f"{self.name}: dimensions must be some of (2, 3), not {self.dimensions!r}")
        if 2 in self.dimensions and not self.fields_2d:
            raise ValueError(f"{self.name}: a system that runs in 2-D declares its fields_2d")
        if self.fields_2d and not set(self.fields_2d) <= set(self.fields):
            raise ValueError(f"{self.name}: fields_2d {self.fields_2d!r} must be names of fields {self.fields!r}")
        if self.default_boundary not in self.boundary_kinds:
            raise ValueError(f"{self.name}: default boundary {self.default_boundary!r} is not a boundary kind")
        if self.default_integrator not in self.integrators:
            raise ValueError(f"{self.name}: default integrator {self.default_integrator!r} is not in its integrators")

    def default_cfl(self, flux: str, integrator: str, usual: float) -> float:
        """``usual``, or 0.9 of the stability bound (two digits, rounded down) when lower."""
        bound = self.cfl_bounds.get((flux, integrator))
        return usual if bound is None else min(usual, math.floor(90 * bound) / 100)

    def for_case(self, physics: dict, error: Callable) -> "PhysicsSpec":
        """The spec of one case with these checked [physics] values (``extend``)."""
        return self if self.extend is None else self.extend(self, physics, error)

    def fields_in(self, dim: int) -> tuple:
        """The state's field names on a mesh of dimension ``dim`` (2 or 3)."""
        return tuple(self.fields_2d) if dim == 2 else tuple(self.fields)

    @property
    def key_names(self) -> tuple:
        return tuple(k.name for k in self.keys)

    def integrand_names(self, kind: str) -> tuple:
        """Names of the integrands of one kind ("volume" or "surface"), in declaration order."""
        return tuple(name for name, integrand in self.integrands.items() if integrand.kind == kind)
