"""Case files: the TOML schema (:mod:`.schema`), what a system declares to it
(:mod:`.physics`), the public readers every table uses (:mod:`.toolkit`) and safe
expressions (:mod:`.expressions`)."""

from lobatto.config.expressions import CONSTANTS, FUNCTIONS, Expression, compile_expression
from lobatto.config.physics import Derived, Integrand, Key, PhysicsSpec
from lobatto.config.schema import (
    SIDES,
    BackendSection,
    Case,
    DiscretizationSection,
    FieldsSection,
    MeshSection,
    OutputSection,
    ParallelSection,
    PhysicsSection,
    TimeSection,
    load_case,
    parse_case,
    to_toml,
)

__all__ = [
    "CONSTANTS",
    "FUNCTIONS",
    "Derived",
    "Integrand",
    "Key",
    "PhysicsSpec",
    "SIDES",
    "BackendSection",
    "Case",
    "DiscretizationSection",
    "Expression",
    "FieldsSection",
    "MeshSection",
    "OutputSection",
    "ParallelSection",
    "PhysicsSection",
    "TimeSection",
    "compile_expression",
    "load_case",
    "parse_case",
    "to_toml",
]
