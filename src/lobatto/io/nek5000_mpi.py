"""One Nek5000 field file written by all ranks together, through MPI-IO.

Each rank writes its own elements at their places in the file (io/nek5000_content.py:
elements in order of their global number, so a rank's elements are scattered through every
section):

1. the ranks agree that each prepared its part, and on the element count ``nelgt``;
2. rank 0 creates the temporary ``<file>.tmp-<rank 0's pid>``; every rank opens it
   (``MPI.File.Open``), sets a file view that selects exactly its byte ranges (header and
   tag on rank 0, its entries of the element map, its elements in every section), and
   writes them with collective ``Write_at_all`` calls, the same number on every rank;
3. ``Sync``, ``Close``; the ranks agree that every write succeeded; rank 0 renames the
   temporary to the file (io/atomic.py's rule: a reader sees the old file or the new one).

An error on any rank (a full disk) is raised on every rank as an OutputError naming the
file, after the temporary is removed. A rank that failed keeps taking part in the remaining
collective calls with nothing to write, so that no rank is left waiting in one.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Callable

import numpy as np

from lobatto.errors import OutputError
from lobatto.io.atomic import forget_temporary, fsync_dir, os_reason, register_temporary, temp_path_for
from lobatto.io.nek5000_content import ENDIAN_TAG, PREAMBLE_BYTES, FieldFileContent, field_file_header

#: largest byte range in one block of the file view (the count of a block is a C int)
_MAX_RUN_BYTES = 1 << 30
_PRIME = 2**31 - 1  # squares of element numbers are summed modulo this: no overflow


def _mpi_errno(exc) -> int | None:
    from mpi4py import MPI

    classes = {"ERR_NO_SPACE": errno.ENOSPC, "ERR_QUOTA": errno.EDQUOT, "ERR_ACCESS": errno.EACCES,
               "ERR_READ_ONLY": errno.EROFS, "ERR_NO_SUCH_FILE": errno.ENOENT, "ERR_IO": errno.EIO}
    error_class = exc.Get_error_class()
    return next((code for name, code in classes.items() if getattr(MPI, name, None) == error_class), None)


#: system errors that ROMIO reports as its generic I/O error class, named in its error text
_NAMED_IN_TEXT = (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EROFS, errno.EPERM, errno.ENOENT)
_GENERIC = os.strerror(errno.EIO).lower()


def _reason(exc: BaseException) -> str:
    """One line saying why a write failed: the system's text for the error, lower case."""
    if isinstance(exc, OSError):
        return os_reason(exc)
    text = exc.Get_error_string()
    code = next((c for c in _NAMED_IN_TEXT if os.strerror(c) in text), None) or _mpi_errno(exc)
    if code is not None:
        return os.strerror(code).lower()
    return " ".join(text.split(", error stack:")[0].split()) or type(exc).__name__


def _is_write_error(exc: BaseException) -> bool:
    from mpi4py import MPI

    return isinstance(exc, (OSError, MPI.Exception))


def _agree(comm, path: Path, failure: BaseException | None) -> BaseException | None:
    """Collective: the error every rank is to raise (None when no rank failed). The rank
    that failed gets its own (an OutputError for a write error); the others one that names
    that rank."""
    mine = None
    if failure is not None:
        mine = ("output", _reason(failure)) if _is_write_error(failure) else (type(failure).__name__, str(failure))
    everyone = comm.allgather(mine)
    failed = [(rank, what) for rank, what in enumerate(everyone) if what is not None]
    if not failed:
        return None
    if failure is not None and not _is_write_error(failure):
        return failure
    # ROMIO's aggregator ranks see the system's error; other ranks may see a generic one
    named = [(rank, what) for rank, what in failed if what[0] == "output" and what[1] != _GENERIC]
    rank, (kind, text) = (named or failed)[0]
    if kind == "output":
        where = "" if rank == comm.Get_rank() else f", on rank {rank}"
        error = OutputError(f"{path}: cannot write ({text}{where})")
        error.__cause__ = failure
        return error
    if kind == "ValueError":
        return ValueError(f"rank {rank}: {text}")
    return RuntimeError(f"writing {path} failed on rank {rank}: {kind}: {text}")


def element_runs(ids: np.ndarray, base: int, element_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """(byte offsets, byte lengths) of the ranges that elements ``ids`` (0-based, ascending)
    fill in a section starting at ``base``: consecutive numbers make one range, split where
    a range would exceed _MAX_RUN_BYTES."""
    if ids.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.diff(ids) != 1) + 1
    first = np.concatenate([[0], starts])
    lengths = np.diff(np.concatenate([first, [ids.size]]))
    cap = max(1, _MAX_RUN_BYTES // element_bytes)
    pieces = -(-lengths // cap)
    run = np.repeat(np.arange(first.size), pieces)
    within = np.arange(run.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    start = first[run] + within * cap
    count = np.minimum(cap, lengths[run] - within * cap)
    return base + ids[start] * element_bytes, count * element_bytes


def _file_view(content: FieldFileContent, nelgt: int, rank: int):
    """The MPI datatype selecting this rank's byte ranges of the file, in file order."""
    from mpi4py import MPI

    offsets, lengths = [], []
    if rank == 0:
        offsets.append(np.array([0], np.int64))
        lengths.append(np.array([PREAMBLE_BYTES], np.int64))
    bases = [PREAMBLE_BYTES] + content.section_offsets(nelgt)
    sizes = [4] + [s.element_bytes for s in content.sections]
    for base, size in zip(bases, sizes):
        o, n = element_runs(content.ids, base, size)
        offsets.append(o)
        lengths.append(n)
    offsets, lengths = np.concatenate(offsets), np.concatenate(lengths)
    if offsets.size == 0:
        return None
    return MPI.BYTE.Create_hindexed(lengths.astype(np.int64).tolist(), offsets.tolist()).Commit()


def _write_at_all(fh, offset: int, data: np.ndarray) -> None:
    """One collective write of this rank's next bytes (``offset`` counts bytes in its view)."""
    from mpi4py import MPI

    fh.Write_at_all(offset, [data, MPI.BYTE])


def write_field_file_collective(path, prepare: Callable[[], FieldFileContent], comm, time: float, step: int,
                                fid: int = 0, nfiles: int = 1) -> None:
    """Collective: write the field file ``path`` from every rank's ``prepare()`` (see the
    module's docstring); raises the same error on every rank when any rank fails."""
    from mpi4py import MPI

    final, rank = Path(path), comm.Get_rank()
    content, failure = None, None
    try:
        content = prepare()
        ids = content.ids
        summary = ((content.rdcode, content.wdsz, content.n, content.dim), int(ids.size), int(ids.sum()),
                   int(((ids % _PRIME) ** 2 % _PRIME).sum() % _PRIME), content.chunk_counts())
    except Exception as exc:  # noqa: BLE001 - agreed on below, then raised on every rank
        failure, summary = exc, None
    error = _agree(comm, final, failure)
    if error is not None:
        raise error
    parts = comm.allgather(summary)
    nelgt = sum(p[1] for p in parts)
    numbers_ok = (sum(p[2] for p in parts) == nelgt * (nelgt - 1) // 2
                  and sum(p[3] for p in parts) % _PRIME == (nelgt - 1) * nelgt * (2 * nelgt - 1) // 6 % _PRIME)
    if len({p[0] for p in parts}) != 1:  # rdcode, word size, points per axis and dimension
        raise ValueError(f"{final}: the ranks describe different files ({sorted({p[0] for p in parts})})")
    if not numbers_ok:
        raise ValueError(f"{final}: the ranks' element_ids do not number the {nelgt} elements 1..{nelgt} once each")
    calls = [max(counts) for counts in zip(*(p[4] for p in parts))]

    tmp = Path(comm.bcast(str(temp_path_for(final)) if rank == 0 else None))
    if rank == 0:
        register_temporary(tmp)  # removed if a signal ends the run (forgotten once renamed or removed)
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666))
        except OSError as exc:
            failure = exc
    error = _agree(comm, final, failure)
    if error is not None:
        if rank == 0:
            forget_temporary(tmp)
        raise error
    fh = None
    try:
        fh = MPI.File.Open(comm, str(tmp), MPI.MODE_WRONLY)
    except MPI.Exception as exc:
        failure = exc
    # ROMIO's open fails on every rank or on none; had it succeeded on some only, their
    # handles are dropped unclosed (closing is collective and would wait for the others).
    error = _agree(comm, final, failure)
    if error is None:
        failure = _write_parts(fh, content, nelgt, rank, calls, time, step, fid, nfiles)
        error = _agree(comm, final, failure)
    if error is None and rank == 0:
        try:
            os.replace(tmp, final)
        except OSError as exc:
            failure = exc
        fsync_dir(final.parent if str(final.parent) else Path("."))
    if error is None:
        error = _agree(comm, final, failure)
    if error is not None and rank == 0:
        with contextlib.suppress(OSError):
            tmp.unlink()
    if rank == 0:
        forget_temporary(tmp)
    if error is not None:
        comm.Barrier()  # the temporary is gone on every rank's return
        raise error


def _write_parts(fh, content: FieldFileContent, nelgt: int, rank: int, calls: list[int], time: float,
                 step: int, fid: int, nfiles: int) -> BaseException | None:
    """Collective: this rank's bytes into the open file, then Sync and Close; the first
    error this rank met (it still makes every collective call), or None."""
    from mpi4py import MPI

    failure = None
    empty = np.zeros(0, np.uint8)
    position = 0

    def collective(call, *args):
        nonlocal failure
        try:
            call(*args)
        except (MPI.Exception, OSError) as exc:
            failure = failure or exc
            return False
        return True

    view = _file_view(content, nelgt, rank)
    collective(fh.Set_view, 0, MPI.BYTE, view if view is not None else MPI.BYTE)
    first = (content.ids + 1).astype(np.int32).view(np.uint8)
    if rank == 0:
        preamble = field_file_header(content.wdsz, content.n, nelgt, nelgt, time, step, fid, nfiles, content.rdcode,
                                     content.dim)
        first = np.concatenate([np.frombuffer(preamble, np.uint8),
                                np.array([ENDIAN_TAG], np.float32).view(np.uint8), first])
    pending = [iter([first])] + [content.chunks(section) for section in content.sections]
    for chunks, count in zip(pending, [1] + calls):
        for _ in range(count):
            data = next(chunks, empty) if failure is None else empty
            if collective(_write_at_all, fh, position if failure is None else 0, data):
                position += data.size
    collective(fh.Sync)
    collective(fh.Close)
    if view is not None:
        view.Free()
    return failure
