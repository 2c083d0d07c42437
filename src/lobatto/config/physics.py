"""What a physical system declares to the case-file schema: its fields, boundary kinds and
``[physics]`` keys (the systems themselves live in lobatto.systems, above this layer).

A system module builds one :class:`PhysicsSpec`; ``parse_case`` is handed a mapping
``equations name -> PhysicsSpec`` and checks a case against the spec it names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: key kinds understood by the schema, with the phrase used in error messages
KEY_KINDS = {
    "positive": "a positive number",
    "number": "a finite number",
    "nonnegative": "a number >= 0",
    "bool": "true or false",
    "choice": "one of the listed values",
}


@dataclass(frozen=True)
class Key:
    """One ``[physics]`` key: name, kind (KEY_KINDS), default and a line of documentation."""

    name: str
    kind: str
    default: Any
    doc: str
    choices: tuple = ()

    def __post_init__(self):
        if self.kind not in KEY_KINDS:
            raise ValueError(f"physics key {self.name!r}: unknown kind {self.kind!r}")


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
    """

    name: str
    description: str
    fields: tuple
    boundary_kinds: tuple
    default_boundary: str
    keys: tuple = ()
    fluxes: tuple = ("upwind", "central")
    cfl_bounds: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.default_boundary not in self.boundary_kinds:
            raise ValueError(f"{self.name}: default boundary {self.default_boundary!r} is not a boundary kind")

    def default_cfl(self, flux: str, integrator: str, usual: float) -> float:
        """``usual``, or 0.9 of the stability bound (two digits, rounded down) when lower."""
        bound = self.cfl_bounds.get((flux, integrator))
        return usual if bound is None else min(usual, math.floor(90 * bound) / 100)

    @property
    def key_names(self) -> tuple:
        return tuple(k.name for k in self.keys)
