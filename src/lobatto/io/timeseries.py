"""Time series files of probes and integrals: ``NAME_probes.csv`` and ``NAME_probes.h5``
(docs/probes.md). Written by one process (rank 0 of a run).

The CSV file is appended: after the header, one line per output step, written with one
``write`` and flushed, so a run that dies loses at most the sample it was writing (a line cut
short has no newline; :func:`read_csv` drops it). The HDF5 file is rewritten whole from
memory under a temporary name and renamed (io/atomic.py), so it is always complete; after a
sample it is rewritten unless the rewrites would take more than REWRITE_SHARE of the run's
wall time (for long series: then less often), and always at ``close``. A run continued from
a checkpoint keeps the earlier run's lines before its first step.
"""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path

import numpy as np

from lobatto.io.atomic import atomic_open, h5_output, output_errors

#: the largest share of wall time the HDF5 rewrites may take
REWRITE_SHARE = 0.05
SUFFIX = "_probes"


def file_names(name: str, suffix: str = SUFFIX) -> tuple[str, str]:
    """(CSV, HDF5) file names of output name ``name`` (``suffix``: another series' own, such
    as the Navier-Stokes forces' ``_forces``)."""
    return f"{name}{suffix}.csv", f"{name}{suffix}.h5"


def probe_column(field: str, index: int) -> str:
    return f"{field}@p{index}"


def integral_column(quantity: str, where: str) -> str:
    return f"{quantity}@{where}"


class TimeSeriesWriter:
    """Rank 0's writer. ``probes``: {"fields", "points" (P, 3), "element_ids" (P,),
    "reference" (P, 3)} or None; ``integrals``: [(quantity, where, kind, doc)] or None;
    ``attrs``: root attributes of the HDF5 file (the effective configuration among them).
    Another series of columns (a system's monitor) passes them as ``integrals`` with its own
    file ``suffix`` and HDF5 ``group``."""

    def __init__(self, directory: Path, name: str, probes: dict | None, integrals: list | None, attrs: dict,
                 continue_from: int | None = None, suffix: str = SUFFIX, group: str = "integrals"):
        csv_name, h5_name = file_names(name, suffix)
        self.group = group
        self.csv_path, self.h5_path = Path(directory) / csv_name, Path(directory) / h5_name
        self.probes, self.integrals, self.attrs = probes, integrals, attrs
        self.probe_rows: list[tuple[int, float, np.ndarray]] = []
        self.integral_rows: list[tuple[int, float, np.ndarray]] = []
        self.columns = ["step", "time"]
        self.probe_count = 0 if probes is None else len(probes["points"]) * len(probes["fields"])
        if probes is not None:
            self.columns += [probe_column(f, i) for i in range(len(probes["points"])) for f in probes["fields"]]
        if integrals is not None:
            self.columns += [integral_column(q, w) for q, w, _, _ in integrals]
        self.started = time.perf_counter()
        self.rewrite_seconds = 0.0
        # a continued run (restart) keeps the earlier run's samples before its first step
        kept = self._earlier_lines(continue_from) if continue_from is not None else []
        self.earlier_rows = len(kept)  # the rows a continued run keeps from the run before it
        with atomic_open(self.csv_path, "w", newline="") as fh:
            fh.write(",".join(self.columns) + "\n" + "".join(kept))
        with output_errors(self.csv_path):
            self.csv = open(self.csv_path, "a", encoding="utf-8", newline="")

    def _earlier_lines(self, before_step: int) -> list[str]:
        """The lines of an existing CSV file with the same columns for steps before
        ``before_step``, their values taken back into memory (for the HDF5 file)."""
        try:
            lines = self.csv_path.read_text(encoding="utf-8").splitlines(keepends=True)
        except (OSError, UnicodeDecodeError):
            return []
        if not lines or lines[0].rstrip("\n").split(",") != self.columns:
            return []
        kept = []
        for line in lines[1:]:
            cells = line.rstrip("\n").split(",")
            if not line.endswith("\n") or len(cells) != len(self.columns):
                continue  # cut short
            try:
                step, t = int(cells[0]), float(cells[1])
                probe_cells, integral_cells = cells[2:2 + self.probe_count], cells[2 + self.probe_count:]
                probe_values = np.array(probe_cells, dtype=np.float64) if all(probe_cells) else None
                integral_values = np.array(integral_cells, dtype=np.float64) if all(integral_cells) else None
            except ValueError:
                continue
            if step >= before_step:
                continue
            if self.probes is not None and probe_values is not None:
                self.probe_rows.append((step, t, probe_values.reshape(len(self.probes["points"]), -1).T))
            if self.integrals is not None and integral_values is not None:
                self.integral_rows.append((step, t, integral_values))
            kept.append(line)
        return kept

    def append(self, step: int, t: float, probe_values=None, integral_values=None) -> None:
        """One output step: probe values (fields, P) and/or integral values (Q,), None where
        not sampled at this step (their CSV cells stay empty)."""
        cells = [str(int(step)), repr(float(t))]
        if self.probes is not None:
            if probe_values is None:
                cells += [""] * self.probe_count
            else:
                values = np.asarray(probe_values, dtype=np.float64)
                self.probe_rows.append((step, t, values))
                cells += [repr(float(v)) for v in values.T.reshape(-1)]  # point by point, fields inside
        if self.integrals is not None:
            if integral_values is None:
                cells += [""] * len(self.integrals)
            else:
                values = np.asarray(integral_values, dtype=np.float64)
                self.integral_rows.append((step, t, values))
                cells += [repr(float(v)) for v in values]
        with output_errors(self.csv_path):
            self.csv.write(",".join(cells) + "\n")
            self.csv.flush()
        elapsed = time.perf_counter() - self.started
        if self.rewrite_seconds <= REWRITE_SHARE * elapsed:
            self.write_hdf5()

    def close(self) -> None:
        with output_errors(self.csv_path):
            self.csv.close()
        self.write_hdf5()

    def write_hdf5(self) -> None:
        start = time.perf_counter()
        with h5_output(self.h5_path, self.attrs) as f:
            f.attrs["columns"] = self.columns
            if self.probes is not None:
                group = f.create_group("probes")
                _steps(group, self.probe_rows)
                group["points"] = np.asarray(self.probes["points"], dtype=np.float64).reshape(-1, 3)
                group["element_ids"] = np.asarray(self.probes["element_ids"], dtype=np.int64)
                group["reference"] = np.asarray(self.probes["reference"], dtype=np.float64).reshape(-1, 3)
                group.attrs["fields"] = list(self.probes["fields"])
                count = len(self.probes["points"])
                table = (np.stack([v for _, _, v in self.probe_rows]) if self.probe_rows
                         else np.zeros((0, len(self.probes["fields"]), count)))
                for c, field in enumerate(self.probes["fields"]):
                    group[field] = table[:, c, :]
            if self.integrals is not None:
                group = f.create_group(self.group)
                _steps(group, self.integral_rows)
                table = (np.stack([v for _, _, v in self.integral_rows]) if self.integral_rows
                         else np.zeros((0, len(self.integrals))))
                for q, (quantity, where, kind, doc) in enumerate(self.integrals):
                    data = group.create_dataset(f"{quantity}/{where}", data=table[:, q])
                    data.attrs["kind"], data.attrs["doc"] = kind, doc
        self.rewrite_seconds += time.perf_counter() - start


def _steps(group, rows) -> None:
    group["step"] = np.array([s for s, _, _ in rows], dtype=np.int64)
    group["time"] = np.array([t for _, t, _ in rows], dtype=np.float64)


def read_csv(path: str | Path) -> dict:
    """{"columns": [names], "step": (S,) int, "time": (S,), "values": {name: (S,) float,
    NaN where not sampled}} of a time-series CSV file. A last line cut short (no newline: a
    run killed while writing it) is dropped; any other line that is not one number (or an
    empty cell) per column is a ValueError naming its line number."""
    text = Path(path).read_text(encoding="utf-8")
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # a sample cut short by a crash
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or rows[0][:2] != ["step", "time"]:
        raise ValueError("not a lobatto time series (no 'step,time' header)")
    columns = rows[0]
    table = np.empty((len(rows) - 1, len(columns)), dtype=np.float64)
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(columns):
            raise ValueError(f"line {line} has {len(row)} cell{'s' if len(row) != 1 else ''}, the header "
                             f"{len(columns)}: a damaged file")
        try:
            table[line - 2] = [float(c) if c else np.nan for c in row]
        except ValueError as err:
            raise ValueError(f"line {line}: {err}") from None
    return {"columns": columns[2:], "step": table[:, 0].astype(np.int64), "time": table[:, 1],
            "values": {name: table[:, 2 + i] for i, name in enumerate(columns[2:])}}
