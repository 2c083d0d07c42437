"""What the benchmarks and checks take from their surroundings: the commit they run from (for
their JSON) and the MPI launcher (for the commands that start ``mpiexec`` themselves; the MPI
tests' harness uses the same)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def git_commit() -> str | None:
    """The short commit of the source tree lobatto runs from, or None outside a checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = (out.stdout.strip() or None) if out.returncode == 0 else None
    if commit is None:
        return None
    try:  # a tree that differs from its commit (an edited checkout, a copied working tree) says so
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "."], capture_output=True, timeout=20,
                               cwd=Path(__file__).resolve().parents[1]).returncode == 1
    except (OSError, subprocess.SubprocessError):
        dirty = False
    return commit + ("-dirty" if dirty else "")


def find_mpiexec() -> str | None:
    """mpiexec beside this Python first (pip's MPICH in a venv), then on PATH."""
    for name in ("mpiexec", "mpirun"):
        candidate = Path(sys.executable).parent / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    for name in ("mpiexec", "mpirun"):
        found = shutil.which(name)
        if found:
            return found
    return None


def open_mpi_flags(mpiexec: str) -> list[str]:
    """Open MPI refuses more ranks than cores, and root, without these flags; MPICH (Hydra) and
    Intel MPI need none."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
        text = (out.stdout + out.stderr).lower()
    except (OSError, subprocess.SubprocessError):
        return []
    if not any(name in text for name in ("open mpi", "openrte", "open-mpi")):
        return []
    return ["--oversubscribe"] + (["--allow-run-as-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else [])
