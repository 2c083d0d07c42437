"""Where checkpoints live, which is the newest, which to remove, and the output directory's
preparation before a run that writes or continues from them.

Checkpoints of output name ``cavity`` sit in ``<output>/checkpoints/cavity_<step>/`` (at least
six digits, like the snapshots). A directory with ``.tmp-<pid>`` in its name is one whose
writing was interrupted (or an old one being removed): never a checkpoint, removed by the
next run of that name.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from lobatto.errors import InputError
from lobatto.io.atomic import TEMP_MARK, os_reason, registered_temporary
from lobatto.io.checkpoint import INDEX_FILE, Checkpoint
from lobatto.io.output_dir import create_output_dir, find_outputs, find_temporaries, probe_output_dir

__all__ = ["CHECKPOINT_DIRECTORY", "checkpoint_path", "find_checkpoints", "latest_checkpoint", "later_outputs",
           "prepare_for_checkpoints", "prepare_for_restart", "prune_checkpoints", "remove_checkpoints",
           "remove_stale_checkpoints", "stale_checkpoints"]

CHECKPOINT_DIRECTORY = "checkpoints"


def checkpoint_path(output_dir, name: str, step: int) -> Path:
    return Path(output_dir) / CHECKPOINT_DIRECTORY / f"{name}_{step:06d}"


def _entries(output_dir) -> list[os.DirEntry]:
    try:
        with os.scandir(Path(output_dir) / CHECKPOINT_DIRECTORY) as entries:
            return [e for e in entries if e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def find_checkpoints(output_dir, name: str) -> list[tuple[int, Path]]:
    """(step, directory) of the finished checkpoints of ``name``, oldest first (finished:
    a final name and an index file; the index's contents are checked when it is opened)."""
    pattern = re.compile(rf"{re.escape(name)}_(\d{{6,}})")
    found = []
    for entry in _entries(output_dir):
        match = pattern.fullmatch(entry.name)
        if match and os.path.isfile(os.path.join(entry.path, INDEX_FILE)):
            found.append((int(match.group(1)), Path(entry.path)))
    return sorted(found)


def stale_checkpoints(output_dir, name: str) -> list[Path]:
    """Temporary checkpoint directories of ``name`` (interrupted writes and removals)."""
    pattern = re.compile(rf"{re.escape(name)}_\d{{6,}}(?:\.old)?{re.escape(TEMP_MARK)}\d+")
    return sorted(Path(e.path) for e in _entries(output_dir) if pattern.fullmatch(e.name))


def latest_checkpoint(output_dir, name: str) -> Path:
    """The newest finished checkpoint of ``name``; InputError when there is none."""
    found = find_checkpoints(output_dir, name)
    if not found:
        where = Path(output_dir) / CHECKPOINT_DIRECTORY
        raise InputError(f"{where}: no checkpoint of '{name}' to restart from (--restart latest looks here for "
                         "checkpoints of the case's [output] name; give --output, [output] name, or the "
                         "checkpoint's path)")
    return found[-1][1]


def _remove_tree(path: Path) -> None:
    """Rename first, then delete: a removal cut short leaves a temporary, never a damaged
    directory under a checkpoint's name."""
    doomed = path
    if TEMP_MARK not in path.name:
        doomed = path.with_name(f"{path.name}.old{TEMP_MARK}{os.getpid()}")
        os.replace(path, doomed)
    with registered_temporary(doomed):  # a signal meanwhile: removed all the same
        shutil.rmtree(doomed)


def remove_checkpoints(paths, what: str) -> None:
    for path in paths:
        try:
            _remove_tree(path)
        except FileNotFoundError:
            pass
        except OSError as err:
            raise InputError(f"{path}: cannot remove {what} ({os_reason(err)})") from None


def remove_stale_checkpoints(output_dir, name: str) -> None:
    remove_checkpoints(stale_checkpoints(output_dir, name), "an unfinished checkpoint")


def prune_checkpoints(output_dir, name: str, keep: int) -> list[Path]:
    """Remove all but the newest ``keep`` checkpoints of ``name``; returns those removed."""
    found = find_checkpoints(output_dir, name)
    doomed = [path for _, path in found[:max(0, len(found) - keep)]]
    for path in doomed:
        _remove_tree(path)
    return doomed


def _show(paths, directory: Path, most: int = 3) -> str:
    names = [Path(p).relative_to(directory).as_posix() for p in paths]
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def prepare_for_checkpoints(output_dir, name: str, overwrite: bool = False, removals: list | None = None) -> None:
    """Before a new run (rank 0, after io.output_dir.prepare_output_dir): checkpoints of
    ``name`` from an earlier run are refused (a later ``--restart latest`` would pick them)
    unless ``overwrite``, which removes them (or, given ``removals``, appends their removal to
    it: see prepare_output_dir); unfinished ones are removed either way."""
    directory = Path(output_dir)
    remove_stale_checkpoints(directory, name)
    earlier = [path for _, path in find_checkpoints(directory, name)]
    if earlier and not overwrite:
        raise InputError(f"{directory}: holds checkpoints of an earlier run ({_show(earlier, directory)}); use "
                         "--restart to continue it, --overwrite to replace them, or another --output directory")

    def remove_earlier() -> None:
        remove_checkpoints(earlier, "the earlier checkpoint")

    if removals is not None:
        removals.append(remove_earlier)
    else:
        remove_earlier()


_STEP_IN_NAME = r"_(?P<step>\d{6,})"


def later_outputs(output_dir, name: str, step: int, nek_count: int) -> list[Path]:
    """Outputs of ``name`` that a run continued from ``step`` would write again: snapshots
    (and their parts and pieces) of later steps, Nek5000 files numbered after ``nek_count``.
    Index files (.nek5000, .pvd) and summary.json are rewritten whole by the continued run."""
    stepped = re.compile(rf"{re.escape(name)}{_STEP_IN_NAME}[._]")
    numbered = re.compile(rf"{re.escape(name)}\d+\.f(?P<number>\d{{5}})")
    later = []
    for path in find_outputs(output_dir, name):
        match = stepped.match(path.name)
        if match and int(match.group("step")) > step:
            later.append(path)
            continue
        match = numbered.fullmatch(path.name)
        if match and int(match.group("number")) > nek_count:
            later.append(path)
    return later


def prepare_for_restart(output_dir, name: str, restart: str, overwrite: bool = False,
                        removals: list | None = None) -> Path:
    """Before a continued run (rank 0): the checkpoint named by ``restart`` (a path, or
    ``"latest"`` for the newest in ``output_dir``), opened and checked, is returned. The
    earlier run's outputs up to its step stay; what the earlier run wrote after it (snapshots,
    checkpoints), which the continued run writes again, is refused unless ``overwrite``,
    which removes exactly that (or, given ``removals``, appends that removal to it: see
    io.output_dir.prepare_output_dir). Temporaries of interrupted writes are removed."""
    directory = Path(output_dir)
    create_output_dir(directory)
    probe_output_dir(directory)
    path = latest_checkpoint(directory, name) if restart == "latest" else Path(restart)
    checkpoint = Checkpoint(path)
    checkpoint.check_restart_attributes()
    step = int(checkpoint.attrs["step"])
    writer = checkpoint.attrs.get("writer") or {}
    later = later_outputs(directory, name, step, int(writer.get("nek_count", 0)))
    later_checkpoints = [p for s, p in find_checkpoints(directory, name) if s > step]
    if (later or later_checkpoints) and not overwrite:
        raise InputError(f"{directory}: holds outputs written after step {step} of the checkpoint "
                         f"({_show(later + later_checkpoints, directory)}); the continued run writes them again: "
                         "use --overwrite to replace them, or another --output directory")
    remove_stale_checkpoints(directory, name)
    for temporary in find_temporaries(directory, name):
        temporary.unlink(missing_ok=True)

    def remove_later() -> None:
        for path_ in later:
            path_.unlink(missing_ok=True)
        remove_checkpoints(later_checkpoints, "a later checkpoint")

    if removals is not None:
        removals.append(remove_later)
    else:
        remove_later()
    return checkpoint.path
