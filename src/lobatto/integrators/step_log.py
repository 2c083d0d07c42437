"""Per-step reports: one line per step on the terminal, in nekRS's style, and every step's
record as a JSON line in ``<output_dir>/steps.jsonl`` (docs/output.md).

A system that has ``step_report() -> dict`` (numbers about the step just taken: CFL number,
solver iterations and residuals, divergence) gets these; the driver adds step, t, dt and the
step's wall seconds. Only rank 0 writes.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from lobatto.io.atomic import atomic_write_text, output_errors

#: file name of the per-step records in the output directory
STEPS_FILE = "steps.jsonl"

#: report keys shown in a fixed form (the rest are printed as name=value): (label, keys, formats)
KNOWN_FIELDS = (
    ("C", ("cfl",), ("{:.2f}",)),
    ("P", ("pressure_iterations", "pressure_residual"), ("{:d}", "{:.1e}")),
    ("U", ("velocity_iterations", "velocity_residual"), ("{:d}", "{:.1e}")),
    ("S", ("scalar_iterations", "scalar_residual"), ("{:d}", "{:.1e}")),
    ("div", ("divergence",), ("{:.1e}",)),
)
_KNOWN_KEYS = {key for _, keys, _ in KNOWN_FIELDS for key in keys}


def _plain(value):
    """A JSON-able Python number from a NumPy / CuPy scalar or a Python one."""
    return value.item() if hasattr(value, "item") else value


def _format(fmt: str, value) -> str:
    if fmt == "{:d}":
        return str(int(value)) if isinstance(value, (int, float)) and math.isfinite(value) else str(value)
    return fmt.format(float(value))


def _show(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def format_step_line(step: int, t: float, dt: float, seconds: float, report: dict) -> str:
    """``step 10  t 1.0000e-01  dt 1.00e-02  C 0.31  P 12 1.2e-07  U 5 3.0e-09  div 1.0e-06  0.152 s/step``:
    the keys the report lacks are left out; keys not known here follow as name=value."""
    parts = [f"step {step}", f"t {t:.4e}", f"dt {dt:.2e}"]
    for label, keys, formats in KNOWN_FIELDS:
        shown = [_format(fmt, report[key]) for key, fmt in zip(keys, formats) if key in report]
        if shown:
            parts.append(" ".join([label] + shown))
    parts += [f"{name}={_show(value)}" for name, value in report.items() if name not in _KNOWN_KEYS]
    parts.append(f"{seconds:.3f} s/step")
    return "  ".join(parts)


class StepLog:
    """Rank 0's per-step output: ``record`` appends the step's JSON line (flushed, so that a
    killed run keeps every finished step) and prints its line every ``every`` steps (and at
    the last step); ``every = 0`` prints none. The file is opened at the first record: a fresh
    run starts it empty, a continued run keeps the lines up to the step it continues from."""

    def __init__(self, output_dir: Path, every: int, stream=None):
        self.path = Path(output_dir) / STEPS_FILE
        self.every = int(every)
        self.stream = stream
        self.file = None

    @property
    def prints(self) -> bool:
        return self.every > 0

    def open(self, first_step: int) -> None:
        """Start the file for a run whose first step is ``first_step`` + 1."""
        kept = []
        if first_step > 0 and self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    if int(json.loads(line)["step"]) <= first_step:
                        kept.append(line)
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short by a killed run
        with output_errors(self.path):
            if kept:  # the earlier run's lines, without any it wrote past the checkpoint
                atomic_write_text(self.path, "".join(line + "\n" for line in kept))
            self.file = open(self.path, "a" if kept else "w")

    def record(self, step: int, t: float, dt: float, seconds: float, report: dict, last: bool = False) -> dict:
        if self.file is None:
            self.open(step - 1)
        report = {name: _plain(value) for name, value in report.items()}
        entry = {"step": int(step), "t": float(t), "dt": float(dt), "seconds": float(seconds), **report}
        with output_errors(self.path):
            self.file.write(json.dumps(entry) + "\n")
            self.file.flush()
        if self.prints and (step % self.every == 0 or last):
            stream = self.stream if self.stream is not None else sys.stdout
            stream.write(format_step_line(step, t, dt, seconds, report) + "\n")
            stream.flush()
        return entry

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
