#!/usr/bin/env python3
"""Case-file fuzzer for ``lobatto run``.

Takes the example cases (``examples/*.toml``), shrinks them so that a valid case runs in
well under a second (a few elements, order <= 4, a tiny ``t_end``), applies one to three
random mutations and runs every mutated case as

    python -m lobatto run case.toml -o out --quiet

in its own temporary directory, with a timeout. Whatever the input, lobatto must answer in
one of the documented ways (docs/case-file.md, "Errors and exit codes"):

* the exit status is 0, 1 or 2 (never a signal, never 130, never a timeout for a small case);
* status 0: ``out/summary.json`` exists and is strict JSON, and no warning (a NumPy
  ``RuntimeWarning``, say) leaked to standard error;
* status 1 or 2: standard error is exactly one non-empty line, starting with
  ``lobatto: error:`` (a NumPy ``RuntimeWarning`` or a Python traceback is a finding);
* no temporary file (``*.tmp*``) is left in the output directory.

Each run has an address-space limit (``MEMORY_LIMIT``, 4 GiB) so that a huge mesh cannot take
the machine down; a timeout counts only for a small case (see ``SMALL_POINTS``).

Everything is seeded: case ``i`` of seed ``s`` is generated from ``random.Random(f"{s}:{i}")``
alone, so it is the same for any ``--count`` and can be regenerated with ``--case i``.

Command line (see tests/fuzz/README.md):

    python tests/fuzz/fuzz_cases.py --seed 1 --count 500 --timeout 20 --keep /tmp/fuzz
    python tests/fuzz/fuzz_cases.py --seed 1 --case 17 --print     # show one case
    python tests/fuzz/fuzz_cases.py --seed 1 --count 200 --minimize  # shrink one case per finding

The exit status is 1 when there is a finding (not listed in ``KNOWN``), else 0.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import dataclasses
import datetime
import importlib.util
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__test__ = False  # a library, not a test module

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

#: Findings that are known and accepted: a finding whose category contains one of these
#: strings is reported but does not fail the round. Keep it empty: fix the bug instead.
KNOWN: list[str] = []

#: A timeout is a finding only for a "small" case: at most this many GLL points
#: (elements * (order+1)**3) and an estimated run time (see estimate_seconds, a pessimistic
#: guess) of at most half the timeout. A bigger or longer case may legitimately be killed
#: by the timeout (lobatto may also refuse it up front). A case that lobatto must reject
#: (not TOML, a value of the wrong type or range) is always small.
SMALL_POINTS = 200_000

# What the fuzzer knows about the case-file format (docs/case-file.md), written out here
# rather than read from lobatto, so that the fuzzer checks lobatto from the outside.
SYSTEMS = {
    "maxwell": {
        "fields": ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz"),
        "boundaries": ("pec", "pmc", "absorbing"),
        "keys": {"epsilon": 1.0, "mu": 1.0},
    },
    "acoustics": {
        "fields": ("p", "ux", "uy", "uz"),
        "boundaries": ("wall", "absorbing"),
        "keys": {"density": 1.0, "sound_speed": 1.0},
    },
    "navier_stokes": {
        "fields": ("ux", "uy", "uz", "p"),
        "boundaries": ("wall", "velocity", "outflow", "symmetry", "traction", "outflow_normal"),
        "keys": {"viscosity": 0.01, "flow_rate": 1.0},
    },
    "poisson": {
        "fields": ("u",),
        "boundaries": ("dirichlet", "neumann"),
        "keys": {"k": 1.0, "h": 0.0, "f": 1.0},
    },
}
SIDES = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")
CHOICES = {
    ("mesh", "generator"): ("box",),
    ("discretization", "flux"): ("upwind", "central"),
    ("discretization", "volume_form"): ("auto", "split", "chain", "galerkin"),
    ("time", "integrator"): ("lsrk45", "rk4", "ssprk3"),
    ("backend", "name"): ("cpu", "cuda", "auto"),
    ("backend", "precision"): ("float64", "float32"),
    ("parallel", "exchange"): ("auto", "nccl", "cuda-aware-mpi", "host"),
    ("parallel", "method"): ("auto", "pairwise", "crystal_router", "allreduce"),
    ("parallel", "partitioner"): ("rcb", "metis", "rsb"),
    ("parallel", "overlap"): (True, False, "auto"),
}
ALL_KEYS = {
    "mesh": ("generator", "elements", "lower", "upper", "periodic", "boundary", "boundaries", "deform", "extrude"),
    "discretization": ("order", "flux", "volume_form"),
    "physics": ("equations", "epsilon", "mu", "density", "sound_speed"),
    "time": ("integrator", "t_end", "cfl", "dt"),
    "output": ("every", "formats", "name"),
    "backend": ("name", "precision"),
    "parallel": ("exchange", "method", "partitioner", "overlap"),
}
FORMATS = ("hdf5", "nek", "vtk")

HUGE_INTS = (2**31, 2**53 + 1, 2**63 - 1, -(2**63), 2**64, 10**30)
EXTREMES = (0, -1, 0.0, -0.0, 1e300, -1e300, 1e-300, -1e-300, 5e-324, 1.7976931348623157e308,
            math.nan, math.inf, -math.inf) + HUGE_INTS

#: Expressions lobatto must reject (syntax errors, unknown names, forbidden constructs).
NASTY_EXPRESSIONS = (
    # syntax errors
    "sin(pi*x", "sin(pi*x))", "x +* y", "x y", "3x", "x^2", "x**", "", " ", "()", "(,)",
    "sin pi x", "x = 1", "x; y", "lambda: 1", "x if y else z", "x in y", "x is y", "not x",
    "where(x < 1, 1)", "where(x)", "min(x)", "max(x, y, z)", "x < ", "x <> y", "x === y",
    "x // 2", "x % 2", "x @ y", "x | y", "~x", "[x, y]", "(x, y)", "{x}", "{'a': x}",
    "'abc'", "b'x'", "f'{x}'", "x[0]", "x.real", "sin.__class__", "__import__('os')",
    "open('/etc/passwd')", "sin(x, y)", "sin()", "arctan2(x)", "arctan2(x, y, z)",
    "sin(*x)", "sin(x=1)", "True", "None", "...", "1j", "x\\\ny", "yield x", "await x",
    "# comment", "x # comment", "\\x00", "x\u0000", "x\t+\ty", "x\n+ y",
    # unknown names
    "sinn(x)", "foo", "X", "T", "Pi", "E", "inf", "nan", "np.sin(x)", "math.pi",
    "w", "x_1",
    # unicode (full-width letters are NFKC-normalised by Python's parser and accepted)
    "sin(\u03c0*x)", "\u03c0", "sin(pi*\uff58)", "\uff53\uff49\uff4e(x)", "x\u200b", "x\u2212y",
    "x \u00d7 y", "sin(pi*x)\u00a0", "\u202ex", "\U0001f600", "e\u0301", "\u0445",
)

#: Expressions lobatto accepts that are numerically hostile (and a few harmless ones).
NUMERIC_EXPRESSIONS = (
    "1/x", "1/(x-0.5)", "1/(x-x)", "x/0", "1/0", "0/0", "log(x)", "log(0)", "log(-x)",
    "log(x-2)", "sqrt(-1-x)", "sqrt(x-1)", "(-1)**0.5", "x**-1", "x**-1000", "(-x)**0.5",
    "exp(1000*x)", "exp(1000)", "exp(710*x+1)", "exp(-1000*x)", "cosh(800*x)", "sinh(1e5*y)",
    "tan(pi/2*x)", "tan(pi/2)", "10**400", "10**-400", "1e308*10*x", "1e308*x*x*1e10",
    "x**x**x**x", "9**9**9", "2**1024", "2**-1075", "(1e200*x)**2", "1e-300*1e-300*x",
    "1e309", "1e999*x", "-1e309", "99999999999999999999999999999999999999.0*x", "0**0",
    "0**-1", "x**0.5", "abs(x)**-0.5", "arctan2(0, 0)", "arctan2(x, 0*x)",
    "1e300*sin(pi*x)", "1e200*sin(pi*x)*sin(pi*y)", "1e-320*x",
    "sin(t)", "t", "1e300*t", "exp(1000*t)", "1/t", "log(t)",
    # piecewise: comparisons give 1 or 0, both branches of where are evaluated
    "x < y", "x and y", "0 < x < 1", "where(x < 0.5, 1/x, log(x))", "where(x > 0, sqrt(x), 1e309)",
    "min(x, 1/(x-x))", "max(1e308*x, 1e308)*10", "where(x == x, 0, 1)",
    "-(x < 0.5)", "(x < 0.5) or (y >= 0.5)", "where(t > 1, 1e300*t, 0)", "min(t/0.1, 1)",
)


def _generated_expressions(rng: random.Random) -> list[str]:
    """Expressions built at random: long, deeply nested, many terms."""
    n = rng.choice((10, 100, 300, 1000, 3000, 20000))
    return [
        "+".join(["x"] * n),
        "(" * n + "x" + ")" * n,
        "-" * n + "x",
        "sin(" * n + "x" + ")" * n,
        "x" + "**x" * min(n, 2000),
        "x*" * n + "1",
        "9" * rng.choice((300, 4300, 5000)) + "*x",
        "0." + "0" * 400 + "1*x",
        "x" * n,
        " " * n + "x",
        "1" + "e9" * 3,
        "sin(pi*x)" + " " * 20000,
    ]


def all_fields() -> tuple:
    return tuple(f for s in SYSTEMS.values() for f in s["fields"])


# ============================================================================= TOML writer
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_string(s: str) -> str:
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        elif 0xD800 <= code <= 0xDFFF:  # not encodable; write the replacement character
            out.append("\\uFFFD")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def toml_key(key: str) -> str:
    return key if _BARE.match(key) else toml_string(key)


def toml_value(v: Any) -> str:
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
        return text if any(c in text for c in ".eE") else text + ".0"
    if isinstance(v, str):
        return toml_string(v)
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def to_toml(data: dict) -> str:
    """TOML text of a nested dict: scalars first, then [tables] (any depth). Independent of
    lobatto.config.to_toml on purpose: the cases must not depend on the code under test, and
    this writer emits values that one never does (dates, nan, huge integers)."""
    lines: list[str] = []

    def table(prefix: tuple, d: dict) -> None:
        scalars = [(k, v) for k, v in d.items() if not isinstance(v, dict)]
        tables = [(k, v) for k, v in d.items() if isinstance(v, dict)]
        if prefix and (scalars or not tables):
            if lines:
                lines.append("")
            lines.append("[" + ".".join(toml_key(p) for p in prefix) + "]")
        for k, v in scalars:
            lines.append(f"{toml_key(k)} = {toml_value(v)}")
        for k, v in tables:
            table(prefix + (k,), v)

    table((), data)
    return "\n".join(lines) + "\n"


# ============================================================================ the cases
@dataclasses.dataclass
class FuzzCase:
    """One mutated case: its text (bytes, possibly not even UTF-8) and how it was made."""

    index: int
    base: str  # example file it came from
    ops: list  # descriptions of the mutations applied
    data: dict | None = dataclasses.field(repr=False)  # the document, when text is its TOML
    text: bytes = dataclasses.field(repr=False)

    @property
    def points(self) -> int | None:
        return estimate_work(self.text)[0]

    @property
    def seconds(self) -> float:
        return estimate_work(self.text)[1]

    def small(self, timeout: float) -> bool:
        points, seconds = estimate_work(self.text)
        return (points or 0) <= SMALL_POINTS and seconds <= timeout / 2


def load_examples(directory: Path = EXAMPLES) -> dict:
    """{file name: parsed document} of the example cases."""
    out = {}
    for path in sorted(directory.glob("*.toml")):
        with open(path, "rb") as fh:
            out[path.name] = tomllib.load(fh)
    if not out:
        raise SystemExit(f"no example cases in {directory}")
    return out


def shrink(rng: random.Random, data: dict) -> dict:
    """Make a valid case small and short: a few elements, order <= 4, a tiny t_end."""
    data = copy.deepcopy(data)
    mesh = data.setdefault("mesh", {})
    mesh["elements"] = [rng.choice((1, 2, 2, 2, 3)) for _ in range(3)]
    data.setdefault("discretization", {})["order"] = rng.randint(1, 4)
    data.setdefault("time", {})["t_end"] = rng.choice((0.01, 0.02, 0.05))
    shorten_decay(data["time"])
    shrink_flow(rng, data)
    output = data.setdefault("output", {})
    output["every"] = rng.choice((0, 0, 1, 2))
    output["formats"] = rng.choice((["hdf5"], ["nek"], ["vtk"], ["hdf5", "nek", "vtk"], []))
    return data


def shorten_decay(time: dict) -> None:
    """An example's [time] decay_interval (drude_slab) to a quarter of the shortened t_end (it
    may be at most half of it), so that the case still runs."""
    if "decay_interval" in time:
        time["decay_interval"] = time["t_end"] / 4


def shrink_flow(rng: random.Random, data: dict) -> None:
    """A steady system has no [time]; a Navier-Stokes run takes 2 to 5 steps."""
    equations = (data.get("physics") or {}).get("equations")
    if equations == "poisson":
        del data["time"]
    elif equations == "navier_stokes":
        data["time"].pop("target_cfl", None)
        data["time"]["dt"] = data["time"]["t_end"] / rng.choice((2, 4, 5))


def equations_of(data: dict) -> str:
    phys = data.get("physics")
    eq = phys.get("equations", "maxwell") if isinstance(phys, dict) else "maxwell"
    return eq if isinstance(eq, str) and eq in SYSTEMS else "maxwell"


def other_system(name: str) -> str:
    return "acoustics" if name == "maxwell" else "maxwell"


class _Invalid(Exception):
    """The case breaks a documented rule, so lobatto must reject it (quickly)."""


def _number(table: Any, key: str, default: Any, positive=True) -> float:
    value = table.get(key, default) if isinstance(table, dict) else default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Invalid
    value = float(value)
    if not math.isfinite(value) or (positive and value <= 0):
        raise _Invalid
    return value


def _work(data: Any) -> tuple:
    """(GLL points, estimated seconds) of a valid case; raises _Invalid for an invalid one."""
    if not isinstance(data, dict):
        raise _Invalid
    mesh = data.get("mesh")
    if not isinstance(mesh, dict):
        raise _Invalid
    elements = mesh.get("elements")
    if not (isinstance(elements, list) and len(elements) in (2, 3)  # two: a 2-D mesh
            and all(isinstance(e, int) and not isinstance(e, bool) and e >= 1 for e in elements)):
        raise _Invalid
    dim = len(elements)
    disc = data.get("discretization", {})
    order = disc.get("order", 7) if isinstance(disc, dict) else None
    if isinstance(order, bool) or not isinstance(order, int) or not 1 <= order <= 24:
        raise _Invalid
    points = math.prod(elements) * (order + 1) ** dim
    phys = data.get("physics", {})
    equations = phys.get("equations", "maxwell") if isinstance(phys, dict) else None
    if equations == "maxwell":
        speed = 1.0 / math.sqrt(_number(phys, "epsilon", 1.0) * _number(phys, "mu", 1.0) or 1e-320)
    elif equations == "acoustics":
        speed = _number(phys, "sound_speed", 1.0)
    elif equations in ("navier_stokes", "poisson"):
        return _flow_work(data, equations, points)
    else:
        raise _Invalid
    time = data.get("time")
    if not isinstance(time, dict):
        raise _Invalid
    t_end = _number(time, "t_end", None)
    lower, upper = mesh.get("lower", [0] * dim), mesh.get("upper", [1] * dim)
    if not (isinstance(lower, list) and isinstance(upper, list) and len(lower) == len(upper) == dim):
        raise _Invalid
    widths = []
    for lo, hi, n in zip(lower, upper, elements):
        lo = _number({"v": lo}, "v", None, positive=False)
        hi = _number({"v": hi}, "v", None, positive=False)
        if not hi > lo:
            raise _Invalid
        widths.append((hi - lo) / n)
    # smallest GLL spacing, pessimistically (a Chebyshev-like estimate; deformation may squeeze)
    spacing = min(widths) * (1 - math.cos(math.pi / order)) / 2
    if isinstance(mesh.get("deform"), dict):
        spacing /= 4
    if "dt" in time:
        dt = _number(time, "dt", None)
    else:
        dt = _number(time, "cfl", 0.5) * spacing / speed
    steps = 4 * t_end / dt if dt > 0 else math.inf  # 4: safety factor
    if not steps < 1e15:
        return points, math.inf
    # measured on a slow 2-core machine: ~0.03 s per step plus ~15 us per point and step
    return points, 3.0 + math.ceil(steps) * (0.03 + 1.5e-5 * points)


def _flow_work(data: dict, equations: str, points: int) -> tuple:
    """(points, estimated seconds) of a Navier-Stokes or Poisson case: a solve per step (one
    for Poisson), each up to max_iterations iterations of ~3 us per point (slow 2-core machine)."""
    def table(*path):
        t = data
        for k in path:
            t = t.get(k) if isinstance(t, dict) else None
        return t if isinstance(t, dict) else {}

    def iterations(t, default):
        v = t.get("max_iterations", default)
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else default

    if equations == "poisson":
        return points, 5.0 + iterations(table("solver"), 1000) * 3e-6 * points
    time = data.get("time")
    if not isinstance(time, dict) or "dt" not in time:
        return points, math.inf  # dt from the flow's CFL number: not estimated
    steps = 4 * _number(time, "t_end", None) / _number(time, "dt", None)
    if not steps < 1e15:
        return points, math.inf
    per_step = (iterations(table("solver", "pressure"), 200) + 3 * iterations(table("solver", "velocity"), 200)) \
        * 3e-6 * points
    substeps = time.get("substeps", 0)
    if isinstance(substeps, int) and not isinstance(substeps, bool) and 0 < substeps <= 100:
        # 4 k convective evaluations per sub-step (k <= 3), each ~3 fine-grid passes of the 3 fields
        per_step += 12 * substeps * 3e-6 * points * 3.4
    return points, 5.0 + math.ceil(steps) * (0.05 + per_step)


_WORK_CACHE: dict = {}


def estimate_work(text: bytes) -> tuple:
    """(GLL points or None, estimated seconds) of a case text; (None, 0.0) when lobatto must
    reject it (so it must also finish quickly), (points, inf) when the run would not end."""
    if text not in _WORK_CACHE:
        try:
            data = tomllib.loads(text.decode("utf-8"))
            result = _work(data)
        except (_Invalid, ValueError, UnicodeDecodeError, RecursionError, OverflowError, ZeroDivisionError):
            result = (None, 0.0)
        if len(_WORK_CACHE) > 10_000:
            _WORK_CACHE.clear()
        _WORK_CACHE[text] = result
    return _WORK_CACHE[text]


# ------------------------------------------------------------------------ dict helpers
def paths(data: Any, prefix: tuple = (), leaves=True, tables=False, items=False) -> list:
    """Paths (tuples of keys and list indices) into a document."""
    out = []
    if isinstance(data, dict):
        for k, v in data.items():
            p = prefix + (k,)
            if isinstance(v, dict):
                if tables:
                    out.append(p)
                out.extend(paths(v, p, leaves, tables, items))
            else:
                if leaves:
                    out.append(p)
                if items and isinstance(v, list):
                    out.extend(p + (i,) for i in range(len(v)))
    return out


def get_at(data: Any, path: tuple) -> Any:
    for k in path:
        data = data[k]
    return data


def set_at(data: dict, path: tuple, value: Any) -> None:
    for k in path[:-1]:
        if isinstance(data, dict):
            nxt = data.get(k)
            if not isinstance(nxt, (dict, list)):
                nxt = data[k] = {}
            data = nxt
        else:
            data = data[k]
    data[path[-1]] = value


def delete_at(data: dict, path: tuple) -> None:
    parent = get_at(data, path[:-1])
    del parent[path[-1]]


def dotted(path: tuple) -> str:
    return ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in path).replace(".[", "[")


def show(v: Any) -> str:
    try:
        text = toml_value(v)
    except TypeError:
        text = repr(v)
    return text if len(text) <= 50 else text[:47] + f"...({len(text)} chars)"


# ========================================================================= the mutations
# A mutation takes (rng, data) and changes data in place; it returns a one-line description.
# It may raise _Skip when it does not apply to this document.
class _Skip(Exception):
    pass


def _random_value_of_other_type(rng: random.Random, old: Any) -> Any:
    makers = {
        "str": lambda: rng.choice(("abc", "", "1.0", "true", "2", "[2, 2, 2]", "maxwell", "\u00e9\u03c0")),
        "int": lambda: rng.choice((0, 1, 2, 7, -3)),
        "float": lambda: rng.choice((0.5, -2.5, 1.0, 3.0)),
        "bool": lambda: rng.choice((True, False)),
        "list": lambda: rng.choice(([], [1, 2, 3], ["a"], [[1]], [1.0, "x"], [True, True, True],
                                     [2, 2, 2], [{"a": 1}])),
        "table": lambda: rng.choice(({}, {"a": 1}, {"x": "1"})),
        "datetime": lambda: rng.choice((
            datetime.datetime(1979, 5, 27, 7, 32, tzinfo=datetime.timezone.utc),
            datetime.datetime(1979, 5, 27, 7, 32), datetime.date(1979, 5, 27), datetime.time(7, 32))),
    }
    kind = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "table"}.get(type(old))
    choices = [k for k in makers if k != kind]
    return makers[rng.choice(choices)]()


def op_delete_key(rng, data):
    cands = paths(data, items=True)
    if not cands:
        raise _Skip
    p = rng.choice(cands)
    delete_at(data, p)
    return f"delete {dotted(p)}"


def op_delete_section(rng, data):
    cands = paths(data, leaves=False, tables=True)
    if not cands:
        raise _Skip
    p = rng.choice(cands)
    delete_at(data, p)
    return f"delete [{dotted(p)}]"


def op_retype(rng, data):
    cands = paths(data, tables=True, items=True)
    if not cands:
        raise _Skip
    p = rng.choice(cands)
    value = _random_value_of_other_type(rng, get_at(data, p))
    set_at(data, p, value)
    return f"retype {dotted(p)} = {show(value)}"


def op_extreme(rng, data):
    leaves = paths(data, items=True)
    numeric = [p for p in leaves
               if isinstance(get_at(data, p), (int, float)) and not isinstance(get_at(data, p), bool)]
    cands = numeric if numeric and rng.random() < 0.8 else leaves
    if not cands:
        raise _Skip
    p = rng.choice(cands)
    value = rng.choice(EXTREMES)
    if rng.random() < 0.2 and isinstance(get_at(data, p), list):
        value = [value] * 3
    set_at(data, p, value)
    return f"extreme {dotted(p)} = {show(value)}"


def op_cross_system(rng, data):
    eq = equations_of(data)
    other = other_system(eq)
    mine, theirs = SYSTEMS[eq], SYSTEMS[other]
    kind = rng.randrange(6)
    if kind == 0:  # the other system's [physics] key
        key = rng.choice(list(theirs["keys"]))
        value = rng.choice((1.0, 2.0, 0.5))
        set_at(data, ("physics", key), value)
        return f"cross: physics.{key} = {value} in a {eq} case"
    if kind == 1:  # switch the system, keep everything else
        set_at(data, ("physics", "equations"), other)
        return f"cross: equations = {other!r} in a {eq} case"
    if kind == 2:  # the other system's field
        section = rng.choice(("initial", "exact"))
        name = rng.choice(theirs["fields"])
        set_at(data, (section, name), rng.choice(("sin(pi*x)", "0", "1")))
        return f"cross: {section}.{name} in a {eq} case"
    if kind == 3:  # the other system's boundary kind
        kinds = [b for b in theirs["boundaries"] if b not in mine["boundaries"]]
        b = rng.choice(kinds)
        if rng.random() < 0.5:
            set_at(data, ("mesh", "boundary"), b)
            return f"cross: mesh.boundary = {b!r} in a {eq} case"
        side = rng.choice(SIDES)
        set_at(data, ("mesh", "boundaries", side), b)
        return f"cross: mesh.boundaries.{side} = {b!r} in a {eq} case"
    if kind == 4:  # an unknown or misspelt system
        name = rng.choice(("euler", "Maxwell", "ACOUSTICS", "acoustic", "", " maxwell", "maxwell\u200b"))
        set_at(data, ("physics", "equations"), name)
        return f"cross: equations = {name!r}"
    # switch the system and bring the whole other example's physics along
    phys = {"equations": other, **theirs["keys"]}
    data["physics"] = phys
    section = rng.choice(("initial", "exact"))
    data[section] = {f: "sin(pi*x)*sin(pi*y)" for f in theirs["fields"][:2]}
    return f"cross: physics -> {other} with [{section}] of {other}"


def _expression_slot(rng, data) -> tuple:
    eq = equations_of(data)
    if rng.random() < 0.65:
        section = rng.choice(("initial", "initial", "exact"))
        return (section, rng.choice(SYSTEMS[eq]["fields"]))
    return ("mesh", "deform", rng.choice(("x", "y", "z")))  # variables x, y, z only


def op_expression(rng, data):
    slot = _expression_slot(rng, data)
    r = rng.random()
    pool = NASTY_EXPRESSIONS if r < 0.35 else NUMERIC_EXPRESSIONS if r < 0.8 else _generated_expressions(rng)
    text = rng.choice(pool)
    if slot[:2] == ("mesh", "deform") and rng.random() < 0.3:
        text = rng.choice(("t", "sin(pi*t)", "x*t", "0.5*x", "-x", "-2*x", "x*x*10", "1e300*x",
                           "0.6*sin(pi*x)", "-0.999*(x)", "1e-300*y"))
    if rng.random() < 0.15:  # a number where an expression string is expected
        value = rng.choice((1e300, 1e200, -1e300, 5e-324, math.nan, math.inf, 2**63 - 1, 0, True))
        set_at(data, slot, value)
        return f"expression {dotted(slot)} = {show(value)}"
    set_at(data, slot, text)
    return f"expression {dotted(slot)} = {show(text)}"


def op_mesh_size(rng, data):
    kind = rng.randrange(3)
    if kind == 0:
        value = rng.choice((
            [0, 2, 2], [2, 0, 2], [-1, 2, 2], [2, 2, -1], [1, 1, 1], [1000, 1000, 1000],
            [100, 100, 100], [10**6, 10**6, 10**6], [2**31, 1, 1], [2**62, 2**62, 2**62],
            [2**63 - 1, 2**63 - 1, 2**63 - 1], [10**6, 1, 1], [3000, 3000, 1], [2.0, 2, 2],
            ["2", 2, 2], [2, 2], [2, 2, 2, 2], [], [True, 2, 2], [2.5, 2, 2], [1e300, 1, 1],
            [65536, 65536, 1], [46341, 46341, 1],
        ))
        set_at(data, ("mesh", "elements"), value)
        return f"mesh: elements = {show(value)}"
    if kind == 1:
        value = rng.choice((0, -1, 1, 24, 25, 100, 10**9, 2**63 - 1, 7, 12))
        set_at(data, ("discretization", "order"), value)
        return f"mesh: order = {show(value)}"
    elements = rng.choice(([30, 30, 30], [64, 64, 64], [8, 8, 8], [200, 1, 1], [2, 2, 2]))
    order = rng.choice((12, 16, 24))
    set_at(data, ("mesh", "elements"), elements)
    set_at(data, ("discretization", "order"), order)
    return f"mesh: elements = {show(elements)}, order = {order}"


def op_box(rng, data):
    mesh = data.get("mesh")
    if not isinstance(mesh, dict):
        raise _Skip
    kind = rng.randrange(6)
    if kind == 0:
        lower, upper = rng.choice((
            ([1, 1, 1], [0, 0, 0]), ([0, 0, 0], [0, 0, 0]), ([0, 0, 0], [1e-300, 1e-300, 1e-300]),
            ([0, 0, 0], [1e300, 1e300, 1e300]), ([-1e300, -1e300, -1e300], [1e300, 1e300, 1e300]),
            ([0, 0, 0], [1, 1, 1e-12]), ([0, 0, 0], [1e10, 1, 1]), ([1e16, 0, 0], [1e16 + 2, 1, 1]),
            ([0, 0, 0], [5e-324, 1, 1]), ([-1.7976931348623157e308, 0, 0], [1.7976931348623157e308, 1, 1]),
        ))
        mesh["lower"], mesh["upper"] = lower, upper
        return f"box: lower = {show(lower)}, upper = {show(upper)}"
    if kind == 1:
        periodic = [rng.random() < 0.5 for _ in range(3)]
        mesh["periodic"] = periodic
        side = rng.choice(SIDES)
        mesh.setdefault("boundaries", {})[side] = rng.choice(SYSTEMS[equations_of(data)]["boundaries"])
        return f"box: periodic = {show(periodic)} with boundaries.{side}"
    if kind == 2:
        periodic = rng.choice(([True, True, True], [True, False, False], [False, False, True]))
        mesh["periodic"] = periodic
        mesh["elements"] = [1, 1, 1]
        return f"box: periodic = {show(periodic)} on a single element"
    if kind == 3:
        side = rng.choice(SIDES + ("xMin", "left", "", "x"))
        kind_name = rng.choice(SYSTEMS[equations_of(data)]["boundaries"] + ("periodic", "PEC", "none", ""))
        mesh.setdefault("boundaries", {})[side] = kind_name
        return f"box: boundaries.{side} = {kind_name!r}"
    if kind == 4:
        mesh["periodic"] = rng.choice(([1, 0, 0], ["true", "false", "false"], [True, False], True, "none"))
        return f"box: periodic = {show(mesh['periodic'])}"
    mesh["generator"] = rng.choice(("sphere", "", "BOX", "box ", 1))
    return f"box: generator = {show(mesh['generator'])}"


#: fields and keys with no meaning on a 2-D mesh (runner/dimension.py refuses them)
_Z_FIELDS = ("uz", "Ez", "Hz")


def op_plane(rng, data):
    """A 2-D mesh ([mesh] elements of two entries, docs/case-file.md "2-D"): valid (acoustics,
    Poisson, Maxwell and Navier-Stokes run), or with lengths that disagree, a z deformation
    or side, a field that has no 2-D meaning, an output not built in 2-D, DFT lines and
    rectangles (a z plane refused), a far field on a contour (a theta list refused), Maxwell
    sources whose point or box is [x, y] (a line source, a current's or a plane wave's box)."""
    mesh = data.get("mesh")
    if not isinstance(mesh, dict):
        raise _Skip
    mesh["elements"] = [rng.choice((1, 2, 3)), rng.choice((1, 2, 3))]
    for key in ("lower", "upper", "periodic"):  # the valid 2-D case first: one entry per axis
        if isinstance(mesh.get(key), list) and len(mesh[key]) == 3:
            mesh[key] = mesh[key][:2]
    if isinstance(mesh.get("deform"), dict):
        mesh["deform"].pop("z", None)
    if isinstance(mesh.get("boundaries"), dict):
        for side in ("zmin", "zmax"):
            mesh["boundaries"].pop(side, None)
    for section in ("initial", "exact"):
        if isinstance(data.get(section), dict):
            for name in _Z_FIELDS:
                data[section].pop(name, None)
    output = data.setdefault("output", {})
    if isinstance(output, dict):
        output["formats"] = []
        for table in ("probes", "dft", "far_field"):
            output.pop(table, None)
    data.pop("checkpoint", None)
    kind = rng.randrange(10)
    if kind == 0:
        return "plane: a valid 2-D mesh"
    if kind == 9 and equations_of(data) == "maxwell":  # points and boxes of 2 entries (or a mix)
        corners = rng.choice((([0.1, 0.1], [0.4, 0.4]), ([0.1, 0.1, -1.0], [0.4, 0.4, 1.0]), ([0.1, 0.1], [0.4, 0.4, 1.0]),
                              ([0.4, 0.1], [0.1, 0.4])))
        source = rng.choice((
            {"type": "electric_dipole", "position": rng.choice(([0.3, 0.2], [0.3, 0.2, 5.0], [0.3], [9.0, 9.0])),
             "direction": [0, 0, 1], "waveform": "gaussian", "t0": 0.1, "width": 0.05},
            {"type": "current", "Jz": "sin(t)", "lower": corners[0], "upper": corners[1]},
            {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 0, 1], "waveform": "gaussian",
             "t0": 0.1, "width": 0.05, "lower": corners[0], "upper": corners[1]}))
        data["source"] = {"s": source}
        return f"plane: a Maxwell source on a 2-D mesh, {source}"
    if kind == 7:  # [output.dft] lines and rectangles (monitors/planes.py: z planes refused in 2-D)
        corners = rng.choice((([0.0, 0.0], [0.5, 0.5]), ([0.0, 0.0, -1.0], [0.5, 0.5, 1.0]), ([0.0, 0.0], [0.5, 0.5, 1.0]),
                              ([0.1, 0.0], [0.5, 0.5])))
        output["dft"] = {"frequencies": [0.5], "planes": [rng.choice(("x = 0.5", "y = 0", "z = 0", "y = 0.3"))],
                         "boxes": [{"lower": corners[0], "upper": corners[1]}]}
        return f"plane: [output.dft] on a 2-D mesh, {output['dft']}"
    if kind == 8:  # the 2-D near-to-far transform (a closed contour; phi only)
        table = {"frequencies": [0.5], **rng.choice(({"lower": [0.0, 0.0, -1.0], "upper": [0.5, 0.5, 1.0]},
                                                     {"lower": [0.0, 0.0], "upper": [0.5, 0.5]}))}
        if rng.random() < 0.5:
            table["theta"] = rng.choice(([90.0], [30.0, 60.0], [5.0 * i for i in range(37)]))
        output["far_field"] = table
        return f"plane: [output.far_field] on a 2-D mesh, {table}"
    if kind == 1:
        key = rng.choice(("lower", "upper", "periodic"))
        mesh[key] = [False, False, True] if key == "periodic" else [0.0, 0.0, 1.0] if key == "upper" else [0, 0, -1]
        return f"plane: {key} of 3 entries with elements of 2"
    if kind == 2:
        mesh.setdefault("deform", {})["z"] = rng.choice(("0.1*x", "0", "sin(pi*y)"))
        return "plane: [mesh.deform] z on a 2-D box"
    if kind == 3:
        side = rng.choice(("zmin", "zmax"))
        mesh.setdefault("boundaries", {})[side] = rng.choice(SYSTEMS[equations_of(data)]["boundaries"])
        return f"plane: boundaries.{side} on a 2-D box"
    if kind == 4 and equations_of(data) == "navier_stokes" and rng.random() < 0.5:
        # the flow's z keys (start.check_planar): a boundary uz or tz, force_z, a z flow rate
        choice = rng.randrange(3)
        if choice == 0:
            side = rng.choice(("xmin", "ymax"))
            data.setdefault("boundary", {}).setdefault(side, {})[rng.choice(("uz", "tz"))] = rng.choice(("1", "0", "y"))
        elif choice == 1:
            data.setdefault("physics", {})["force_z"] = rng.choice(("1", "0", "x*y"))
        else:
            data.setdefault("physics", {}).update(flow_rate=1.0, flow_direction="z")
        return "plane: a z key of navier_stokes on a 2-D mesh"
    if kind == 4:
        name = rng.choice(_Z_FIELDS)
        data.setdefault(rng.choice(("initial", "exact")), {})[name] = rng.choice(("x*y", "0", "1e300"))
        return f"plane: a {name} expression on a 2-D mesh"
    if kind == 5:
        output["formats"] = [rng.choice(FORMATS)]
        return "plane: a snapshot format on a 2-D mesh"
    output["probes"] = {"points": [[0.5, 0.5, 0.0]]}
    return "plane: probes on a 2-D mesh"


def op_time(rng, data):
    key = rng.choice(("t_end", "cfl", "dt", "dt", "integrator", "growth_check"))
    if key == "growth_check":  # a bool: anything else is refused
        value = rng.choice((True, False, "false", 1, 0.5, []))
    elif key == "integrator":
        value = rng.choice(("euler", "RK4", "", "lsrk45 ", "rk45", "ssprk3"))
    elif key == "dt":
        value = rng.choice((1e-300, 1e-12, 1e-6, 0.005, 0.02, 10.0, 1e300, 0, -0.01, math.nan, math.inf))
    elif key == "cfl":
        value = rng.choice((1e-300, 1e-9, 0.1, 2.0, 10.0, 1e300, 0, -0.5, math.nan))
    else:
        value = rng.choice((1e-300, 5e-324, 1e-12, 1e300, 1e6, 0, -1.0, math.inf, math.nan))
    set_at(data, ("time", key), value)
    return f"time: {key} = {show(value)}"


def op_physics_value(rng, data):
    eq = equations_of(data)
    key = rng.choice(list(SYSTEMS[eq]["keys"]))
    value = rng.choice((0, -1.0, 1e-300, 1e300, 1e-10, 1e10, math.nan, math.inf, "1.0", True, 2**63 - 1))
    set_at(data, ("physics", key), value)
    return f"physics: {key} = {show(value)}"


def op_add_key(rng, data):
    """A known key the case does not set, with a value valid or not."""
    eq = equations_of(data)
    section = rng.choice(list(ALL_KEYS))
    key = rng.choice(ALL_KEYS[section])
    if (section, key) in CHOICES:
        value = rng.choice(CHOICES[(section, key)] + ("bogus",))
    elif key == "name":
        value = rng.choice(("run", "a.b-c+d", "../escape", "/abs/path", "", ".hidden", "x" * 300,
                            "caf\u00e9", "a b", "CON", "nul\u0000"))
    elif key == "formats":
        value = rng.choice((["hdf5", "hdf5"], ["nek", "hdf5"], "hdf5", ["vtk"], ["vtu"], [], [1]))
    elif key == "every":
        value = rng.choice((0, 1, 3, -1, 10**12, 2**63 - 1, 1.5))
    elif key == "boundary":
        value = rng.choice(SYSTEMS[eq]["boundaries"] + ("periodic",))
    elif key == "boundaries":
        value = {side: rng.choice(SYSTEMS[eq]["boundaries"]) for side in rng.sample(SIDES, rng.randint(1, 6))}
    elif key == "deform":
        value = {a: rng.choice(("0.05*sin(pi*x)*sin(pi*y)*sin(pi*z)", "0.1*x", "0.3*sin(2*pi*y)"))
                 for a in rng.sample(("x", "y", "z"), rng.randint(1, 3))}
    elif key == "extrude":  # mesh files only (a box refuses it); bad entries refused too
        value = rng.choice(([{"surface": "xmin", "layers": 2, "thickness": 0.25}], [{"surface": "xmin"}],
                            [{"surface": "", "layers": 0, "thickness": -1.0}], "xmin", [3]))
    elif key in ("periodic",):
        value = [rng.random() < 0.5 for _ in range(3)]
    elif key == "equations":
        value = rng.choice(tuple(SYSTEMS))
    else:
        value = rng.choice((0.5, 1.0, 2.0, 1e-3, 0.01))
    set_at(data, (section, key), value)
    return f"add {section}.{key} = {show(value)}"


def op_unknown_key(rng, data):
    where = rng.choice(("", "mesh", "discretization", "physics", "time", "output", "initial", "mesh.deform"))
    key = rng.choice(("discretisation", "t_End", "Order", "elemnts", "orders", "\u043a\u043b\u044e\u0447",
                      "", "a.b", "x" * 500, "Mesh", "TIME", "epsilon_r", "speed_of_sound", "rho", "E",
                      "periodic ", "Ez ", "order", "t_end"))
    value = rng.choice((1, "x", [1, 2, 3], {"a": 1}, True))
    path = tuple(where.split(".")) + (key,) if where else (key,)
    set_at(data, path, value)
    return f"unknown key {dotted(path)} = {show(value)}"


def op_string_value(rng, data):
    cands = paths(data, items=True)
    if not cands:
        raise _Skip
    p = rng.choice(cands)
    choice_values = [v for vs in CHOICES.values() for v in vs if isinstance(v, str)]
    value = rng.choice(("", " ", "\t", "../../x", "/tmp/x", "nan", "inf", "1e300", "None", "${HOME}",
                        "%s%n", "caf\u00e9", "\u202e", "a" * 100_000, "\u0000",
                        rng.choice(choice_values)))
    set_at(data, p, value)
    return f"string {dotted(p)} = {show(value)}"


def op_valid_variation(rng, data):
    """A random but valid setting: explores run-time paths (flux, integrator, boundaries...)."""
    eq = equations_of(data)
    changes = []
    for _ in range(rng.randint(1, 4)):
        what = rng.randrange(8)
        if what == 0:
            v = rng.choice(CHOICES[("time", "integrator")])
            set_at(data, ("time", "integrator"), v)
        elif what == 1:
            v = rng.choice(CHOICES[("discretization", "flux")])
            set_at(data, ("discretization", "flux"), v)
        elif what == 2:
            v = rng.choice(SYSTEMS[eq]["boundaries"])
            set_at(data, ("mesh", "boundary"), v)
        elif what == 3:
            v = [rng.random() < 0.5 for _ in range(3)]
            set_at(data, ("mesh", "periodic"), v)
            mesh = data.get("mesh")
            if isinstance(mesh, dict):
                mesh.pop("boundaries", None)
        elif what == 4:
            v = "float32"
            set_at(data, ("backend", "precision"), v)
        elif what == 5:
            v = rng.choice((0.05, 0.9, 1.0))
            set_at(data, ("time", "cfl"), v)
        elif what == 6:
            v = rng.choice(("rsb", "metis", "rcb"))
            set_at(data, ("parallel", "partitioner"), v)
        else:
            v = rng.choice(("auto", "cpu"))
            set_at(data, ("backend", "name"), v)
        changes.append(show(v))
    return "valid variation " + ", ".join(changes)


def op_float32(rng, data):
    """Single precision with values at or beyond its range (overflow, underflow, denormals)."""
    eq = equations_of(data)
    set_at(data, ("backend", "precision"), "float32")
    kind = rng.randrange(3)
    if kind == 0:
        field = rng.choice(SYSTEMS[eq]["fields"])
        text = rng.choice(("1e39*sin(pi*x)", "1e20*sin(pi*x)", "3.5e38", "1e-46*sin(pi*x)", "1e-40",
                           "1e30*exp(x)", "1e-30*sin(pi*x)"))
        set_at(data, ("initial", field), text)
        return f"float32 with initial.{field} = {text!r}"
    if kind == 1:
        key = rng.choice(list(SYSTEMS[eq]["keys"]))
        value = rng.choice((1e-40, 1e39, 1e-20, 1e20))
        set_at(data, ("physics", key), value)
        return f"float32 with physics.{key} = {value!r}"
    lower, upper = rng.choice((([0, 0, 0], [1e-40, 1, 1]), ([0, 0, 0], [1e39, 1, 1]),
                               ([1e7, 0, 0], [1e7 + 1, 1, 1]), ([0, 0, 0], [1e-20, 1e-20, 1e-20])))
    set_at(data, ("mesh", "lower"), lower)
    set_at(data, ("mesh", "upper"), upper)
    return f"float32 with lower = {show(lower)}, upper = {show(upper)}"


# ------------------------------------------------- flow, elliptic and acoustics tables
# The tables of the Navier-Stokes, Poisson and acoustics examples, and the [solver.*],
# [output.probes] and [checkpoint] keys: each value made huge, tiny, NaN, inf, empty or of
# the wrong type (docs/case-file.md gives every key's range).

#: the examples these mutations start from
FLOW_SEEDS = ("beltrami.toml", "kovasznay.toml", "channel.toml", "tgv.toml", "poisson.toml", "acoustics_mode.toml")
_SOLVER = {"tolerance": "fraction", "absolute_tolerance": "number", "max_iterations": "count",
           "projection": "count", "restart": "count", "smoother_degree": "count", "coarse_tolerance": "fraction",
           "levels": "orders", "method": ("cg", "fcg", "gmres"), "preconditioner": ("multigrid", "jacobi", "none"),
           "precision": ("float64", "float32"), "coarse": ("auto", "cholesky", "pcg", "amg"),
           "smoother": ("jacobi", "schwarz")}
_COMMON = {("output", "every"): "count", ("output", "log_every"): "count",
           ("output", "probes", "every"): "count", ("output", "probes", "points"): "points",
           ("output", "probes", "fields"): "names", ("checkpoint", "every"): "count",
           ("checkpoint", "keep"): "count", ("checkpoint", "wall_minutes"): "number",
           ("checkpoint", "at_end"): "bool", ("checkpoint", "compression"): ("none", "gzip"),
           # [output] derived and a format's own list (config/derived.py)
           ("output", "derived"): "derived", ("output", "vtk", "derived"): "derived",
           ("output", "nek", "derived"): "derived", ("output", "hdf5", "derived"): "derived",
           # a name given twice in a list is refused, not merged (config/toolkit.py refuse_repeats)
           ("output", "formats"): "formats", ("output", "integrals", "surfaces"): "surfaces",
           # the decay stop (runner/decay_stop.py): the latter two are refused without until_decayed
           ("time", "until_decayed"): "fraction", ("time", "decay_interval"): "number",
           ("time", "decay_watch"): ("probes", "energy")}
#: system -> {path: kind}; kind: number, fraction (0 < v < 1), count, expression, points,
#: names, orders, bool, or a tuple of the valid choices
FLOW_KEYS = {
    "navier_stokes": {
        ("physics", "viscosity"): "number", ("physics", "flow_rate"): "number",
        ("physics", "filter_modes"): "count", ("physics", "filter_weight"): "number",
        ("physics", "diagnostics_every"): "count", ("physics", "force_x"): "expression",
        ("physics", "force_y"): "expression", ("physics", "force_z"): "force", ("physics", "dealias"): "bool",
        ("physics", "scalars"): "names",
        ("physics", "flow_direction"): ("x", "y", "z"),
        **{("solver", "pressure", k): v for k, v in _SOLVER.items()},
        ("solver", "velocity", "tolerance"): "fraction", ("solver", "velocity", "absolute_tolerance"): "number",
        ("solver", "velocity", "max_iterations"): "count",
        ("time", "dt"): "number", ("time", "t_end"): "number", ("time", "max_cfl"): "number",
        ("time", "target_cfl"): "number", ("time", "initial_dt"): "number",
        ("time", "integrator"): ("bdf1", "bdf2", "bdf3"), ("time", "substeps"): "substeps",
        ("time", "steady_tolerance"): "number", ("time", "steady_every"): "count", ("time", "growth_check"): "bool",
        ("initial", "ux"): "expression", ("boundary", "ymin", "ux"): "expression",
        ("output", "statistics", "start"): "number", ("output", "statistics", "every"): "count",
        ("output", "statistics", "average"): "directions", ("output", "statistics", "fields"): "names",
        ("physics", "backflow_stabilization"): "bool", ("boundary", "xmax", "tx"): "expression",
        ("boundary", "ymax", "tz"): "expression",
        # [output.forces.<name>] (systems/navier_stokes/forces_table.py)
        ("output", "forces", "body", "surfaces"): "surfaces", ("output", "forces", "body", "center"): "vector",
        ("output", "forces", "body", "reference_area"): "number",
        ("output", "forces", "body", "reference_velocity"): "number",
        ("output", "forces", "body", "density"): "number", ("output", "forces", "body", "every"): "count",
        ("output", "forces", "body", "centre"): "number",  # misspelt: refused
    },
    "poisson": {
        ("physics", "k"): "expression", ("physics", "h"): "expression", ("physics", "f"): "expression",
        **{("solver", k): v for k, v in _SOLVER.items() if k != "absolute_tolerance"},
        ("boundary", "xmin", "value"): "expression", ("boundary", "ymin", "flux"): "expression",
    },
    "acoustics": {("physics", "density"): "number", ("physics", "sound_speed"): "number",
                  ("time", "cfl"): "number", ("time", "dt"): "number", ("initial", "p"): "expression",
                  ("time", "substeps"): "substeps",  # refused: acoustics has no sub-stepping
                  ("time", "steady_tolerance"): "number", ("time", "steady_every"): "count",
                  ("time", "growth_check"): "bool"},
}
FLOW_NUMBERS = (0, 0.0, -0.0, -1, -1e-3, 1e-3, 0.5, 2.0, 1e100, 1e101, 1e-100, 1e-101, 1e160, 1e300, 1e308,
                1.7976931348623157e308, -1e308, 1e-300, 5e-324, 1e-320, math.nan, math.inf, -math.inf)
FLOW_COUNTS = (0, 1, 2, 50, 51, 1000, 1001, 10**6, 10**6 + 1, 10**9, 2**31, 2**62, 2**63 - 1, -1, -(2**63))
FLOW_EXPRESSIONS = ("1e308*x+1", "1e308*x", "1e200*x", "1e160", "1e101*sin(pi*x)", "1e-320*x+1e-320", "-1",
                    "0", "1/x", "log(x)", "exp(1000*x)", "nan", "inf", "", "x +", "sin(pi*x)", "1e308", "-1e308",
                    "(1e200*x)**2", "1 - 2*x", "1e300*t")
FLOW_WRONG_TYPES = ("", "1.0", "abc", True, False, [], [1, 2], {}, {"a": 1}, datetime.date(1979, 5, 27))


def _flow_value(rng: random.Random, kind) -> Any:
    """A value for a key of this kind: mostly hostile, sometimes valid."""
    if rng.random() < 0.2:
        return rng.choice(FLOW_WRONG_TYPES)
    if isinstance(kind, tuple):
        return rng.choice(kind + ("bogus", "", kind[0].upper()))
    if kind in ("number", "fraction"):
        extra = (0.999999, 1.0, 1.0000001, 1e-8, 1e-14) if kind == "fraction" else ()
        return rng.choice(FLOW_NUMBERS + extra + HUGE_INTS)
    if kind == "count":
        return rng.choice(FLOW_COUNTS + (1.5, 1e9, 3.0))
    if kind == "substeps":  # [time] substeps: 0 to 100, a few valid ones (each step costs 4 k of them)
        return rng.choice((0, 1, 2, 3, 100, 101, -1, 2.0, 10**9, 2**63 - 1))
    if kind == "expression":
        return rng.choice(FLOW_EXPRESSIONS + (1e308, 1e-320, math.nan, math.inf, 2**63 - 1))
    if kind == "points":
        return rng.choice(([], [[]], [[0.5, 0.5]], [[math.nan, 0.5, 0.5]], [[math.inf, 0, 0]], [[1e300, 0, 0]],
                           [[1e31, 0, 0]], [[5e-324, 0.5, 0.5]], [[0.5, 0.5, 0.5]] * 3, [[2.0, 2.0, 2.0]],
                           [["0.5", 0.5, 0.5]], [[0.5, 0.5, 0.5], [0.1, 0.2]]))
    if kind == "names":
        return rng.choice(([], [""], ["p", "p"], ["ux"], ["u"], ["Ex"], ["x" * 1000], [1], ["t"], ["pi"], ["sin"]))
    if kind == "directions":  # [output.statistics] average
        return rng.choice(([], ["x"], ["x", "z"], ["z", "x"], ["y"], ["x", "y", "z"], ["q"], ["x", "x"], "x", [1],
                           ["X"]))
    if kind == "derived":  # valid ones (the wall shear of a periodic box is refused at set-up) and not
        return rng.choice((["vorticity", "q_criterion", "lambda2", "divergence", "vorticity_magnitude"],
                           ["wall_shear"], ["lambda2", "lambda2"], ["vorticty"], ["ux"], [""], "vorticity", [1],
                           [], ["wall_shear", "vorticity"]))
    if kind == "surfaces":  # mesh face groups: known, unknown, periodic sides, of the wrong type
        return rng.choice(([], [""], ["ymin"], ["ymin", "ymax"], ["ymin", "ymin"], ["xmin"], ["cylinder"],
                           ["walls", "cylinder"], ["nope"], [1], "ymin", [["ymin"]]))
    if kind == "formats":
        return rng.choice(([], ["hdf5"], ["hdf5", "hdf5"], ["vtk", "nek", "vtk"], ["nek", "hdf5"], "hdf5", ["HDF5"]))
    if kind == "vector":
        return rng.choice(([0, 0, 0], [0.5, 0.5], [math.nan, 0, 0], [math.inf, 0, 0], [1e300, 0, 0], [1e101, 0, 0],
                           ["0", 0, 0], [0.2, 0.2, 0.05], [2**64, 0, 0]))
    if kind == "orders":
        return rng.choice(([], [1], [4, 1], [1, 4], [0], [-1], [25, 1], [10**9, 1], [4, 4], [2.0, 1], ["4"]))
    return rng.choice((True, False, 1, "true"))


def op_flow_table(rng, data):
    """One key of a Navier-Stokes, Poisson or acoustics case's own tables, [solver.*],
    [output.probes] or [checkpoint], set to a hostile value (or deleted, or its table
    replaced by a non-table)."""
    phys = data.get("physics")
    eq = phys.get("equations") if isinstance(phys, dict) else None
    if eq not in FLOW_KEYS:
        raise _Skip
    keys = {**FLOW_KEYS[eq], **_COMMON}
    if eq == "navier_stokes":
        for name in (phys.get("scalars") or []) if isinstance(phys.get("scalars"), list) else []:
            if isinstance(name, str):
                keys.update({("scalar", name, "diffusivity"): "number", ("scalar", name, "tolerance"): "fraction",
                             ("scalar", name, "max_iterations"): "count", ("scalar", name, "source"): "expression"})
    path = rng.choice(sorted(keys, key=str))
    if ("output", "probes") == path[:2] and "points" not in (data.get("output", {}).get("probes") or {}):
        set_at(data, ("output", "probes", "points"), [[0.5, 0.5, 0.5]])  # the table needs points
    output = data.get("output") if isinstance(data.get("output"), dict) else {}
    forces = output.get("forces") if isinstance(output.get("forces"), dict) else {}
    if ("output", "forces") == path[:2] and not isinstance(forces.get("body"), dict):
        set_at(data, path[:3] + ("surfaces",), [rng.choice(("ymin", "cylinder", "walls"))])  # it needs surfaces
    r = rng.random()
    if r < 0.05:
        value = rng.choice(("x", 1, [1]))
        set_at(data, path[:-1], value)  # the table itself of the wrong type
        return f"flow: [{dotted(path[:-1])}] = {show(value)}"
    value = _flow_value(rng, keys[path]) if keys[path] != "force" else _force_value(rng, phys.get("scalars"))
    set_at(data, path, value)
    return f"flow: {dotted(path)} = {show(value)}"


def _force_value(rng: random.Random, scalars) -> Any:
    """A [physics] force in the scalars (buoyancy): a scalar's name scaled up to overflow, an
    unknown name, a name of the flow's fields, or any hostile expression."""
    names = [n for n in scalars if isinstance(n, str)] if isinstance(scalars, list) else []
    name = rng.choice(names) if names else "temperature"
    return rng.choice((f"1000*{name}", f"1e308*{name}*{name}", f"1/({name} - 0.5)", f"{name}**-400",
                       f"log({name})", f"{name}_flux", "T", "ux", "p*2", f"sin({name})*t*z")
                      + FLOW_EXPRESSIONS[:6] + (rng.choice(FLOW_WRONG_TYPES),))


# ----------------------------------------------------------- Maxwell-physics tables
# [material.<name>], [source.<name>], [pml], [output.dft], [output.far_field] and [physics]
# sigma (docs/electromagnetics.md): each number huge, tiny, NaN, inf, of the wrong type or
# empty, and some valid values that exercise derived quantities (norms, products, rates).
MAXWELL_NUMBERS = (0, -1.0, 1e300, -1e300, 1e160, 1e-300, 5e-324, 1.7976931348623157e308, 1e31, 1e-31, 1e30,
                   1e-30, math.nan, math.inf, -math.inf, 2**63 - 1, 10**30, "1.0", True, [], [1.0], {}, "")
MAXWELL_VECTORS = ([1e308, 1e308, 1e308], [1e-320, 0, 0], [5e-324, 5e-324, 0], [0, 0, 0], [math.nan, 0, 1],
                   [math.inf, 0, 0], [1e30, 0, 0], [1, 2], [1, 2, 3, 4], [], ["a", 0, 0], [True, 0, 0],
                   [-1e300, 1e300, 0], "0, 0, 1", [[0, 0, 1]])
MAXWELL_LISTS = ([], [1e308], [1e30], [5e-324], [0.0], [-1.0], [math.nan], [math.inf], ["0.5"], [[0.5]],
                 [0.5] * 2000, "0.5", 0.5, [True])
#: a valid table of each kind, added to a case that lacks one
MAXWELL_TABLES = {
    "material": {"m": {"where": "x - 0.5", "epsilon": 2.0, "sigma": 0.1}},
    "drude": {"m": {"where": "0.5 - x", "model": "drude",
                    "poles": [{"plasma_frequency": 1.0, "collision_frequency": 0.5}]}},
    "lorentz": {"m": {"where": "0.1 - y", "model": "lorentz",
                      "poles": [{"resonance_frequency": 1.0, "delta_epsilon": 1.0, "damping_frequency": 0.1}]}},
    "debye": {"m": {"where": "x - 0.7", "model": "debye", "poles": [{"delta_epsilon": 1.0, "relaxation_time": 0.5}]}},
    "library": {"m": {"where": "x - 0.6", "material": "Au", "length_unit": 1e-7}},
    "anisotropic": {"m": {"where": "x - 0.4", "epsilon": [2.0, 3.0, "1 + x"], "mu": [1.0, 1.5, 1.0]}},
    "averaged": {"m": {"where": "x - 0.45", "epsilon": 3.0, "sigma": 0.2, "sampling": "average"}},
    # poles with a diagonal eps_inf, averaged (dispersive.py, materials.pole_mask)
    "averaged_poles": {"m": {"where": "x - 0.45", "epsilon": [2.0, 3.0, "1 + x"], "sampling": "average",
                             "model": "drude", "poles": [{"plasma_frequency": 1.0, "collision_frequency": 0.5}]}},
    "dipole": {"d": {"type": "electric_dipole", "position": [0.3, 0.4, 0.5], "direction": [0, 0, 1],
                     "waveform": "gaussian", "t0": 0.01, "width": 0.01}},
    "magnetic": {"d": {"type": "magnetic_dipole", "position": [0.3, 0.4, 0.5], "direction": [1, 1, 0],
                       "waveform": "continuous", "frequency": 1.0, "ramp": 0.0}},
    "current": {"c": {"type": "current", "Jz": "sin(pi*x)*exp(-t)", "lower": [0.2, 0.2, 0.2], "upper": [0.8, 0.8, 0.8]}},
    "plane_wave": {"p": {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 0, 1],
                         "waveform": "ricker", "frequency": 1.0, "t0": 1.0, "lower": [0, 0, 0], "upper": [1, 1, 1]}},
    # oblique and continuous: with [physics] bloch_k = [1, 0, 0] on a mesh periodic in x it is taken
    # (plane_waves.py: k_w = 2 pi f k_hat = [1, 0, 0.75] along x), else refused naming the bloch_k
    "plane_wave_cw": {"q": {"type": "plane_wave", "direction": [0.8, 0, 0.6], "polarization": [0, 1, 0],
                            "waveform": "continuous", "frequency": 1.25 / (2 * math.pi), "ramp": 0.1,
                            "lower": [0, 0, 0.25], "upper": [1, 1, 0.75]}},
    "pml": {"sides": ["xmax"], "elements": 1},
    "dft": {"frequencies": [0.5, 1.0], "surfaces": ["xmin"], "fields": ["Ez"]},
    # runner/normalization.py: the run without [material] tables first (an error without them)
    "dft_normalized": {"frequencies": [0.5], "surfaces": ["xmin", "xmax"], "normalize": "xmax"},
    "dft_planes": {"frequencies": [0.5], "planes": ["x = 0.5", "z = 0"],  # interior surfaces (monitors/planes.py)
                   "boxes": [{"lower": [0.0, 0.0, 0.0], "upper": [1.0, 1.0, 0.5]}]},
    # monitors/dft.py taper_weight: refused with the decay stop below (the record's end unknown)
    "dft_tapered": {"frequencies": [0.5, 1.0], "surfaces": ["xmax"], "taper": 0.3},
    "decay": {"until_decayed": 1e-3, "decay_interval": 0.004, "decay_watch": "energy"},  # into [time]
    # waveguide ports (systems/maxwell/ports.py): one run per driven port, then the S-parameters
    "port": {"in": {"plane": "x = 0.5", "source": "x = 0.25", "direction": "+", "mode": "TE01"},
             "out": {"plane": "x = 0.75", "direction": "-", "mode": "TE01", "shape": "rectangle"}},
    "ports": {"frequencies": [0.8, 1.2], "drive": "all"},
    # ports on named surfaces (port_surface.py): the box grows a source plane and a [pml] behind each
    "port_surface": {"in": {"surface": "xmin", "mode": "TE01"}, "out": {"surface": "xmax", "mode": "TE01"}},
    "ports_surface": {"frequencies": [0.8, 1.2], "pml_elements": 1},
}
#: the [time] keys of the decay stop, mutated as the Maxwell tables' numbers
DECAY_KEYS = ("until_decayed", "decay_interval", "decay_watch")
MAXWELL_TOPS = ("material", "source", "pml", "port", "ports")


def _maxwell_slots(data: dict) -> list:
    """Paths of the Maxwell-physics numbers and lists in ``data`` (items of lists too)."""
    out = []
    for top in MAXWELL_TOPS:
        if isinstance(data.get(top), dict):
            out.extend((top,) + p for p in paths(data[top], items=True))
    output = data.get("output")
    for sub in ("dft", "far_field"):
        if isinstance(output, dict) and isinstance(output.get(sub), dict):
            out.extend(("output", sub) + p for p in paths(output[sub], items=True))
    time = data.get("time")
    if isinstance(time, dict):
        out.extend(("time", key) for key in DECAY_KEYS if key in time)
    physics = data.get("physics")
    if isinstance(physics, dict) and "sigma" in physics:
        out.append(("physics", "sigma"))
    if isinstance(physics, dict) and "bloch_k" in physics:  # Bloch-periodic boundaries (bloch.py)
        out.extend(("physics",) + p for p in paths({"bloch_k": physics["bloch_k"]}, items=True))
    return out


def op_maxwell_table(rng, data):
    """A value of a Maxwell-physics table (or a whole table of one) made hostile."""
    if equations_of(data) != "maxwell":
        raise _Skip
    if rng.random() < 0.05:  # Bloch-periodic boundaries, often across an axis that does not wrap
        value = rng.choice(([1.0, 0.0, 0.0], [0.0, 2.5, 0.0], [0.5, 0.5, 0.5], [0.0, 0.0, 0.0]))
        set_at(data, ("physics", "bloch_k"), value)
        return f"maxwell: physics.bloch_k = {show(value)}"
    slots = _maxwell_slots(data)
    if not slots or rng.random() < 0.2:  # bring a table along (valid), then perhaps spoil it
        kind = rng.choice(sorted(MAXWELL_TABLES))
        table = copy.deepcopy(MAXWELL_TABLES[kind])
        top = {"drude": "material", "lorentz": "material", "debye": "material", "library": "material",
               "anisotropic": "material", "averaged": "material", "averaged_poles": "material",
               "dipole": "source", "magnetic": "source",
               "current": "source", "plane_wave": "source", "plane_wave_cw": "source", "port_surface": "port",
               "ports_surface": "ports"}.get(kind, kind)
        if kind in ("dft", "dft_planes", "dft_normalized", "dft_tapered"):
            set_at(data, ("output", "dft"), table)
        elif kind == "decay":
            if not isinstance(data.get("time"), dict):
                data["time"] = {"t_end": 0.02}
            data["time"].update(table)
        elif top == "pml":
            data["pml"] = table
        else:
            if not isinstance(data.get(top), dict):
                data[top] = {}
            data[top].update(table)
        slots = _maxwell_slots(data)
        if rng.random() < 0.4 or not slots:
            return f"maxwell: add a {kind} table"
    p = rng.choice(slots)
    old = get_at(data, p)
    r = rng.random()
    if isinstance(old, list) and old and all(isinstance(v, (int, float)) for v in old) and len(old) == 3 and r < 0.5:
        value = rng.choice(MAXWELL_VECTORS)
    elif isinstance(old, list) and r < 0.6:
        value = rng.choice(MAXWELL_LISTS)
    elif isinstance(old, str) and r < 0.5:
        value = rng.choice(("-1", "0", "1e308", "1e308*x", "1/(x-0.5)", "nan", "x*0", "-1e-300", "", "sqrt(-x)",
                            "exp(1000*x)", "y +", 1.0, "auto"))
    else:
        value = rng.choice(MAXWELL_NUMBERS)
    set_at(data, p, value)
    return f"maxwell: {dotted(p)} = {show(value)}"


# Operators on the document, with weights.
DATA_OPS: list[tuple[str, Callable, int]] = [
    ("delete_key", op_delete_key, 3),
    ("delete_section", op_delete_section, 2),
    ("retype", op_retype, 3),
    ("extreme", op_extreme, 4),
    ("cross_system", op_cross_system, 3),
    ("expression", op_expression, 5),
    ("mesh_size", op_mesh_size, 2),
    ("box", op_box, 3),
    ("plane", op_plane, 2),
    ("time", op_time, 2),
    ("physics_value", op_physics_value, 2),
    ("add_key", op_add_key, 3),
    ("unknown_key", op_unknown_key, 1),
    ("string_value", op_string_value, 1),
    ("valid_variation", op_valid_variation, 3),
    ("float32", op_float32, 1),
    ("flow_table", op_flow_table, 6),  # skipped for other systems
    ("maxwell_table", op_maxwell_table, 3),
]


# ---------------------------------------------------------------------- text corruption
STRAY = (b"\x00", b"\xff", b"\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r", b"=",
         b"[", b"]", b"[[", b"\"", b"'''", b'"""', b"\x1b[31m", b"\\", b"#", b"\x7f", b"\t", b"\n=\n",
         b"\xe2\x80\xa8", b"\xf4\x90\x80\x80", b"\xc0\x80")


def text_op(rng: random.Random, text: bytes) -> tuple[bytes, str]:
    lines = text.split(b"\n")
    kind = rng.randrange(15)
    if kind == 0:
        cut = rng.randrange(len(text) + 1)
        return text[:cut], f"text: truncate at byte {cut}"
    if kind == 1:  # duplicate key
        keyed = [i for i, ln in enumerate(lines) if b"=" in ln and not ln.startswith(b"#")]
        if keyed:
            i = rng.choice(keyed)
            lines.insert(i + 1, lines[i])
            return b"\n".join(lines), f"text: duplicate line {i + 1} ({lines[i][:30]!r})"
    if kind == 2:  # duplicate section header
        headers = [i for i, ln in enumerate(lines) if ln.startswith(b"[")]
        if headers:
            i = rng.choice(headers)
            lines.append(lines[i])
            lines.append(b"x = 1")
            return b"\n".join(lines), f"text: header {lines[i]!r} repeated at the end"
    if kind == 3:
        stray = rng.choice(STRAY)
        pos = rng.randrange(len(text) + 1)
        return text[:pos] + stray + text[pos:], f"text: insert {stray!r} at byte {pos}"
    if kind == 4:
        invalid = rng.choice((b"\xff", b"\x80", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"))
        pos = rng.randrange(len(text) + 1)
        return text[:pos] + invalid + text[pos + 1:], f"text: invalid UTF-8 {invalid!r} at byte {pos}"
    if kind == 5:
        bom = rng.choice((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"))
        return bom + text, f"text: leading BOM {bom!r}"
    if kind == 6:
        if len(lines) > 1:
            i = rng.randrange(len(lines))
            del lines[i]
            return b"\n".join(lines), f"text: delete line {i + 1}"
    if kind == 7:
        return text.replace(b"\n", rng.choice((b"\r\n", b"\r"))), "text: CRLF or CR line ends"
    if kind == 8:  # deep nesting: parsers that recurse may blow the stack
        depth = rng.choice((100, 1000, 5000, 100_000))
        opener, closer = rng.choice(((b"[", b"]"), (b"{a=", b"}")))
        value = opener * depth + b"1" + closer * depth
        return b"deep = " + value + b"\n" + text, f"text: nested value, depth {depth}"
    if kind == 9:
        return b"", "text: empty file"
    if kind == 10:
        return b"# only a comment\n\n  \n", "text: only a comment"
    if kind == 11:
        i = rng.randrange(len(lines))
        lines[i] = lines[i].replace(b"=", b":", 1)
        return b"\n".join(lines), f"text: '=' -> ':' on line {i + 1}"
    if kind == 12:
        quoted = [i for i, ln in enumerate(lines) if b'"' in ln]
        if quoted:
            i = rng.choice(quoted)
            lines[i] = lines[i].replace(b'"', b"", 1)
            return b"\n".join(lines), f"text: drop a quote on line {i + 1}"
    if kind == 13:
        n = rng.choice((10_000, 1_000_000))
        return text + b"\n# " + b"x" * n + b"\n", f"text: comment line of {n} bytes"
    # swap two lines (moves keys between sections)
    if len(lines) > 2:
        i, j = rng.sample(range(len(lines)), 2)
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines), f"text: swap lines {i + 1} and {j + 1}"
    return text + b"\n[mesh]\n", "text: [mesh] again"


def make_case(seed: int, index: int, examples: dict) -> FuzzCase:
    """Case ``index`` of round ``seed``: a deterministic function of (seed, index, examples)."""
    rng = random.Random(f"lobatto-fuzz:{seed}:{index}")
    base = rng.choice(sorted(examples))
    data = shrink(rng, examples[base])
    ops: list[str] = []
    names = [n for n, _, _ in DATA_OPS]
    weights = [w for _, _, w in DATA_OPS]
    funcs = {n: f for n, f, _ in DATA_OPS}
    n_ops = rng.choice((1, 1, 1, 1, 1, 1, 2, 2, 2, 3))
    attempts = 0
    while len(ops) < n_ops and attempts < 20:
        attempts += 1
        name = rng.choices(names, weights)[0]
        try:
            ops.append(funcs[name](rng, data))
        except (_Skip, TypeError, KeyError, IndexError, AttributeError):
            continue  # does not apply to this (already mutated) document
    text = to_toml(data).encode("utf-8")
    keep_data: dict | None = data
    if rng.random() < 0.15:
        text, what = text_op(rng, text)
        ops.append(what)
        keep_data = None
    return FuzzCase(index=index, base=base, ops=ops, data=keep_data, text=text)


def make_cases(seed: int, count: int, examples: dict | None = None, start: int = 0) -> list:
    examples = examples if examples is not None else load_examples()
    return [make_case(seed, i, examples) for i in range(start, start + count)]


# ============================================================================== running
@dataclasses.dataclass
class Outcome:
    returncode: int | None  # None: killed by the timeout
    stdout: str = dataclasses.field(repr=False)
    stderr: str = dataclasses.field(repr=False)
    seconds: float = 0.0
    summary_ok: bool | None = None  # summary.json present and strict JSON (None: not looked at)
    summary_problem: str = ""
    leftovers: list = dataclasses.field(default_factory=list)


def _environment() -> dict:
    env = dict(os.environ)
    for var in ("LOBATTO_DEBUG", "PYTHONWARNINGS", "PYTHONSTARTUP", "PYTHONINSPECT"):
        env.pop(var, None)
    env["PYTHONIOENCODING"] = "utf-8"
    env.setdefault("OMP_NUM_THREADS", "1")
    spec = importlib.util.find_spec("lobatto")
    src = ROOT / "src"
    if spec is None or (spec.origin and Path(spec.origin).resolve().is_relative_to(src)):
        # this checkout's lobatto (a plain checkout, or installed in editable mode)
        env["PYTHONPATH"] = str(src) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _strict_json_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


#: Address-space limit of every run, in bytes (``--memory-limit``): a case that asks for a
#: huge mesh must not take the machine down. A small case needs well under 1 GiB.
MEMORY_LIMIT = 4 * 2**30

# Sets the limit, then becomes ``python -m lobatto ...`` (exec keeps the limit).
_LIMITED = ("import os, resource, sys; limit = int(sys.argv[1]); "
            "limit and resource.setrlimit(resource.RLIMIT_AS, (limit, limit)); "
            "os.execv(sys.executable, [sys.executable, '-m', 'lobatto'] + sys.argv[2:])")


def lobatto_command(args: list, python: str = sys.executable, memory_limit: int | None = None) -> list:
    """``python -m lobatto ARGS`` under the address-space limit."""
    limit = MEMORY_LIMIT if memory_limit is None else memory_limit
    if not limit or sys.platform == "win32":
        return [python, "-m", "lobatto", *args]
    return [python, "-c", _LIMITED, str(int(limit)), *args]


def run_in(directory, cmd: list, env: dict, timeout: float) -> tuple:
    """Run ``cmd`` in ``directory`` in a session of its own: (exit code, or None when it ran
    past ``timeout`` and its whole process group was killed; stdout; stderr; seconds)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=directory, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group of the process started here
        except ProcessLookupError:
            pass
        stdout, stderr = proc.communicate()
        rc = None
    return rc, stdout, stderr, time.perf_counter() - start


def run_text(text: bytes, timeout: float, python: str = sys.executable,
             memory_limit: int | None = None) -> Outcome:
    """Run ``lobatto run case.toml -o out --quiet`` on ``text`` in a fresh directory."""
    with tempfile.TemporaryDirectory(prefix="lobatto-fuzz-") as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "case.toml").write_bytes(text)
        out_dir = tmp_path / "out"
        cmd = lobatto_command(["run", "case.toml", "-o", "out", "--quiet"], python, memory_limit)
        rc, stdout, stderr, seconds = run_in(tmp, cmd, _environment(), timeout)
        summary_ok, problem = None, ""
        if rc == 0:
            summary = out_dir / "summary.json"
            if not summary.is_file():
                summary_ok, problem = False, "no summary.json"
            else:
                try:
                    json.loads(summary.read_text(encoding="utf-8"), parse_constant=_strict_json_constant)
                    summary_ok = True
                except (ValueError, UnicodeDecodeError) as err:
                    summary_ok, problem = False, f"summary.json is not strict JSON ({err})"
        leftovers = []
        if rc is not None:
            leftovers = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.tmp*"))
        return Outcome(rc, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"),
                       seconds, summary_ok, problem, leftovers)


# ============================================================================== checking
@dataclasses.dataclass
class Finding:
    category: str
    case: FuzzCase
    outcome: Outcome
    detail: str

    @property
    def known(self) -> bool:
        return any(k in self.category for k in KNOWN)


_WARNING_RE = re.compile(r"(\w*Warning): (.*)")


def _normalise(text: str) -> str:
    """A message with the case-specific parts (numbers, quoted values, paths) taken out."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    text = re.sub(r"/\S+", "<path>", text)
    text = re.sub(r"\d+(\.\d+)?([eE][-+]?\d+)?", "N", text)
    return " ".join(text.split())[:90]


def _traceback_error(stderr: str) -> str:
    """The exception line of the last traceback in ``stderr``."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b", ln.strip()):
            return ln.strip()
    return lines[-1].strip() if lines else ""


def _traceback_category(stderr: str) -> str:
    """'ExceptionType at lobatto/file.py:function' of the last traceback in ``stderr``."""
    err = _traceback_error(stderr)
    kind = err.split(":")[0].rsplit(".", 1)[-1] or "?"
    frames = re.findall(r'File "([^"]+)", line \d+, in (\S+)', stderr)
    own = [(f, fn) for f, fn in frames if "lobatto" in f.replace(os.sep, "/").split("/site-packages/")[-1]]
    if own:
        f, fn = own[-1]
        f = f.replace(os.sep, "/")
        f = f[f.rfind("lobatto/"):] if "lobatto/" in f else Path(f).name
        return f"{kind} at {f}:{fn}"
    return kind


def check(case: FuzzCase, outcome: Outcome, timeout: float) -> list:
    """Every way the outcome breaks the contract, as Findings (one per category)."""
    found: list[Finding] = []

    def add(category: str, detail: str = "") -> None:
        found.append(Finding(category, case, outcome, detail))

    rc, stderr = outcome.returncode, outcome.stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if rc is None:
        if case.small(timeout):
            add("timeout on a small case", f"{case.points} points, estimated {case.seconds:.1f} s, "
                f"killed after {outcome.seconds:.1f} s")
        return found
    if rc not in (0, 1, 2):
        what = f"signal {-rc}" if rc < 0 else f"exit {rc}"
        add(f"exit status {what}", stderr[-300:])
    if "Traceback (most recent call last)" in stderr:
        add(f"traceback: {_traceback_category(stderr)}", _traceback_error(stderr)[:300])
    else:
        warnings = [m for m in (_WARNING_RE.search(ln) for ln in lines) if m]
        if warnings:
            w = warnings[0]
            add(f"leaked {w.group(1)}: {_normalise(w.group(2))}", w.group(0))
        if rc in (1, 2) and not warnings:
            if len(lines) != 1:
                add(f"exit {rc}: {len(lines)} lines on standard error", stderr[-300:])
            elif not lines[0].startswith("lobatto: error:"):
                add(f"exit {rc}: message without 'lobatto: error:'", lines[0][:200])
    if rc == 0 and not outcome.summary_ok:
        add("exit 0 without a valid summary.json", outcome.summary_problem)
    if outcome.leftovers:
        add("temporary file left behind", ", ".join(outcome.leftovers[:5]))
    return found


# ================================================================================ rounds
@dataclasses.dataclass
class Result:
    case: FuzzCase
    outcome: Outcome
    findings: list


def run_cases(cases: list, timeout: float, jobs: int = 2, progress: Callable | None = None,
              run_one: Callable | None = None) -> list:
    """Run the cases (``jobs`` at a time); results in the order of ``cases``. ``run_one(case)``:
    runs and checks one case (another fuzzer's cases); default: a case file's text."""

    def one(case: FuzzCase) -> Result:
        outcome = run_text(case.text, timeout)
        return Result(case, outcome, check(case, outcome, timeout))

    one = run_one or one

    results: list = [None] * len(cases)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(one, c): i for i, c in enumerate(cases)}
        for fut in concurrent.futures.as_completed(futures):
            i = futures[fut]
            results[i] = fut.result()
            if progress is not None:
                progress(results[i])
    return results


def run_round(seed: int, count: int, timeout: float = 20.0, jobs: int = 2, start: int = 0,
              progress: Callable | None = None) -> list:
    return run_cases(make_cases(seed, count, start=start), timeout, jobs, progress)


def findings_of(results: list) -> list:
    return [f for r in results for f in r.findings]


def outcome_counts(results: list) -> dict:
    counts: dict = {}
    for r in results:
        key = "timeout" if r.outcome.returncode is None else f"exit {r.outcome.returncode}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def case_text_for_display(text: bytes, max_lines: int = 60, max_line: int = 160) -> str:
    shown = text.decode("utf-8", "backslashreplace")
    out = []
    for ln in shown.splitlines()[:max_lines]:
        out.append(ln if len(ln) <= max_line else ln[:max_line] + f"...({len(ln)} chars)")
    if len(shown.splitlines()) > max_lines:
        out.append(f"... ({len(shown.splitlines())} lines)")
    return "\n".join(out)


def format_report(results: list, seed: int, details: bool = True) -> str:
    findings = findings_of(results)
    lines = [f"lobatto case fuzzer: seed {seed}, {len(results)} cases, outcomes "
             + ", ".join(f"{k}: {v}" for k, v in outcome_counts(results).items())]
    if not findings:
        lines.append("no findings")
        return "\n".join(lines)
    groups: dict = {}
    for f in findings:
        groups.setdefault(f.category, []).append(f)
    width = min(90, max(len(c) for c in groups))
    lines.append("")
    lines.append(f"{'category':<{width}}  {'count':>5}  cases")
    lines.append(f"{'-' * width}  {'-' * 5}  {'-' * 20}")
    for cat, fs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        tag = " (known)" if fs[0].known else ""
        ids = ", ".join(str(f.case.index) for f in fs[:8]) + (", ..." if len(fs) > 8 else "")
        lines.append(f"{cat[:width]:<{width}}  {len(fs):>5}  {ids}{tag}")
    if details:
        for cat, fs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            f = min(fs, key=lambda f: len(f.case.text))
            lines.append("")
            lines.append(f"=== {cat}")
            lines.append(f"case {f.case.index} (from {f.case.base}; reproduce with --seed {seed} "
                         f"--case {f.case.index}): " + "; ".join(f.case.ops))
            rc = "timeout" if f.outcome.returncode is None else f.outcome.returncode
            lines.append(f"exit status: {rc}, {f.outcome.seconds:.1f} s")
            if f.detail:
                lines.append(f"detail: {f.detail}")
            tail = "\n".join(f.outcome.stderr.rstrip().splitlines()[-8:])
            if tail:
                lines.append("stderr (last lines):")
                lines.append("    " + tail.replace("\n", "\n    "))
            lines.append("case file:")
            lines.append("    " + case_text_for_display(f.case.text).replace("\n", "\n    "))
    return "\n".join(lines)


def keep_findings(results: list, directory: Path) -> None:
    """Write each finding's case and its standard error to ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for r in results:
        if not r.findings:
            continue
        stem = f"case{r.case.index:05d}"
        (directory / f"{stem}.toml").write_bytes(r.case.text)
        info = {
            "index": r.case.index,
            "base": r.case.base,
            "ops": r.case.ops,
            "returncode": r.outcome.returncode,
            "seconds": round(r.outcome.seconds, 3),
            "findings": [f.category for f in r.findings],
            "stderr": r.outcome.stderr if len(r.outcome.stderr) <= 8000
            else "...\n" + r.outcome.stderr[-8000:],
        }
        (directory / f"{stem}.json").write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n",
                                                encoding="utf-8")


# ============================================================================ minimizing
def minimize(case: FuzzCase, category: str, timeout: float, log: Callable = lambda s: None) -> bytes:
    """A smaller case text that still gives a finding of ``category``.

    Documents: delete keys and sections one at a time while the finding remains.
    Corrupted text: delete lines one at a time.
    """

    def still(text: bytes) -> bool:
        probe = dataclasses.replace(case, text=text)
        outcome = run_text(text, timeout)
        return any(f.category == category for f in check(probe, outcome, timeout))

    if case.data is not None:
        data = copy.deepcopy(case.data)
        changed = True
        while changed:
            changed = False
            for p in sorted(paths(data, tables=True), key=len):
                try:
                    trial = copy.deepcopy(data)
                    delete_at(trial, p)
                except (KeyError, IndexError, TypeError):
                    continue
                if still(to_toml(trial).encode("utf-8")):
                    data = trial
                    changed = True
                    log(f"  removed {dotted(p)}")
                    break
        return to_toml(data).encode("utf-8")
    lines = case.text.split(b"\n")
    i = 0
    while i < len(lines):
        trial = lines[:i] + lines[i + 1:]
        if still(b"\n".join(trial)):
            lines = trial
        else:
            i += 1
    return b"\n".join(lines)


# =================================================================================== CLI
def main(argv: list | None = None) -> int:
    global MEMORY_LIMIT
    parser = argparse.ArgumentParser(description="Fuzz lobatto's case-file handling (tests/fuzz/README.md).")
    parser.add_argument("--seed", type=int, default=0, help="round seed (default 0)")
    parser.add_argument("--count", type=int, default=100, help="number of mutated cases (default 100)")
    parser.add_argument("--start", type=int, default=0, help="index of the first case (default 0)")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per case (default 20)")
    parser.add_argument("--jobs", "-j", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument("--keep", metavar="DIR", type=Path, help="write every finding's case file here")
    parser.add_argument("--case", type=int, metavar="I", help="only case I of the seed")
    parser.add_argument("--print", action="store_true", help="print the case(s) and run nothing")
    parser.add_argument("--minimize", action="store_true",
                        help="shrink one case per finding category (slow: reruns the case many times)")
    parser.add_argument("--memory-limit", type=float, default=MEMORY_LIMIT / 2**30, metavar="GIB",
                        help="address-space limit of each run in GiB, 0 for none (default %(default)g)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no per-case progress lines")
    parser.add_argument("--base", action="append", metavar="EXAMPLE",
                        help="start only from this example (repeatable), e.g. --base poisson.toml")
    args = parser.parse_args(argv)
    MEMORY_LIMIT = int(args.memory_limit * 2**30)

    if args.case is not None:
        args.start, args.count = args.case, 1
    examples = load_examples()
    if args.base:  # only these examples as the starting points
        unknown = sorted(set(args.base) - set(examples))
        if unknown:
            parser.error(f"--base: no example {', '.join(unknown)} in {EXAMPLES}")
        examples = {name: examples[name] for name in args.base}
    cases = make_cases(args.seed, args.count, examples, start=args.start)
    if args.print:
        for c in cases:
            print(f"# case {c.index} from {c.base}: " + "; ".join(c.ops))
            print(case_text_for_display(c.text, max_lines=10_000))
        return 0

    done = [0]

    def progress(r: Result) -> None:
        done[0] += 1
        if args.quiet:
            return
        rc = "T/O" if r.outcome.returncode is None else r.outcome.returncode
        mark = "FINDING " + " | ".join(f.category for f in r.findings) if r.findings else ""
        print(f"[{done[0]:>4}/{len(cases)}] case {r.case.index:>5} rc={rc!s:<3} {r.outcome.seconds:5.1f}s "
              f"{'; '.join(r.case.ops)[:100]} {mark}", flush=True)

    t0 = time.perf_counter()
    results = run_cases(cases, args.timeout, args.jobs, progress)
    print()
    print(format_report(results, args.seed))
    print(f"\n{len(results)} cases in {time.perf_counter() - t0:.1f} s")
    if args.keep:
        keep_findings(results, args.keep)
        print(f"finding cases written to {args.keep}{os.sep}")
    if args.minimize:
        groups: dict = {}
        for f in findings_of(results):
            groups.setdefault(f.category, f)
        for cat, f in groups.items():
            print(f"\nminimizing case {f.case.index} for: {cat}")
            text = minimize(f.case, cat, args.timeout, log=print)
            print("    " + case_text_for_display(text).replace("\n", "\n    "))
    unknown = [f for f in findings_of(results) if not f.known]
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main())
