"""Transports of the gather-scatter exchange: how the packed buffers travel between ranks.

``host`` (:mod:`.host`)
    MPI on host buffers.  NumPy data goes straight to mpi4py; CuPy data is packed on the
    device, copied into a pinned host buffer, exchanged, copied back and unpacked on the
    device.  Works with every method.
``nccl`` (:mod:`.nccl`)
    NCCL point-to-point send/recv on device buffers, grouped, on a dedicated stream
    (pairwise method only; the others fall back to host staging).
``cuda-aware-mpi`` (:mod:`.cuda_aware`)
    CuPy device buffers handed straight to mpi4py (pairwise only, like nccl); needs an MPI
    library that reports CUDA support.

:func:`select` makes the choice collectively (same answer on every rank, or the same
``InputError`` on every rank).
"""

from __future__ import annotations

from lobatto.comm.transport.base import Route, Transport
from lobatto.comm.transport.host import HostTransport
from lobatto.errors import InputError

#: transports that move device (CuPy) buffers directly
DEVICE_TRANSPORTS = ("nccl", "cuda-aware-mpi")
#: values accepted for ``GatherScatter(..., exchange=...)``
EXCHANGE_NAMES = ("auto", *DEVICE_TRANSPORTS, "host")
#: the methods a device-direct transport carries; the others are host-staged
DEVICE_METHODS = ("pairwise",)


def cupy_status() -> str | None:
    """None when CuPy imports and sees a GPU, else the reason (this rank only, no communication)."""
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001
        return f"CuPy is not importable ({type(exc).__name__}: {exc})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001
        return f"CuPy sees no usable GPU ({type(exc).__name__}: {exc})"
    if n < 1:
        return "CuPy sees no GPU"
    return None


def local_status(name: str) -> str | None:
    """None when transport ``name`` can work on this rank, else why not (no communication)."""
    if name == "host":
        return None
    why = cupy_status()
    if why is not None:
        return why
    if name == "nccl":
        from lobatto.comm.transport.nccl import nccl_status

        return nccl_status()
    if name == "cuda-aware-mpi":
        from lobatto.comm.transport.cuda_aware import mpi_cuda_support

        ok, how = mpi_cuda_support()
        return None if ok else f"the MPI library does not report CUDA support ({how})"
    raise ValueError(name)


def _node_device(comm) -> str | None:
    """Every rank on its own GPU (NCCL refuses two ranks on one device)?  None if so."""
    import socket

    import cupy

    dev = cupy.cuda.runtime.getDevice()
    try:
        bus = cupy.cuda.Device(dev).pci_bus_id
    except Exception:  # noqa: BLE001
        bus = str(dev)
    everyone = comm.allgather((socket.gethostname(), bus))
    seen: dict = {}
    for r, key in enumerate(everyone):
        if key in seen:
            return f"ranks {seen[key]} and {r} use the same GPU ({key[1]} on {key[0]}); NCCL needs one GPU per rank"
        seen[key] = r
    return None


def select(requested: str, comm) -> tuple[Transport, str]:
    """Collective over ``comm`` (> 1 rank): the transport for device (CuPy) data.

    ``requested``: "auto", "nccl", "cuda-aware-mpi" or "host".  "auto" takes nccl if it works
    on every rank, else cuda-aware-mpi if every rank's MPI reports CUDA support, else host.
    An explicitly requested transport that does not work on some rank raises ``InputError``
    on every rank.  Returns (transport, a line saying why).
    """
    me = comm.Get_rank()
    order = DEVICE_TRANSPORTS + ("host",) if requested == "auto" else (requested,)
    notes = []
    for name in order:
        why = local_status(name)
        everyone = comm.allgather(why)
        bad = [(r, w) for r, w in enumerate(everyone) if w is not None]
        if not bad and name == "nccl":
            dup = _node_device(comm)
            if dup is not None:
                bad = [(0, dup)]
        if bad:
            r, w = bad[0]
            msg = f"{name}: {w}" + ("" if r == me else f" (on rank {r})")
            if requested != "auto":
                raise InputError(
                    f"gather-scatter: exchange {requested!r} is not available: {msg}; "
                    "use exchange='auto' or 'host'"
                )
            notes.append(msg)
            continue
        if name == "nccl":
            from lobatto.comm.transport.nccl import NcclTransport

            tr = NcclTransport(comm)
        elif name == "cuda-aware-mpi":
            from lobatto.comm.transport.cuda_aware import CudaAwareTransport

            tr = CudaAwareTransport(comm)
        else:
            tr = HostTransport(comm)
        why = "requested" if requested != "auto" else ("auto: " + ("; ".join(notes) + " -> " if notes else "") + name)
        return tr, why
    raise AssertionError("host is always available")


__all__ = [
    "DEVICE_METHODS",
    "DEVICE_TRANSPORTS",
    "EXCHANGE_NAMES",
    "HostTransport",
    "Route",
    "Transport",
    "cupy_status",
    "local_status",
    "select",
]
