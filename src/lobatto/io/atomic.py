"""Atomic file replacement.

Every writer in :mod:`lobatto.io` writes to ``<name>.tmp-<pid>`` in the
destination's own directory, flushes and fsyncs it, and then moves it into
place with :func:`os.replace`. A reader therefore sees either the previous
file or the complete new one, never a partial file; if the write fails the
temporary file is removed and the previous file is left untouched.

An operating-system error while writing (``OSError`` from open, write, fsync or
rename, h5py's included: disk full, permission denied, read-only file system) is
raised as :class:`lobatto.errors.OutputError`, one line naming the final file (never
the temporary) and the reason: ``"out/cavity_000100.h5: cannot write (no space left
on device)"``. Other exceptions pass through unchanged (the temporary is removed all
the same). Each temporary being written is registered (:func:`registered_temporary`) so
that ``lobatto run`` removes this process's temporaries when SIGINT or SIGTERM ends it
(:func:`remove_temporaries`). A run killed outright (SIGKILL, power loss) can leave a
temporary behind; :func:`lobatto.io.output_dir.prepare_output_dir` removes them before the
next run.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
from pathlib import Path
from typing import IO, Iterator

from lobatto.errors import OutputError

__all__ = [
    "atomic_path",
    "atomic_open",
    "atomic_write_bytes",
    "atomic_write_text",
    "h5_create",
    "temp_path_for",
    "output_errors",
    "os_reason",
    "fsync_dir",
    "forget_temporary",
    "register_temporary",
    "registered_temporary",
    "remove_temporaries",
    "TEMP_MARK",
]

#: what separates a file's name from the writer's pid in its temporary name
TEMP_MARK = ".tmp-"


def temp_path_for(path: str | os.PathLike) -> Path:
    """The temporary name used while ``path`` is being written: ``<name>.tmp-<pid>``."""
    p = Path(path)
    return p.with_name(f"{p.name}{TEMP_MARK}{os.getpid()}")


_live: dict[Path, int] = {}  # this process's temporaries being written (files or directories)
_live_lock = threading.RLock()  # re-entrant: the SIGTERM handler may run while the main thread holds it


def register_temporary(path: str | os.PathLike) -> None:
    """``path``, a temporary file or directory this process writes, is removed by
    :func:`remove_temporaries` if a signal ends the process before :func:`forget_temporary`.
    Forget it before it becomes the only copy of something kept (before a swap)."""
    path = Path(path)
    with _live_lock:
        _live[path] = _live.get(path, 0) + 1


def forget_temporary(path: str | os.PathLike) -> None:
    path = Path(path)
    with _live_lock:
        if _live.get(path, 0) > 1:
            _live[path] -= 1
        else:
            _live.pop(path, None)


@contextlib.contextmanager
def registered_temporary(path: str | os.PathLike) -> Iterator[Path]:
    """register_temporary for the block."""
    register_temporary(path)
    try:
        yield Path(path)
    finally:
        forget_temporary(path)


def remove_temporaries() -> list[Path]:
    """Remove every registered temporary of this process (on SIGINT / SIGTERM, just before it
    exits); returns those removed. Safe to call from a signal handler or another thread."""
    with _live_lock:
        paths = list(_live)
        _live.clear()
    removed = []
    for path in paths:
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
        except OSError:
            pass
    return removed


_ERRNO_IN_TEXT = re.compile(r"errno\s*=\s*(\d+)")
_MESSAGE_IN_TEXT = re.compile(r"error message\s*=\s*'([^']*)'")
#: h5py's "Unable to synchronously open object (object 'x' doesn't exist)": a generic first part
#: ("Unable to [synchronously] <do what>"), HDF5's detail inside the parentheses
_DETAIL_IN_TEXT = re.compile(r"Unable to [^(]*\((?P<detail>[^()=]+)\)\s*")


def os_reason(err: BaseException) -> str:
    """A short, one-line reason for an OSError (or h5py's KeyError, RuntimeError, ValueError):
    the system's text for its errno ("no space left on device"), or HDF5's detail after h5py's
    generic "Unable to ..." ("object 'x' doesn't exist", "file signature not found"), never the
    whole text h5py builds around it (which names the file, often the temporary one, and spans
    lines)."""
    code = getattr(err, "errno", None)
    if isinstance(err, KeyError) and err.args and isinstance(err.args[0], str):
        text = err.args[0]  # str(KeyError) quotes its text
    else:
        text = str(getattr(err, "strerror", None) or err)
    if not isinstance(code, int) or code <= 0:
        found = _ERRNO_IN_TEXT.search(text)  # h5py: "... errno = 28, error message = '...'"
        code = int(found.group(1)) if found else None
    inner = err.__cause__ or err.__context__
    if not code and isinstance(inner, OSError) and isinstance(inner.errno, int) and inner.errno > 0:
        code = inner.errno  # h5py's "file close failed" over the file object's own error (io.atomic.h5_create)
    if code:
        reason = os.strerror(code)
    elif found := _MESSAGE_IN_TEXT.search(text):
        reason = found.group(1)
    elif found := _DETAIL_IN_TEXT.fullmatch(text):
        reason = found.group("detail")
    else:
        reason = text.split("(")[0]
    reason = " ".join(reason.split())
    if not reason:
        return type(err).__name__
    if len(reason) > 1 and reason[0].isupper() and reason[1].islower():
        reason = reason[0].lower() + reason[1:]
    return reason if len(reason) <= 120 else reason[:117] + "..."


@contextlib.contextmanager
def output_errors(path: str | os.PathLike) -> Iterator[None]:
    """Turn an OSError raised inside the block into an OutputError naming ``path``."""
    try:
        yield
    except OSError as err:
        raise OutputError(f"{path}: cannot write ({os_reason(err)})") from err


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (fsync the directory); best effort, not every
    platform allows it. For writers that rename a temporary themselves (io/nek5000_mpi.py)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, fsync: bool = True) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces ``path``.

    For writers that open the file themselves (h5py). The file written at the
    yielded path is fsynced and renamed over ``path`` when the block exits
    normally; on an exception it is deleted and ``path`` is not touched. An
    OSError (from the block, the fsync or the rename) becomes an OutputError
    naming ``path``.
    """
    final = Path(path)
    tmp = temp_path_for(final)
    try:
        with output_errors(final), registered_temporary(tmp):
            yield tmp
            if fsync:
                _fsync_file(tmp)
            os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if fsync:
        fsync_dir(final.parent if str(final.parent) else Path("."))


@contextlib.contextmanager
def h5_create(path: str | os.PathLike):
    """``h5py.File(path, "w")``, written through a Python file object and without a chunk
    cache (each chunk goes to the file as it is written). A write that fails (a full disk) then
    raises OSError where it happens. Through h5py's own POSIX driver, or with chunks still in
    the cache, HDF5 keeps a file it can neither flush nor close: "Exception ignored" tracebacks,
    a RuntimeError from the close, and a segmentation fault at exit (h5py issue 914; seen with
    h5py 3.16 and HDF5 2.0)."""
    import h5py

    with open(path, "w+b") as fh, h5py.File(fh, "w", rdcc_nbytes=0) as f:  # HDF5 may read back
        yield f


@contextlib.contextmanager
def h5_output(path: str | os.PathLike, attrs: dict):
    """An output HDF5 file, written atomically (atomic_path, h5_create), whose root attributes
    are the run's ``attrs`` (the effective configuration, the equations, the output name) and
    ``lobatto_version``, in that order; the caller adds the rest inside the ``with``."""
    from lobatto import __version__

    with atomic_path(path) as tmp, h5_create(tmp) as f:
        for key, value in attrs.items():
            f.attrs[key] = value
        f.attrs["lobatto_version"] = __version__
        yield f


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", fsync: bool = True, **kwargs) -> Iterator[IO]:
    """Like :func:`open` for writing, but the file appears atomically on success.

    ``mode`` is ``"w"`` (text, UTF-8 unless ``encoding`` is given) or ``"wb"``.
    """
    if mode not in ("w", "wb", "wt"):
        raise ValueError(f"atomic_open supports modes 'w' and 'wb', not {mode!r}")
    if "b" not in mode:
        kwargs.setdefault("encoding", "utf-8")
    with atomic_path(path, fsync=False) as tmp:
        with open(tmp, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
    if fsync:
        fsync_dir(Path(path).parent)


def atomic_write_bytes(path: str | os.PathLike, data: bytes, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_open(path, "wb", fsync=fsync) as fh:
        fh.write(data)


def atomic_write_text(path: str | os.PathLike, text: str, fsync: bool = True, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_open(path, "w", fsync=fsync, encoding=encoding) as fh:
        fh.write(text)
