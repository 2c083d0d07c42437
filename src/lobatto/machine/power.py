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
root (``rapl_root=``), or this module's NVML_LIBRARY and RAPL_ROOT, which the meter reads
when it opens its sources.

The NVML bindings are in nvml.py, the energy sources (counters, samplers) in
energy_sources.py and the combined reports in energy_report.py; their public names are
importable from here as well.
"""

from __future__ import annotations

import platform
import time

from lobatto.machine.energy_report import brief_reason, combine, energy_per_step, format_energy
from lobatto.machine.energy_sources import (RAPL_POLL_SECONDS, RAPL_ROOT, SAMPLE_SECONDS, NvmlCounter, PowerSampler,
                                            RaplPackages, Unavailable)
from lobatto.machine.nvml import NVML_LIBRARY, CtypesNvml, NvmlError, PynvmlLibrary, cuda_pci_bus_id, load_nvml

__all__ = ["EnergyMeter", "combine", "energy_per_step", "brief_reason", "format_energy", "Unavailable", "NvmlError",
           "NvmlCounter", "PowerSampler", "RaplPackages", "CtypesNvml", "PynvmlLibrary", "load_nvml",
           "cuda_pci_bus_id", "NVML_LIBRARY", "RAPL_ROOT", "RAPL_POLL_SECONDS", "SAMPLE_SECONDS"]


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
        self.nvml = nvml = nvml if nvml is not None else load_nvml(NVML_LIBRARY)
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
