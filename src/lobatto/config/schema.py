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
"""

from __future__ import annotations

import difflib
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from lobatto.config.expressions import compile_expression
from lobatto.config.physics import PhysicsSpec
from lobatto.config.ranges import is_number, section_range
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
]

SIDES = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")
AXES = ("x", "y", "z")
INTEGRATORS = ("lsrk45", "rk4", "ssprk3", "bdf1", "bdf2", "bdf3")  # each system takes some (PhysicsSpec.integrators)
MULTISTEP_INTEGRATORS = ("bdf1", "bdf2", "bdf3")
#: [time] cfl default per integrator, lowered to 0.9 of a system's stability bound where that is
#: lower (PhysicsSpec.default_cfl; benchmarks/notes-stability.md); for the multistep schemes
#: the CFL number is the system's advective one (its ``courant``)
DEFAULT_CFL = {"lsrk45": 0.5, "rk4": 0.3, "ssprk3": 0.25, "bdf1": 0.5, "bdf2": 0.5, "bdf3": 0.5}
#: [time] max_cfl default of the multistep schemes: a guard against a run gone wrong, not a
#: stability bound (extrapolated advection is unstable well below it: docs/case-file.md)
DEFAULT_MAX_CFL = 2.0
OUTPUT_FORMATS = ("hdf5", "nek", "vtk")
BACKENDS = ("cpu", "cuda", "auto")
PRECISIONS = ("float64", "float32")
EXCHANGES = ("auto", "nccl", "cuda-aware-mpi", "host")
METHODS = ("auto", "pairwise", "crystal_router", "allreduce")
PARTITIONERS = ("rcb", "metis", "rsb")
MESH_GENERATORS = ("box", "gmsh", "nek")  # the box generator, and the mesh file formats
MAX_ORDER = 24
MAX_ELEMENTS = 10**12  # far beyond any machine; keeps element ids within int64

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


# =========================================================================== sections
@dataclass(frozen=True)
class MeshSection:
    generator: str  # "box", or a file format: "gmsh", "nek"
    elements: tuple | None  # (ex, ey, ez) ints; None for a file mesh
    lower: tuple | None  # (x, y, z) floats; None for a file mesh
    upper: tuple | None
    periodic: tuple  # (bool, bool, bool); all False for a file mesh (its file says)
    boundary: str  # default kind for every non-periodic side (box) or unmapped group (file)
    boundaries: dict  # box: side -> kind or "periodic", all six sides; file: group name -> kind, as given
    deform: dict  # axis -> Expression, only the axes given (may be empty)
    file: str | None = None  # the mesh file (absolute, or as given when the case has no file)

    @property
    def from_file(self) -> bool:
        return self.file is not None

    @property
    def num_elements(self) -> int | None:
        """Elements of a box; None for a file mesh (known once the file is read)."""
        if self.elements is None:
            return None
        ex, ey, ez = self.elements
        return ex * ey * ez


#: the DG systems' volume terms on curved elements: "split" (half chain rule, half
#: conservative: the discrete energy never grows) or "chain" (the chain rule alone, more
#: accurate on coarse curved elements at low N, but it can gain energy there)
VOLUME_FORMS = ("split", "chain")


@dataclass(frozen=True)
class DiscretizationSection:
    order: int
    flux: str
    volume_form: str = "split"  # DG volume terms on curved elements: "split" or "chain" (VOLUME_FORMS)


@dataclass(frozen=True)
class PhysicsSection:
    """``[physics]``: the system's name and its own keys (``values``, defaults filled in),
    also readable as attributes (``case.physics.epsilon``)."""

    equations: str
    values: dict = field(default_factory=dict)

    def __getattr__(self, key):
        values = self.__dict__.get("values", {})
        if key in values:
            return values[key]
        raise AttributeError(f"[physics] of '{self.__dict__.get('equations')}' has no key {key!r}")


@dataclass(frozen=True)
class FieldsSection:
    """``[initial]`` or ``[exact]``.

    ``fields`` maps every field name of the system to an Expression (a missing
    component is the constant ``0``), or is None for an ``[exact]`` section
    that the case does not have. ``given`` lists the components the file set.
    """

    fields: dict | None
    given: tuple = ()

    @property
    def present(self) -> bool:
        return self.fields is not None

    def __bool__(self) -> bool:
        return self.fields is not None


@dataclass(frozen=True)
class TimeSection:
    integrator: str
    t_end: float
    cfl: float
    dt: float | None  # None: computed from cfl
    cfl_check: bool = True  # refuse a cfl above the integrator's stability bound
    target_cfl: float | None = None  # variable dt aiming at this CFL number (not with dt or cfl)
    initial_dt: float | None = None  # the first step with target_cfl (None: from the initial state)
    max_cfl: float | None = None  # a step over this CFL number stops the run (None: not checked)


@dataclass(frozen=True)
class OutputSection:
    every: int
    formats: tuple
    name: str
    compression: str = "none"  # HDF5 snapshots: io/compression.py
    probes: Any = None  # config/probes.py ProbesSection, or None
    integrals: Any = None  # config/probes.py IntegralsSection, or None
    dft: Any = None  # config/dft.py DftSection, or None
    far_field: Any = None  # config/nearfar.py FarFieldSection, or None
    log_every: int = 1  # a step line every this many steps (systems with step reports); 0: none


@dataclass(frozen=True)
class CheckpointSection:
    """``[checkpoint]``: when to write a restartable checkpoint (docs/restart.md)."""

    every: int = 0  # steps between checkpoints; 0: none by step count
    wall_minutes: float | None = None  # wall time between checkpoints; None: none by time
    keep: int = 2  # the newest this many are kept
    compression: str = "none"
    at_end: bool = True  # one more at the end of the run, when checkpoints are on

    @property
    def enabled(self) -> bool:
        return self.every > 0 or self.wall_minutes is not None


@dataclass(frozen=True)
class BackendSection:
    name: str
    precision: str


@dataclass(frozen=True)
class ParallelSection:
    exchange: str
    method: str
    partitioner: str
    overlap: bool | str = "auto"  # True, False or "auto"


@dataclass(frozen=True)
class Case:
    """A checked case. Sections are attributes; ``name`` is the file stem."""

    name: str
    source: str
    mesh: MeshSection
    discretization: DiscretizationSection
    physics: PhysicsSection
    initial: FieldsSection
    exact: FieldsSection
    time: TimeSection | None  # None for a steady system (PhysicsSpec.steady)
    output: OutputSection
    backend: BackendSection
    parallel: ParallelSection
    _raw: dict = field(default=None, repr=False, compare=False)
    checkpoint: CheckpointSection = field(default_factory=CheckpointSection)
    #: the system's own tables and [boundary.<name>] data (config/system_tables.py)
    tables: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The effective configuration (defaults included) as plain Python data."""
        m = self.mesh
        if m.from_file:
            mesh: dict[str, Any] = {"generator": m.generator, "file": m.file, "boundary": m.boundary}
        else:
            mesh = {
                "generator": m.generator,
                "elements": list(m.elements),
                "lower": list(m.lower),
                "upper": list(m.upper),
                "periodic": list(m.periodic),
                "boundary": m.boundary,
            }
        sides = {s: k for s, k in m.boundaries.items() if k != "periodic"}
        if sides:
            mesh["boundaries"] = sides
        if m.deform:
            mesh["deform"] = {a: e.text for a, e in m.deform.items()}
        out: dict[str, Any] = {
            "mesh": mesh,
            "discretization": {
                "order": self.discretization.order,
                "flux": self.discretization.flux,
                "volume_form": self.discretization.volume_form,
            },
            "physics": {"equations": self.physics.equations,
                        **{k: getattr(v, "text", v) for k, v in self.physics.values.items()}},
            "initial": {n: e.text for n, e in self.initial.fields.items()},
        }
        if self.exact.fields is not None:
            out["exact"] = {n: e.text for n, e in self.exact.fields.items()}
        if self.time is not None:  # None: a steady system
            time: dict[str, Any] = {
                "integrator": self.time.integrator,
                "t_end": self.time.t_end,
                "cfl": self.time.cfl,
            }
            if self.time.dt is not None:
                time["dt"] = self.time.dt
            time["cfl_check"] = self.time.cfl_check
            for key in ("target_cfl", "initial_dt", "max_cfl"):
                if getattr(self.time, key) is not None:
                    time[key] = getattr(self.time, key)
            if self.time.target_cfl is not None:  # cfl does not apply (and may not be given with it)
                del time["cfl"]
            out["time"] = time
        from lobatto.config.system_tables import tables_to_dict

        out.update(tables_to_dict(self.tables))
        out["output"] = {
            "every": self.output.every,
            "formats": list(self.output.formats),
            "name": self.output.name,
        }
        if self.output.compression != "none":
            out["output"]["compression"] = self.output.compression
        if self.output.log_every != 1:
            out["output"]["log_every"] = self.output.log_every
        for series in ("probes", "integrals", "dft", "far_field"):  # [output.probes], ... [output.far_field]
            if getattr(self.output, series) is not None:
                out["output"][series] = getattr(self.output, series).to_dict()
        if self.checkpoint != CheckpointSection():
            c = self.checkpoint
            out["checkpoint"] = {"every": c.every, "keep": c.keep, "compression": c.compression, "at_end": c.at_end}
            if c.wall_minutes is not None:
                out["checkpoint"]["wall_minutes"] = c.wall_minutes
        out["backend"] = {"name": self.backend.name, "precision": self.backend.precision}
        out["parallel"] = {
            "exchange": self.parallel.exchange,
            "method": self.parallel.method,
            "partitioner": self.parallel.partitioner,
            "overlap": self.parallel.overlap,
        }
        return out

    def to_toml(self) -> str:
        """TOML text of the effective configuration; parses back to the same case."""
        about = " ".join(f"case '{self.name}' (source: {self.source})".split())
        header = f"# effective configuration of {about}\n"
        return header + to_toml(self.to_dict())

    @property
    def raw(self) -> dict:
        """The dict the case was parsed from (as read, before defaults)."""
        return self._raw


# ====================================================================== TOML emitter
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _toml_string(key)


def _toml_string(s: str) -> str:
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


def _toml_value(v: Any) -> str:
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
        return _toml_string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):  # an inline table, in a list (a table's own tables are sections)
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    # numpy scalars and the like
    if hasattr(v, "item"):
        return _toml_value(v.item())
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
            lines.append("[" + ".".join(_toml_key(p) for p in prefix) + "]")
        for k, v in scalars:
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
        for k, v in subtables:
            emit_table(prefix + (k,), v)

    emit_table((), data)
    return "\n".join(lines) + "\n"


# ========================================================================== checking
def _show(value: Any) -> str:
    """A value as it would appear in a TOML file, for error messages."""
    if isinstance(value, Mapping):
        return "a table"
    try:
        text = _toml_value(value)
    except TypeError:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Ctx:
    """Where we are: the source name and the known keys (for messages and suggestions)."""

    def __init__(self, source: str, keys: dict | None = None):
        self.source = source
        self.keys = keys if keys is not None else schema_keys(None)

    def error(self, message: str) -> InputError:
        return InputError(f"{self.source}: {message}")

    def bad(self, section: str, key: str, expected: str, value: Any, hint: str = "") -> InputError:
        msg = f"[{section}] {key} must be {expected}, got {_show(value)}"
        if hint:
            msg += f" ({hint})"
        return self.error(msg)


# Known keys of the generic sections, for "did you mean" suggestions across sections; the
# [physics], [initial] and [exact] keys come from the system (schema_keys).
_SCHEMA_KEYS: dict[str, tuple] = {
    "": (
        "mesh",
        "discretization",
        "physics",
        "initial",
        "exact",
        "time",
        "output",
        "backend",
        "parallel",
        "checkpoint",
    ),
    "mesh": ("generator", "file", "elements", "lower", "upper", "periodic", "boundary", "boundaries", "deform"),
    "mesh.boundaries": SIDES,
    "mesh.deform": AXES,
    "discretization": ("order", "flux", "volume_form"),
    "physics": ("equations",),
    "initial": (),
    "exact": (),
    "time": ("integrator", "t_end", "cfl", "dt", "cfl_check", "target_cfl", "initial_dt", "max_cfl"),
    "output": ("every", "formats", "name", "compression", "probes", "integrals", "dft", "far_field", "log_every"),
    "output.dft": ("frequencies", "fields", "surfaces", "regions", "flux"),
    "output.far_field": ("frequencies", "lower", "upper", "region", "origin", "theta", "phi", "incident",
                         "absorption_lower", "absorption_upper", "absorption_region"),  # config/nearfar.py KEYS
    "output.probes": ("every", "points", "fields"),
    "output.integrals": ("every", "volume", "regions", "surface", "surfaces"),
    "checkpoint": ("every", "wall_minutes", "keep", "compression", "at_end"),
    "backend": ("name", "precision"),
    "parallel": ("exchange", "method", "partitioner", "overlap"),
}


def schema_keys(spec: PhysicsSpec | None) -> dict:
    """Every known key by section, with the [physics] keys and field names of ``spec``."""
    keys = dict(_SCHEMA_KEYS)
    if spec is not None:
        keys["physics"] = ("equations",) + spec.key_names
        keys["initial"] = keys["exact"] = tuple(spec.fields)
        # a dotted table name ("solver.pressure") is a subtable: [solver] holds [solver.pressure]
        tops = tuple(dict.fromkeys(name.split(".")[0] for name in spec.tables))
        keys[""] = keys[""] + tops + (("boundary",) if spec.boundary_keys else ()) + tuple(spec.named_tables)
        subtables: dict = {}
        for name in spec.tables:
            if "." in name:
                top, sub = name.split(".", 1)
                subtables.setdefault(top, list(keys.get(top, ()))).append(sub)
        keys.update({top: tuple(subs) for top, subs in subtables.items()})
        keys.update({name: tuple(k.name for k in table) for name, table in spec.tables.items()})
    return keys


def _dotted(section: str, key: str) -> str:
    return f"{section}.{key}" if section else key


def _suggest(keys: dict, section: str, key: str) -> str:
    """A ' (did you mean ...?)' hint for an unknown key, or a list of valid keys."""
    valid = keys[section]
    lower = {v.lower(): v for v in valid}
    if key.lower() in lower:
        return f" (did you mean '{_dotted(section, lower[key.lower()])}'?)"
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    if close:
        return f" (did you mean '{_dotted(section, close[0])}'?)"
    # The key may belong to another section (e.g. 'order' at top level).
    elsewhere = []
    for sec, names in keys.items():
        if sec == section:
            continue
        for k in names:
            if k == key or k.lower() == key.lower():
                elsewhere.append(_dotted(sec, k))
    if not elsewhere:
        allk = [_dotted(s, k) for s, ks in keys.items() for k in ks if s != section]
        close = difflib.get_close_matches(key, [a.rsplit(".", 1)[-1] for a in allk], n=1, cutoff=0.75)
        if close:
            elsewhere = [a for a in allk if a.rsplit(".", 1)[-1] == close[0]][:1]
    if elsewhere:
        return f" (did you mean '{elsewhere[0]}'?)"
    where = f"[{section}]" if section else "the top level"
    return f" (valid keys in {where}: {', '.join(valid)})"


def _check_keys(ctx: _Ctx, section: str, table: Mapping[str, Any]):
    valid = ctx.keys[section]
    valid = set(valid) if len(table) > 8 else valid  # a table of many names (scalars) against many
    for key in table:
        if key not in valid:
            raise ctx.error(f"unknown key '{_dotted(section, key)}'{_suggest(ctx.keys, section, key)}")


def _table(ctx: _Ctx, data: Mapping[str, Any], section: str, key: str, required=False) -> dict | None:
    value = data.get(key)
    full = _dotted(section, key)
    if value is None:
        if required:
            raise ctx.error(f"missing required section [{full}]")
        return None
    if not isinstance(value, Mapping):
        raise ctx.error(f"[{full}] must be a table (a [{full}] section), got {_show(value)}")
    _check_keys(ctx, full, value)
    return dict(value)


def _get(table: Mapping, key: str, default: Any, ctx: _Ctx, section: str, required_hint: str = ""):
    if key in table:
        return table[key]
    if default is _REQUIRED:
        raise ctx.error(f"[{section}] {key} is required{required_hint}")
    return default


_REQUIRED = object()


def _choice(ctx, section, table, key, choices, default):
    v = _get(table, key, default, ctx, section)
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


def _bool(ctx, section, table, key, default):
    v = _get(table, key, default, ctx, section)
    if not isinstance(v, bool):
        raise ctx.bad(section, key, "true or false", v)
    return v


def _bool_or_auto(ctx, section, table, key, default):
    v = _get(table, key, default, ctx, section)
    if not isinstance(v, bool) and v != "auto":
        raise ctx.bad(section, key, 'true, false or "auto"', v)
    return v


def _int(ctx, section, table, key, default, lo=None, hi=None, required_hint=""):
    v = _get(table, key, default, ctx, section, required_hint)
    if lo is not None and hi is not None:
        expected = f"an integer from {lo} to {hi}"
    elif lo is not None:
        expected = f"an integer >= {lo}"
    else:
        expected = "an integer"
    if not isinstance(v, int) or isinstance(v, bool):
        raise ctx.bad(section, key, expected, v)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ctx.bad(section, key, expected, v)
    return _within(ctx, section, key, v, "an integer")


def _within(ctx, section, key, value, expected, shown=None):
    """``value``, or InputError when it is outside the key's declared range (config/ranges.py)."""
    valid = section_range(section, key)
    if valid is not None and value is not None and not valid.contains(value):
        raise ctx.bad(section, key, f"{expected} {valid.describe()}", value if shown is None else shown)
    return value


def _positive(ctx, section, table, key, default, required_hint=""):
    v = _get(table, key, default, ctx, section, required_hint)
    if v is None:
        return None
    if not is_number(v) or not math.isfinite(v) or v <= 0:
        raise ctx.bad(section, key, "a positive number", v)
    return _within(ctx, section, key, float(v), "a number", v)


def _vector(ctx, section, table, key, default, kind, required_hint=""):
    v = _get(table, key, default, ctx, section, required_hint)
    what = {
        "posint": "a list of 3 positive integers",
        "float": "a list of 3 finite numbers",
        "bool": "a list of 3 booleans (true/false)",
    }[kind]
    if not isinstance(v, (list, tuple)) or len(v) != 3:
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
            _within(ctx, section, key, x, what, v)
        out.append(x)
    return tuple(out)


def _expressions(ctx, section: str, table: Mapping | None, names: tuple, variables: tuple) -> dict:
    out = {}
    if not table:
        return out
    for name in names:
        if name not in table:
            continue
        text = table[name]
        if not isinstance(text, str):
            if is_number(text):
                text = repr(float(text)) if isinstance(text, float) else str(text)
            else:
                raise ctx.bad(
                    section, name, "an expression string (for example \"sin(pi*x)\")", text
                )
        out[name] = compile_expression(text, variables, where=f"{ctx.source}: [{section}] {name}")
    return out


def _check_output_name_length(ctx: _Ctx, out_name: str, given: bool) -> None:
    """Every file name made from [output] name (the longest: an HDF5 part's temporary,
    ``<name>_<step>.r<rank>.h5.tmp-<pid>``) must fit in the file system's NAME_MAX bytes."""
    from lobatto.io.output_dir import MAX_OUTPUT_NAME_LENGTH, NAME_MAX, longest_output_file_name

    length = len(out_name.encode("utf-8"))
    if length <= MAX_OUTPUT_NAME_LENGTH:
        return
    where = "" if given else " (it defaults to the case file's name; set a shorter one)"
    pattern = longest_output_file_name("<name>")
    raise ctx.error(
        f"[output] name is {length} characters long, at most {MAX_OUTPUT_NAME_LENGTH} allowed{where}: "
        f"file names made from it, up to '{pattern}', must fit in the {NAME_MAX}-byte "
        f"limit of file names (got {_show(out_name)})"
    )


def _compression(ctx: _Ctx, section: str, table: Mapping[str, Any]) -> str:
    """[output] or [checkpoint] compression; lz4 and zstd need hdf5plugin, checked now."""
    from lobatto.io.compression import COMPRESSIONS, check_available

    choice = _choice(ctx, section, table, "compression", COMPRESSIONS, "none")
    check_available(choice, f"{ctx.source}: [{section}] compression")
    return choice


def _sanitize_name(stem: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", stem)
    name = name.lstrip("._-+") or "case"
    return name


# ============================================================================ parsing
def _physics_values(ctx: _Ctx, spec: PhysicsSpec, table: Mapping[str, Any]) -> dict:
    """The system's own [physics] keys, checked by kind, defaults filled in."""
    from lobatto.config.system_tables import key_value

    return {key.name: key_value(ctx, "physics", table, key) for key in spec.keys}


def _integrator(ctx: _Ctx, spec: PhysicsSpec, time: Mapping[str, Any]) -> str:
    """[time] integrator: one of the system's integrators (PhysicsSpec.integrators)."""
    value = time.get("integrator", spec.default_integrator) if isinstance(time, Mapping) else None
    if isinstance(value, str) and value in INTEGRATORS and value not in spec.integrators:
        allowed = ", ".join(f'"{name}"' for name in spec.integrators)
        raise ctx.error(f'[time] integrator "{value}" is not available for {spec.name}: it takes {allowed}')
    return _choice(ctx, "time", time, "integrator", spec.integrators, spec.default_integrator)


def _variable_dt(ctx: _Ctx, time: Mapping[str, Any], integrator: str) -> dict:
    """[time] target_cfl (variable dt: not with dt or cfl), initial_dt (only with target_cfl)
    and max_cfl (default DEFAULT_MAX_CFL for the multistep schemes, else unchecked)."""
    target = _positive(ctx, "time", time, "target_cfl", None)
    initial = _positive(ctx, "time", time, "initial_dt", None)
    default_max = DEFAULT_MAX_CFL if integrator in MULTISTEP_INTEGRATORS else None
    max_cfl = _positive(ctx, "time", time, "max_cfl", default_max)
    if target is not None:
        for fixed in ("dt", "cfl"):
            if fixed in time:
                raise ctx.error(f"[time] {fixed} and target_cfl are both set: target_cfl varies dt (the first step "
                                f"from initial_dt, or from the initial state), {fixed} fixes it; remove one")
        if max_cfl is not None and target > max_cfl:
            raise ctx.error(f"[time] target_cfl = {_show(target)} is above max_cfl = {_show(max_cfl)}, where a step "
                            "stops the run: lower target_cfl (or raise max_cfl)")
    elif initial is not None:
        raise ctx.error("[time] initial_dt is the first step of a variable-dt run and needs target_cfl; for a fixed "
                        "step use dt")
    return {"target_cfl": target, "initial_dt": initial, "max_cfl": max_cfl}


def _file_mesh(ctx: _Ctx, spec: PhysicsSpec, mesh: dict, gen: str) -> MeshSection:
    """[mesh] of a mesh file: file (relative to the case file's directory), boundary (the kind of
    every group not named in [mesh.boundaries]), [mesh.boundaries] by the file's group names
    (checked against the file when it is read), deform."""
    for key in ("elements", "lower", "upper", "periodic"):
        if key in mesh:
            raise ctx.error(f"[mesh] {key} is a key of generator = \"box\"; a {gen} mesh takes its elements, "
                            "extent and periodic faces from its file: remove it")
    if "file" not in mesh:
        raise ctx.error(f"[mesh] file is required with generator = \"{gen}\" (the mesh file, relative to the "
                        "case file's directory)")
    given = mesh["file"]
    if not isinstance(given, str) or not given:
        raise ctx.bad("mesh", "file", "a file name (a string)", given)
    path = Path(given).expanduser()
    if not path.is_absolute() and not (ctx.source.startswith("<") and ctx.source.endswith(">")):
        path = Path(ctx.source).parent / path
    path = Path(os.path.abspath(path))
    if not path.is_file():
        where = "" if Path(given).is_absolute() else " (relative to the case file's directory)"
        raise ctx.error(f"[mesh] file = {_show(given)}: no such file {path}{where}")
    boundary = _choice(ctx, "mesh", mesh, "boundary", spec.boundary_kinds, spec.default_boundary)
    groups = mesh.get("boundaries") or {}
    if not isinstance(groups, Mapping):
        raise ctx.error(f"[mesh.boundaries] must be a table of surface group names, got {_show(groups)}")
    boundaries = {}
    for name in groups:
        if groups[name] == "periodic":
            raise ctx.bad("mesh.boundaries", name, "a boundary kind; periodic faces come from the mesh file",
                          groups[name])
        boundaries[name] = _choice(ctx, "mesh.boundaries", groups, name, spec.boundary_kinds, None)
    deform_table = _table(ctx, mesh, "mesh", "deform")
    deform = _expressions(ctx, "mesh.deform", deform_table, AXES, AXES)
    return MeshSection(generator=gen, elements=None, lower=None, upper=None, periodic=(False, False, False),
                       boundary=boundary, boundaries=boundaries, deform=deform, file=str(path))


def _box_mesh(ctx: _Ctx, spec: PhysicsSpec, mesh: dict) -> MeshSection:
    """[mesh] of generator = \"box\"."""
    if "file" in mesh:
        raise ctx.error(f"[mesh] file is read by the file generators ({', '.join(MESH_GENERATORS[1:])}); "
                        "generator = \"box\" makes its own mesh: remove file or set generator")
    elements = _vector(
        ctx, "mesh", mesh, "elements", _REQUIRED, "posint",
        required_hint=" (for example elements = [4, 4, 4])",
    )
    if math.prod(elements) > MAX_ELEMENTS:
        raise ctx.bad("mesh", "elements", f"at most {MAX_ELEMENTS:.0e} elements in all", list(elements))
    lower = _vector(ctx, "mesh", mesh, "lower", [0.0, 0.0, 0.0], "float")
    upper = _vector(ctx, "mesh", mesh, "upper", [1.0, 1.0, 1.0], "float")
    for a, lo, hi in zip(AXES, lower, upper):
        if not hi > lo:
            raise ctx.error(
                f"[mesh] upper must be greater than lower on every axis, "
                f"got lower = {_show(list(lower))}, upper = {_show(list(upper))} ({a} axis)"
            )
    periodic = _vector(ctx, "mesh", mesh, "periodic", [False, False, False], "bool")
    boundary = _choice(ctx, "mesh", mesh, "boundary", spec.boundary_kinds, spec.default_boundary)
    overrides = _table(ctx, mesh, "mesh", "boundaries") or {}
    boundaries = {}
    for i, side in enumerate(SIDES):
        axis = i // 2
        if side in overrides:
            if periodic[axis]:
                raise ctx.error(
                    f"[mesh.boundaries] {side} is set but the {AXES[axis]} axis is periodic "
                    f"(mesh.periodic = {_show(list(periodic))}); remove it or make the axis non-periodic"
                )
            boundaries[side] = _choice(ctx, "mesh.boundaries", overrides, side, spec.boundary_kinds, None)
        else:
            boundaries[side] = "periodic" if periodic[axis] else boundary
    deform_table = _table(ctx, mesh, "mesh", "deform")
    deform = _expressions(ctx, "mesh.deform", deform_table, AXES, AXES)
    return MeshSection(
        generator="box",
        elements=elements,
        lower=lower,
        upper=upper,
        periodic=periodic,
        boundary=boundary,
        boundaries=boundaries,
        deform=deform,
    )


def parse_case(data: Mapping[str, Any], source: str = "<case>", name: str | None = None, *,
               systems: Mapping[str, PhysicsSpec]) -> Case:
    """Check a parsed TOML document and return a :class:`Case`.

    ``source`` prefixes every error message (normally the file name); ``name``
    defaults to the stem of ``source`` (or ``"case"`` when source is not a
    file name). ``systems`` maps equations names to specs, the first being the default
    (lobatto.systems.registry.physics_specs() gives the built-in ones).
    """
    ctx = _Ctx(source)
    if not isinstance(data, Mapping):
        raise ctx.error(f"a case must be a TOML table, got {_show(data)}")
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
        raise ctx.error(f"[physics] must be a table (a [physics] section), got {_show(phys)}")
    equations = _choice(ctx, "physics", phys, "equations", tuple(systems), next(iter(systems)))
    spec = systems[equations]
    ctx.keys = schema_keys(spec)
    phys = _table(ctx, data, "", "physics") or {}
    phys_sec = PhysicsSection(equations=equations, values=_physics_values(ctx, spec, phys))
    spec = spec.for_case(phys_sec.values, ctx.error)  # fields and tables named in [physics]
    ctx.keys = schema_keys(spec)
    _check_keys(ctx, "", data)  # the system may add tables of its own
    field_names = tuple(spec.fields)

    # ---- [mesh]
    mesh = _table(ctx, data, "", "mesh", required=True)
    gen = _choice(ctx, "mesh", mesh, "generator", MESH_GENERATORS, "box")
    mesh_sec = _box_mesh(ctx, spec, mesh) if gen == "box" else _file_mesh(ctx, spec, mesh, gen)
    from lobatto.config.system_tables import parse_system_tables

    tables = parse_system_tables(ctx, data, spec, mesh)  # [solver], [boundary.<name>]; no [time] if steady

    # ---- [discretization]
    disc = _table(ctx, data, "", "discretization") or {}
    disc_sec = DiscretizationSection(
        order=_int(ctx, "discretization", disc, "order", 7, 1, MAX_ORDER),
        flux=_choice(ctx, "discretization", disc, "flux", spec.fluxes, spec.fluxes[0]),
        volume_form=_choice(ctx, "discretization", disc, "volume_form", VOLUME_FORMS, VOLUME_FORMS[0]),
    )

    # ---- [initial], [exact]
    variables = ("x", "y", "z", "t")
    init_table = _table(ctx, data, "", "initial")
    init = _expressions(ctx, "initial", init_table, field_names, variables)
    zero = None

    def full(given: dict) -> dict:
        nonlocal zero
        if zero is None:
            zero = compile_expression("0", variables, where="zero")
        return {n: given.get(n, zero) for n in field_names}

    initial_sec = FieldsSection(fields=full(init), given=tuple(init))
    exact_table = _table(ctx, data, "", "exact")
    if exact_table is None:
        exact_sec = FieldsSection(fields=None, given=())
    else:
        ex = _expressions(ctx, "exact", exact_table, field_names, variables)
        exact_sec = FieldsSection(fields=full(ex), given=tuple(ex))

    # ---- [time]
    time = {} if spec.steady else _table(ctx, data, "", "time", required=True)
    integrator = _integrator(ctx, spec, time)
    time_sec = None if spec.steady else TimeSection(
        integrator=integrator,
        t_end=_positive(ctx, "time", time, "t_end", _REQUIRED, " (the final time, for example t_end = 1.0)"),
        cfl=_positive(ctx, "time", time, "cfl", spec.default_cfl(disc_sec.flux, integrator, DEFAULT_CFL[integrator])),
        dt=_positive(ctx, "time", time, "dt", None),
        cfl_check=_bool(ctx, "time", time, "cfl_check", True),
        **_variable_dt(ctx, time, integrator),
    )

    # ---- [output]
    out = _table(ctx, data, "", "output") or {}
    every = _int(ctx, "output", out, "every", 0, 0)
    formats = _get(out, "formats", ["hdf5"], ctx, "output")
    opts = ", ".join(f'"{c}"' for c in OUTPUT_FORMATS)
    if isinstance(formats, str):
        raise ctx.bad("output", "formats", f"a list of formats from {opts}", formats,
                      f'write formats = ["{formats}"]')
    if not isinstance(formats, (list, tuple)):
        raise ctx.bad("output", "formats", f"a list of formats from {opts}", formats)
    seen = []
    for f in formats:
        if not isinstance(f, str) or f not in OUTPUT_FORMATS:
            hint = ""
            if isinstance(f, str):
                close = difflib.get_close_matches(f.lower(), OUTPUT_FORMATS, n=1, cutoff=0.5)
                hint = f' (did you mean "{close[0]}"?)' if close else ""
            raise ctx.error(
                f"[output] formats: unknown format {_show(f)}{hint}; allowed: {opts}"
            )
        if f not in seen:
            seen.append(f)
    out_name = _get(out, "name", _sanitize_name(name), ctx, "output")
    if not isinstance(out_name, str) or not _NAME_RE.match(out_name):
        raise ctx.bad(
            "output", "name",
            "a file-name stem of letters, digits and _ . + - (starting with a letter or digit)",
            out_name,
        )
    _check_output_name_length(ctx, out_name, given="name" in out)
    from lobatto.config.dft import parse_dft
    from lobatto.config.nearfar import parse_far_field
    from lobatto.config.probes import parse_integrals, parse_probes

    out_sec = OutputSection(every=every, formats=tuple(seen), name=out_name,
                            compression=_compression(ctx, "output", out),
                            probes=parse_probes(ctx, out, spec), integrals=parse_integrals(ctx, out, spec),
                            dft=parse_dft(ctx, out, spec),
                            far_field=parse_far_field(ctx, out),
                            log_every=_int(ctx, "output", out, "log_every", 1, 0))

    # ---- [checkpoint]
    ck = _table(ctx, data, "", "checkpoint") or {}
    ck_sec = CheckpointSection(
        every=_int(ctx, "checkpoint", ck, "every", 0, 0),
        wall_minutes=_positive(ctx, "checkpoint", ck, "wall_minutes", None),
        keep=_int(ctx, "checkpoint", ck, "keep", 2, 1),
        compression=_compression(ctx, "checkpoint", ck),
        at_end=_bool(ctx, "checkpoint", ck, "at_end", True),
    )

    # ---- [backend]
    be = _table(ctx, data, "", "backend") or {}
    be_sec = BackendSection(
        name=_choice(ctx, "backend", be, "name", BACKENDS, "cpu"),
        precision=_choice(ctx, "backend", be, "precision", PRECISIONS, "float64"),
    )

    # ---- [parallel]
    par = _table(ctx, data, "", "parallel") or {}
    par_sec = ParallelSection(
        exchange=_choice(ctx, "parallel", par, "exchange", EXCHANGES, "auto"),
        method=_choice(ctx, "parallel", par, "method", METHODS, "auto"),
        partitioner=_choice(ctx, "parallel", par, "partitioner", PARTITIONERS, "rcb"),
        overlap=_bool_or_auto(ctx, "parallel", par, "overlap", "auto"),
    )

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
        backend=be_sec,
        parallel=par_sec,
        _raw=dict(data),
        checkpoint=ck_sec,
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


def load_case(path, *, systems: Mapping[str, PhysicsSpec]) -> Case:
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
    return parse_case(data, source=shown, name=p.stem or "case", systems=systems)
