"""NVML, the GPU's energy counter and power reading, for the energy meter (power.py): through
pynvml (package nvidia-ml-py) when installed, else the driver's libnvidia-ml.so.1 through
ctypes. Both give the same few calls (device by PCI bus id or UUID, its UUID and name, total
energy in millijoules, power in milliwatts); tests pass any object with these methods.
"""

from __future__ import annotations

import ctypes

from lobatto.machine.energy_sources import Unavailable

NVML_LIBRARY = "libnvidia-ml.so.1"
_NVML_ERROR_NOT_SUPPORTED = 3


class NvmlError(Exception):
    def __init__(self, message: str, not_supported: bool = False):
        super().__init__(message)
        self.not_supported = not_supported


# NVML: pynvml when installed, else the driver's library through ctypes -----------------------
class PynvmlLibrary:
    source = "pynvml"

    def __init__(self):
        import pynvml

        self._nvml = pynvml
        self._call(pynvml.nvmlInit)

    def _call(self, function, *args):
        try:
            return function(*args)
        except self._nvml.NVMLError as exc:
            raise NvmlError(str(exc), getattr(exc, "value", None) == _NVML_ERROR_NOT_SUPPORTED) from None

    def device(self, identity: str):
        by_uuid = identity.startswith(("GPU-", "MIG-"))
        find = self._nvml.nvmlDeviceGetHandleByUUID if by_uuid else self._nvml.nvmlDeviceGetHandleByPciBusId
        return self._call(find, identity.encode())  # bytes: old and new nvidia-ml-py take them

    def uuid(self, handle) -> str:
        return _text(self._call(self._nvml.nvmlDeviceGetUUID, handle))

    def name(self, handle) -> str:
        return _text(self._call(self._nvml.nvmlDeviceGetName, handle))

    def total_energy_mj(self, handle) -> int:
        return int(self._call(self._nvml.nvmlDeviceGetTotalEnergyConsumption, handle))

    def power_mw(self, handle) -> int:
        return int(self._call(self._nvml.nvmlDeviceGetPowerUsage, handle))

    def close(self) -> None:
        try:
            self._nvml.nvmlShutdown()
        except self._nvml.NVMLError:
            pass


class CtypesNvml:
    """The few NVML calls the meter needs, from the driver's libnvidia-ml.so.1."""

    source = NVML_LIBRARY

    def __init__(self, path: str = NVML_LIBRARY):
        lib = ctypes.CDLL(path)  # OSError when absent
        lib.nvmlErrorString.restype = ctypes.c_char_p
        self._lib = lib
        self._check(lib.nvmlInit_v2())

    def _check(self, code: int) -> None:
        if code != 0:
            text = self._lib.nvmlErrorString(code)
            raise NvmlError(f"NVML error {code}: {_text(text)}", code == _NVML_ERROR_NOT_SUPPORTED)

    def device(self, identity: str):
        handle = ctypes.c_void_p()
        find = self._lib.nvmlDeviceGetHandleByUUID if identity.startswith(("GPU-", "MIG-")) \
            else self._lib.nvmlDeviceGetHandleByPciBusId_v2
        self._check(find(identity.encode(), ctypes.byref(handle)))
        return handle

    def _string(self, function, handle) -> str:
        buffer = ctypes.create_string_buffer(96)  # NVML_DEVICE_UUID_V2_BUFFER_SIZE, and enough for names
        self._check(function(handle, buffer, ctypes.c_uint(len(buffer))))
        return _text(buffer.value)

    def uuid(self, handle) -> str:
        return self._string(self._lib.nvmlDeviceGetUUID, handle)

    def name(self, handle) -> str:
        return self._string(self._lib.nvmlDeviceGetName, handle)

    def total_energy_mj(self, handle) -> int:
        value = ctypes.c_ulonglong()
        self._check(self._lib.nvmlDeviceGetTotalEnergyConsumption(handle, ctypes.byref(value)))
        return int(value.value)

    def power_mw(self, handle) -> int:
        value = ctypes.c_uint()
        self._check(self._lib.nvmlDeviceGetPowerUsage(handle, ctypes.byref(value)))
        return int(value.value)

    def close(self) -> None:
        self._lib.nvmlShutdown()


def _text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def load_nvml(library: str = NVML_LIBRARY):
    """pynvml (package nvidia-ml-py) if importable, else ``library`` (the driver's
    libnvidia-ml.so.1) through ctypes; Unavailable if neither."""
    try:
        import pynvml  # noqa: F401
    except ImportError:
        pass
    else:
        try:
            return PynvmlLibrary()
        except NvmlError as exc:
            raise Unavailable(f"NVML did not start: {exc}") from None
    try:
        return CtypesNvml(library)
    except OSError as exc:
        raise Unavailable(f"NVML is not available: pynvml (nvidia-ml-py) is not installed and {library} "
                          f"could not be loaded ({exc})") from None
    except NvmlError as exc:
        raise Unavailable(f"NVML did not start: {exc}") from None


def cuda_pci_bus_id(device: int | None) -> str:
    """PCI bus id of CUDA device ``device`` (CuPy's numbering; None: the current device).
    CUDA_VISIBLE_DEVICES renumbers CUDA devices but not NVML's, so the bus id names the GPU."""
    import cupy

    runtime = cupy.cuda.runtime
    return _text(runtime.deviceGetPCIBusId(runtime.getDevice() if device is None else int(device)))
