"""lobatto: GPU-native high-order spectral-element framework.

The Python API (lobatto.api, docs/python.md) is available from here, imported on first use:
``lobatto.load_case``, ``lobatto.case_from_dict``, ``lobatto.run``, ``lobatto.Simulation``.
"""

__version__ = "0.1.0"

_API = ("Result", "Simulation", "available_systems", "case_from_dict", "load_case", "parse_case", "run",
        "run_case", "with_changes")


def __getattr__(name):  # lazy, so that `import lobatto.mesh` does not load every layer
    if name in _API:
        from lobatto import api

        return getattr(api, name)
    raise AttributeError(f"module 'lobatto' has no attribute {name!r}")
