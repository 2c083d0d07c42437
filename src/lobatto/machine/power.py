"""Energy over a window of a run: GPUs through NVML, CPU packages through RAPL (docs/energy.md).

    meter = EnergyMeter(backend.name, device=backend.device_id, comm=comm)
    meter.start()          # again to move the start (after warm-up steps)
    ...                    # the measured work
    report = meter.stop()  # collective: every rank gets the same report

A GPU's energy comes from NVML's total-energy counter (millijoules, Volta and later) read at
start and stop; without the counter, a thread samples the power (milliwatts) every
SAMPLE_SECONDS and the trace is integrated by the trapezoid rule. The CPU's comes from the
RAPL package counters under /sys/class/powercap, read at start and stop, and every
RAPL_POLL_SECONDS by a thread so that no wrap of the counter is missed. Whatever cannot be
measured is reported as ``{"available": False, "reason": ...}``; the meter never raises.

Under MPI each physical GPU (its UUID on its host) and each host's packages are counted once,
by the lowest rank that measured them.

Tests replace NVML (``nvml=``, any object with the methods of ``CtypesNvml``) and the sysfs
root (``rapl_root=``).
"""

from __future__ import annotations

import ctypes
import platform
import re
import threading
import time
import weakref
from pathlib import Path

NVML_LIBRARY = "libnvidia-ml.so.1"
SAMPLE_SECONDS = 0.02
RAPL_ROOT = Path("/sys/class/powercap")
# A package counter wraps at its max_energy_range_uj (262 kJ on many Intel CPUs: 12 minutes at
# 350 W; less on some). Read every 5 s, it wraps unseen only above range / 5 s (13 kW for 65 kJ).
RAPL_POLL_SECONDS = 5.0
_RAPL_DOMAIN = re.compile(r"^[a-z]+-rapl:\d+$")  # a package; intel-rapl:0:1 (DRAM, core) are its parts
_NVML_ERROR_NOT_SUPPORTED = 3


class Unavailable(Exception):
    """What cannot be measured, and why (the exception's text)."""


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


def load_nvml():
    """pynvml (package nvidia-ml-py) if importable, else libnvidia-ml.so.1; Unavailable if neither."""
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
        return CtypesNvml(NVML_LIBRARY)
    except OSError as exc:
        raise Unavailable(f"NVML is not available: pynvml (nvidia-ml-py) is not installed and {NVML_LIBRARY} "
                          f"could not be loaded ({exc})") from None
    except NvmlError as exc:
        raise Unavailable(f"NVML did not start: {exc}") from None


def cuda_pci_bus_id(device: int | None) -> str:
    """PCI bus id of CUDA device ``device`` (CuPy's numbering; None: the current device).
    CUDA_VISIBLE_DEVICES renumbers CUDA devices but not NVML's, so the bus id names the GPU."""
    import cupy

    runtime = cupy.cuda.runtime
    return _text(runtime.deviceGetPCIBusId(runtime.getDevice() if device is None else int(device)))


# Energy sources: joules since they were opened --------------------------------------------
def _start_polling(source, read, period: float, name: str) -> threading.Thread:
    """A daemon thread calling ``read(source)`` every ``period`` seconds until ``source.stopping``
    is set or ``source`` is garbage (a run that failed between start and stop); it keeps only a
    weak reference. An error ends it and is kept in ``source.error`` for the next reading."""
    ref, stopping = weakref.ref(source), source.stopping

    def poll():
        while not stopping.wait(period):
            current = ref()
            if current is None:
                return
            try:
                read(current)
            except Exception as exc:  # noqa: BLE001  (reported at the next joules())
                current.error = exc
                return
            del current

    thread = threading.Thread(target=poll, name=name, daemon=True)
    thread.start()
    return thread


class NvmlCounter:
    method = "nvml-energy-counter"

    def __init__(self, nvml, handle):
        self.nvml, self.handle = nvml, handle
        self.first = nvml.total_energy_mj(handle)
        self.samples = 1

    def joules(self) -> float:
        self.samples += 1
        return (self.nvml.total_energy_mj(self.handle) - self.first) * 1e-3

    def close(self) -> None:
        pass


class PowerSampler:
    """Power read every ``period`` seconds by a thread (and at each ``joules()``), integrated
    by the trapezoid rule; ``period=None``: no thread, only the reads of ``joules()``."""

    method = "nvml-power-sampled"

    def __init__(self, read_watts, period: float | None = SAMPLE_SECONDS, clock=time.perf_counter):
        self.read_watts, self.clock = read_watts, clock
        self.lock = threading.Lock()
        self.integral = 0.0
        self.samples = 0
        self.last = None
        self.error = None
        self._sample()  # an NVML error here means: no power readings
        self.stopping = threading.Event()
        self.thread = _start_polling(self, PowerSampler._sample, period, "lobatto-power") if period else None

    def _sample(self) -> None:
        with self.lock:
            t = self.clock()
            watts = self.read_watts()
            if self.last is not None:
                self.integral += 0.5 * (self.last[1] + watts) * (t - self.last[0])
            self.last = (t, watts)
            self.samples += 1

    def joules(self) -> float:
        if self.error is not None:
            raise self.error
        self._sample()
        return self.integral

    def close(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join()


class RaplPackages:
    """RAPL package domains under ``root``; joules since opening, the counters' wraps unfolded."""

    method = "rapl"

    def __init__(self, root: Path, poll: float | None = RAPL_POLL_SECONDS):
        root = Path(root)
        if not root.is_dir():
            raise Unavailable(f"no RAPL interface: {root} does not exist (a kernel without powercap, "
                              "or a virtual machine or container that does not expose it)")
        self.domains = []  # (name, energy_uj path, max_energy_range_uj)
        for path in sorted(root.iterdir()):
            if not _RAPL_DOMAIN.match(path.name):
                continue
            name = _read_text(path / "name") if (path / "name").exists() else path.name
            if name.startswith("package"):  # not psys (the whole platform, which includes packages)
                self.domains.append((f"{path.name} ({name})", path / "energy_uj",
                                     int(_read_text(path / "max_energy_range_uj"))))
        if not self.domains:
            raise Unavailable(f"no RAPL package domains under {root} (no intel-rapl:N directory named package-N)")
        self.lock = threading.Lock()
        self.last = [int(_read_text(uj)) for _, uj, _ in self.domains]
        self.total_uj = 0
        self.samples = 1
        self.error = None
        self.stopping = threading.Event()
        self.thread = _start_polling(self, RaplPackages._read, poll, "lobatto-rapl") if poll else None

    @property
    def names(self) -> list[str]:
        return [name for name, _, _ in self.domains]

    def _read(self) -> None:
        with self.lock:
            for i, (_, uj, wrap) in enumerate(self.domains):
                now = int(_read_text(uj))
                self.total_uj += now - self.last[i] + (wrap if now < self.last[i] else 0)
                self.last[i] = now
            self.samples += 1

    def joules(self) -> float:
        if self.error is not None:
            raise self.error
        self._read()
        return self.total_uj * 1e-6

    def close(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join()


def _read_text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except PermissionError:
        raise Unavailable(f"{path} is not readable (permission denied): since Linux 5.10 the RAPL energy "
                          "counters are readable by root only (CVE-2020-8694); an administrator can allow "
                          "reading them") from None
    except OSError as exc:
        raise Unavailable(f"{path}: {exc.strerror or exc}") from None


# The meter --------------------------------------------------------------------------------
class EnergyMeter:
    """Joules used by this rank's GPU and this host's CPU packages between start() and stop().

    device: the CUDA device (an int, CuPy's numbering; None: the current one), or a PCI bus id
    or NVML UUID string. Opening the sources costs a few reads; the window costs one read of
    each at start() and stop(), plus the sampling thread where the GPU has no energy counter."""

    def __init__(self, backend_name: str, device=None, comm=None, *, nvml=None, rapl_root=None,
                 sample_seconds: float | None = SAMPLE_SECONDS, rapl_poll_seconds: float | None = RAPL_POLL_SECONDS,
                 host: str | None = None, clock=time.perf_counter):
        self.comm, self.clock = comm, clock
        self.host = host or platform.node()
        self.nvml = None
        self.sources, self.reasons, self.about = {}, {}, {}
        try:
            self._open_gpu(backend_name, device, nvml, sample_seconds)
        except Unavailable as exc:
            self.reasons["gpu"] = str(exc)
        except Exception as exc:  # noqa: BLE001  (a meter never stops a run)
            self.reasons["gpu"] = f"{type(exc).__name__}: {exc}"
        if "gpu" in self.reasons:
            self._shut_nvml()
        try:
            rapl = RaplPackages(RAPL_ROOT if rapl_root is None else rapl_root, rapl_poll_seconds)
            self.sources["cpu"] = rapl
            self.about["cpu"] = {"packages": rapl.names, "host": self.host}
        except Unavailable as exc:
            self.reasons["cpu"] = str(exc)
        except Exception as exc:  # noqa: BLE001
            self.reasons["cpu"] = f"{type(exc).__name__}: {exc}"
        self.started = None
        self.baseline = {}

    def _open_gpu(self, backend_name, device, nvml, sample_seconds) -> None:
        if backend_name != "cuda":
            raise Unavailable(f"the {backend_name} backend uses no GPU")
        self.nvml = nvml = nvml if nvml is not None else load_nvml()
        try:
            identity = device if isinstance(device, str) else cuda_pci_bus_id(device)
        except Exception as exc:  # noqa: BLE001  (no CuPy, no such device)
            raise Unavailable(f"the PCI bus id of CUDA device {device} is unknown: "
                              f"{type(exc).__name__}: {exc}") from None
        try:
            handle = nvml.device(identity)
            uuid, name = nvml.uuid(handle), nvml.name(handle)
        except NvmlError as exc:
            raise Unavailable(f"NVML does not know the GPU {identity}: {exc}") from None
        self.about["gpu"] = {"devices": [{"host": self.host, "uuid": uuid, "name": name, "pci_bus_id": identity}],
                             "source": nvml.source}
        try:
            self.sources["gpu"] = NvmlCounter(nvml, handle)
            return
        except NvmlError as exc:
            counter_error = exc
        try:
            self.sources["gpu"] = PowerSampler(lambda: nvml.power_mw(handle) * 1e-3, sample_seconds, self.clock)
        except NvmlError as exc:
            raise Unavailable(f"NVML gives neither the energy counter ({counter_error}) nor the power "
                              f"({exc}) of the GPU {identity}") from None
        self.about["gpu"]["counter"] = f"no energy counter: {counter_error}"
        self.about["gpu"]["sample_seconds"] = sample_seconds

    def start(self) -> None:
        """Begin the window (again: a later start moves its beginning here)."""
        for part, source in list(self.sources.items()):
            try:
                self.baseline[part] = source.joules()
            except Exception as exc:  # noqa: BLE001
                self._lose(part, exc)
        self.started = self.clock()

    def _lose(self, part: str, exc: Exception) -> None:
        source = self.sources.pop(part)
        source.close()
        reason = str(exc) if isinstance(exc, Unavailable) else f"{type(exc).__name__}: {exc}"
        self.reasons[part] = f"reading failed during the run: {reason}"

    def stop(self) -> dict:
        """End the window; collective under MPI. {"gpu": ..., "cpu": ...}, the same on every rank."""
        for source in self.sources.values():
            source.close()  # the sampling threads end: the reads below are the window's last
        joules = {}
        for part, source in list(self.sources.items()):
            if part in self.baseline:
                try:
                    joules[part] = source.joules() - self.baseline[part]
                except Exception as exc:  # noqa: BLE001
                    self._lose(part, exc)
        seconds = self.clock() - self.started if self.started is not None else 0.0  # as start(): after the reads
        local = {}
        for part in ("gpu", "cpu"):
            if part in joules:
                source = self.sources[part]
                local[part] = {"available": True, "joules": joules[part], "seconds": seconds, "method": source.method,
                               "samples": source.samples, **self.about[part]}
            else:
                local[part] = {"available": False, "reason": self.reasons.get(part, "the meter was not started")}
        self.close()
        records = [local] if self.comm is None else self.comm.allgather(local)
        return combine(records)

    def close(self) -> None:
        for source in self.sources.values():
            source.close()
        self.sources = {}
        self._shut_nvml()

    def _shut_nvml(self) -> None:
        if self.nvml is not None:
            try:
                self.nvml.close()
            except Exception:  # noqa: BLE001  (shutting down is best effort)
                pass
            self.nvml = None


# Over ranks -------------------------------------------------------------------------------
def _identity(part: str, record: dict):
    if part == "gpu":
        return tuple((d["host"], d["uuid"]) for d in record["devices"])
    return record["host"]


def combine(records: list[dict]) -> dict:
    """One report from every rank's ``{"gpu": ..., "cpu": ...}`` (rank order): each GPU (host,
    UUID) and each host's packages counted once, by its lowest rank."""
    report = {}
    for part in ("gpu", "cpu"):
        counted, reasons = {}, {}
        for rank, record in enumerate(records):
            entry = record[part]
            if not entry["available"]:
                reasons[rank] = entry["reason"]
                continue
            key = _identity(part, entry)
            if key in counted:
                counted[key]["ranks"].append(rank)
            else:
                counted[key] = {"entry": entry, "ranks": [rank]}
        if not counted:
            distinct = list(dict.fromkeys(reasons.values()))
            reason = distinct[0] if len(distinct) == 1 else "; ".join(f"rank {r}: {t}" for r, t in reasons.items())
            report[part] = {"available": False, "reason": reason}
            continue
        entries = [c["entry"] for c in counted.values()]
        result = {
            "available": True,
            "joules": sum(e["joules"] for e in entries),
            # each meter's own mean power, summed: the windows of the ranks differ by microseconds
            "mean_watts": sum(e["joules"] / e["seconds"] for e in entries if e["seconds"] > 0),
            "seconds": max(e["seconds"] for e in entries),
            "method": ", ".join(dict.fromkeys(e["method"] for e in entries)),
            "samples": sum(e["samples"] for e in entries),
        }
        if part == "gpu":
            result["devices"] = [{**d, "ranks": c["ranks"]} for c in counted.values() for d in c["entry"]["devices"]]
            notes = {e["counter"] for e in entries if "counter" in e}
            if notes:
                result["counter"] = "; ".join(sorted(notes))
                result["sample_seconds"] = entries[0].get("sample_seconds")
        else:
            result["hosts"] = [{"host": c["entry"]["host"], "packages": c["entry"]["packages"], "ranks": c["ranks"]}
                               for c in counted.values()]
        if reasons:  # measured on some ranks only: the total leaves those out
            result["missing"] = {f"rank {r}": t for r, t in reasons.items()}
        report[part] = result
    return report


# In a summary -----------------------------------------------------------------------------
def energy_per_step(report: dict, steps: int, points: int) -> dict:
    """The summary's ``energy_use``: totals per step and per point-step of what was measured."""
    section = {"seconds": max((report[p]["seconds"] for p in ("gpu", "cpu") if report[p]["available"]),
                              default=None), "steps": steps}
    counted = [p for p in ("gpu", "cpu") if report[p]["available"]]
    for part in ("gpu", "cpu"):
        entry = report[part]
        if entry["available"]:
            section[f"{part}_joules"] = entry["joules"]
            section[f"{part}_mean_watts"] = entry["mean_watts"]
            section[f"{part}_method"] = entry["method"]
        else:
            section[f"{part}_reason"] = entry["reason"]
    joules = sum(report[p]["joules"] for p in counted)
    section["counted"] = counted
    section["joules_per_step"] = joules / steps if counted and steps > 0 else None
    section["joules_per_point_step"] = joules / (steps * points) if counted and steps > 0 and points > 0 else None
    section["mean_watts"] = sum(report[p]["mean_watts"] for p in counted) if counted else None
    section["gpu"], section["cpu"] = report["gpu"], report["cpu"]
    return section


def brief_reason(reason: str, width: int = 80) -> str:
    """A reason cut for the summary table: a long closing parenthetical dropped and, if it is
    still long, everything after its first colon (summary.json keeps the whole text)."""
    head, bracket, tail = reason.rpartition(" (")
    if bracket and reason.endswith(")") and len(tail) > 30:
        reason = head
    return reason if len(reason) <= width else reason.split(": ", 1)[0]


def format_energy(section: dict, brief: bool = False) -> str:
    """One line: joules per step and mean watts of what was measured, and why the rest was not
    (with ``brief``, each reason cut by :func:`brief_reason`)."""
    parts = []
    if section.get("joules_per_step") is not None:
        what = " + ".join(p.upper() for p in section["counted"])
        parts.append(f"{section['joules_per_step']:.4g} J/step, {section['mean_watts']:.4g} W ({what})")
    for part in ("gpu", "cpu"):
        if f"{part}_reason" in section:
            reason = section[f"{part}_reason"]
            parts.append(f"{part.upper()} not measured: {brief_reason(reason) if brief else reason}")
    return "; ".join(parts)
