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


def on_three_two_one(world, cases, run) -> dict:
    """Under mpiexec -n 3: each case's ``run(case, comm, directory)`` on all three ranks, on ranks
    0 and 1 (a sub-communicator) and on rank 0 alone (comm None), each in its own directory of one
    scratch directory; the others wait asleep between cases. ``cases``: {name: case}. Returns, on
    rank 0, {name: {3: ..., 2: ..., 1: ...}} (rank 0's results), elsewhere the ranks' own share."""
    import tempfile

    pair = world.Split(0 if world.rank < 2 else 1, world.rank)
    scratch = tempfile.TemporaryDirectory() if world.rank == 0 else None
    root = world.bcast(scratch.name if scratch is not None else None)
    out = {}
    try:
        for name, case in cases.items():
            found = {3: run(case, world, f"{root}/{name}3")}
            if world.rank < 2:
                found[2] = run(case, pair, f"{root}/{name}2")
            if world.rank == 0:
                found[1] = run(case, None, f"{root}/{name}1")
            out[name] = found
            quiet_barrier(world)  # the ranks left out of the 2- and 1-rank runs wait asleep
    finally:
        if scratch is not None:
            scratch.cleanup()
    return out
