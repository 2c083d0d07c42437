"""The case-file toolkit: what every table reader uses to check a TOML table.

A reader is handed a :class:`Context` (the file's name, for the message of every error, and
the known keys of every table, for the nearest-name suggestion of an unknown key) and reads
one table key by key through the typed readers here. Each reader returns the checked value
(its default when the key is absent; :data:`REQUIRED` as default makes the key required) or
raises :class:`~lobatto.errors.InputError` with one line that starts with the file name and
names ``[table] key``, what was expected and what was given (:func:`show`)::

    ctx = Context("case.toml", {"backend": ("name", "precision")})
    table = read_table(ctx, data, "", "backend")          # unknown keys refused here
    name = choice(ctx, "backend", table, "name", ("cpu", "cuda"), "cpu")

A table's keys are declared once as a :class:`Table` of :class:`~lobatto.config.physics.Key`
(name, kind, default, help, range): the known keys (suggestions) and docs/case-file.md's
tables come from those declarations, and :func:`key_value` reads a declared key by its kind.
Numbers of the generic tables are also checked against their declared range
(config/ranges.py ``SECTION_RANGES``) by :func:`integer` and :func:`positive`.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from lobatto.config.expressions import compile_expression
from lobatto.config.physics import KEY_KINDS, Key
from lobatto.config.ranges import MAGNITUDE, check_vector, is_number, section_range, show_value
from lobatto.config.toml_text import toml_value
from lobatto.errors import InputError

__all__ = ["REQUIRED", "Context", "Table", "show", "dotted", "suggest", "check_keys", "read_table", "get_value",
           "choice", "boolean", "bool_or_auto", "integer", "positive", "vector", "within", "name_list", "refuse_repeats",
           "key_value", "is_number", "EXPRESSION_VARIABLES"]

#: a reader's default that makes the key required
REQUIRED = object()
#: the variables of expression keys: steady data depend on position only
EXPRESSION_VARIABLES = ("x", "y", "z")


def show(value: Any) -> str:
    """A value as it would appear in a TOML file, for error messages (at most 60 characters)."""
    if isinstance(value, Mapping):
        return "a table"
    try:
        text = toml_value(value)
    except TypeError:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Context:
    """Where we are: the source name (prefix of every message) and the known keys by dotted
    table name (``""`` is the top level), for unknown keys and their suggestions. A reader of
    freely named tables adds theirs (``ctx.keys["source.antenna"] = (...)``)."""

    def __init__(self, source: str, keys: dict | None = None):
        self.source = source
        self.keys = keys if keys is not None else {}

    def error(self, message: str) -> InputError:
        """An InputError of ``message`` prefixed by the source."""
        return InputError(f"{self.source}: {message}")

    def bad(self, section: str, key: str, expected: str, value: Any, hint: str = "") -> InputError:
        """``[section] key must be <expected>, got <value> (hint)``."""
        msg = f"[{section}] {key} must be {expected}, got {show(value)}"
        if hint:
            msg += f" ({hint})"
        return self.error(msg)


@dataclass(frozen=True)
class Table:
    """The declared keys of one table: its dotted name (``"output.probes"``; ``"source.<name>"``
    for freely named ones) and its :class:`Key` s, in the order the docs list them."""

    name: str
    keys: tuple
    #: a table that needs checks across its keys (surfaces, angle lists) is read by a reader of
    #: its own, ``reader(ctx, parent) -> section object or None`` (``parent``: the table that
    #: holds it); None: read key by key from the declarations (config/declared.py)
    reader: Any = None

    def read_by(self, reader) -> "Table":
        """The same table, read by ``reader`` (see ``reader``)."""
        return Table(self.name, self.keys, reader)

    @property
    def key_names(self) -> tuple:
        return tuple(k.name for k in self.keys)

    def __getitem__(self, name: str) -> Key:
        for key in self.keys:
            if key.name == name:
                return key
        raise KeyError(f"[{self.name}] declares no key {name!r}")

    def check(self, ctx: Context, table: Mapping, where: str | None = None, only: tuple | None = None) -> None:
        """Refuse keys of ``table`` that are not declared (or not in ``only``), naming it ``where``."""
        where = self.name if where is None else where
        ctx.keys[where] = self.key_names if only is None else only
        check_keys(ctx, where, table)


def dotted(section: str, key: str) -> str:
    """``section.key`` (``key`` at the top level)."""
    return f"{section}.{key}" if section else key


def suggest(keys: dict, section: str, key: str) -> str:
    """A ' (did you mean ...?)' hint for an unknown key (the nearest name in its table, else
    the same name in another table), or the list of valid keys."""
    valid = keys[section]
    lower = {v.lower(): v for v in valid}
    if key.lower() in lower:
        return f" (did you mean '{dotted(section, lower[key.lower()])}'?)"
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    if close:
        return f" (did you mean '{dotted(section, close[0])}'?)"
    # The key may belong to another section (e.g. 'order' at top level).
    elsewhere = []
    for sec, names in keys.items():
        if sec == section:
            continue
        for k in names:
            if k == key or k.lower() == key.lower():
                elsewhere.append(dotted(sec, k))
    if not elsewhere:
        allk = [dotted(s, k) for s, ks in keys.items() for k in ks if s != section]
        close = difflib.get_close_matches(key, [a.rsplit(".", 1)[-1] for a in allk], n=1, cutoff=0.75)
        if close:
            elsewhere = [a for a in allk if a.rsplit(".", 1)[-1] == close[0]][:1]
    if elsewhere:
        return f" (did you mean '{elsewhere[0]}'?)"
    where = f"[{section}]" if section else "the top level"
    return f" (valid keys in {where}: {', '.join(valid)})"


def check_keys(ctx: Context, section: str, table: Mapping[str, Any]) -> None:
    """Refuse the first key of ``table`` not known in ``[section]``, with a suggestion."""
    valid = ctx.keys[section]
    valid = set(valid) if len(table) > 8 else valid  # a table of many names (scalars) against many
    for key in table:
        if key not in valid:
            raise ctx.error(f"unknown key '{dotted(section, key)}'{suggest(ctx.keys, section, key)}")


def read_table(ctx: Context, data: Mapping[str, Any], section: str, key: str, required=False) -> dict | None:
    """The table ``[section.key]`` of ``data`` with its keys checked (None when absent)."""
    value = data.get(key)
    full = dotted(section, key)
    if value is None:
        if required:
            raise ctx.error(f"missing required section [{full}]")
        return None
    if not isinstance(value, Mapping):
        raise ctx.error(f"[{full}] must be a table (a [{full}] section), got {show(value)}")
    check_keys(ctx, full, value)
    return dict(value)


def get_value(ctx: Context, section: str, table: Mapping, key: str, default: Any, required_hint: str = ""):
    """``table[key]`` as given, or ``default`` (an error naming the key if it is REQUIRED)."""
    if key in table:
        return table[key]
    if default is REQUIRED:
        raise ctx.error(f"[{section}] {key} is required{required_hint}")
    return default


def choice(ctx: Context, section: str, table: Mapping, key: str, choices, default):
    """One of the strings ``choices`` (a close one is suggested)."""
    v = get_value(ctx, section, table, key, default)
    if not isinstance(v, str) or v not in choices:
        opts = ", ".join(f'"{c}"' for c in choices)
        hint = ""
        if isinstance(v, str):
            close = difflib.get_close_matches(v.lower(), choices, n=1, cutoff=0.6)
            if close:
                hint = f'did you mean "{close[0]}"?'
        if len(choices) == 1:
            raise ctx.bad(section, key, f'"{choices[0]}" (the only supported value)', v, hint)
        raise ctx.bad(section, key, f"one of {opts}", v, hint)
    return v


def boolean(ctx: Context, section: str, table: Mapping, key: str, default):
    """true or false."""
    v = get_value(ctx, section, table, key, default)
    if not isinstance(v, bool):
        raise ctx.bad(section, key, "true or false", v)
    return v


def bool_or_auto(ctx: Context, section: str, table: Mapping, key: str, default):
    """true, false or "auto"."""
    v = get_value(ctx, section, table, key, default)
    if not isinstance(v, bool) and v != "auto":
        raise ctx.bad(section, key, 'true, false or "auto"', v)
    return v


def integer(ctx: Context, section: str, table: Mapping, key: str, default, low=None, high=None, required_hint=""):
    """An integer (not a bool) from ``low`` to ``high`` (None: unbounded), and within the
    key's declared range."""
    v = get_value(ctx, section, table, key, default, required_hint)
    if low is not None and high is not None:
        expected = f"an integer from {low} to {high}"
    elif low is not None:
        expected = f"an integer >= {low}"
    else:
        expected = "an integer"
    if not isinstance(v, int) or isinstance(v, bool):
        raise ctx.bad(section, key, expected, v)
    if (low is not None and v < low) or (high is not None and v > high):
        raise ctx.bad(section, key, expected, v)
    return within(ctx, section, key, v, "an integer")


def within(ctx: Context, section: str, key: str, value, expected: str, shown=None):
    """``value``, or InputError when it is outside the key's declared range (config/ranges.py
    ``SECTION_RANGES``); ``shown``: the value as given, when it differs."""
    valid = section_range(section, key)
    if valid is not None and value is not None and not valid.contains(value):
        raise ctx.bad(section, key, f"{expected} {valid.describe()}", value if shown is None else shown)
    return value


def positive(ctx: Context, section: str, table: Mapping, key: str, default, required_hint=""):
    """A finite number > 0 as a float (None if the default is None and the key absent), within
    the key's declared range."""
    v = get_value(ctx, section, table, key, default, required_hint)
    if v is None:
        return None
    if not is_number(v) or not math.isfinite(v) or v <= 0:
        raise ctx.bad(section, key, "a positive number", v)
    return within(ctx, section, key, float(v), "a number", v)


_VECTOR_KINDS = {
    "posint": "positive integers",
    "float": "finite numbers",
    "bool": "booleans (true/false)",
}


def vector(ctx: Context, section: str, table: Mapping, key: str, default, kind: str, required_hint="",
           length=3):
    """A list of ``length`` values of ``kind``: "posint", "float" (within the declared range) or
    "bool"; ``length``: an int, or a tuple of the lengths allowed (a box's 2 or 3 axes)."""
    v = get_value(ctx, section, table, key, default, required_hint)
    lengths = (length,) if isinstance(length, int) else tuple(length)
    what = f"a list of {' or '.join(map(str, lengths))} {_VECTOR_KINDS[kind]}"
    if not isinstance(v, (list, tuple)) or len(v) not in lengths:
        raise ctx.bad(section, key, what, v)
    out = []
    for x in v:
        if kind == "posint":
            ok = isinstance(x, int) and not isinstance(x, bool) and x >= 1
        elif kind == "float":
            ok = is_number(x) and math.isfinite(x)
            x = float(x) if ok else x
        else:
            ok = isinstance(x, bool)
        if not ok:
            raise ctx.bad(section, key, what, v)
        if kind == "float":
            within(ctx, section, key, x, what, v)
        out.append(x)
    return tuple(out)


def name_list(ctx: Context, where: str, table: Mapping, key: str, allowed, what: str, default: list,
              other: tuple = ((), "")) -> list:
    """A list of distinct names, each one of ``allowed`` unless that is None; ``what`` names
    them in messages; ``other``: (names, kind) of a sibling list that a name may belong to
    instead (a volume integrand listed as a surface one). A name given twice is refused, not
    merged: it is a slip whose intent is unclear (a surface listed twice in a force table reads
    as counted twice)."""
    value = table.get(key, default)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise ctx.bad(where, key, "a list of names", value)
    refuse_repeats(ctx, where, key, value)
    names = list(value)
    for name in names:
        if allowed is None or name in allowed:
            continue
        if name in other[0]:
            hint = f"'{name}' is a {other[1]} integrand: list it in [{where}] {other[1]}"
        else:
            close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.5)
            hint = (f"did you mean '{close[0]}'? " if close else "") + \
                f"expected one of {', '.join(allowed) if allowed else '(none)'}"
        raise ctx.error(f"[{where}] {key}: unknown {what} {show(name)} ({hint})")
    return names


def refuse_repeats(ctx: Context, where: str, key: str, values) -> None:
    """InputError naming the first entry of ``values`` (hashable) that is given more than once."""
    repeated = [v for v, count in Counter(values).items() if count > 1]  # linear: 20,000 names
    if repeated:
        raise ctx.error(f"[{where}] {key}: {show(repeated[0])} is given {Counter(values)[repeated[0]]} times; "
                        "list each once")


# ===================================================================== declared keys
def key_value(ctx: Context, section: str, table: Mapping[str, Any], key: Key, variables: tuple = ()):
    """The checked value of the declared ``key`` in ``[section]`` (its default when absent):
    of its kind, and within its range (``Key.valid_range``; a constant expression's value too).
    ``variables``: names an expression key may use besides x, y, z (and t) (``Key.variables_from``)."""
    if key.kind == "vector":  # a list of 3 numbers, each within the range (None: absent, no default)
        value = get_value(ctx, section, table, key.name, key.default)
        return None if value is None else check_vector(ctx, section, key.name, value, key.valid_range or MAGNITUDE)
    value = _kind_value(ctx, section, table, key, tuple(variables))
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


def _kind_value(ctx: Context, section: str, table: Mapping[str, Any], key: Key, variables: tuple = ()):
    kind, name = key.kind, key.name
    if kind == "positive":
        return positive(ctx, section, table, name, key.default)
    if kind == "choice":
        return choice(ctx, section, table, name, key.choices, key.default)
    if kind == "bool":
        return boolean(ctx, section, table, name, key.default)
    if kind == "positive_integer":
        return integer(ctx, section, table, name, key.default, 1)
    if kind == "count":
        return integer(ctx, section, table, name, key.default, 0)
    if kind == "expression":
        return _expression(ctx, section, table, key, EXPRESSION_VARIABLES + variables)
    if kind == "expression_t":
        return _expression(ctx, section, table, key, EXPRESSION_VARIABLES + ("t",) + variables)
    if kind == "orders":
        return _orders(ctx, section, table, key)
    if kind == "names":
        return _identifiers(ctx, section, table, key)
    if kind not in ("number", "nonnegative"):
        raise ValueError(f"[{section}] {name}: a key of kind {kind!r} is read by its table's own reader")
    value = get_value(ctx, section, table, name, key.default)
    if not is_number(value) or not math.isfinite(value) or (kind == "nonnegative" and value < 0):
        raise ctx.bad(section, name, KEY_KINDS[kind], value)
    return float(value)


def _expression(ctx, section, table, key, variables=EXPRESSION_VARIABLES):
    text = get_value(ctx, section, table, key.name, key.default)
    if is_number(text):
        text = repr(float(text)) if isinstance(text, float) else str(text)
    if not isinstance(text, str):
        raise ctx.bad(section, key.name, KEY_KINDS["expression"], text)
    return compile_expression(text, variables, where=f"{ctx.source}: [{section}] {key.name}")


def _orders(ctx, section, table, key) -> tuple:
    value = get_value(ctx, section, table, key.name, key.default)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ctx.bad(section, key.name, KEY_KINDS["orders"], value)
    if any(v < 1 for v in value) or any(a <= b for a, b in zip(value, value[1:])):
        raise ctx.bad(section, key.name, KEY_KINDS["orders"], value)
    return tuple(value)


_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def _identifiers(ctx, section, table, key) -> tuple:
    value = get_value(ctx, section, table, key.name, key.default)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and _IDENTIFIER.match(v) for v in value):
        raise ctx.bad(section, key.name, KEY_KINDS["names"], value)
    repeated = sorted(v for v, count in Counter(value).items() if count > 1)  # linear: 20,000 names
    if repeated:
        raise ctx.bad(section, key.name, KEY_KINDS["names"], value, f"'{repeated[0]}' is named twice")
    return tuple(value)
