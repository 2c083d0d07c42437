"""``lobatto plot``: a run's time series (``NAME_probes.csv``, or a system's own such as the
Navier-Stokes ``NAME_forces.csv``) as a PNG, one panel per quantity.

A column is ``<quantity>@<where>`` (``Ez@p0``, ``energy@all``, ``poynting_flux@xmax``,
``Fx@cylinder``); a panel holds one quantity at all its places. Needs matplotlib (``pip install 'lobatto[plot]'``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from lobatto.errors import InputError
from lobatto.io.timeseries import SUFFIX, read_csv

WIDTH_INCHES, PANEL_INCHES, MARGIN_INCHES, DPI = 8.0, 2.4, 0.8, 100
#: the time series files a run directory may hold: the probes' and integrals', then the forces'
SERIES_SUFFIXES = (SUFFIX, "_forces")


def figure_pixels(panels: int) -> tuple[int, int]:
    """(width, height) in pixels of a figure of ``panels`` panels."""
    return round(WIDTH_INCHES * DPI), round((PANEL_INCHES * panels + MARGIN_INCHES) * DPI)


def find_series(run_dir: Path) -> Path:
    """The time-series CSV file of a run directory: the first one summary.json names (the
    probes' before the forces'), else the only ``*_probes.csv`` or ``*_forces.csv``; InputError
    naming the directory when there is none or several. A CSV file given itself is taken as
    it is (pass ``NAME_forces.csv`` for the forces of a run that also has probes)."""
    run_dir = Path(run_dir)
    if run_dir.is_file() and run_dir.suffix == ".csv":
        return run_dir
    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: not a directory (expected a run's output directory or its {SUFFIX}.csv)")
    try:
        entry = json.loads((run_dir / "summary.json").read_text(encoding="utf-8")).get("time_series", {})
        named = [f for f in entry.get("files", []) if f.endswith(".csv")]
        named += [f for value in entry.values() if isinstance(value, dict)
                  for f in value.get("files", []) if isinstance(f, str) and f.endswith(".csv")]
    except (OSError, ValueError, AttributeError, TypeError):
        named = []
    named = [f for f in named if (run_dir / f).is_file()]
    if named:
        return run_dir / named[0]
    found = [path for suffix in SERIES_SUFFIXES for path in sorted(run_dir.glob(f"*{suffix}.csv"))]
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError(f"{run_dir}: no time series (*{SUFFIX}.csv) in it, nor forces (*_forces.csv): the case "
                         "needs [output.probes] or [output.integrals] (docs/probes.md), or [output.forces.<name>] "
                         "(docs/navier-stokes.md)")
    raise InputError(f"{run_dir}: several time series ({', '.join(p.name for p in found)}); pass the CSV file instead")


def select(columns: list[str], quantities) -> list[str]:
    """The columns asked for: a full column name (``Ez@p0``) or a quantity (``Ez``: all its
    places); all columns when none are asked for. InputError for a name that matches none."""
    if not quantities:
        return list(columns)
    chosen = []
    for wanted in quantities:
        matches = [c for c in columns if c == wanted or c.split("@", 1)[0] == wanted]
        if not matches:
            names = sorted(dict.fromkeys(c.split("@", 1)[0] for c in columns))
            raise InputError(f"--quantities: '{wanted}' is not in the time series (quantities: {', '.join(names)}; "
                             f"columns: {', '.join(columns)})")
        chosen += [c for c in matches if c not in chosen]
    return chosen


def plot_time_series(csv_path: Path, png: Path, quantities=None, title: str | None = None) -> dict:
    """Write the PNG; returns {"png", "panels", "columns", "pixels"}."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise InputError(f"lobatto plot needs matplotlib, which is not installed ({exc}): "
                         "pip install 'lobatto[plot]'") from None
    try:
        series = read_csv(csv_path)
    except (OSError, ValueError) as exc:
        raise InputError(f"{csv_path}: cannot read the time series ({exc})") from None
    columns = select(series["columns"], quantities)
    groups: dict[str, list[str]] = {}
    for column in columns:
        groups.setdefault(column.split("@", 1)[0], []).append(column)
    panels = max(len(groups), 1)
    width, height = figure_pixels(panels)
    fig, axes = plt.subplots(panels, 1, figsize=(width / DPI, height / DPI), dpi=DPI, sharex=True, squeeze=False)
    for ax, (quantity, names) in zip(axes[:, 0], groups.items()):
        for name in names:
            values = series["values"][name]
            sampled = ~np.isnan(values)
            ax.plot(series["time"][sampled], values[sampled], marker="." if sampled.sum() < 40 else None,
                    label=name.split("@", 1)[1])
        ax.set_ylabel(quantity)
        ax.grid(True, alpha=0.3)
        if len(names) > 1:
            ax.legend(fontsize=7, ncol=min(len(names), 4))
    axes[-1, 0].set_xlabel("time")
    axes[0, 0].set_title(title or csv_path.name, fontsize=9)
    fig.tight_layout()
    png = Path(png)
    from lobatto.io.atomic import atomic_path

    with atomic_path(png) as tmp:
        fig.savefig(tmp, dpi=DPI, format="png")
    plt.close(fig)
    return {"png": str(png), "panels": panels, "columns": columns, "pixels": (width, height)}
