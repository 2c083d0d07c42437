"""A barrier for the rank scripts under mpiexec whose ranks wait while others run alone.

Ranks left out of a 2- or 1-rank run that wait in MPI_Barrier poll MPICH's progress engine
at full speed: on the 2-core CI machine, with 3 ranks and another pytest worker, they take
the cores the run needs (test_ports_ranks, test_restart_onto_ranks and test_ns_boundaries_ranks
together: 85 s of CPU, 75 s wall with MPI_Barrier; 58 s of CPU, 58 s wall with this; load 5)."""

from __future__ import annotations

import time


def quiet_barrier(comm, pause: float = 0.005) -> None:
    """comm's barrier, waited for asleep (a nonblocking barrier tested every ``pause`` s)."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(pause)
