"""One run of a case (docs/architecture.md): the Simulation and its step loop (simulation.py),
what it is built from (build.py), its schedule of steps and checkpoints (schedule.py), its
snapshots (snapshots.py), checkpoints and restart (restart.py), steady runs (steady.py) and
the summary (summary.py).

The public names are importable from here, each loaded on first use so that importing one
module of the package (``lobatto.runner.build``) does not load the others.
"""

from importlib import import_module

#: public name -> the module of this package that defines it
_PUBLIC = {
    "Simulation": "simulation",
    "run_case": "simulation",
    "SteadyRun": "steady",
    "run_steady": "steady",
    "build_system": "build",
    "build_mesh": "build",
    "check_memory": "build",
    "SnapshotWriter": "snapshots",
    "CheckpointSchedule": "schedule",
    "MAX_STEPS": "schedule",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(import_module(f"lobatto.runner.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module 'lobatto.runner' has no attribute {name!r}")
