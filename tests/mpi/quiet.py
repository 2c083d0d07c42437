"""A barrier for the rank scripts under mpiexec whose ranks wait while others run alone.

Ranks left out of a 2- or 1-rank run that wait in MPI_Barrier poll MPICH's progress engine
at full speed: on the 2-core CI machine, with 3 ranks and another pytest worker, they take
the cores the run needs (test_ports_ranks.py: 63.8 s with MPI_Barrier, 38.5 s with this)."""

from __future__ import annotations

import time


def quiet_barrier(comm, pause: float = 0.005) -> None:
    """comm's barrier, waited for asleep (a nonblocking barrier tested every ``pause`` s)."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(pause)
