"""NCCL transport: grouped point-to-point send/recv of device buffers (pairwise method).

Setup (collective): rank 0 of the gather-scatter's communicator makes an NCCL unique id,
MPI broadcasts it, every rank creates ``cupy.cuda.nccl.NcclCommunicator(P, id, rank)`` on its
current device.  Communicators (and their dedicated stream: non-blocking, highest priority) are cached per
(set of MPI ranks in order, device), so several gather-scatters over the same ranks share one;
:func:`destroy_all` releases them.

``post``: records an event on the compute stream (CuPy's current stream), makes the NCCL
stream wait for it (the packed buffer is ready), launches one ``groupStart()`` /
``send``+``recv`` per neighbour / ``groupEnd()`` on the NCCL stream and records a "done"
event there; it returns at once.  ``wait``: makes the compute stream wait for "done" (no host
synchronisation); unpack and scatter then run on the compute stream.  GPU work launched on
the compute stream between ``start`` and ``finish`` overlaps the transfer.  Messages are
sent as bytes (any dtype).
"""

from __future__ import annotations

from lobatto.comm.transport.base import Transport

_COMMS: dict = {}


def nccl_status() -> str | None:
    """None when CuPy's NCCL binding is usable on this rank, else why not."""
    try:
        from cupy.cuda import nccl
    except Exception as exc:  # noqa: BLE001
        return f"cupy.cuda.nccl is not importable ({type(exc).__name__}: {exc})"
    if not getattr(nccl, "available", True) or not hasattr(nccl, "NcclCommunicator"):
        return "CuPy was built without NCCL (cupy.cuda.nccl.available is False)"
    try:
        nccl.get_version()
    except Exception as exc:  # noqa: BLE001
        return f"the NCCL library cannot be loaded ({type(exc).__name__}: {exc})"
    return None


def _world_ranks(comm) -> tuple:
    from mpi4py import MPI

    g, w = comm.Get_group(), MPI.COMM_WORLD.Get_group()
    try:
        return tuple(MPI.Group.Translate_ranks(g, list(range(comm.Get_size())), w))
    finally:
        g.Free()
        w.Free()


def get_communicator(comm):
    """Collective: (NcclCommunicator, NCCL stream) for ``comm``'s ranks on the current device."""
    import cupy
    from cupy.cuda import nccl
    from mpi4py import MPI

    key = (_world_ranks(comm), cupy.cuda.runtime.getDevice())
    hit = key in _COMMS
    if comm.allreduce(1 if hit else 0, op=MPI.MIN) == 1:
        return _COMMS[key]
    uid = nccl.get_unique_id() if comm.Get_rank() == 0 else None
    uid = comm.bcast(uid, root=0)
    nc = nccl.NcclCommunicator(comm.Get_size(), uid, comm.Get_rank())
    entry = (nc, priority_stream())
    _COMMS[key] = entry
    return entry


def priority_stream():
    """A non-blocking stream of the device's highest priority (a plain one where CuPy cannot).

    NCCL moves data with kernels. On a stream of default priority they wait until every block
    of a compute kernel launched before them has been dispatched, so a transfer meant to run
    during the interior update starts near its end. At high priority the scheduler hands them
    SMs as soon as compute blocks retire: on 2 H200s the overlapped step's weak-scaling
    efficiency at 1e7 points per GPU went from 0.940 to 0.956-0.958 (docs/benchmarks.md).
    """
    import cupy

    try:  # CUDA clamps the priority to the device's range (greatest: -5 on an H200)
        return cupy.cuda.Stream(non_blocking=True, priority=-(1 << 20))
    except TypeError:  # a CuPy without stream priorities
        return cupy.cuda.Stream(non_blocking=True)


def destroy_all() -> None:
    """Destroy the cached NCCL communicators (collective over each one's ranks)."""
    for nc, stream in _COMMS.values():
        stream.synchronize()
        nc.destroy()
    _COMMS.clear()


class NcclTransport(Transport):
    name = "nccl"
    device_direct = True

    def __init__(self, comm):
        super().__init__(comm)
        self.nc, self.stream = get_communicator(comm)

    def post(self, ex, sendbuf, vn, op, concurrent=True):
        """``concurrent=False``: the caller waits at once, so the transfer runs on the compute
        stream itself (no event hand-over to the NCCL stream and back)."""
        import cupy
        from cupy.cuda import nccl

        chunks = ex._chunks(vn)  # [(peer rank, start, stop)] in elements of the flat buffer
        sendbuf = cupy.ascontiguousarray(sendbuf)
        compute = cupy.cuda.get_current_stream()
        recvbuf = cupy.empty_like(sendbuf)
        stream = self.stream if concurrent else compute
        if concurrent:
            ready = cupy.cuda.Event(disable_timing=True)
            ready.record(compute)
            self.stream.wait_event(ready)
        item = sendbuf.dtype.itemsize
        sp, rp, s = sendbuf.data.ptr, recvbuf.data.ptr, stream.ptr
        nccl.groupStart()
        try:
            for q, a, b in chunks:
                if b > a:
                    self.nc.send(sp + a * item, (b - a) * item, nccl.NCCL_INT8, q, s)
                    self.nc.recv(rp + a * item, (b - a) * item, nccl.NCCL_INT8, q, s)
        finally:
            nccl.groupEnd()
        if not concurrent:
            return None, recvbuf, sendbuf
        done = cupy.cuda.Event(disable_timing=True)
        done.record(self.stream)
        return done, recvbuf, sendbuf  # sendbuf kept alive until the compute stream has waited

    def wait(self, request):
        import cupy

        done, recvbuf, _sendbuf = request
        if done is not None:
            cupy.cuda.get_current_stream().wait_event(done)
        return recvbuf
