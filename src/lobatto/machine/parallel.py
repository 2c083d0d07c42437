"""MPI context: which communicator a run uses, collective error handling, reductions.

One rank per GPU. Everything here is safe without mpi4py: a serial run has comm None.

Errors across ranks (docs/parallel.md, "Errors and interrupts"): code that may fail on some
ranks only runs inside ``collective_errors(comm)``, after which every rank raises the same
error, marked ``collective``; the command line then prints it once (rank 0) and every rank
exits with its code. A rank whose partners do not reach that agreement within
ABORT_SECONDS (they are stuck elsewhere) prints its error and ends the job itself
(``end_job``: the launcher then stops the other ranks). Any other error under MPI ends the
job the same way, so no rank is left waiting in a collective call.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager

from lobatto.errors import InputError, LobattoError

# Set by mpiexec/srun launchers; used to tell "serial" from "MPI without mpi4py".
_LAUNCHER_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS")
_LAUNCHER_RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID")
# Ranks on this node, as launchers tell them (Hydra/MPICH, Open MPI, Slurm).
_LAUNCHER_LOCAL_SIZE_VARIABLES = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE")
#: how long a failed rank waits for the others to join the error agreement before ending the job
ABORT_SECONDS = 5.0
ABORT_GRACE_SECONDS = 0.3  # between a rank's last output and MPI_Abort


def launched_size() -> int:
    """Number of ranks the launcher started (1 when none), from its environment only."""
    for v in _LAUNCHER_SIZE_VARIABLES:
        value = os.environ.get(v, "")
        if value.isdigit():
            return max(int(value), 1)
    return 1


def launched_rank() -> int:
    for v in _LAUNCHER_RANK_VARIABLES:
        value = os.environ.get(v, "")
        if value.isdigit():
            return int(value)
    return 0


def launched_local_size() -> int:
    """Ranks the launcher started on this node (1 when it does not say)."""
    for v in _LAUNCHER_LOCAL_SIZE_VARIABLES:
        value = os.environ.get(v, "").split("(")[0]
        if value.isdigit():
            return max(int(value), 1)
    return 1


def _exit_now(code: int) -> None:
    """Leave at once with ``code``. Under MPI through MPI_Abort, which makes the launcher stop
    every rank and return that code (a plain exit of one rank can let the launcher kill the
    others first and report their signal instead); its own report is silenced, ours is out."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    mpi = sys.modules.get("mpi4py.MPI")
    try:
        if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
            # the launcher forwards our stderr through a pipe it may stop reading once the abort
            # tears the job down: on a loaded machine the error line or a traceback was lost
            # (tests/mpi/test_failures.py), so it gets a moment to read what was written
            time.sleep(ABORT_GRACE_SECONDS)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            mpi.COMM_WORLD.Abort(code)
    finally:
        os._exit(code)


def end_job(message: str | None, code: int) -> None:
    """Print ``message`` (one line) and end the whole job with ``code`` at once, without
    MPI_Finalize (which would wait for ranks that may never arrive)."""
    if message:
        print(f"lobatto: error: {' '.join(str(message).split())}", file=sys.stderr, flush=True)
    _exit_now(code)


def world_comm():
    """COMM_WORLD when running on more than one rank, else None."""
    launched = any(int(os.environ.get(v, "1") or 1) > 1 for v in _LAUNCHER_SIZE_VARIABLES
                   if os.environ.get(v, "").isdigit())
    try:
        from mpi4py import MPI
    except ImportError:
        if launched:
            raise InputError("started under an MPI launcher with several ranks but mpi4py is not "
                             "installed (pip install 'lobatto[mpi]')") from None
        return None
    comm = MPI.COMM_WORLD
    return comm if comm.Get_size() > 1 else None


def rank_and_size(comm) -> tuple[int, int]:
    return (0, 1) if comm is None else (comm.Get_rank(), comm.Get_size())


def node_local_rank(comm) -> int:
    """Rank among the ranks sharing this node (selects the GPU)."""
    if comm is None:
        return 0
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return node.Get_rank()
    finally:
        node.Free()


_INTERRUPT_CODES = {"SIGINT": 130, "SIGTERM": 143}


def end_job_on_signals(rank: int, cleanup=None) -> None:
    """Under MPI: SIGINT or SIGTERM ends this rank at once (exit 130 / 143; rank 0 says
    "interrupted"), even while its main thread waits inside an MPI call, where Python's own
    handlers would not run until the call returns (it may never). A thread watches the
    signal wake-up pipe that Python's C-level handler writes to immediately. ``cleanup`` (no
    arguments) runs first: the command line removes this rank's temporary files with it."""
    import signal

    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    signals = {getattr(signal, name): code for name, code in _INTERRUPT_CODES.items() if hasattr(signal, name)}

    ending = threading.Lock()

    def stop(signum, frame=None):
        # both the handler (main thread) and the watcher see each signal: the first ends the
        # rank, the other returns (so the line is printed once). Not a blocking wait: a second
        # signal runs the handler again inside the first call, on the thread holding the lock.
        if not ending.acquire(blocking=False):
            return
        if cleanup is not None:
            try:
                cleanup()
            except Exception:  # never in the way of ending the job
                pass
        if rank == 0:
            print("lobatto: interrupted", file=sys.stderr, flush=True)
        _exit_now(signals.get(signum, 130))

    for signum in signals:
        signal.signal(signum, stop)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)

    def watch():
        while True:
            data = os.read(read_fd, 1)
            if data and data[0] in signals:
                stop(data[0])

    threading.Thread(target=watch, name="lobatto-signals", daemon=True).start()


@contextmanager
def collective_errors(comm):
    """Turn an error on any rank into the same error on every rank.

    Code that may fail on some ranks only (a bad GPU, an unwritable file, a bad element)
    runs inside; at the end the ranks agree, so no rank is left waiting in a collective
    call, and the error raised on every rank is marked ``collective = True``. A failed rank
    whose partners do not arrive within ABORT_SECONDS ends the job (``end_job``).
    """
    failure = None
    try:
        yield
    except LobattoError as exc:
        failure = exc
    except OSError as exc:  # a file this rank could not read or write: one line naming it
        name = f"{exc.filename}: " if exc.filename else ""
        failure = LobattoError(f"{name}{exc.strerror or exc}")
    if comm is None:
        if failure is not None:
            raise failure
        return
    watchdog = None
    if failure is not None:
        rank = comm.Get_rank()
        watchdog = threading.Timer(ABORT_SECONDS, end_job, (f"{failure} (rank {rank}; the other ranks did not "
                                                            f"respond, ending the job)", failure.exit_code))
        watchdog.daemon = True
        watchdog.start()
    try:
        messages = comm.allgather(None if failure is None else (type(failure).__name__, str(failure),
                                                                failure.exit_code))
    finally:
        if watchdog is not None:
            watchdog.cancel()
    for rank, message in enumerate(messages):
        if message is not None:
            if failure is None:
                failure = (InputError if message[0] == "InputError" else LobattoError)(f"rank {rank}: {message[1]}")
                failure.exit_code = message[2]
            failure.collective = True
            raise failure


#: collective operations this process has issued, by kind: "reductions" (global sums and
#: maxima: ``allreduce`` here, ``comm.exact_sum.totals``) and "exchanges" (gather-scatters
#: of an ``operators.Assembly``). Counted whether or not there is a communicator (one rank
#: counts what each rank of a parallel run issues), so the counts are the algorithm's and
#: the same on any rank count; ``collective_counts()`` reads them (a step's count is the
#: difference of two readings).
_COLLECTIVES = {"reductions": 0, "exchanges": 0}


def count_collective(kind: str, calls: int = 1) -> None:
    _COLLECTIVES[kind] += calls


def collective_counts() -> dict:
    """{"reductions": n, "exchanges": n} issued by this process so far."""
    return dict(_COLLECTIVES)


def allreduce(comm, value, op: str = "sum"):
    """Sum or max of a scalar or array over ranks (identity without comm)."""
    _COLLECTIVES["reductions"] += 1
    if comm is None:
        return value
    import numpy as np
    from mpi4py import MPI

    mpi_op = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op]
    if np.isscalar(value):
        return comm.allreduce(value, op=mpi_op)
    result = np.empty_like(np.asarray(value))
    comm.Allreduce(np.ascontiguousarray(value), result, op=mpi_op)
    return result
