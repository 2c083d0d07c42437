"""Tables a system declares beyond ``[physics]``, and the key kinds they share with it.

A :class:`~lobatto.config.physics.PhysicsSpec` may declare

* ``tables``: top-level tables of its own, ``{"solver": (Key(...), ...)}``, checked key by
  key like ``[physics]`` (unknown keys with a suggestion, values by kind, defaults filled in);
* ``boundary_keys``: the keys of ``[boundary.<name>]`` tables, data per named boundary (a
  box's side, a mesh file's surface); each table sets exactly one of them;
* ``steady``: solved once, so the case has no ``[time]`` table.

Each key is read by its kind (config/toolkit.py ``key_value``). A key with ``required`` has
no default: its table must set it.

Box sides are checked here; a mesh file's surface names are known once the file is read, so
the system checks them when it is built (``boundary_names_in_mesh``).
"""

from __future__ import annotations

import difflib
from typing import Any, Mapping

from lobatto.config.generic_tables import SIDES
from lobatto.config.physics import PhysicsSpec
from lobatto.config.toolkit import EXPRESSION_VARIABLES, Context, check_keys, key_value, read_table, show
from lobatto.errors import InputError

__all__ = ["parse_system_tables", "check_boundary_name", "tables_to_dict", "key_value", "EXPRESSION_VARIABLES"]


def parse_system_tables(ctx: Context, data: Mapping[str, Any], spec: PhysicsSpec, mesh: Mapping | None) -> dict:
    """{table name: {key: value}} for the spec's tables, and ``"boundary"``: {name: (key,
    Expression)} for its ``[boundary.<name>]`` tables; refuses ``[time]`` for a steady
    system. ``mesh``: the raw ``[mesh]`` table (box sides are checked against it)."""
    if spec.steady and "time" in data:
        raise ctx.error(f"[time] does not apply: {spec.name} is steady (one solve, no time steps); remove [time]")
    tables, tops = {}, {}
    for name, keys in spec.tables.items():
        if "." in name:  # [solver.pressure]: a subtable of [solver]
            top, sub = name.split(".", 1)
            if top not in tops:  # checked once (20,000 [scalar.<name>] tables took hours, each checking all)
                tops[top] = read_table(ctx, data, "", top) or {}
            table = read_table(ctx, tops[top], top, sub) or {}
        else:
            table = read_table(ctx, data, "", name) or {}
        for key in keys:
            if key.required and key.name not in table:
                raise ctx.error(f"[{name}] {key.name} is required ({key.doc})")
        tables[name] = {key.name: key_value(ctx, name, table, key) for key in keys}
    for name, parse in spec.named_tables.items():  # [source.<name>]: the system checks them
        if data.get(name) is not None:
            tables[name] = parse(ctx, data[name])
    if spec.boundary_keys:  # (without them, schema_keys has no "boundary": an unknown key)
        tables["boundary"] = _boundary_tables(ctx, data, spec, mesh or {})
    return tables


def _boundary_tables(ctx: Context, data, spec: PhysicsSpec, mesh: Mapping) -> dict:
    given = data.get("boundary")
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise ctx.error(f"[boundary] must hold one table per boundary, for example [boundary.xmin], got {show(given)}")
    names = tuple(k.name for k in spec.boundary_keys)
    box = mesh.get("generator", "box") == "box"
    dim = len(mesh["elements"]) if box else 3  # read (and checked) before: 2 entries on a 2-D box
    periodic = mesh.get("periodic", [False] * dim) if box else [False] * 3
    out = {}
    for boundary, table in given.items():
        where = f"boundary.{boundary}"
        if not isinstance(table, Mapping):
            raise ctx.error(f"[{where}] must be a table with one of {', '.join(names)}, got {show(table)}")
        if box:
            check_boundary_name(boundary, SIDES[:2 * dim], f"{ctx.source}: [{where}]",
                                "sides of the box" if dim == 3 else "sides of the 2-D box")
            axis = SIDES.index(boundary) // 2
            if isinstance(periodic, (list, tuple)) and len(periodic) == dim and periodic[axis] is True:
                raise ctx.error(f"[{where}]: the {'xyz'[axis]} axis is periodic ([mesh] periodic), so {boundary} is "
                                "no boundary; remove the table or the periodicity")
        ctx.keys[where] = names
        check_keys(ctx, where, table)
        if spec.boundary_keys_together:
            if not table:
                raise ctx.error(f"[{where}] must set at least one of {', '.join(names)}")
            out[boundary] = {k.name: key_value(ctx, where, table, k) for k in spec.boundary_keys if k.name in table}
            continue
        if len(table) != 1:
            raise ctx.error(f"[{where}] must set exactly one of {', '.join(names)}, got "
                            f"{', '.join(table) if table else 'none'}")
        (name,) = table
        key = next(k for k in spec.boundary_keys if k.name == name)
        out[boundary] = (name, key_value(ctx, where, table, key))
    return out


def check_boundary_name(name: str, known, where: str, what: str) -> None:
    """InputError unless ``name`` is one of ``known`` (with the nearest as a suggestion)."""
    if name in known:
        return
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise InputError(f"{where}: '{name}' is not one of the {what}{hint}; they are {', '.join(known) or 'none'}")


def tables_to_dict(tables: Mapping) -> dict:
    """The tables as plain TOML data (expressions as their text), for ``Case.to_dict``."""
    out = {}
    for name, values in tables.items():
        if hasattr(values, "to_dict"):  # a named_tables entry of the spec
            out[name] = values.to_dict()
            continue
        if name == "boundary":
            if values:
                out[name] = {b: ({k: e.text for k, e in data.items()} if isinstance(data, dict) else
                                 {data[0]: data[1].text}) for b, data in values.items()}
            continue
        plain = {k: (v.text if hasattr(v, "text") else list(v) if isinstance(v, tuple) else v)
                 for k, v in values.items()}
        if "." in name:
            top, sub = name.split(".", 1)
            out.setdefault(top, {})[sub] = plain
        else:
            out[name] = plain
    return out
