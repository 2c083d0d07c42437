"""Old module paths (before the run layer, monitors and machine helpers moved into packages)
keep working for one release: the import warns, and every public name is the new object."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import lobatto


def _public(module) -> list[str]:
    return [n for n, v in vars(module).items()
            if not n.startswith("_") and getattr(v, "__module__", module.__name__) == module.__name__]


@pytest.mark.parametrize("old", sorted(lobatto.MOVED_MODULES))
def test_old_path_warns_and_gives_the_new_objects(old):
    sys.modules.pop(old, None)
    vars(lobatto).pop(old.rpartition(".")[2], None)
    with pytest.warns(DeprecationWarning, match=old.replace(".", r"\.") + " moved to"):
        stand_in = importlib.import_module(old)
    names = 0
    for new in lobatto.MOVED_MODULES[old]:
        module = importlib.import_module(new)
        for name in _public(module):
            assert getattr(stand_in, name) is getattr(module, name), (old, name)
            names += 1
    assert names > 0
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        stand_in.no_such_name


def test_from_lobatto_import_old_module():
    sys.modules.pop("lobatto.driver", None)
    vars(lobatto).pop("driver", None)  # an earlier import set the package's attribute
    with pytest.warns(DeprecationWarning):
        from lobatto import driver
    assert driver.Simulation is lobatto.Simulation


def test_plain_import_does_not_warn():
    code = ("import warnings; warnings.simplefilter('error'); import lobatto, lobatto.runner, lobatto.monitors, "
            "lobatto.machine; lobatto.Simulation; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_unknown_module_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("lobatto.no_such_module")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError):
            lobatto.no_such_name


def test_renamed_names_follow():
    sys.modules.pop("lobatto.probes", None)
    with pytest.warns(DeprecationWarning):
        probes = importlib.import_module("lobatto.probes")
    from lobatto.monitors import MonitorSet
    assert probes.TimeSeries is MonitorSet


@pytest.mark.parametrize("old, name, new", [
    ("lobatto.driver", "TimeSeries", "lobatto.monitors.run_set:MonitorSet"),
    ("lobatto.steady", "TimeSeries", "lobatto.monitors.run_set:MonitorSet"),
    ("lobatto.driver", "energy_per_step", "lobatto.machine.energy_report:energy_per_step"),
    ("lobatto.restart", "Schedule", "lobatto.runner.schedule:CheckpointSchedule"),
])
def test_names_the_old_modules_imported_follow_too(old, name, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning):
        stand_in = importlib.import_module(old)
    module, _, attr = new.partition(":")
    assert getattr(stand_in, name) is getattr(importlib.import_module(module), attr)
    assert name in dir(stand_in) and "no_such_name" not in dir(stand_in)
