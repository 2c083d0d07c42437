"""A quiet progress bar for long runs.

Nothing is shown for the first ``min_seconds`` (short runs stay silent).
After that, on a terminal, one line is redrawn in place (``\\r``) at most
about ten times a second; when the stream is not a terminal (a log file, CI)
a plain line is printed each time another ~10% of the steps is done.
"""

from __future__ import annotations

import sys
import time as _time
from typing import TextIO

__all__ = ["ProgressBar"]


def _clock(seconds: float) -> str:
    if seconds != seconds or seconds < 0 or seconds == float("inf"):
        return "--:--"
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class ProgressBar:
    """Callable ``progress(step, total, t)`` for :func:`lobatto.runner.simulation.run_case`.

    ``total_steps`` may be None when it is only known once the run starts;
    the ``total`` passed to each call wins when given.
    """

    width = 24
    min_interval = 0.1  # seconds between redraws on a terminal

    def __init__(
        self,
        total_steps: int | None = None,
        stream: TextIO | None = None,
        min_seconds: float = 2.0,
        clock=_time.monotonic,
    ):
        self.total = total_steps
        self.stream = sys.stderr if stream is None else stream
        self.min_seconds = float(min_seconds)
        self._clock = clock
        self._start = clock()
        self._first: tuple[float, int] | None = None  # (time, step) of the first call
        self._last_draw = -1.0
        self._last_decile = -1
        self._drawn = False  # a \r line is on screen and needs a newline
        self._width_drawn = 0
        self._closed = False
        try:
            self._tty = bool(self.stream.isatty())
        except Exception:
            self._tty = False

    # ------------------------------------------------------------------ protocol
    def __call__(self, step: int, total: int | None = None, t: float | None = None) -> None:
        if self._closed:
            return
        if total is not None:
            self.total = int(total)
        now = self._clock()
        if self._first is None:
            self._first = (now, int(step))
        if now - self._start < self.min_seconds:
            return
        total = self.total
        if self._tty:
            final = total is not None and step >= total
            if not final and now - self._last_draw < self.min_interval:
                return
            self._last_draw = now
            self._draw("\r" + self._line(step, total, t, now, bar=True))
        else:
            if not total:
                return
            decile = min(10, int(10 * step / total))
            if decile <= self._last_decile or decile == 0:
                return
            self._last_decile = decile
            self._write(self._line(step, total, t, now, bar=False) + "\n")

    def close(self) -> None:
        """End the progress line (if one is showing). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._drawn:
            self._write("\n")
            self._drawn = False

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ helpers
    def _rate(self, step: int, now: float) -> float:
        if self._first is None:
            return 0.0
        t0, s0 = self._first
        dt = now - t0
        ds = step - s0
        if dt <= 0 or ds <= 0:
            return 0.0
        return ds / dt

    def _line(self, step: int, total: int | None, t: float | None, now: float, bar: bool) -> str:
        rate = self._rate(step, now)
        parts = []
        if total:
            frac = min(1.0, max(0.0, step / total))
            if bar:
                filled = int(round(frac * self.width))
                parts.append("[" + "#" * filled + "-" * (self.width - filled) + "]")
            parts.append(f"{100 * frac:5.1f}%")
            parts.append(f"step {step}/{total}")
        else:
            parts.append(f"step {step}")
        if t is not None:
            parts.append(f"t={t:.6g}")
        if rate > 0:
            parts.append(f"{rate:.3g} steps/s")
            if total:
                parts.append(f"ETA {_clock(max(0, total - step) / rate)}")
        return "  ".join(parts)

    def _draw(self, text: str) -> None:
        visible = len(text) - 1
        pad = max(0, self._width_drawn - visible)
        self._width_drawn = visible
        self._write(text + " " * pad)
        self._drawn = True

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            # A closed or broken stream must never stop a run.
            self._closed = True
