"""Starting scripts under mpiexec from pytest: find the launcher, pick its flags, run."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent.parent / "src"


# the launcher helpers lobatto's own commands use (lobatto bench scaling)
from lobatto.bench.surroundings import find_mpiexec  # noqa: E402
from lobatto.bench.surroundings import open_mpi_flags as launcher_flags  # noqa: E402

MPIEXEC = find_mpiexec()
SKIP_REASON = None
if importlib.util.find_spec("mpi4py") is None:
    SKIP_REASON = "mpi4py is not installed (pip install mpich mpi4py)"
elif MPIEXEC is None:
    SKIP_REASON = "no mpiexec next to the Python executable or on PATH (pip install mpich mpi4py)"


def run(nprocs: int, argv: list[str], timeout: float = 120, cwd=None) -> subprocess.CompletedProcess:
    """Run `python argv...` on nprocs ranks with the checkout's src on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("NCCL_NVLS_ENABLE", "0")  # never NVLink multicast on shared GPU hosts
    cmd = [MPIEXEC, *launcher_flags(MPIEXEC), "-n", str(nprocs), sys.executable, *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def describe(result: subprocess.CompletedProcess) -> str:
    return (f"command: {' '.join(result.args)}\nexit code: {result.returncode}\n"
            f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}")


def read_final(directory: Path):
    """(summary, element ids sorted, fields (F, E, n, n, n) in that order) of a run's last
    HDF5 snapshot; the fields are the system's, in the order of the file's field_names."""
    import json

    import h5py
    import numpy as np

    summary = json.loads((directory / "summary.json").read_text())
    final = directory / summary["outputs"][-1]["files"][0]
    with h5py.File(final, "r") as f:
        names = [str(n) for n in f.attrs["field_names"]]
        ids = f["mesh/element_ids"][:] if "mesh/element_ids" in f else np.arange(f[f"fields/{names[0]}"].shape[0])
        fields = np.stack([f[f"fields/{n}"][:] for n in names])
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
    import numpy as np

    return float(np.max(np.abs(a - b)) / np.abs(b).max())
