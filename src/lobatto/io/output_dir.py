"""The output directory, made ready before a run computes anything.

:func:`prepare_output_dir` is called once per run, before the mesh is built, by one process
(rank 0 of a multi-rank run). It

1. creates the directory (and its parents), or refuses a path that exists and is not a
   directory;
2. checks that a file can be created, written, synced and removed there, so that a
   read-only directory, a full disk or a missing permission is reported at once instead of
   after the whole computation;
3. refuses, unless ``overwrite``, a directory that already holds the outputs of a run
   (``summary.json``, or this output name's snapshots), so that old and new snapshots are
   never mixed; with ``overwrite`` it deletes exactly those files first;
4. removes the temporary files (``<file>.tmp-<pid>``, :mod:`lobatto.io.atomic`) that a
   killed run of this output name left behind.

The files that belong to output name ``cavity`` (docs/output.md) are ``cavity_<step>.h5``,
``parts/cavity_<step>.r<rank>.h5``, ``cavity<rank>.f<number>``, ``cavity.nek5000``,
``cavity_<step>.vtu``, ``cavity_<step>_p<rank>.vtu``, ``cavity_<step>.pvtu``, ``cavity.pvd``,
``cavity_probes.csv``, ``cavity_probes.h5`` (time series) and ``cavity_probes.png`` (lobatto plot), the
same of ``cavity_forces`` (forces on named surfaces), ``cavity_dft.h5`` ([output.dft]), their
temporaries, and the directory's ``summary.json`` (one per directory). Nothing else is
ever removed: other output names' files and unrelated files stay.

:func:`longest_output_file_name` and :data:`MAX_OUTPUT_NAME_LENGTH` give the longest file
name derived from an output name, which the case-file check (``[output] name``) keeps
within the file system's limit of :data:`NAME_MAX` bytes.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path

from lobatto.errors import InputError
from lobatto.io.atomic import TEMP_MARK, os_reason
from lobatto.io.hdf5_parts import PART_DIRECTORY
from lobatto.io.nek5000_content import HEADER_BYTES

__all__ = [
    "prepare_output_dir",
    "create_output_dir",
    "probe_output_dir",
    "check_output_path",
    "find_outputs",
    "find_temporaries",
    "longest_output_file_name",
    "MAX_OUTPUT_NAME_LENGTH",
    "NAME_MAX",
    "SUMMARY_FILE",
]

#: longest file name (one path component, in bytes) that Linux file systems accept
NAME_MAX = 255
SUMMARY_FILE = "summary.json"
PROBE_PREFIX = ".lobatto-probe"

# The widest numbers lobatto puts into a file name, for the length check: step numbers
# (``{step:06d}``, wider past 999999) up to 10 digits, ranks up to 6 digits, Nek5000 file
# numbers 5 digits, process ids up to 7 digits (Linux's pid_max is at most 2**22).
_STEP_DIGITS, _RANK_DIGITS, _NEK_DIGITS, _PID_DIGITS = 10, 6, 5, 7


def longest_output_file_name(name: str) -> str:
    """The longest file name lobatto may derive from output name ``name``: the temporary
    of a VTK piece, ``<name>_<step>_p<rank>.vtu.tmp-<pid>`` with the widest numbers."""
    step, rank, pid = "9" * _STEP_DIGITS, "9" * _RANK_DIGITS, "9" * _PID_DIGITS
    finals = (
        f"{name}_{step}.h5",
        f"{name}_{step}.r{rank}.h5",
        f"{name}{rank}.f{'9' * _NEK_DIGITS}",
        f"{name}.nek5000",
        f"{name}_{step}_p{rank}.vtu",
        f"{name}_{step}.pvtu",
        f"{name}.pvd",
    )
    return max((f"{final}{TEMP_MARK}{pid}" for final in finals), key=lambda s: len(s.encode()))


#: the longest output name (in bytes) whose derived file names all fit in NAME_MAX
MAX_OUTPUT_NAME_LENGTH = NAME_MAX - len(longest_output_file_name("").encode())


# ------------------------------------------------------------------------ which files
def _patterns(name: str) -> tuple[re.Pattern, re.Pattern]:
    """(files in the directory, files in parts/) of output name ``name``. Nek5000 ranks are
    written without leading zeros (``{rank:01d}``), so ``cavity00.f00001`` is not cavity's."""
    n = re.escape(name)
    top = re.compile(rf"(?:{n}_\d{{6,}}\.h5|{n}(?P<rank>0|[1-9]\d*)\.f\d{{5}}|{n}\.nek5000"
                     rf"|{n}_\d{{6,}}(?:_p\d+)?\.vtu|{n}_\d{{6,}}\.pvtu|{n}\.pvd"
                     rf"|{n}_(?:probes|forces)\.(?:csv|h5|png)|{n}_dft\.h5)")
    part = re.compile(rf"{n}_\d{{6,}}\.r\d{{5,}}\.h5")
    return top, part


_TEMP = re.compile(rf"(?P<final>.+){re.escape(TEMP_MARK)}(?P<pid>\d+)")


def _nek_rank_is(path: Path, rank: int) -> bool:
    """Whether the Nek5000 file's header says it was written by ``rank`` (its ``fid0``):
    ``cavity10.f00001`` is rank 10 of ``cavity`` or rank 0 of ``cavity1``. A header that
    cannot be read (a temporary cut short) counts as yes."""
    try:
        with open(path, "rb") as fh:
            words = fh.read(HEADER_BYTES).decode("ascii", "replace").split()
    except OSError:
        return True
    if len(words) > 9 and words[0] == "#std" and words[9].isdigit():
        return int(words[9]) == rank
    return True


def _belongs(file_name: str, path: Path, top: re.Pattern) -> bool:
    match = top.fullmatch(file_name)
    if match is None:
        return False
    rank = match.groupdict().get("rank")
    return rank is None or _nek_rank_is(path, int(rank))


def _files(directory: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(directory) as entries:
            return [e for e in entries if not e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        return []


def _scan(directory: Path, name: str) -> tuple[list[Path], list[Path]]:
    """(outputs, temporaries) of output name ``name`` in ``directory``, sorted."""
    top, part = _patterns(name)
    outputs, temporaries = [], []
    for where, pattern in ((directory, top), (directory / PART_DIRECTORY, part)):
        for entry in _files(where):
            path = Path(entry.path)
            temp = _TEMP.fullmatch(entry.name)
            if temp is not None:
                final = temp.group("final")
                if (where == directory and final == SUMMARY_FILE) or _belongs(final, path, pattern):
                    temporaries.append(path)
            elif where == directory and entry.name == SUMMARY_FILE:
                outputs.append(path)
            elif _belongs(entry.name, path, pattern):
                outputs.append(path)
    return sorted(outputs), sorted(temporaries)


def find_outputs(directory: str | os.PathLike, name: str) -> list[Path]:
    """The earlier run's outputs in ``directory`` that a run of output name ``name`` would
    mix with or replace: ``summary.json`` and ``name``'s snapshots, index and part files."""
    return _scan(Path(directory), name)[0]


def find_temporaries(directory: str | os.PathLike, name: str) -> list[Path]:
    """Temporary files (``<file>.tmp-<pid>``) of output name ``name``'s files and of
    ``summary.json`` in ``directory`` and its ``parts/`` folder."""
    return _scan(Path(directory), name)[1]


# ------------------------------------------------------------------------ the checks
def check_output_path(path: str | os.PathLike, label: str = "", directory: bool = False,
                      create_parents: bool = True, hint: str = "") -> Path:
    """Before anything is measured or computed: InputError (exit 2, one line ``<label><path>:
    <why>``) when ``path`` cannot be written later as a file (or, with ``directory``, used as a
    directory): it is the other kind; a part of the path above it is an existing file ("afile
    is not a directory"); without ``create_parents``, its directory does not exist. Nothing is
    created. ``label`` names the option (``"--json "``), ``hint`` is added in parentheses to
    a directory that is a file. Returns ``Path(path)``."""
    path = Path(path)
    where = f"{label}{path}"
    if directory and (path.exists() or path.is_symlink()) and not path.is_dir():
        raise InputError(f"{where}: exists and is not a directory" + (f" ({hint})" if hint else ""))
    if not directory and path.is_dir():
        raise InputError(f"{where}: is a directory (expected a file name)")
    parent = path.parent
    for above in (parent, *parent.parents):
        if above.exists():  # False where a part of it is a file (ENOTDIR): look further up
            if not above.is_dir():
                raise InputError(f"{where}: {above} is not a directory")
            break
        if above.is_symlink():
            raise InputError(f"{where}: {above} is a broken symbolic link")
    if not create_parents and not parent.is_dir():
        raise InputError(f"{where}: the directory {parent} does not exist")
    return path


def create_output_dir(path: str | os.PathLike) -> bool:
    """Create the output directory (and parents) if it does not exist; True if it was created.
    InputError naming the path when it is something else or cannot be created."""
    directory = Path(path)
    if directory.is_dir():
        return False
    if directory.exists() or directory.is_symlink():
        raise InputError(f"{directory}: output path exists and is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError(f"{directory}: output path exists and is not a directory") from None
    except OSError as err:
        raise InputError(f"{directory}: cannot create the output directory ({os_reason(err)})") from None
    return True


def probe_output_dir(directory: Path) -> None:
    """Create, write, sync and remove a small file: InputError naming the directory unless it
    takes new files (read-only, full disk, no permission: found before a run computes)."""
    probe = directory / f"{PROBE_PREFIX}{TEMP_MARK}{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b"lobatto checks that this directory takes new files\n")
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(probe)
        raise InputError(f"{directory}: cannot write to the output directory ({os_reason(err)})") from None
    try:
        os.unlink(probe)
    except FileNotFoundError:
        pass
    except OSError as err:
        raise InputError(f"{directory}: cannot remove files in the output directory ({os_reason(err)})") from None


def _stale_probes(directory: Path) -> list[Path]:
    mine = f"{PROBE_PREFIX}{TEMP_MARK}{os.getpid()}"
    return sorted(Path(e.path) for e in _files(directory)
                  if e.name.startswith(PROBE_PREFIX + TEMP_MARK) and e.name != mine)


def _remove(paths: list[Path], what: str) -> None:
    for path in paths:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as err:
            raise InputError(f"{path}: cannot remove {what} ({os_reason(err)})") from None


def _show(paths: list[Path], directory: Path, most: int = 3) -> str:
    names = [_relative(p, directory) for p in paths]
    text = ", ".join(names[:most])
    return text + (f" and {len(names) - most} more" if len(names) > most else "")


def _relative(path: Path, directory: Path) -> str:
    return path.relative_to(directory).as_posix()


def prepare_output_dir(path: str | os.PathLike, name: str, overwrite: bool = False,
                       removals: list | None = None) -> dict:
    """Make ``path`` ready for a run whose files are named after ``name`` ([output] name).

    Call it before any computation, in one process only (rank 0). In order:

    * creates ``path`` with its parents if it does not exist;
    * checks that a file can be created, written, synced and removed in it (a probe file
      ``.lobatto-probe.tmp-<pid>``);
    * if it holds the outputs of an earlier run (``summary.json``, or files of ``name``:
      ``<name>_<step>.h5``, ``parts/<name>_<step>.r<rank>.h5``, ``<name><rank>.f<number>``,
      ``<name>.nek5000``, ``<name>_<step>[_p<rank>].vtu``, ``<name>_<step>.pvtu``,
      ``<name>.pvd``) and ``overwrite`` is false: refuses, changing nothing;
    * removes every temporary file of ``name``'s files and of ``summary.json``
      (``<file>.tmp-<pid>``, in the directory and in ``parts/``), whatever its pid: the run
      that starts now owns the name, and a temporary is never a finished output (two runs
      writing the same name into one directory at once are not supported). Leftover probe
      files of other processes are removed too;
    * with ``overwrite``: deletes those earlier outputs (and ``parts/`` if that leaves it
      empty). Other files, other output names' included, are never touched. Given a list
      ``removals``, that deletion is appended to it (a callable) instead, for the caller to run
      once the run is set up: a case refused at set-up then leaves the earlier outputs in place.

    Returns ``{"directory": str(path), "created": bool, "removed_temporaries": [names],
    "removed_outputs": [names], "free_bytes": int}`` (names relative to ``path``, sorted,
    POSIX separators; ``free_bytes`` the space left for an unprivileged user, None if the
    system does not say).

    Raises :class:`lobatto.errors.InputError` (exit 2), one line naming the path and the
    system's reason: the path exists and is not a directory; it cannot be created; it does
    not take new files (permission denied, read-only file system, no space left on device);
    it holds an earlier run's outputs and ``overwrite`` is false ("... use --overwrite to
    replace them, or another --output directory"); a stale file cannot be removed.
    """
    directory = Path(path)
    created = create_output_dir(directory)
    probe_output_dir(directory)
    try:
        outputs, temporaries = _scan(directory, name)
        temporaries += _stale_probes(directory)
    except OSError as err:
        raise InputError(f"{directory}: cannot read the output directory ({os_reason(err)})") from None
    if outputs and not overwrite:
        raise InputError(
            f"{directory}: holds the outputs of an earlier run ({_show(outputs, directory)}); "
            f"use --overwrite to replace them, or another --output directory"
        )
    _remove(temporaries, "a temporary file of an interrupted run")

    def remove_earlier() -> None:
        _remove(outputs, "the earlier output")
        parts = directory / PART_DIRECTORY
        if any(p.parent == parts for p in outputs + temporaries):
            with contextlib.suppress(OSError):
                parts.rmdir()  # only if empty

    if overwrite and removals is not None:
        removals.append(remove_earlier)
    elif overwrite:
        remove_earlier()
    try:
        free = int(shutil.disk_usage(directory).free)
    except OSError:
        free = None
    return {
        "directory": str(directory),
        "created": created,
        "removed_temporaries": [_relative(p, directory) for p in sorted(temporaries)],
        "removed_outputs": [_relative(p, directory) for p in outputs] if overwrite else [],
        "free_bytes": free,
    }
