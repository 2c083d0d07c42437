"""The monitors lobatto knows, by the ``[output.<section>]`` table that selects each.

The generic ones are registered here, one line each in ``_BUILT_IN``; a system registers its
own from its own package with ``register_monitor`` (when its module is imported, as it
registers its tuned kernels into the backends). The run builds, in registry order, every
registered monitor whose table the case has (run_set.MonitorSet).
"""

from __future__ import annotations

from lobatto.monitors.base import Monitor
from lobatto.monitors.dft import DftMonitor
from lobatto.monitors.series import TimeSeriesMonitor

#: section name -> monitor class, in the order the run builds, samples and closes them
MONITORS: dict[str, type[Monitor]] = {}

_BUILT_IN = (
    TimeSeriesMonitor,  # [output.probes] and [output.integrals]: NAME_probes.csv and .h5
    DftMonitor,  # [output.dft]: NAME_dft.h5
)


def register_monitor(name: str, cls: type[Monitor]) -> type[Monitor]:
    """Build ``cls`` (a Monitor subclass whose ``section`` is ``name``) for every case with an
    ``[output.<name>]`` table; returns cls. A name taken by another class is refused;
    ``unregister_monitor`` undoes it."""
    if not (isinstance(cls, type) and issubclass(cls, Monitor)):
        raise TypeError(f"monitor '{name}': {cls!r} is not a lobatto.monitors.Monitor subclass")
    if cls.section != name:
        raise ValueError(f"monitor '{name}': {cls.__name__}.section is '{cls.section}'")
    if cls.table is not None and cls.table.name != f"output.{name}":
        raise ValueError(f"monitor '{name}': {cls.__name__}.table is [{cls.table.name}], not [output.{name}]")
    if MONITORS.get(name, cls) is not cls:
        raise ValueError(f"a monitor named '{name}' is already registered ({MONITORS[name].__name__})")
    MONITORS[name] = cls
    return cls


def unregister_monitor(name: str) -> None:
    """Remove a monitor added by ``register_monitor`` (the built-in ones stay)."""
    if any(cls.section == name for cls in _BUILT_IN):
        raise ValueError(f"'{name}' is a built-in monitor")
    MONITORS.pop(name, None)


def monitor_tables() -> dict:
    """{section: Table} of the registered monitors that declare their table's keys (the case
    reader takes them: config/declared.py)."""
    return {name: cls.table for name, cls in MONITORS.items() if cls.table is not None}


def section_names() -> set:
    """Every ``[output.X]`` table a registered monitor reads."""
    return {name for cls in MONITORS.values() for name in (cls.section, *cls.more_sections)}


for _cls in _BUILT_IN:
    register_monitor(_cls.section, _cls)
