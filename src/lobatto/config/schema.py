"""Case-file schema: reading, checking and normalising a TOML case.

``load_case(path, systems)`` reads a file, ``parse_case(data, source, systems=...)``
checks an already-parsed dict. ``systems`` maps each ``[physics] equations`` name to the
system's :class:`~lobatto.config.physics.PhysicsSpec` (its fields, boundary kinds and
``[physics]`` keys; the first entry is the default): this module holds only the generic
sections. Every key is typed, defaults are filled in, unknown keys
are rejected with the nearest valid name, and expressions are compiled, so a
bad case fails before any work is done. Errors are
:class:`lobatto.errors.InputError` whose message starts with the file name and
names the dotted key.

The result is a :class:`Case`: immutable sections with attribute access
(``case.mesh.elements``, ``case.time.t_end``), ``case.to_dict()`` for the
effective configuration (defaults included) and ``case.to_toml()`` for the
same as TOML text.

The parts: config/toolkit.py (the context and typed readers), config/generic_tables.py (the
generic tables' declared keys), config/sections.py (their readers), config/case.py (the
sections), config/toml_text.py (TOML text). Their public names are importable from here too.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Mapping

from lobatto.config.case import (BackendSection, Case, CheckpointSection, DiscretizationSection, FieldsSection,
                                 MeshSection, OutputSection, ParallelSection, PhysicsSection, TimeSection)
from lobatto.config.generic_tables import (AXES, BACKENDS, DEFAULT_CFL, DEFAULT_MAX_CFL, EXCHANGES, INTEGRATORS,
                                           MAX_ELEMENTS, MAX_ORDER, MESH_GENERATORS, METHODS, MULTISTEP_INTEGRATORS,
                                           OUTPUT_FORMATS, PARTITIONERS, PRECISIONS, SIDES, VOLUME_FORMS, schema_keys)
from lobatto.config.physics import PhysicsSpec
from lobatto.config.sections import (decay_watch_for, physics_values, read_backend, read_checkpoint,
                                     read_discretization, read_fields, read_mesh, read_output, read_parallel,
                                     read_time)
from lobatto.config.system_tables import parse_system_tables
from lobatto.config.toml_text import to_toml
from lobatto.config.declared import monitor_keys
from lobatto.config.dft import check_taper_end
from lobatto.config.toolkit import Context, Table, check_keys, choice, read_table, show
from lobatto.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "Case",
    "MeshSection",
    "DiscretizationSection",
    "PhysicsSection",
    "FieldsSection",
    "TimeSection",
    "OutputSection",
    "BackendSection",
    "CheckpointSection",
    "ParallelSection",
    "load_case",
    "parse_case",
    "to_toml",
    "SIDES",
    # the generic tables' choices and limits (config/generic_tables.py)
    "AXES", "BACKENDS", "DEFAULT_CFL", "DEFAULT_MAX_CFL", "EXCHANGES", "INTEGRATORS", "MAX_ELEMENTS", "MAX_ORDER",
    "MESH_GENERATORS", "METHODS", "MULTISTEP_INTEGRATORS", "OUTPUT_FORMATS", "PARTITIONERS", "PRECISIONS",
    "VOLUME_FORMS", "schema_keys", "tomllib",
]


def parse_case(data: Mapping[str, Any], source: str = "<case>", name: str | None = None, *,
               systems: Mapping[str, PhysicsSpec], monitors: Mapping[str, Table] | None = None) -> Case:
    """Check a parsed TOML document and return a :class:`Case`.

    ``source`` prefixes every error message (normally the file name); ``name``
    defaults to the stem of ``source`` (or ``"case"`` when source is not a
    file name). ``systems`` maps equations names to specs, the first being the default
    (lobatto.systems.registry.physics_specs() gives the built-in ones). ``monitors``: the
    declared ``[output.<name>]`` tables of registered monitors (lobatto.monitors.registry.
    monitor_tables()), read by config/declared.py.
    """
    monitors = dict(monitors or {})
    ctx = Context(source, schema_keys(None))
    if not isinstance(data, Mapping):
        raise ctx.error(f"a case must be a TOML table, got {show(data)}")
    if not systems:
        raise ctx.error("no physical systems are registered (import lobatto.systems)")
    if name is None:
        if source.startswith("<") and source.endswith(">"):
            name = "case"
        else:
            name = Path(source).stem or "case"

    # ---- [physics] first: the system decides the field names, boundary kinds and its keys
    phys = data.get("physics") or {}
    if not isinstance(phys, Mapping):
        raise ctx.error(f"[physics] must be a table (a [physics] section), got {show(phys)}")
    equations = choice(ctx, "physics", phys, "equations", tuple(systems), next(iter(systems)))
    spec = systems[equations]
    ctx.keys = schema_keys(spec)
    phys = read_table(ctx, data, "", "physics") or {}
    phys_sec = PhysicsSection(equations=equations, values=physics_values(ctx, spec, phys))
    spec = spec.for_case(phys_sec.values, ctx.error)  # fields and tables named in [physics]
    ctx.keys = schema_keys(spec)
    monitor_keys(ctx.keys, monitors)
    check_keys(ctx, "", data)  # the system may add tables of its own

    # (in this order: it decides which error a case with several shows)
    mesh_sec, mesh = read_mesh(ctx, spec, data)
    tables = parse_system_tables(ctx, data, spec, mesh)  # [solver], [boundary.<name>]; no [time] if steady
    disc_sec = read_discretization(ctx, spec, data)
    initial_sec, exact_sec = read_fields(ctx, data, tuple(spec.fields))
    time_sec = read_time(ctx, spec, data, disc_sec.flux)
    out_sec = read_output(ctx, spec, data, name, monitors)
    time_sec = decay_watch_for(ctx, time_sec, out_sec)  # [time] decay_watch: the probes when there are some
    check_taper_end(ctx, time_sec, out_sec.dft)  # [output.dft] taper: the record's end known at the start
    return Case(
        name=name,
        source=source,
        mesh=mesh_sec,
        discretization=disc_sec,
        physics=phys_sec,
        initial=initial_sec,
        exact=exact_sec,
        time=time_sec,
        output=out_sec,
        checkpoint=read_checkpoint(ctx, data),
        backend=read_backend(ctx, data),
        parallel=read_parallel(ctx, data),
        _raw=dict(data),
        tables=tables,
    )


_LINE_COL = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_END_DOC = re.compile(r"\s*\(at end of document\)\s*$")


def _toml_error(path: str, text: str, err: Exception) -> InputError:
    msg = str(err)
    line = getattr(err, "lineno", None)
    col = getattr(err, "colno", None)
    m = _LINE_COL.search(msg)
    if m:
        line = line or int(m.group(1))
        col = col or int(m.group(2))
        msg = msg[: m.start()]
    elif _END_DOC.search(msg):
        msg = msg[: _END_DOC.search(msg).start()] + " (at end of file)"
        line = line or max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
    msg = getattr(err, "msg", None) or msg
    msg = _LINE_COL.sub("", msg)
    where = f"line {line}" if line else "unknown line"
    if line and col:
        where += f", column {col}"
    return InputError(f"{path}: {where}: invalid TOML: {msg}")


def load_case(path, *, systems: Mapping[str, PhysicsSpec], monitors: Mapping[str, Table] | None = None) -> Case:
    """Read and check a TOML case file; errors are InputError naming the file."""
    p = Path(path)
    shown = str(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{shown}: no such case file") from None
    except IsADirectoryError:
        raise InputError(f"{shown}: is a directory, not a case file") from None
    except PermissionError:
        raise InputError(f"{shown}: permission denied") from None
    except OSError as err:
        raise InputError(f"{shown}: cannot read case file ({err.strerror or err})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise InputError(f"{shown}: line {line}: not valid UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise InputError(f"{shown}: invalid TOML: arrays or tables nested too deeply") from None
    except tomllib.TOMLDecodeError as err:
        raise _toml_error(shown, text, err) from None
    return parse_case(data, source=shown, name=p.stem or "case", systems=systems, monitors=monitors)
