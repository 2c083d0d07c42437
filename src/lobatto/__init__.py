"""lobatto: GPU-native high-order spectral-element framework.

The Python API (lobatto.api, docs/python.md) is available from here, imported on first use:
``lobatto.load_case``, ``lobatto.case_from_dict``, ``lobatto.run``, ``lobatto.Simulation``.

Modules that moved into packages in 0.2 (docs/architecture.md) can still be imported by their
old paths (``lobatto.driver``, ``lobatto.probes``, ...) until 0.3, with a DeprecationWarning.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__version__ = "0.2.0"

_API = ("Result", "Simulation", "available_systems", "case_from_dict", "load_case", "parse_case", "run",
        "run_case", "with_changes")

#: old module (until 0.2) -> the modules its public names live in now, searched in order
MOVED_MODULES = {
    "lobatto.driver": ("lobatto.runner.simulation", "lobatto.runner.build", "lobatto.runner.snapshots",
                       "lobatto.runner.schedule"),
    "lobatto.restart": ("lobatto.runner.restart", "lobatto.runner.schedule"),
    "lobatto.steady": ("lobatto.runner.steady",),
    "lobatto.probes": ("lobatto.monitors.probes", "lobatto.monitors.integrals", "lobatto.monitors.regions",
                       "lobatto.monitors.series", "lobatto.monitors.run_set"),
    "lobatto.dft": ("lobatto.monitors.dft",),
    "lobatto.nearfar": ("lobatto.systems.maxwell.far_field",),
    "lobatto.parallel": ("lobatto.machine.parallel",),
    "lobatto.power": ("lobatto.machine.power",),
    "lobatto.resources": ("lobatto.machine.resources",),
    "lobatto.memory_items": ("lobatto.machine.memory_items",),
    "lobatto.threads": ("lobatto.machine.threads",),
    "lobatto.progress": ("lobatto.io.progress",),
    "lobatto.config.nearfar": ("lobatto.systems.maxwell.far_field_table",),
}

#: (old module, old name) -> "new module:new name", for names that changed or that the old
#: module only imported (user scripts took them from there too)
RENAMED = {("lobatto.probes", "TimeSeries"): "lobatto.monitors.run_set:MonitorSet",
           ("lobatto.driver", "TimeSeries"): "lobatto.monitors.run_set:MonitorSet",
           ("lobatto.steady", "TimeSeries"): "lobatto.monitors.run_set:MonitorSet",
           ("lobatto.driver", "energy_per_step"): "lobatto.machine.energy_report:energy_per_step",
           ("lobatto.driver", "EnergyMeter"): "lobatto.machine.power:EnergyMeter",
           ("lobatto.restart", "Schedule"): "lobatto.runner.schedule:CheckpointSchedule"}


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old module path as a stand-in whose names come from the new modules."""

    def find_spec(self, fullname, path=None, target=None):
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED_MODULES else None

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module):
        old, new = module.__name__, MOVED_MODULES[module.__name__]
        message = f"{old} moved to {' and '.join(new)} in lobatto 0.2; the old path goes in 0.3"
        if sys.version_info >= (3, 12):  # name the user's import line, not the import machinery
            warnings.warn(message, DeprecationWarning, skip_file_prefixes=(importlib.__path__[0], __path__[0]))
        else:
            warnings.warn(message, DeprecationWarning, stacklevel=2)

        def __getattr__(name):
            if (old, name) in RENAMED:
                module, _, renamed = RENAMED[(old, name)].partition(":")
                return getattr(importlib.import_module(module), renamed)
            for target in new:
                found = importlib.import_module(target)
                if hasattr(found, name):
                    return getattr(found, name)
            raise AttributeError(f"module {old!r} (now {' and '.join(new)}) has no attribute {name!r}")

        def __dir__():
            names = {n for (o, n) in RENAMED if o == old}
            for target in new:
                names.update(n for n in dir(importlib.import_module(target)) if not n.startswith("_"))
            return sorted(names)

        module.__getattr__ = __getattr__
        module.__dir__ = __dir__
        module.__doc__ = message


if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(MovedModuleFinder())


def __getattr__(name):  # lazy, so that `import lobatto.mesh` does not load every layer
    if name in _API:
        from lobatto import api

        return getattr(api, name)
    if f"lobatto.{name}" in MOVED_MODULES:  # `from lobatto import driver`
        return importlib.import_module(f"lobatto.{name}")
    raise AttributeError(f"module 'lobatto' has no attribute {name!r}")
