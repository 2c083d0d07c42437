"""Maxwell cases run under mpiexec from pytest, and reading back their final fields."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mpirun import describe, run

CASE = """
[mesh]
elements = [3, 2, 2]
periodic = [true, false, false]
boundary = "pec"
[mesh.boundaries]
zmax = "absorbing"
[mesh.deform]
x = "0.04*sin(pi*x)*sin(pi*y)*sin(pi*z)"
y = "0.03*sin(pi*x)*sin(pi*y)*sin(pi*z)"
[discretization]
order = 4
[initial]
Ez = "sin(pi*y)*cos(2*pi*x)"
Hx = "sin(pi*y)*sin(pi*z)*exp(x)"
Ey = "cos(3*x)*sin(pi*z)"
[time]
t_end = 0.15
[output]
every = 4
formats = ["hdf5", "nek"]
"""

# 8 x 2 x 2 elements: every rank of 2 or 3 holds elements with no face on another rank, so the
# stage really splits into an interior block (during the exchange) and a halo block (after).
WIDE = CASE.replace("elements = [3, 2, 2]", "elements = [8, 2, 2]")

FIELDS = ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz")


def read_final(directory: Path):
    """(summary, element ids sorted, fields (6, E, n, n, n) in that order) of a run's last snapshot."""
    import h5py

    summary = json.loads((directory / "summary.json").read_text())
    final = directory / summary["outputs"][-1]["files"][0]
    with h5py.File(final, "r") as f:
        ids = f["mesh/element_ids"][:] if "mesh/element_ids" in f else np.arange(f["fields/Ex"].shape[0])
        fields = np.stack([f[f"fields/{n}"][:] for n in FIELDS])
    order = np.argsort(ids)
    return summary, ids[order], fields[:, order]


def run_case(directory: Path, text: str, nprocs: int, options=(), timeout: float = 120):
    """`mpiexec -n nprocs lobatto run [options]` of the case text; what read_final gives."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "case.toml").write_text(text)
    result = run(nprocs, ["-m", "lobatto", "run", str(directory / "case.toml"), "--output", str(directory / "out"),
                          "--quiet", *options], timeout=timeout)
    assert result.returncode == 0, describe(result)
    return read_final(directory / "out")


def max_relative_difference(a, b) -> float:
    return float(np.max(np.abs(a - b)) / np.abs(b).max())
