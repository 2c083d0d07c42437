"""GPU<->GPU transfers of ``lobatto sysbench`` (section ``gpu_gpu``) between ranks 0 and 1,
one GPU each (sysbench_gpu.select_device), as ping-pongs: half the round trip is reported.

- nccl: ncclSend/ncclRecv (cupy.cuda.nccl) of a two-rank communicator, on one stream, timed
  with CUDA events on rank 0;
- cuda_aware_mpi: mpi4py Send/Recv of CuPy arrays, where the MPI library supports it
  (comm.transport.cuda_aware.mpi_cuda_support);
- host_staged: device -> pinned host -> MPI -> pinned host -> device, whole (chunk_bytes
  null) and pipelined in chunks as in the Cray XK6 study: the sender queues every chunk's
  device-to-host copy on a stream and posts each chunk's Isend as soon as its copy is done,
  so the copy of chunk i+1 overlaps the send of chunk i; the receiver posts every Irecv at
  once and queues each chunk's host-to-device copy as soon as it has arrived.

Rank 0's buffer holds a pattern, rank 1's zeros; after each size's round trips both must hold
the pattern, so a broken transport cannot report a rate.
"""

from __future__ import annotations

import socket
import time

import numpy as np

from lobatto.bench.sysbench_gpu import transfer_sizes
from lobatto.bench.sysbench_mpi import ONE_RANK, agree, batch_count, phase_end

TRANSPORTS = ("nccl", "cuda_aware_mpi", "host_staged")


def run(comm, device_reason: str | None, max_bytes: int, chunks: list[int], repeats: int) -> dict | None:
    """The section on rank 0 (None on the others); every rank calls it."""
    if comm is None or comm.Get_size() < 2:
        return {"skipped": f"{ONE_RANK}, one GPU per rank"}
    from mpi4py import MPI

    rank = comm.Get_rank()
    reason = agree(comm, device_reason if rank < 2 else None)
    if reason is not None:
        return {"skipped": reason} if rank == 0 else None
    pair = comm.Split(0 if rank < 2 else MPI.UNDEFINED, rank)
    result = None
    if pair != MPI.COMM_NULL:
        try:
            result = _measure(pair, max_bytes, chunks, repeats)
        finally:
            pair.Free()
    phase_end(comm, rank < 2)
    return result if rank == 0 else None


def _measure(pair, max_bytes: int, chunks: list[int], repeats: int) -> dict:
    import cupy

    sizes = transfer_sizes(max_bytes, smallest=8)
    skipped, rows = {}, []
    gpus = pair.allgather((socket.gethostname(), cupy.cuda.Device().pci_bus_id))
    same_gpu = "both ranks use the same GPU (LOBATTO_SHARE_GPUS=1?)" if gpus[0] == gpus[1] else None
    pinned_memory = cupy.cuda.alloc_pinned_memory(max(sizes[-1], 1))
    host = np.frombuffer(pinned_memory, dtype=np.uint8, count=sizes[-1])

    why = agree(pair, same_gpu or nccl_reason())
    if why is None:
        nc, nccl_pingpong = nccl_pair(pair)
        try:
            rows += [_row("nccl", s, None, timed_pingpong(pair, s, repeats, nccl_pingpong)) for s in sizes]
        finally:
            nc.destroy()
    else:
        skipped["nccl"] = why
    why = agree(pair, _cuda_aware_reason())
    if why is None:
        rows += [_row("cuda_aware_mpi", s, None, timed_pingpong(pair, s, repeats, _mpi_pingpong(pair))) for s in sizes]
    else:
        skipped["cuda_aware_mpi"] = why
    for s in sizes:
        rows.append(_row("host_staged", s, None, timed_pingpong(pair, s, repeats, _staged_pingpong(pair, host, s))))
    top = sizes[-1]
    for chunk in chunks:
        if chunk < top:
            seconds = timed_pingpong(pair, top, repeats, _staged_pingpong(pair, host, chunk))
            rows.append(_row("host_staged", top, chunk, seconds))
    out = {"pair": [0, 1], "message_bytes": top, "rows": rows}
    if skipped:
        out["skipped_transports"] = skipped
    return out


def _row(transport, size, chunk, seconds) -> dict:
    return {"transport": transport, "bytes": int(size), "chunk_bytes": chunk, "seconds": seconds,
            "bytes_per_second": size / seconds}


def timed_pingpong(pair, size: int, repeats: int, pingpong) -> float:
    """Best over batches of one-way seconds; checks the pattern made the round trips."""
    import cupy

    rank = pair.Get_rank()
    pattern = (cupy.arange(size, dtype=np.int64) % 251).astype(np.uint8)
    buf = pattern.copy() if rank == 0 else cupy.zeros(size, dtype=np.uint8)
    cupy.cuda.Device().synchronize()
    iters = batch_count(size, budget=1 << 26, most=200)
    best = float("inf")
    for batch in range(int(repeats) + 1):
        pair.Barrier()
        t0 = time.perf_counter()
        seconds = pingpong(buf, iters)
        seconds = time.perf_counter() - t0 if seconds is None else seconds
        if batch > 0:
            best = min(best, seconds / (2 * iters))
    from mpi4py import MPI

    ok = pair.allreduce(bool(cupy.all(buf == pattern)), op=MPI.LAND)
    if not ok:
        raise RuntimeError(f"gpu_gpu: a {size}-byte message arrived altered")
    return pair.bcast(best, root=0)


def nccl_reason() -> str | None:
    from lobatto.comm.transport.nccl import nccl_status

    return nccl_status()


def _cuda_aware_reason() -> str | None:
    from lobatto.comm.transport.cuda_aware import mpi_cuda_support

    ok, how = mpi_cuda_support()
    return None if ok else f"the MPI library is not CUDA-aware ({how})"


def nccl_pair(pair):
    import cupy
    from cupy.cuda import nccl

    uid = pair.bcast(nccl.get_unique_id() if pair.Get_rank() == 0 else None, root=0)
    nc = nccl.NcclCommunicator(2, uid, pair.Get_rank())
    stream = cupy.cuda.Stream(non_blocking=True)
    peer = 1 - pair.Get_rank()

    def pingpong(buf, iters):
        ptr, n, s = buf.data.ptr, buf.nbytes, stream.ptr
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        for _ in range(iters):
            if pair.Get_rank() == 0:
                nc.send(ptr, n, nccl.NCCL_INT8, peer, s)
                nc.recv(ptr, n, nccl.NCCL_INT8, peer, s)
            else:
                nc.recv(ptr, n, nccl.NCCL_INT8, peer, s)
                nc.send(ptr, n, nccl.NCCL_INT8, peer, s)
        stop.record(stream)
        stop.synchronize()
        return cupy.cuda.get_elapsed_time(start, stop) / 1e3

    return nc, pingpong


def _mpi_pingpong(pair):
    peer = 1 - pair.Get_rank()

    def pingpong(buf, iters):
        for _ in range(iters):
            if pair.Get_rank() == 0:
                pair.Send(buf, dest=peer, tag=11)
                pair.Recv(buf, source=peer, tag=11)
            else:
                pair.Recv(buf, source=peer, tag=11)
                pair.Send(buf, dest=peer, tag=11)
        return None

    return pingpong


def _staged_pingpong(pair, host: np.ndarray, chunk: int):
    """Round trips through pinned host memory in chunks of ``chunk`` bytes (one chunk: whole)."""
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    peer = 1 - pair.Get_rank()

    def send(buf):
        spans = _spans(buf.nbytes, chunk)
        done = []
        for a, b in spans:
            cupy.cuda.runtime.memcpyAsync(host.ctypes.data + a, buf.data.ptr + a, b - a,
                                          cupy.cuda.runtime.memcpyDeviceToHost, stream.ptr)
            event = cupy.cuda.Event(disable_timing=True)
            event.record(stream)
            done.append(event)
        requests = []
        for i, ((a, b), event) in enumerate(zip(spans, done)):
            event.synchronize()
            requests.append(pair.Isend(host[a:b], dest=peer, tag=100 + i))
        _waitall(requests)

    def receive(buf):
        spans = _spans(buf.nbytes, chunk)
        requests = [pair.Irecv(host[a:b], source=peer, tag=100 + i) for i, (a, b) in enumerate(spans)]
        for (a, b), request in zip(spans, requests):
            request.Wait()
            cupy.cuda.runtime.memcpyAsync(buf.data.ptr + a, host.ctypes.data + a, b - a,
                                          cupy.cuda.runtime.memcpyHostToDevice, stream.ptr)
        stream.synchronize()

    def pingpong(buf, iters):
        for _ in range(iters):
            if pair.Get_rank() == 0:
                send(buf)
                receive(buf)
            else:
                receive(buf)
                send(buf)
        return None

    return pingpong


def _spans(nbytes: int, chunk: int | None) -> list[tuple[int, int]]:
    step = nbytes if not chunk else max(1, int(chunk))
    return [(a, min(a + step, nbytes)) for a in range(0, nbytes, step)] or [(0, 0)]


def _waitall(requests) -> None:
    from mpi4py import MPI

    MPI.Request.Waitall(requests)
