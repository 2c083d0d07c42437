"""Energy sources of the meter (power.py): joules used since each was opened, read at the
window's start and stop. A GPU's NVML energy counter (:class:`NvmlCounter`); its power
sampled by a thread and integrated (:class:`PowerSampler`) where it has no counter; the CPU
packages' RAPL counters under /sys/class/powercap (:class:`RaplPackages`), polled by a thread
so that no wrap is missed. A source that cannot measure raises :class:`Unavailable`.
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from pathlib import Path

SAMPLE_SECONDS = 0.02
RAPL_ROOT = Path("/sys/class/powercap")
# A package counter wraps at its max_energy_range_uj (262 kJ on many Intel CPUs: 12 minutes at
# 350 W; less on some). Read every 5 s, it wraps unseen only above range / 5 s (13 kW for 65 kJ).
RAPL_POLL_SECONDS = 5.0
_RAPL_DOMAIN = re.compile(r"^[a-z]+-rapl:\d+$")  # a package; intel-rapl:0:1 (DRAM, core) are its parts


class Unavailable(Exception):
    """What cannot be measured, and why (the exception's text)."""


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
