"""Transport interface and the route (method + transport + kernel module) of one array module."""

from __future__ import annotations


class Transport:
    """Moves a packed send buffer to the neighbours and returns what they sent.

    ``post(ex, sendbuf, vn, op) -> request`` starts it, ``wait(request) -> recvbuf``
    completes it; ``recvbuf`` lives where ``sendbuf`` lives (host or device) and has the
    layout the exchange method ``ex`` expects (see ``exchange_base``).
    """

    name = "?"
    #: True when device buffers travel without a copy through host memory
    device_direct = False

    def __init__(self, comm):
        self.comm = comm

    def post(self, ex, sendbuf, vn: int, op: str, concurrent: bool = True):
        """``concurrent=False`` tells a transport with its own stream that nothing will run
        between this and ``wait`` (NCCL then stays on the compute stream); others ignore it."""
        raise NotImplementedError

    def wait(self, request):
        raise NotImplementedError

    def free(self) -> None:
        """Release what this transport holds (not the shared NCCL communicators)."""


class Route:
    """How one array module's data is exchanged: method object, transport, local kernels."""

    __slots__ = ("ex", "k", "method", "reason", "timings", "transport")

    def __init__(self, method: str, ex, transport: Transport, k):
        self.method, self.ex, self.transport, self.k = method, ex, transport, k
        self.timings: dict = {}  # auto's measured seconds per method ({} when named)
        self.reason = ""  # why this transport

    def start(self, shared_vals, op: str):
        sendbuf = self.ex.pack(shared_vals, op, self.k)
        return shared_vals, op, self.transport.post(self.ex, sendbuf, shared_vals.shape[0], op)

    def finish(self, h):
        shared_vals, op, req = h
        recvbuf = self.transport.wait(req)
        return self.ex.unpack(shared_vals, recvbuf, op, self.k)

    def run(self, shared_vals, op: str):
        return self.finish(self.start(shared_vals, op))
