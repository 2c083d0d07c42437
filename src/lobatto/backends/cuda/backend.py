"""The CUDA backend: CuPy arrays on one GPU, NVRTC-compiled kernels, CUDA-graph replay.

    backend = CudaBackend(precision="float64", device_id=0)

Arrays live on the selected device and stay there (``to_host`` copies). Systems register
their tuned kernels for this backend (``tuned_kernel("cuda", name)``: CUDA C++ templates on
the order N and the precision, compiled by lobatto.jit.nvrtc); every other kernel name falls
back to the reference implementation run through CuPy. The gather–scatter's local phases run
on the device too (``lobatto.comm.local_cuda``).

``capture(fn)`` returns a callable that runs ``fn`` plainly the first time (compiling kernels
and building index arrays), records it as a CUDA graph on the second call and replays the
graph from then on. Whatever ``fn`` launches is frozen into the graph, scalar arguments
included: capture a function whose kernels and arguments do not change between calls (a time
step of fixed dt of a time-independent operator). If recording fails (an operation in ``fn``
synchronises with the host, say) it falls back to plain calls and says why in
``fallback_reason``. ``capture(fn, allowed)`` asks ``allowed()`` before recording and
replays nothing while it returns a reason (a string) instead of None.
"""

from __future__ import annotations

import numpy as np

from lobatto.backends.base import Backend


class CudaGraphStep:
    """Replay of a recorded function; see :meth:`CudaBackend.capture`."""

    def __init__(self, backend, function, max_failures: int = 1, allowed=None):
        import cupy

        self.backend = backend
        self.function = function
        self.allowed = allowed
        self.graph = None
        self.calls = 0
        self.failures = 0
        self.max_failures = max_failures
        self.fallback_reason: str | None = None
        self._pool = cupy.cuda.MemoryPool()  # temporaries made while recording live here
        self._stream = cupy.cuda.Stream(non_blocking=True)
        self._keep: list = []  # buffers the graph uses that a cache could otherwise release

    @property
    def captured(self) -> bool:
        return self.graph is not None

    def _record(self):
        import cupy

        from lobatto.comm import local_cuda

        cupy.cuda.get_current_stream().synchronize()
        stream = self._stream
        graph = None
        try:
            with cupy.cuda.using_allocator(self._pool.malloc), stream, local_cuda.recording(self._keep):
                stream.begin_capture()
                try:
                    self.function()
                finally:
                    graph = stream.end_capture()
            self.graph = graph
        except Exception as exc:  # noqa: BLE001  (any failure: fall back to plain calls)
            self.failures += 1
            self.graph = None
            self.fallback_reason = f"{type(exc).__name__}: {exc}"
            try:
                if stream.is_capturing():
                    stream.end_capture()
            except Exception:  # noqa: BLE001,S110  (the capture is abandoned either way)
                pass

    def __call__(self):
        import cupy

        self.calls += 1
        if self.graph is None and self.calls >= 2 and self.failures < self.max_failures:
            veto = self.allowed() if self.allowed is not None else None
            if veto:
                self.fallback_reason, self.failures = veto, self.max_failures  # plain calls from now on
            else:
                self._record()
        if self.graph is not None:
            self.graph.launch(stream=cupy.cuda.get_current_stream())
            return None
        return self.function()


class CudaBackend(Backend):
    name = "cuda"
    def __init__(self, precision: str = "float64", device_id: int | None = None):
        import cupy

        super().__init__(precision)
        self.xp = cupy
        if device_id is None:
            device_id = cupy.cuda.runtime.getDevice()
        self.device_id = int(device_id)
        count = cupy.cuda.runtime.getDeviceCount()
        if not 0 <= self.device_id < count:
            raise ValueError(f"CUDA device {self.device_id} does not exist ({count} device(s) visible)")
        self.device = cupy.cuda.Device(self.device_id)
        self.device.use()
        props = cupy.cuda.runtime.getDeviceProperties(self.device_id)
        name = props.get("name", b"")
        self.device_name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        self.sm_count = int(props.get("multiProcessorCount", 1))
        self.max_shared_per_block = int(props.get("sharedMemPerBlockOptin", props.get("sharedMemPerBlock", 48 * 1024)))
        self.compute_capability = f"{props.get('major', 0)}.{props.get('minor', 0)}"
        self.total_memory = int(props.get("totalGlobalMem", 0))
        #: launch settings that tuning runs impose on a kernel family, by whatever key the
        #: family's launcher reads (documented beside that launcher)
        self.launch_overrides: dict = {}

    # Arrays -------------------------------------------------------------------------------
    def asarray(self, host_array, dtype=None):
        with self.device:
            return self.xp.asarray(np.asarray(host_array), dtype=dtype or self.dtype)

    def to_host(self, array) -> np.ndarray:
        if isinstance(array, self.xp.ndarray):
            return self.xp.asnumpy(array)
        return np.asarray(array)

    def sparse_matrix(self, matrix, dtype=None):
        """A CuPy CSR matrix (cupyx.scipy.sparse: cuSPARSE products, queued on the current
        stream like any kernel) from a host SciPy sparse matrix, in ``dtype``."""
        import cupyx.scipy.sparse
        import scipy.sparse

        host = scipy.sparse.csr_matrix(matrix, dtype=dtype or self.dtype)
        with self.device:
            return cupyx.scipy.sparse.csr_matrix(host)

    def zeros(self, shape, dtype=None):
        with self.device:
            return self.xp.zeros(shape, dtype=dtype or self.dtype)

    def empty(self, shape, dtype=None):
        with self.device:
            return self.xp.empty(shape, dtype=dtype or self.dtype)

    def synchronize(self) -> None:
        self.device.synchronize()

    def memory_available(self) -> int | None:
        """Free bytes on this backend's GPU (cudaMemGetInfo), plus what CuPy's memory pool
        holds unused (it hands those out again before asking the device)."""
        try:
            with self.device:
                free, _total = self.xp.cuda.runtime.memGetInfo()
                pool = self.xp.get_default_memory_pool()
                return int(free) + int(pool.free_bytes())
        except Exception:  # noqa: BLE001  (a query that fails means: unknown)
            return None

    # Graphs -------------------------------------------------------------------------------
    def capture(self, function, allowed=None):
        """A callable replaying ``function`` as a CUDA graph (see the module docstring)."""
        return CudaGraphStep(self, function, allowed=allowed)

    def describe(self) -> dict:
        return {
            "name": self.name,
            "precision": self.precision,
            "device_id": self.device_id,
            "device": self.device_name,
            "compute_capability": self.compute_capability,
            "multiprocessors": self.sm_count,
            "memory_bytes": self.total_memory,
        }
