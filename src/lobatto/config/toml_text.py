"""TOML text from plain data: :func:`to_toml` writes an effective configuration
(``Case.to_toml``), :func:`toml_value` one value as a case file would hold it (error
messages show values this way: config/toolkit.py ``show``)."""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

__all__ = ["to_toml", "toml_value", "toml_key", "toml_string"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_key(key: str) -> str:
    """A key, bare when TOML allows it, else quoted."""
    return key if _BARE_KEY.match(key) else toml_string(key)


def toml_string(s: str) -> str:
    """A basic (double-quoted) TOML string, control characters escaped."""
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def toml_value(v: Any) -> str:
    """One value as TOML text; TypeError for what TOML cannot hold."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        text = repr(v)
        if not any(c in text for c in ".eE"):
            text += ".0"
        return text
    if isinstance(v, str):
        return toml_string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):  # an inline table, in a list (a table's own tables are sections)
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    # numpy scalars and the like
    if hasattr(v, "item"):
        return toml_value(v.item())
    raise TypeError(f"cannot write {type(v).__name__} as a TOML value")


def to_toml(data: Mapping[str, Any]) -> str:
    """Write a nested dict (tables of scalars, strings and lists) as TOML text."""
    lines: list[str] = []

    def emit_table(prefix: tuple, table: Mapping[str, Any]):
        scalars = [(k, v) for k, v in table.items() if not isinstance(v, Mapping)]
        subtables = [(k, v) for k, v in table.items() if isinstance(v, Mapping)]
        if prefix and (scalars or not subtables):
            if lines:
                lines.append("")
            lines.append("[" + ".".join(toml_key(p) for p in prefix) + "]")
        for k, v in scalars:
            lines.append(f"{toml_key(k)} = {toml_value(v)}")
        for k, v in subtables:
            emit_table(prefix + (k,), v)

    emit_table((), data)
    return "\n".join(lines) + "\n"
