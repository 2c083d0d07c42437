"""Atomic file replacement.

Every writer in :mod:`lobatto.io` writes to ``<name>.tmp-<pid>`` in the
destination's own directory, flushes and fsyncs it, and then moves it into
place with :func:`os.replace`. A reader therefore sees either the previous
file or the complete new one, never a partial file; if the write fails the
temporary file is removed and the previous file is left untouched.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO, Iterator

__all__ = [
    "atomic_path",
    "atomic_open",
    "atomic_write_bytes",
    "atomic_write_text",
    "temp_path_for",
]


def temp_path_for(path: str | os.PathLike) -> Path:
    """The temporary name used while ``path`` is being written."""
    p = Path(path)
    return p.with_name(f"{p.name}.tmp-{os.getpid()}")


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable; best effort (not every platform allows it)."""
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
    normally; on an exception it is deleted and ``path`` is not touched.
    """
    final = Path(path)
    tmp = temp_path_for(final)
    try:
        yield tmp
        if fsync:
            _fsync_file(tmp)
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if fsync:
        _fsync_dir(final.parent if str(final.parent) else Path("."))


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
        _fsync_dir(Path(path).parent)


def atomic_write_bytes(path: str | os.PathLike, data: bytes, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_open(path, "wb", fsync=fsync) as fh:
        fh.write(data)


def atomic_write_text(path: str | os.PathLike, text: str, fsync: bool = True, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_open(path, "w", fsync=fsync, encoding=encoding) as fh:
        fh.write(text)
