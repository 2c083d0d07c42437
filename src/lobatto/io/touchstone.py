"""Touchstone v1.1 files (``NAME.s<P>p``) of a P-port's scattering matrix, written atomically.

Format (Touchstone File Format Specification 1.1, EIA/IBIS): ``!`` comment lines (the run's
effective configuration among them), the option line ``# HZ S RI R <r>``, then per
frequency the matrix in real/imaginary pairs: one port ``f S11``; two ports ``f S11 S21 S12
S22`` (the format's column order for two ports); three or more, row by row, ``f S11 .. S1P``
then each further row on its own lines, at most four pairs a line. Frequencies are written in
HZ with the numbers unchanged: lobatto's frequencies are cycles per unit time of the case, so
a reader gets exactly the case's frequencies (Hz where the case's unit of time is the second).
Entries that are not defined (a mode below cutoff) are written as ``nan``.
"""

from __future__ import annotations

import numpy as np

from lobatto.io.atomic import atomic_write_text

#: pairs per data line for three or more ports (the specification's limit)
PAIRS_PER_LINE = 4


def _pairs(values) -> list[str]:
    return [f"{v.real: .16e} {v.imag: .16e}" for v in values]


def touchstone_text(frequencies, s, comments=(), resistance: float = 1.0) -> str:
    """The file's text: ``s`` (F, P, P) complex, ``frequencies`` (F,)."""
    s = np.asarray(s, dtype=np.complex128)
    count, ports = s.shape[0], s.shape[1]
    if s.shape != (count, ports, ports) or len(frequencies) != count or ports < 1:
        raise ValueError(f"S must be (F, P, P) with F = {len(frequencies)} frequencies, got {s.shape}")
    lines = [f"! {line}" if line else "!" for text in comments for line in str(text).splitlines()]
    lines.append(f"# HZ S RI R {resistance:g}")
    for f, matrix in zip(frequencies, s):
        head = f"{float(f):.16e}"
        if ports <= 2:
            lines.append(" ".join([head] + _pairs(matrix.T.reshape(-1))))  # 2 ports: S11 S21 S12 S22
            continue
        for i, row in enumerate(matrix):
            pairs = _pairs(row)
            for k in range(0, ports, PAIRS_PER_LINE):
                chunk = " ".join(pairs[k:k + PAIRS_PER_LINE])
                lines.append(f"{head} {chunk}" if i == 0 and k == 0 else f"  {chunk}")
    return "\n".join(lines) + "\n"


def write_touchstone(path, frequencies, s, comments=(), resistance: float = 1.0) -> None:
    """Write ``path`` (``.s<P>p``) atomically (io/atomic.py)."""
    atomic_write_text(path, touchstone_text(frequencies, s, comments, resistance))
