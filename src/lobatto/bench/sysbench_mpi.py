"""MPI parts of ``lobatto sysbench``: ping-pong between ranks 0 and 1 (host buffers) and
allreduce latency over all ranks, plus the helpers the GPU<->GPU section shares.

Times are best of ``repeats`` batches after a warm-up probe; a batch runs enough round trips
(or allreduces) to last about BATCH_SECONDS by the probe's time, at most ``batch_count``. Ranks that take no part in a measurement
wait in a nonblocking barrier that sleeps between tests (``phase_end``): a rank spinning in
a blocking MPI call would take a core from the ranks measuring.
"""

from __future__ import annotations

import time

import numpy as np

BATCH_SECONDS = 0.02
ONE_RANK = "needs 2 or more MPI ranks (run it under mpiexec -n 2)"


def batch_count(nbytes: int, budget: int = 1 << 24, most: int = 1000) -> int:
    """Messages per timed batch: about ``budget`` bytes in all, between 2 and ``most``."""
    return int(min(most, max(2, budget // max(int(nbytes), 1))))


def batch_iterations(seconds_per_operation: float, most: int) -> int:
    """Operations per timed batch: about BATCH_SECONDS of them, between 2 and ``most``."""
    return int(min(most, max(2, BATCH_SECONDS / max(seconds_per_operation, 1e-9))))


def phase_end(comm, busy: bool) -> None:
    """Every rank calls this after a measurement that only some ranks (``busy``) took part in."""
    if comm is None:
        return
    req = comm.Ibarrier()
    if busy:
        req.Wait()
        return
    while not req.Test():
        time.sleep(0.002)


def agree(comm, reason: str | None) -> str | None:
    """The first rank's reason to skip (prefixed by its rank when several ranks), or None."""
    if comm is None:
        return reason
    reasons = comm.allgather(reason)
    for rank, why in enumerate(reasons):
        if why is not None:
            return why if len(reasons) == 1 else f"rank {rank}: {why}"
    return None


def pingpong_sizes(max_bytes: int) -> list[int]:
    """0, then 8 B doubling up to ``max_bytes``."""
    sizes, n = [0], 8
    while n <= max_bytes:
        sizes.append(n)
        n *= 2
    return sizes


def allreduce_sizes(max_bytes: int) -> list[int]:
    """8 B, 32 B, ... (x4) up to ``max_bytes``."""
    sizes, n = [], 8
    while n <= max_bytes:
        sizes.append(n)
        n *= 4
    return sizes


def pingpong(comm, max_bytes: int, repeats: int) -> dict | None:
    """mpi_pingpong: {"rows": [{"bytes", "seconds_one_way", "bytes_per_second"}]} on rank 0
    (half the round trip of a blocking Send/Recv pair); None on the other ranks."""
    if comm is None or comm.Get_size() < 2:
        return {"skipped": ONE_RANK}
    rank = comm.Get_rank()
    rows = []
    if rank < 2:
        peer = 1 - rank

        def round_trips(buf, count):
            t0 = time.perf_counter()
            for _ in range(count):
                if rank == 0:
                    comm.Send(buf, dest=peer, tag=7)
                    comm.Recv(buf, source=peer, tag=7)
                else:
                    comm.Recv(buf, source=peer, tag=7)
                    comm.Send(buf, dest=peer, tag=7)
            return time.perf_counter() - t0

        for size in pingpong_sizes(max_bytes):
            buf = np.zeros(size, dtype=np.uint8)
            probe = round_trips(buf, 2) / 2  # also the warm-up
            if rank == 0:
                iters = batch_iterations(probe, batch_count(size))
                comm.send(iters, dest=peer, tag=8)
            else:
                iters = comm.recv(source=peer, tag=8)
            best = min(round_trips(buf, iters) / (2 * iters) for _ in range(repeats))
            rows.append({"bytes": size, "seconds_one_way": best, "bytes_per_second": size / best})
    phase_end(comm, rank < 2)
    return {"pair": [0, 1], "rows": rows} if rank == 0 else None


def allreduce(comm, max_bytes: int, repeats: int) -> dict | None:
    """mpi_allreduce: {"ranks", "rows": [{"bytes", "seconds"}]}: the slowest rank's time per
    Allreduce (float64 sum), best of the batches; on rank 0 (None elsewhere)."""
    if comm is None or comm.Get_size() < 2:
        return {"skipped": ONE_RANK}
    from mpi4py import MPI

    rows = []
    for size in allreduce_sizes(max_bytes):
        send = np.ones(size // 8)
        recv = np.empty_like(send)

        def batch(count):
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(count):
                comm.Allreduce(send, recv, op=MPI.SUM)
            return comm.allreduce((time.perf_counter() - t0) / count, op=MPI.MAX)

        iters = batch_iterations(batch(2), batch_count(size, budget=1 << 22))  # the same on every rank
        best = min(batch(iters) for _ in range(repeats))
        if not np.all(recv == comm.Get_size()):
            raise RuntimeError(f"mpi_allreduce: wrong sum at {size} bytes")
        rows.append({"bytes": size, "seconds": best})
    return {"ranks": comm.Get_size(), "rows": rows} if comm.Get_rank() == 0 else None
