"""Tables a system declares beyond ``[physics]``, and the key kinds they share with it.

A :class:`~lobatto.config.physics.PhysicsSpec` may declare

* ``tables``: top-level tables of its own, ``{"solver": (Key(...), ...)}``, checked key by
  key like ``[physics]`` (unknown keys with a suggestion, values by kind, defaults filled in);
* ``boundary_keys``: the keys of ``[boundary.<name>]`` tables, data per named boundary (a
  box's side, a mesh file's surface); each table sets exactly one of them;
* ``steady``: solved once, so the case has no ``[time]`` table.

Key kinds checked here besides the basic ones of ``config/schema.py``: ``expression``
(a string or number, compiled with the variables x, y, z), ``positive_integer``, ``count``
(an integer >= 0), ``orders`` (a list of decreasing orders >= 1, possibly empty) and
``names`` (a list of distinct identifiers, possibly empty). A key with ``required`` has no
default: its table must set it.

Box sides are checked here; a mesh file's surface names are known once the file is read, so
the system checks them when it is built (``boundary_names_in_mesh``).
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from typing import Any, Mapping

import numpy as np

from lobatto.config.expressions import compile_expression
from lobatto.config.physics import KEY_KINDS, Key, PhysicsSpec
from lobatto.config.ranges import is_number, show_value
from lobatto.config.schema import (SIDES, _bool, _check_keys, _choice, _Ctx, _get, _int, _positive,
                                   _show, _table)
from lobatto.errors import InputError

#: the variables of expression keys: steady data depend on position only
EXPRESSION_VARIABLES = ("x", "y", "z")


def key_value(ctx: _Ctx, section: str, table: Mapping[str, Any], key: Key):
    """The checked value of ``key`` in ``[section]`` (its default when absent): of its kind,
    and within its range (``Key.valid_range``; a constant expression's value too)."""
    value = _kind_value(ctx, section, table, key)
    valid = key.valid_range
    if valid is None or value is None:
        return value
    number = value
    if hasattr(value, "is_constant"):  # an expression: its value is checked on the mesh, unless constant
        if not value.is_constant:
            return value
        with np.errstate(all="ignore"):
            number = float(np.asarray(value.evaluate(np), dtype=np.float64).reshape(-1)[0])
    if valid.contains(number):
        return value
    if hasattr(value, "is_constant"):  # worded as the check of its values on the mesh
        raise ctx.error(f"[{section}] {key.name} = \"{value.text}\" is {show_value(number)}; its values must be "
                        f"{valid.describe()}")
    expected = "an integer" if isinstance(value, int) else "a number"
    raise ctx.bad(section, key.name, f"{expected} {valid.describe()}", table.get(key.name, key.default))


def _kind_value(ctx: _Ctx, section: str, table: Mapping[str, Any], key: Key):
    kind, name = key.kind, key.name
    if kind == "positive":
        return _positive(ctx, section, table, name, key.default)
    if kind == "choice":
        return _choice(ctx, section, table, name, key.choices, key.default)
    if kind == "bool":
        return _bool(ctx, section, table, name, key.default)
    if kind == "positive_integer":
        return _int(ctx, section, table, name, key.default, 1)
    if kind == "count":
        return _int(ctx, section, table, name, key.default, 0)
    if kind == "expression":
        return _expression(ctx, section, table, key)
    if kind == "expression_t":
        return _expression(ctx, section, table, key, EXPRESSION_VARIABLES + ("t",))
    if kind == "orders":
        return _orders(ctx, section, table, key)
    if kind == "names":
        return _names(ctx, section, table, key)
    value = _get(table, name, key.default, ctx, section)  # "number", "nonnegative"
    if not is_number(value) or not math.isfinite(value) or (kind == "nonnegative" and value < 0):
        raise ctx.bad(section, name, KEY_KINDS[kind], value)
    return float(value)


def _expression(ctx, section, table, key, variables=EXPRESSION_VARIABLES):
    text = _get(table, key.name, key.default, ctx, section)
    if is_number(text):
        text = repr(float(text)) if isinstance(text, float) else str(text)
    if not isinstance(text, str):
        raise ctx.bad(section, key.name, KEY_KINDS["expression"], text)
    return compile_expression(text, variables, where=f"{ctx.source}: [{section}] {key.name}")


def _orders(ctx, section, table, key) -> tuple:
    value = _get(table, key.name, key.default, ctx, section)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ctx.bad(section, key.name, KEY_KINDS["orders"], value)
    if any(v < 1 for v in value) or any(a <= b for a, b in zip(value, value[1:])):
        raise ctx.bad(section, key.name, KEY_KINDS["orders"], value)
    return tuple(value)


_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def _names(ctx, section, table, key) -> tuple:
    value = _get(table, key.name, key.default, ctx, section)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and _NAME.match(v) for v in value):
        raise ctx.bad(section, key.name, KEY_KINDS["names"], value)
    repeated = sorted(v for v, count in Counter(value).items() if count > 1)  # linear: 20,000 names
    if repeated:
        raise ctx.bad(section, key.name, KEY_KINDS["names"], value, f"'{repeated[0]}' is named twice")
    return tuple(value)


def parse_system_tables(ctx: _Ctx, data: Mapping[str, Any], spec: PhysicsSpec, mesh: Mapping | None) -> dict:
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
                tops[top] = _table(ctx, data, "", top) or {}
            table = _table(ctx, tops[top], top, sub) or {}
        else:
            table = _table(ctx, data, "", name) or {}
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


def _boundary_tables(ctx: _Ctx, data, spec: PhysicsSpec, mesh: Mapping) -> dict:
    given = data.get("boundary")
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise ctx.error(f"[boundary] must hold one table per boundary, for example [boundary.xmin], got {_show(given)}")
    names = tuple(k.name for k in spec.boundary_keys)
    box = mesh.get("generator", "box") == "box"
    periodic = mesh.get("periodic", [False] * 3) if box else [False] * 3
    out = {}
    for boundary, table in given.items():
        where = f"boundary.{boundary}"
        if not isinstance(table, Mapping):
            raise ctx.error(f"[{where}] must be a table with one of {', '.join(names)}, got {_show(table)}")
        if box:
            check_boundary_name(boundary, SIDES, f"{ctx.source}: [{where}]", "sides of the box")
            axis = SIDES.index(boundary) // 2
            if isinstance(periodic, (list, tuple)) and len(periodic) == 3 and periodic[axis] is True:
                raise ctx.error(f"[{where}]: the {'xyz'[axis]} axis is periodic ([mesh] periodic), so {boundary} is "
                                "no boundary; remove the table or the periodicity")
        ctx.keys[where] = names
        _check_keys(ctx, where, table)
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
