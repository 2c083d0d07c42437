"""Tables read wholly from their declaration: a monitor registered with a ``table`` of
:class:`~lobatto.config.physics.Key` s gets its ``[output.<name>]`` read here, so that adding
a monitor needs no code in config/ (docs/architecture.md, "Adding a monitor").

The parsed table is a :class:`DeclaredValues`: the values by key name, read as attributes
(``section.every``), written back into the case's effective configuration by ``to_dict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lobatto.config.toolkit import Context, Table, key_value, read_table

__all__ = ["DeclaredValues", "monitor_keys", "read_monitor_tables"]


class DeclaredValues(Mapping):
    """The checked values of one declared table (immutable; attributes or ``values[key]``)."""

    def __init__(self, table: Table, values: Mapping[str, Any]):
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"[{self.table.name}] declares no key {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"[{self.table.name}] values are read-only")

    def __getitem__(self, name: str):
        return self._values[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"DeclaredValues({self.table.name!r}, {self._values!r})"

    def to_dict(self) -> dict:
        """The table as a case file would give it (expressions as their text)."""
        return {name: getattr(value, "text", value) for name, value in self._values.items() if value is not None}


def monitor_keys(keys: dict, monitors: Mapping[str, Table]) -> None:
    """Add the declared monitor tables to the known keys (``Context.keys``): their names under
    ``[output]`` and each table's keys, for unknown keys and their suggestions."""
    keys["output"] = tuple(keys.get("output", ())) + tuple(name for name in monitors if name not in keys["output"])
    for name, table in monitors.items():
        keys[f"output.{name}"] = table.key_names


def read_monitor_tables(ctx: Context, output: Mapping[str, Any], monitors: Mapping[str, Table]) -> dict:
    """{name: DeclaredValues} of each declared monitor table the case's ``[output]`` has."""
    found = {}
    for name, table in monitors.items():
        if table.reader is not None:  # a table with checks of its own
            value = table.reader(ctx, output)
            if value is not None:
                found[name] = value
            continue
        given = read_table(ctx, output, "output", name)
        if given is None:
            continue
        where = f"output.{name}"
        for key in table.keys:
            if key.required and key.name not in given:
                raise ctx.error(f"[{where}] {key.name} is required ({key.doc})")
        found[name] = DeclaredValues(table, {key.name: key_value(ctx, where, given, key) for key in table.keys})
    return found
