"""Case files: the TOML schema (:mod:`.schema`) and safe expressions (:mod:`.expressions`)."""

from lobatto.config.expressions import CONSTANTS, FUNCTIONS, Expression, compile_expression
from lobatto.config.schema import (
    BOUNDARY_KINDS,
    FIELD_NAMES,
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
    "BOUNDARY_KINDS",
    "CONSTANTS",
    "FIELD_NAMES",
    "FUNCTIONS",
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
