"""The systems lobatto knows: ``[physics] equations = name`` -> system class.

Adding a system is one line in ``_CLASSES`` (its module under lobatto/systems/ does the
rest: docs/architecture.md, "Adding a system"). The first entry is the default.
"""

from __future__ import annotations

from lobatto.errors import InputError
from lobatto.systems.acoustics.system import AcousticsSystem
from lobatto.systems.maxwell.system import MaxwellSystem
from lobatto.systems.navier_stokes.system import NavierStokesSystem
from lobatto.systems.poisson.system import PoissonSystem

_CLASSES = (
    MaxwellSystem,
    AcousticsSystem,
    PoissonSystem,
    NavierStokesSystem,
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


def register(cls):
    """Make ``cls`` (a System class with a ``spec``) available as ``[physics] equations =
    cls.spec.name`` (systems outside lobatto, the tests' own); returns cls, so it can decorate
    the class. A name already taken by another class is refused; ``unregister`` undoes it."""
    name = cls.spec.name
    if SYSTEMS.get(name, cls) is not cls:
        raise ValueError(f"a system named '{name}' is already registered ({SYSTEMS[name].__name__})")
    SYSTEMS[name] = cls
    return cls


def unregister(name: str) -> None:
    """Remove a system added by ``register`` (the built-in ones stay)."""
    if any(cls.spec.name == name for cls in _CLASSES):
        raise ValueError(f"'{name}' is a built-in system")
    SYSTEMS.pop(name, None)
