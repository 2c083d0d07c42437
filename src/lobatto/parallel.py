"""MPI context: which communicator a run uses, collective error handling, reductions.

One rank per GPU. Everything here is safe without mpi4py: a serial run has comm None.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np

from lobatto.errors import InputError, LobattoError

# Set by mpiexec/srun launchers; used to tell "serial" from "MPI without mpi4py".
_LAUNCHER_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS")


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


@contextmanager
def collective_errors(comm):
    """Turn an error on any rank into the same error on every rank.

    Set-up code that may fail on one rank only (bad GPU, empty partition) runs inside; at
    the end the ranks agree, so no rank is left waiting in a collective call.
    """
    failure = None
    try:
        yield
    except LobattoError as exc:
        failure = exc
    if comm is None:
        if failure is not None:
            raise failure
        return
    messages = comm.allgather(None if failure is None else (type(failure).__name__, str(failure)))
    for rank, message in enumerate(messages):
        if message is not None:
            if failure is not None:
                raise failure
            cls = InputError if message[0] == "InputError" else LobattoError
            raise cls(f"rank {rank}: {message[1]}")


def allreduce(comm, value, op: str = "sum"):
    """Sum or max of a scalar or array over ranks (identity without comm)."""
    if comm is None:
        return value
    from mpi4py import MPI

    mpi_op = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op]
    if np.isscalar(value):
        return comm.allreduce(value, op=mpi_op)
    result = np.empty_like(np.asarray(value))
    comm.Allreduce(np.ascontiguousarray(value), result, op=mpi_op)
    return result
