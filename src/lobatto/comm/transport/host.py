"""Host transport: MPI on host buffers; CuPy data is staged through pinned host memory.

NumPy send buffers go to the exchange method's own MPI calls unchanged (the plain CPU path).
For a CuPy send buffer ``post``

1. copies the packed device buffer into a pinned host buffer (``cudaMemcpyAsync`` on the
   current stream, then waits for that stream: MPI must see finished data),
2. hands the host view (same shape and dtype) to the method's ``post``;

``wait`` completes the MPI requests and copies the received host buffer into a fresh device
array (asynchronously on the current stream), which the method then unpacks on the device.

Pinned buffers are pooled: a staging pair is taken at ``post`` and given back at ``wait``;
before it is reused, the event recorded after its last device copy is waited for, so
several exchanges may be in flight at once.
"""

from __future__ import annotations

import numpy as np

from lobatto.comm.transport.base import Transport

_POOL_MAX = 8


class _Stage:
    __slots__ = ("busy", "capacity", "event", "keep", "recv_mem", "send_mem")

    def __init__(self, capacity: int):
        import cupy

        self.capacity = capacity
        self.send_mem = cupy.cuda.alloc_pinned_memory(max(capacity, 1))
        self.recv_mem = cupy.cuda.alloc_pinned_memory(max(capacity, 1))
        self.event = None
        self.keep = None
        self.busy = False

    def view(self, mem, shape, dtype):
        count = int(np.prod(shape, dtype=np.int64))
        return np.frombuffer(mem, dtype=dtype, count=count).reshape(shape)


class HostTransport(Transport):
    name = "host"
    device_direct = False

    def __init__(self, comm):
        super().__init__(comm)
        self._pool: list[_Stage] = []

    # -- pinned staging ------------------------------------------------------------------
    def _acquire(self, nbytes: int) -> _Stage:
        for st in self._pool:
            if not st.busy and st.capacity >= nbytes:
                break
        else:
            if len(self._pool) >= _POOL_MAX:
                idle = [s for s in self._pool if not s.busy]
                if idle:
                    self._pool.remove(min(idle, key=lambda s: s.capacity))
            st = _Stage(max(nbytes, 4096))
            self._pool.append(st)
        if st.event is not None:
            st.event.synchronize()  # its last host->device copy has finished reading recv_mem
            st.event, st.keep = None, None
        st.busy = True
        return st

    def post(self, ex, sendbuf, vn, op, concurrent=True):
        if isinstance(sendbuf, np.ndarray):
            return None, (ex, ex.post(sendbuf, vn, op)), None
        import cupy

        sendbuf = cupy.ascontiguousarray(sendbuf)
        nbytes = int(sendbuf.nbytes)
        st = self._acquire(nbytes)
        stream = cupy.cuda.get_current_stream()
        host_send = st.view(st.send_mem, sendbuf.shape, sendbuf.dtype)
        if nbytes:
            cupy.cuda.runtime.memcpyAsync(
                host_send.ctypes.data, sendbuf.data.ptr, nbytes, cupy.cuda.runtime.memcpyDeviceToHost, stream.ptr
            )
        stream.synchronize()
        host_recv = st.view(st.recv_mem, sendbuf.shape, sendbuf.dtype)
        return st, (ex, ex.post(host_send, vn, op, recvbuf=host_recv)), (sendbuf.shape, sendbuf.dtype)

    def wait(self, request):
        st, inner, _meta = request
        got = _wait(inner)
        if st is None:
            return got
        import cupy

        got = np.ascontiguousarray(got)
        stream = cupy.cuda.get_current_stream()
        dev = cupy.empty(got.shape, dtype=got.dtype)
        if got.nbytes:
            cupy.cuda.runtime.memcpyAsync(
                dev.data.ptr, got.ctypes.data, int(got.nbytes), cupy.cuda.runtime.memcpyHostToDevice, stream.ptr
            )
        ev = cupy.cuda.Event(disable_timing=True)
        ev.record(stream)
        st.event, st.keep, st.busy = ev, got, False  # keep the host source alive until copied
        return dev

    def free(self) -> None:
        for st in self._pool:
            if st.event is not None:
                st.event.synchronize()
        self._pool.clear()


def _wait(inner):
    ex, req = inner
    return ex.wait(req)
