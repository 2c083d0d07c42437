"""Run summary: ``summary.json`` and the table the command line prints."""

from __future__ import annotations

import json
import math
import os
from pathlib import PurePath
from typing import Any, Mapping

import numpy as np

from lobatto.io.atomic import atomic_write_text

__all__ = ["write_summary", "read_summary", "to_jsonable", "format_summary_table"]


def to_jsonable(value: Any) -> Any:
    """Plain JSON data from numpy scalars/arrays, tuples, sets and paths.

    Non-finite floats become ``null`` (JSON has no NaN or infinity).
    """
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return [to_jsonable(v) for v in sorted(value, key=repr)]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if hasattr(value, "get") and hasattr(value, "dtype") and hasattr(value, "shape"):
        return to_jsonable(value.get())  # cupy array
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, complex):
        return [to_jsonable(value.real), to_jsonable(value.imag)]
    return str(value)


def write_summary(path: str | os.PathLike, summary: Mapping[str, Any]) -> None:
    """Write ``summary`` as indented JSON, atomically (OutputError naming ``path`` on failure)."""
    text = json.dumps(to_jsonable(summary), indent=2, allow_nan=False) + "\n"
    atomic_write_text(path, text)


def read_summary(path: str | os.PathLike) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


# ----------------------------------------------------------------------------- table
def _num(v: Any, fmt: str) -> str:
    if v is None:
        return "-"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(f):
        return str(f)
    return format(f, fmt)


def _int(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, (list, tuple)):
        total = 1
        for x in v:
            total *= int(x)
        return f"{total:,}  ({' x '.join(str(int(x)) for x in v)})"
    try:
        return f"{int(v):,}"
    except (TypeError, ValueError):
        return str(v)


def _duration(seconds: Any) -> str:
    if seconds is None:
        return "-"
    s = float(seconds)
    if not math.isfinite(s):
        return str(s)
    if s < 60:
        return f"{s:.3f} s"
    m, s = divmod(s, 60)
    h, m = divmod(int(m), 60)
    if h:
        return f"{h}h {m:02d}m {s:04.1f}s"
    return f"{m}m {s:04.1f}s"


def _mesh(about: Any) -> str:
    """'file.msh (geometry order 2)' for a file mesh, the generator's name otherwise."""
    if not isinstance(about, Mapping):
        return str(about)
    text = PurePath(about["file"]).name if about.get("file") else str(about.get("generator", "?"))
    order = about.get("geometry_order")
    return text + (f" (geometry order {order})" if order and order > 1 else "")


def format_summary_table(summary: Mapping[str, Any]) -> str:
    """A fixed-width, human-readable table of a run summary.

    Only the entries present in ``summary`` are shown.
    """
    s = summary
    rows: list[tuple[str, str]] = []

    def add(label: str, key: str, render):
        if key in s and s[key] is not None:
            rows.append((label, render(s[key])))

    add("case", "case", str)
    add("mesh", "mesh", _mesh)
    add("order", "order", _int)
    add("elements", "elements", _int)
    add("points", "points", _int)
    add("steps", "steps", _int)
    dt_range = s.get("dt_range")  # a variable dt: the steps taken (summary.json's dt is the next one)
    if isinstance(dt_range, (list, tuple)) and len(dt_range) == 2:
        rows.append(("dt", f"{_num(dt_range[0], '.6g')} to {_num(dt_range[1], '.6g')} (variable)"))
    else:
        add("dt", "dt", lambda v: _num(v, ".6g"))
    add("t_final", "t_final", lambda v: _num(v, ".6f"))
    add("wall time", "wall_seconds", _duration)
    add("s/step", "seconds_per_step", lambda v: _num(v or None, ".3e"))  # 0: no steps were run
    add("point-steps/s", "point_steps_per_second", lambda v: _num(v, ".3e"))
    account = s.get("time_accounting")
    if isinstance(account, Mapping) and account.get("setup_seconds") is not None:
        rows.append(("set-up", f"{_duration(account['setup_seconds'])}, warm-up {_duration(account['warmup_seconds'])} "
                               f"({account['warmup_steps']} steps), outputs "
                               f"{_duration(account['output_seconds'] + account['final_output_seconds'])}"))
    add("GFLOP/s", "gflops", lambda v: _num(v, ".3f"))
    if isinstance(s.get("energy_use"), Mapping):  # measured joules (lobatto.machine.power, docs/energy.md)
        from lobatto.machine.energy_report import format_energy

        rows.append(("energy use", format_energy(s["energy_use"], brief=True)))
    if "backend" in s:
        backend = str(s["backend"])
        if s.get("precision"):
            backend += f" ({s['precision']})"
        rows.append(("backend", backend))
    add("ranks", "ranks", _int)
    solver = s.get("solver")  # a steady solve: what ran and how far (also under --quiet)
    if isinstance(solver, Mapping) and solver.get("description") and s.get("iterations") is not None:
        text = f"{solver['description']}: {_int(s['iterations'])} iterations"
        if s.get("relative_residual") is not None:
            text += f", relative residual {_num(s['relative_residual'], '.3e')}"
        rows.append(("solver", text))

    width = max((len(label) for label, _ in rows), default=0) + 2
    lines = []
    title = "lobatto run summary"
    if s.get("case"):
        title += f": {s['case']}"
        rows = [r for r in rows if r[0] != "case"]
    lines.append(title)
    lines.append("-" * max(len(title), 40))
    for label, value in rows:
        lines.append(f"  {label:<{width}}{value}")

    errors = s.get("errors")
    if isinstance(errors, Mapping) and errors:
        lines.append("")
        lines.append(f"  {'error':<8}{'L2':>14}{'max':>14}")
        items = [(k, v) for k, v in errors.items() if k != "all"]
        if "all" in errors:
            items.append(("all", errors["all"]))
        for name, val in items:
            if isinstance(val, Mapping):
                l2, mx = val.get("l2"), val.get("max")
            else:
                l2, mx = val, None
            lines.append(f"  {str(name):<8}{_num(l2, '.4e'):>14}{_num(mx, '.4e'):>14}")

    energy = s.get("energy")
    if isinstance(energy, Mapping) and energy:
        e0, e1 = energy.get("initial"), energy.get("final")
        lines.append("")
        text = f"  {'energy':<8}initial {_num(e0, '.10e')}   final {_num(e1, '.10e')}"
        try:
            if e0 is not None and e1 is not None and float(e0) != 0.0:
                text += f"   (relative change {(float(e1) - float(e0)) / float(e0):+.3e})"
        except (TypeError, ValueError):
            pass
        lines.append(text)

    parts = s.get("time_per_part")  # a system's split of the run's time, with the outputs
    if isinstance(parts, Mapping) and parts:
        total = sum(float(v) for v in parts.values())
        lines.append("")
        lines.append("  time per part")
        for name, seconds in parts.items():
            share = f"{100 * float(seconds) / total:5.1f} %" if total > 0 else ""
            lines.append(f"    {str(name):<14}{_duration(float(seconds)):>12}  {share}")
    solvers = s.get("solvers")  # a time-dependent system's elliptic solves: what ran
    if isinstance(solvers, Mapping) and solvers:
        for name, text in solvers.items():
            lines.append(f"  {name} solve: {text}")
    iterations = s.get("iterations_per_step")
    if isinstance(iterations, Mapping) and iterations:
        text = ", ".join(f"{name} {float(v):.1f}" for name, v in iterations.items())
        lines.append(f"  iterations per step: {text}")

    outputs = s.get("outputs")
    if isinstance(outputs, (list, tuple)) and outputs:
        # an entry with no files is the final state of a run with [output] formats = []
        written = [o for o in outputs if not isinstance(o, Mapping) or o.get("files")]
        lines.append("")
        if written:
            lines.append(f"  {len(written)} snapshot{'s' if len(written) != 1 else ''} written")
        else:
            lines.append("  no snapshots written ([output] formats = [])")
    series = s.get("time_series")  # [output.probes], [output.integrals], [output.dft], [output.far_field]
    if isinstance(series, Mapping):
        if series.get("files"):
            samples = series.get("samples")
            lines.append(f"  time series: {', '.join(series['files'])} ({samples} sample{'' if samples == 1 else 's'})")
        stats = series.get("statistics")  # [output.statistics]: zeros in its files until a sample
        if isinstance(stats, Mapping) and stats.get("files"):
            samples = stats.get("samples") or 0
            text = (f"{samples} sample{'' if samples == 1 else 's'}, t = {_num(stats['time'][0], '.6g')} to "
                    f"{_num(stats['time'][1], '.6g')}" if samples else
                    f"no sample: no step at t >= [output.statistics] start = {_num(stats.get('start'), 'g')} on a "
                    f"multiple of every = {stats.get('every')}; the means in them are 0")
            lines.append(f"  statistics: {', '.join(stats['files'])} ({text})")
        forces = series.get("forces")  # [output.forces.<name>]: the files and each group's last sample
        if isinstance(forces, Mapping) and forces.get("files"):
            samples = forces.get("samples")
            lines.append(f"  forces: {', '.join(forces['files'])} ({samples} sample{'' if samples == 1 else 's'})")
            for name, group in (forces.get("groups") or {}).items():
                last = group.get("last") if isinstance(group, Mapping) else None
                if isinstance(last, Mapping) and last:
                    kind = "C" if "Cx" in last else "F"  # the coefficients where the group has reference values
                    parts = [f"{kind}{a} {_num(last.get(kind + a), '.6g')}" for a in "xyz"
                             if a != "z" or last.get(kind + a)]  # (Fz is 0 in 2-D)
                    lines.append(f"    {name} at t = {_num(last.get('t'), '.6g')}: {', '.join(parts)}")
        for key, label in (("dft", "transforms"), ("far_field", "far field")):
            entry = series.get(key)
            if isinstance(entry, Mapping) and entry.get("file"):
                count = len(entry.get("frequencies") or [])
                lines.append(f"  {label}: {entry['file']} ({count} frequenc{'ies' if count != 1 else 'y'})")
    ports = s.get("ports")  # [port.<name>]: the ports, their runs and the S-parameter files (runner/ports.py)
    if isinstance(ports, Mapping) and isinstance(ports.get("ports"), Mapping):
        runs = ports.get("runs") or {}
        lines.append("")
        lines.append(f"  ports ({len(ports['ports'])}; the table above: the last run's)")
        for name, port in ports["ports"].items():
            run = runs.get(name)
            how = (f"driven: {run.get('steps')} steps to t = {_num(run.get('t_final'), '.6g')} ({run.get('stopped')})"
                   if isinstance(run, Mapping) else "measured")
            lines.append(f"    {str(name):<10}{port.get('mode')} at {port.get('plane')}, into {port.get('direction')}; {how}")
            grown = (ports.get("surfaces") or {}).get(name)
            if isinstance(grown, Mapping):  # a surface port: what lobatto grew behind it
                lines.append(f"    {'':<10}surface {grown.get('surface')}: source {grown.get('source')}, "
                             f"{grown.get('layers')} layers of {_num(grown.get('element_depth'), '.6g')} grown "
                             f"({grown.get('pml_layers')} [pml] {grown.get('pml_side')})")
        files = ports.get("files") or {}
        if files:
            lines.append(f"  S-parameters: {', '.join(str(v) for v in files.values())} "
                         f"({ports.get('frequencies')} frequencies)")
    return "\n".join(lines)
