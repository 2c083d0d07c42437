"""One run per output directory: an advisory lock held for the run's lifetime.

A run (``lobatto run``, ``lobatto.run``, a :class:`lobatto.Simulation`) takes
``<output>/.lobatto.lock`` with :func:`fcntl.flock` before it writes or deletes anything in
the directory, and holds it until it ends. A second run into the same directory, whatever
its output name, and ``--overwrite`` of a live run are refused (exit 2) with one line naming
the other run's PID, host, start time and command, which the holder writes into the file.

The kernel drops a flock when its holder dies (SIGKILL, a crash, power loss of the client),
so a lock file left behind by a dead process is taken over by the next run: there is no
"stale lock" to clean up by hand. On release the holder removes the file while it still
holds the lock; a run that opened the old file meanwhile sees, once it gets the lock, that
the path no longer names the file it locked, and tries again (two runs can never both hold
the directory).

Within one process the lock is taken once (``lock_output_dir``, as ``lobatto run`` does before
it writes or removes anything) and handed to one run at a time (``claim_output_dir``, as a
Simulation or steady run does at set-up): the command line's lock is handed to the run it
starts, while a second live run of the same process into the directory (two Simulations set
up, the first not run to its end nor collected) is refused as another process's run is.

flock is honoured by every local file system and by NFS (Linux emulates it with NFS byte-range
locks, which the server arbitrates between clients); some FUSE and object-store mounts ignore
it, and there two runs are not detected.
"""

from __future__ import annotations

import atexit
import errno
import gc
import json
import os
import socket
import sys
import time
from pathlib import Path

from lobatto.errors import InputError
from lobatto.io.atomic import os_reason
from lobatto.io.output_dir import create_output_dir

try:
    import fcntl
except ImportError:  # not POSIX: no lock (two runs into one directory are not detected)
    fcntl = None

__all__ = ["LOCK_FILE", "RunLock", "lock_output_dir", "release_output_dir", "claim_output_dir", "release_claim",
           "release_all", "holder_of"]

LOCK_FILE = ".lobatto.lock"
#: a run that holds the lock writes its description right after taking it; a reader that
#: finds the file still empty waits this long for it
_DESCRIPTION_WAIT = 0.5

_held: dict[str, "RunLock"] = {}  # resolved directory -> this process's lock on it


class RunLock:
    """This process's lock on one output directory (``count`` holders in this process; ``run``:
    whether a run has claimed it)."""

    def __init__(self, directory: Path, fd: int):
        self.directory, self.fd, self.count, self.run = directory, fd, 1, False

    @property
    def path(self) -> Path:
        return self.directory / LOCK_FILE

    def release(self) -> None:
        """Remove the lock file (still holding the lock, so no other run is misled), then drop
        the lock. Best effort: a directory removed meanwhile leaves nothing to do."""
        if self.fd < 0:
            return
        try:
            if _same_file(self.fd, self.path):
                os.unlink(self.path)
        except OSError:
            pass
        try:
            os.close(self.fd)  # closing drops the flock
        except OSError:
            pass
        self.fd = -1


def _key(directory: Path) -> str:
    return os.path.realpath(directory)


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _description() -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime()),
            "command": " ".join([os.path.basename(sys.argv[0] or "python"), *sys.argv[1:]])[:300]}


def holder_of(directory) -> dict | None:
    """The description the run holding ``directory``'s lock wrote (pid, host, started,
    command), None when it cannot be read."""
    path = Path(directory) / LOCK_FILE
    deadline = time.monotonic() + _DESCRIPTION_WAIT
    while True:
        try:
            text = path.read_text(encoding="utf-8")
            found = json.loads(text) if text.strip() else None
        except (OSError, ValueError, UnicodeDecodeError):
            found = None
        if isinstance(found, dict) or time.monotonic() > deadline:
            return found if isinstance(found, dict) else None
        time.sleep(0.02)


def _refusal(directory: Path, overwrite: bool) -> InputError:
    who = holder_of(directory)
    if who is None:
        other = "another lobatto run (its PID could not be read)"
    else:
        other = (f"another lobatto run (PID {who.get('pid', '?')} on {who.get('host', '?')}, started "
                 f"{who.get('started', '?')}: {who.get('command', '?')})")
    what = ("--overwrite does not replace the files of a run that is still writing them" if overwrite else
            "two runs into one directory would mix or overwrite each other's files")
    return InputError(f"{directory}: {other} is using this output directory; {what}: wait for it to end, stop "
                      f"it, or choose another --output directory")


def lock_output_dir(directory, overwrite: bool = False) -> RunLock:
    """Create ``directory`` if needed and take (or, when this process holds it already, count
    once more) its lock. Call it on one rank (rank 0) inside ``collective_errors``. InputError
    (exit 2, one line naming the holder's PID) when another process holds it; ``overwrite``
    only words that refusal for ``--overwrite``."""
    directory = Path(directory)
    create_output_dir(directory)
    key = _key(directory)
    held = _held.get(key)
    if held is not None:
        held.count += 1
        return held
    path = directory / LOCK_FILE
    if fcntl is None:
        lock = RunLock(directory, -1)
        _held[key] = lock
        return lock
    for _ in range(100):  # a new attempt only when the holder released (and removed) the file meanwhile
        try:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except PermissionError:  # another user's lock file (its run ended or was killed): flock reads
                if not path.is_file():
                    raise
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as err:
            # as io.output_dir's probe words it: the lock file is the first file a run creates
            raise InputError(f"{directory}: cannot write to the output directory ({os_reason(err)})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise _refusal(directory, overwrite) from None
            raise InputError(f"{path}: cannot lock the output directory ({os_reason(err)})") from None
        if not _same_file(fd, path):  # released and removed by its holder after we opened it
            os.close(fd)
            continue
        try:
            os.ftruncate(fd, 0)
            os.write(fd, (json.dumps(_description()) + "\n").encode())
        except OSError:
            pass  # the lock holds without its description; a refused run then says so
        lock = RunLock(directory, fd)
        if not _held:
            atexit.register(release_all)  # `lobatto run` holds its lock until the process ends
        _held[key] = lock
        return lock
    raise InputError(f"{path}: cannot lock the output directory (the lock file keeps being replaced)")


def release_output_dir(directory) -> None:
    """One holder of this process's lock on ``directory`` is done; the last releases it."""
    key = _key(Path(directory))
    held = _held.get(key)
    if held is None:
        return
    held.count -= 1
    if held.count <= 0:
        held.release()
        _held.pop(key, None)


def claim_output_dir(directory) -> RunLock:
    """A run's hold on ``directory`` (rank 0, inside ``collective_errors``): the lock this
    process holds (``lobatto run`` took it) or else a new one, claimed by this run. InputError
    (one line naming this process's PID) when another run of this process has claimed it and
    not released it; another process's lock is refused as in :func:`lock_output_dir`."""
    directory = Path(directory)
    held = _held.get(_key(directory))
    if held is not None and held.run:
        gc.collect()  # a dropped run in a reference cycle: its finalizer releases the claim now
    if held is not None and held.run:
        raise InputError(f"{directory}: another run of this process (PID {os.getpid()}: a Simulation or steady run "
                         "set up and not yet run to its end) is using this output directory; two runs into one "
                         "directory would mix or overwrite each other's files: finish that run first (run() to "
                         "its end, or close() it), or choose another output directory")
    lock = lock_output_dir(directory)
    lock.run = True
    return lock


def release_claim(directory) -> None:
    """The run that claimed ``directory`` is done: the next run may claim it; the lock itself
    is released with its last holder (:func:`release_output_dir`)."""
    held = _held.get(_key(Path(directory)))
    if held is not None:
        held.run = False
    release_output_dir(directory)


def release_all() -> None:
    """Release every lock this process holds (before leaving on a signal)."""
    for key, held in list(_held.items()):
        held.release()
        _held.pop(key, None)
