"""``lobatto resonances``: a run's probe series read back (NAME_probes.csv or .h5, as
probes.py writes them) and its modes as a table (docs/electromagnetics.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto.analysis.resonance import Modes, resonances
from lobatto.errors import InputError
from lobatto.io.atomic import os_reason
from lobatto.io.plot import find_series
from lobatto.io.timeseries import probe_column, read_csv

#: how far the sampling times may stray from a uniform step (relative to the step)
UNIFORM_TOLERANCE = 1e-6


def probe_series(run_dir, probe: str | int = 0, field: str | None = None) -> dict:
    """{"path", "column", "time" (S,), "values" (S,)} of one probe's field: RUN_DIR is a run's
    output directory, its NAME_probes.csv or its NAME_probes.h5. ``probe``: "p1" or 1;
    ``field``: default the first one sampled. Only the steps where probes were sampled."""
    path = Path(run_dir)
    index = _probe_index(probe)
    if path.is_file() and path.suffix == ".h5":
        return _from_hdf5(path, index, field)
    path = find_series(path)
    try:
        series = read_csv(path)
    except (OSError, ValueError) as exc:  # as lobatto plot says it (io/plot.py)
        raise InputError(f"{path}: cannot read the time series ({exc})") from None
    probe_columns = [c for c in series["columns"] if c.rsplit("@", 1)[-1][:1] == "p" and c.rsplit("@", 1)[-1][1:].isdigit()]
    if not probe_columns:
        raise InputError(f"{path}: no probe columns (the case needs [output.probes])")
    fields = list(dict.fromkeys(c.rsplit("@", 1)[0] for c in probe_columns))
    points = sorted({int(c.rsplit("@", 1)[1][1:]) for c in probe_columns})
    field = _check(path, field, fields, index, points)
    column = probe_column(field, index)
    values = series["values"][column]
    taken = np.isfinite(values)
    return {"path": path, "column": column, "time": series["time"][taken], "values": values[taken]}


def _from_hdf5(path: Path, index: int, field: str | None) -> dict:
    import h5py

    try:
        with h5py.File(path, "r") as f:
            if "probes" not in f:
                raise InputError(f"{path}: no /probes group (the case needs [output.probes])")
            group = f["probes"]
            fields = [str(v) for v in group.attrs["fields"]]
            points = list(range(group["points"].shape[0]))
            field = _check(path, field, fields, index, points)
            return {"path": path, "column": probe_column(field, index), "time": group["time"][()],
                    "values": group[field][:, index]}
    except OSError as err:
        raise InputError(f"{path}: not a readable HDF5 file ({os_reason(err)})") from None
    except KeyError as err:
        raise InputError(f"{path}: not a lobatto time series ({os_reason(err)})") from None


def _probe_index(probe) -> int:
    text = str(probe)
    digits = text[1:] if text[:1] == "p" else text
    if not digits.isdigit():
        raise InputError(f"--probe: expected a probe name such as p0 or its index, got '{probe}'")
    return int(digits)


def _check(path, field, fields, index, points) -> str:
    if index not in points:
        raise InputError(f"--probe: the series {path} has no probe p{index} (probes: "
                         f"{', '.join(f'p{p}' for p in points)})")
    if field is None:
        return fields[0]
    if field not in fields:
        raise InputError(f"--field: '{field}' is not sampled in {path} (fields: {', '.join(fields)})")
    return field


def uniform_step(time: np.ndarray, path) -> tuple[np.ndarray, float]:
    """(kept sample indices, step): the samples at a uniform step. The run's last step is
    sampled whatever ``every`` is, so a last sample off the step is dropped; any other
    non-uniformity is an error."""
    if time.size < 8:
        raise InputError(f"{path}: {time.size} probe samples; at least 8 are needed (lower [output.probes] every "
                         "or run longer)")
    gaps = np.diff(time)
    step = float(np.median(gaps))
    off = np.abs(gaps - step) > UNIFORM_TOLERANCE * step
    kept = np.arange(time.size)
    if off.any() and not off[:-1].any():
        kept = kept[:-1]
    elif off.any():
        first = int(np.nonzero(off)[0][0])
        raise InputError(f"{path}: the probe samples are not uniform in time (gap {float(gaps[first])!r} after t = "
                         f"{float(time[first])!r}, step {float(step)!r}): resonances need a fixed time step")
    return kept, step


def format_table(modes: Modes, title: str) -> str:
    lines = [title, f"{len(modes)} mode{'s' if len(modes) != 1 else ''} (fitted {modes.rank} exponentials; "
             f"{modes.rejected} rejected as spurious or weak; {modes.out_of_band} outside the band)"]
    header = f"{'#':>3}  {'omega':>20}  {'frequency':>20}  {'decay':>11}  {'Q':>11}  {'amplitude':>11}  {'rel. error':>10}"
    lines += [header, "-" * len(header)]
    for i in range(len(modes)):
        lines.append(f"{i:>3}  {modes.omega[i]:>20.14g}  {modes.frequency[i]:>20.14g}  {modes.decay[i]:>11.4e}  "
                     f"{modes.q[i]:>11.4e}  {modes.amplitude[i]:>11.4e}  {modes.relative_error[i]:>10.2e}")
    return "\n".join(lines)


def resonance_report(run_dir, probe="p0", field=None, band=None, max_error=1e-3, start=None) -> tuple[Modes, str]:
    """The modes of one probe's series and their table (for the CLI). ``start``: only the
    samples at t >= start (a source still driving the field is not a sum of free modes:
    a series that includes a pulse's drive can give no mode at all)."""
    series = probe_series(run_dir, probe, field)
    if start is not None:
        taken = series["time"] >= start
        if not taken.any():
            raise InputError(f"--start {start:g}: {series['path']} has no sample at t >= {start:g} (its last: t = "
                             f"{float(series['time'][-1]):g})")
        series = dict(series, time=series["time"][taken], values=series["values"][taken])
    kept, step = uniform_step(series["time"], series["path"])
    modes = resonances(series["values"][kept], step, band=band, max_error=max_error)
    title = (f"{series['path']}: {series['column']}, {kept.size} samples every {step:.6g} from t = "
             f"{series['time'][0]:.6g} (angular omega; frequency = omega / 2 pi; amplitude at the first sample)")
    return modes, format_table(modes, title)
