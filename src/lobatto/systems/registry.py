"""The systems lobatto knows: ``[physics] equations = name`` -> system class.

Adding a system is one line in ``_CLASSES`` (its module under lobatto/systems/ does the
rest: docs/architecture.md, "Adding a system"). The first entry is the default.
"""

from __future__ import annotations

from lobatto.errors import InputError
from lobatto.systems.acoustics.system import AcousticsSystem
from lobatto.systems.maxwell.system import MaxwellSystem
from lobatto.systems.poisson.system import PoissonSystem

_CLASSES = (
    MaxwellSystem,
    AcousticsSystem,
    PoissonSystem,
)

SYSTEMS = {cls.spec.name: cls for cls in _CLASSES}


def physics_specs() -> dict:
    """{equations name: PhysicsSpec}, the default first (what the case-file schema checks)."""
    return {name: cls.spec for name, cls in SYSTEMS.items()}


def get_system(name: str):
    try:
        return SYSTEMS[name]
    except KeyError:
        raise InputError(f"[physics] equations '{name}' is not available "
                         f"(expected one of {', '.join(SYSTEMS)})") from None
