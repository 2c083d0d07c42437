"""lobatto.machine.power without a GPU: a fake NVML (known power traces and energy counters) and fake
RAPL sysfs trees; the sum over ranks with shared GPUs and hosts; reasons for what is missing;
the energy section of a `lobatto run` summary."""

from __future__ import annotations

import gc
import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lobatto.machine import power
from lobatto.machine.power import (EnergyMeter, NvmlError, PowerSampler, RaplPackages, brief_reason, combine,
                           energy_per_step, format_energy)

SRC = Path(__file__).resolve().parent.parent.parent / "src"
BUS = "00000000:3B:00.0"
UUID = "GPU-12345678-9abc-def0-1234-56789abcdef0"


class FakeNvml:
    """NVML with one GPU at BUS: an energy counter energy_mj(t) (None: not supported) and a
    power power_w(t) (None: not supported), t from ``clock``; the times of power reads kept."""

    source = "fake"

    def __init__(self, energy_mj=None, power_w=None, clock=time.perf_counter, fail_after=None):
        self.energy_mj, self.power_w, self.clock = energy_mj, power_w, clock
        self.power_times = []  # (time, read by the main thread)
        self.reads = 0
        self.fail_after = fail_after  # reads after which every read fails (a GPU lost mid-run)
        self.closed = False

    def device(self, identity):
        if identity not in (BUS, UUID):
            raise NvmlError("Not Found")
        return "handle"

    def uuid(self, handle):
        return UUID

    def name(self, handle):
        return "Fake H100"

    def _read(self):
        self.reads += 1
        if self.fail_after is not None and self.reads > self.fail_after:
            raise NvmlError("GPU is lost")

    def total_energy_mj(self, handle):
        if self.energy_mj is None:
            raise NvmlError("Not Supported", not_supported=True)
        self._read()
        return self.energy_mj(self.clock())

    def power_mw(self, handle):
        if self.power_w is None:
            raise NvmlError("Not Supported", not_supported=True)
        self._read()
        t = self.clock()
        self.power_times.append((t, threading.current_thread() is threading.main_thread()))
        return round(1000 * self.power_w(t))

    def close(self):
        self.closed = True


class Clock:
    def __init__(self, t=0.0):
        self.t = t

    def __call__(self):
        return self.t


def wave(t):  # watts: a smooth trace with |P''| <= 80 (2 pi / 0.25)^2
    return 200.0 + 80.0 * math.sin(2 * math.pi * t / 0.25)


def wave_integral(a, b):
    c = 0.25 / (2 * math.pi)
    return 200.0 * (b - a) - 80.0 * c * (math.cos(b / c) - math.cos(a / c))


WAVE_CURVATURE = 80.0 * (2 * math.pi / 0.25) ** 2


# NVML: sampled power ----------------------------------------------------------------------
def test_sampled_power_is_integrated_by_the_trapezoid_rule():
    clock = Clock(0.3)
    sampler = PowerSampler(lambda: wave(clock.t), period=None, clock=clock)
    h = 0.004
    for k in range(1, 251):  # one second in steps of h, then an uneven stretch
        clock.t = 0.3 + k * h
        sampler.joules()
    for dt in (0.013, 0.002, 0.021):
        clock.t += dt
        joules = sampler.joules()
    exact = wave_integral(0.3, clock.t)
    bound = (clock.t - 0.3) * 0.021**2 * WAVE_CURVATURE / 12 + 1e-3 * (clock.t - 0.3)  # + mW rounding
    assert abs(joules - exact) <= bound
    assert sampler.samples == 254


def test_meter_samples_power_in_a_thread_when_the_counter_is_missing():
    start = time.perf_counter()
    fake = FakeNvml(power_w=lambda t: wave(t - start))
    meter = EnergyMeter("cuda", BUS, nvml=fake, rapl_root="/nonexistent", sample_seconds=0.005)
    meter.start()
    time.sleep(0.3)
    report = meter.stop()
    gpu = report["gpu"]
    assert gpu["available"] and gpu["method"] == "nvml-power-sampled"
    assert "Not Supported" in gpu["counter"] and gpu["sample_seconds"] == 0.005
    assert gpu["devices"] == [{"host": meter.host, "uuid": UUID, "name": "Fake H100", "pci_bus_id": BUS, "ranks": [0]}]
    # the integral runs from the read at start() to the read at stop(), the main thread's second
    # and last; the thread sampled in between (the sampler's clock is read just before NVML's)
    main = [i for i, (_, by_main) in enumerate(fake.power_times) if by_main]
    assert len(main) == 3 and main[-1] == len(fake.power_times) - 1
    times = [t for t, _ in fake.power_times[main[1]:]]
    assert gpu["samples"] == len(fake.power_times) >= 20
    exact = wave_integral(times[0] - start, times[-1] - start)
    gaps = [b - a for a, b in zip(times, times[1:])]
    bound = sum(g**3 for g in gaps) * WAVE_CURVATURE / 12 + 1e-3 * 0.3 + 300.0 * 2e-4  # rule, mW, clock skew
    assert abs(gpu["joules"] - exact) <= bound
    assert gpu["mean_watts"] == pytest.approx(gpu["joules"] / gpu["seconds"])
    assert 0.3 <= gpu["seconds"] < 5
    assert fake.closed and not any(t.name == "lobatto-power" for t in threading.enumerate())


# NVML: energy counter ---------------------------------------------------------------------
def test_energy_counter_is_read_at_start_and_stop_and_start_moves_the_window():
    clock = Clock(10.0)
    fake = FakeNvml(energy_mj=lambda t: int(5e6 + 250_000 * t), power_w=lambda t: 1.0, clock=clock)  # 250 W
    meter = EnergyMeter("cuda", UUID, nvml=fake, rapl_root="/nonexistent", clock=clock)
    clock.t = 11.0
    meter.start()
    clock.t = 12.0
    meter.start()  # after a warm-up: the window begins again here
    clock.t = 14.5
    gpu = meter.stop()["gpu"]
    assert gpu["method"] == "nvml-energy-counter" and "counter" not in gpu
    assert gpu["joules"] == pytest.approx(250.0 * 2.5, abs=1e-3)
    assert gpu["seconds"] == pytest.approx(2.5) and gpu["mean_watts"] == pytest.approx(250.0, abs=1e-3)
    assert gpu["samples"] == 4  # opening, two starts, stop
    assert fake.power_times == []  # no sampling when the counter exists


# NVML: what is not available, and why ----------------------------------------------------
def test_reasons_without_a_gpu_backend_library_device_or_readings(monkeypatch):
    assert EnergyMeter("cpu", rapl_root="/nonexistent").reasons["gpu"] == "the cpu backend uses no GPU"

    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml fails
    monkeypatch.setattr(power, "NVML_LIBRARY", "libnvidia-ml-missing.so.1")
    reason = EnergyMeter("cuda", BUS, rapl_root="/nonexistent").stop()["gpu"]["reason"]
    assert "nvidia-ml-py" in reason and "libnvidia-ml-missing.so.1" in reason

    reason = EnergyMeter("cuda", "0000:99:00.0", nvml=FakeNvml(energy_mj=lambda t: 0), rapl_root="/no").reasons["gpu"]
    assert reason.startswith("NVML does not know the GPU 0000:99:00.0")

    meter = EnergyMeter("cuda", BUS, nvml=FakeNvml(), rapl_root="/no")  # neither counter nor power
    assert "neither the energy counter" in meter.reasons["gpu"] and "gpu" not in meter.sources

    if "cupy" not in sys.modules:  # an int device is looked up through CuPy
        monkeypatch.setitem(sys.modules, "cupy", None)
        reason = EnergyMeter("cuda", 0, nvml=FakeNvml(energy_mj=lambda t: 0), rapl_root="/no").reasons["gpu"]
        assert reason.startswith("the PCI bus id of CUDA device 0 is unknown")


def test_a_gpu_lost_during_the_window_is_reported_not_raised():
    meter = EnergyMeter("cuda", BUS, nvml=FakeNvml(energy_mj=lambda t: 7, fail_after=2), rapl_root="/nonexistent")
    meter.start()
    gpu = meter.stop()["gpu"]
    assert gpu == {"available": False, "reason": "reading failed during the run: NvmlError: GPU is lost"}


# RAPL -------------------------------------------------------------------------------------
def rapl_tree(root: Path, domains: dict) -> Path:
    """domains: {directory: (name, energy_uj, max_energy_range_uj)}."""
    for directory, (name, energy, wrap) in domains.items():
        d = root / directory
        d.mkdir(parents=True)
        (d / "name").write_text(name + "\n")
        (d / "energy_uj").write_text(f"{energy}\n")
        (d / "max_energy_range_uj").write_text(f"{wrap}\n")
    return root


def set_energy(root: Path, directory: str, energy: int) -> None:
    (root / directory / "energy_uj").write_text(f"{energy}\n")


def test_rapl_sums_packages_and_unfolds_wraps(tmp_path):
    root = rapl_tree(tmp_path, {
        "intel-rapl:0": ("package-0", 262_000_000_000, 262_143_328_850),  # wraps in the window
        "intel-rapl:0:0": ("core", 5, 1_000_000),  # part of package 0: not counted again
        "intel-rapl:1": ("package-1", 1_000_000, 262_143_328_850),
        "intel-rapl:2": ("psys", 7, 1_000_000),  # the whole platform: not a package
        "intel-rapl-mmio:0": ("package-0", 9, 1_000_000),  # another view of package 0
    })
    clock = Clock(0.0)
    meter = EnergyMeter("cpu", rapl_root=root, rapl_poll_seconds=None, host="node-a", clock=clock)
    assert meter.about["cpu"]["packages"] == ["intel-rapl:0 (package-0)", "intel-rapl:1 (package-1)"]
    meter.start()
    set_energy(root, "intel-rapl:0", 43_328_850)  # through the wrap
    set_energy(root, "intel-rapl:1", 31_000_000)  # 30 J
    set_energy(root, "intel-rapl:0:0", 999)
    clock.t = 2.0
    cpu = meter.stop()["cpu"]
    assert cpu["joules"] == pytest.approx((262_143_328_850 - 262_000_000_000 + 43_328_850) * 1e-6 + 30.0, rel=1e-12)
    assert cpu["mean_watts"] == pytest.approx(cpu["joules"] / 2.0)
    assert cpu["method"] == "rapl" and cpu["hosts"] == [{"host": "node-a", "packages": meter.about["cpu"]["packages"],
                                                         "ranks": [0]}]


def test_rapl_reads_between_start_and_stop_catch_every_wrap(tmp_path):
    root = rapl_tree(tmp_path, {"intel-rapl:0": ("package-0", 900, 1000)})
    rapl = RaplPackages(root, poll=None)
    for now in (400, 100, 950, 20, 20, 500):  # three wraps; each read sees at most one
        set_energy(root, "intel-rapl:0", now)
        joules = rapl.joules()
    total = (1000 - 900 + 400) + (1000 - 400 + 100) + 850 + (1000 - 950 + 20) + 0 + 480
    assert joules == pytest.approx(total * 1e-6)


def test_rapl_poll_thread_reads_and_stops(tmp_path):
    root = rapl_tree(tmp_path, {"intel-rapl:0": ("package-0", 0, 1000)})
    rapl = RaplPackages(root, poll=0.002)
    deadline = time.monotonic() + 5
    while rapl.samples < 4 and time.monotonic() < deadline:
        time.sleep(0.005)
    rapl.close()
    assert rapl.samples >= 4 and not rapl.thread.is_alive()

    abandoned = RaplPackages(root, poll=0.002)  # a run that failed before stop(): the thread ends too
    thread = abandoned.thread
    del abandoned
    gc.collect()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_rapl_reasons(tmp_path, monkeypatch):
    reason = EnergyMeter("cpu", rapl_root=tmp_path / "powercap").reasons["cpu"]
    assert reason.startswith(f"no RAPL interface: {tmp_path / 'powercap'} does not exist")

    root = rapl_tree(tmp_path / "only-psys", {"intel-rapl:0": ("psys", 1, 10)})
    assert EnergyMeter("cpu", rapl_root=root).reasons["cpu"].startswith("no RAPL package domains under")

    root = rapl_tree(tmp_path / "locked", {"intel-rapl:0": ("package-0", 1, 10)})
    locked = root / "intel-rapl:0" / "energy_uj"
    read_text = Path.read_text

    def refuse(self, *args, **kwargs):  # as for a user since Linux 5.10 (root here ignores chmod)
        if self == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", refuse)
    reason = EnergyMeter("cpu", rapl_root=root).stop()["cpu"]["reason"]
    assert reason.startswith(f"{locked} is not readable (permission denied)") and "root only" in reason


# Over ranks -------------------------------------------------------------------------------
def gpu_entry(host, uuid, joules, seconds=2.0, method="nvml-energy-counter"):
    return {"available": True, "joules": joules, "seconds": seconds, "method": method, "samples": 2,
            "devices": [{"host": host, "uuid": uuid, "name": "G", "pci_bus_id": "b"}], "source": "fake"}


def cpu_entry(host, joules, seconds=2.0):
    return {"available": True, "joules": joules, "seconds": seconds, "method": "rapl", "samples": 2,
            "packages": ["intel-rapl:0 (package-0)"], "host": host}


def test_combine_counts_each_gpu_and_host_once():
    records = [
        {"gpu": gpu_entry("a", "GPU-1", 100.0), "cpu": cpu_entry("a", 50.0)},
        {"gpu": gpu_entry("a", "GPU-1", 101.0), "cpu": cpu_entry("a", 51.0)},  # shares rank 0's GPU and host
        {"gpu": gpu_entry("a", "GPU-2", 80.0, 1.6), "cpu": cpu_entry("a", 52.0)},
        {"gpu": gpu_entry("b", "GPU-1", 60.0), "cpu": cpu_entry("b", 30.0)},  # another host: another GPU
    ]
    report = combine(records)
    gpu, cpu = report["gpu"], report["cpu"]
    assert gpu["joules"] == 240.0 and gpu["mean_watts"] == pytest.approx(50 + 50 + 30)
    assert gpu["seconds"] == 2.0 and gpu["samples"] == 6
    assert [(d["host"], d["uuid"], d["ranks"]) for d in gpu["devices"]] == [("a", "GPU-1", [0, 1]),
                                                                            ("a", "GPU-2", [2]), ("b", "GPU-1", [3])]
    assert cpu["joules"] == 80.0 and [(h["host"], h["ranks"]) for h in cpu["hosts"]] == [("a", [0, 1, 2]), ("b", [3])]
    assert "missing" not in gpu


def test_combine_partial_and_missing():
    no_gpu = {"available": False, "reason": "the cpu backend uses no GPU"}
    records = [{"gpu": gpu_entry("a", "GPU-1", 10.0), "cpu": {"available": False, "reason": "x"}},
               {"gpu": {"available": False, "reason": "NVML did not start"},
                "cpu": {"available": False, "reason": "y"}}]
    report = combine(records)
    assert report["gpu"]["joules"] == 10.0 and report["gpu"]["missing"] == {"rank 1": "NVML did not start"}
    assert report["cpu"] == {"available": False, "reason": "rank 0: x; rank 1: y"}
    assert combine([{"gpu": no_gpu, "cpu": no_gpu}] * 3)["gpu"] == no_gpu


def test_energy_per_step_and_its_line():
    report = {"gpu": {**gpu_entry("a", "GPU-1", 600.0, 3.0), "mean_watts": 200.0},
              "cpu": {**cpu_entry("a", 150.0, 3.0), "mean_watts": 50.0}}
    section = energy_per_step(report, steps=300, points=1000)
    assert section["counted"] == ["gpu", "cpu"] and section["joules_per_step"] == pytest.approx(2.5)
    assert section["joules_per_point_step"] == pytest.approx(2.5e-3) and section["mean_watts"] == 250.0
    assert section["gpu_joules"] == 600.0 and section["cpu_mean_watts"] == 50.0 and section["seconds"] == 3.0
    assert format_energy(section) == "2.5 J/step, 250 W (GPU + CPU)"

    report["cpu"] = {"available": False, "reason": "no RAPL interface"}
    section = energy_per_step(report, steps=0, points=1000)  # nothing stepped: no rate
    assert section["joules_per_step"] is None and section["cpu_reason"] == "no RAPL interface"
    report["gpu"] = {"available": False, "reason": "the cpu backend uses no GPU"}
    section = energy_per_step(report, steps=10, points=1000)
    assert section["counted"] == [] and section["joules_per_step"] is None and section["mean_watts"] is None
    assert format_energy(section) == ("GPU not measured: the cpu backend uses no GPU; "
                                      "CPU not measured: no RAPL interface")
    section["cpu_reason"] = ("no RAPL interface: /sys/class/powercap does not exist (a kernel without powercap, "
                             "or a virtual machine or container that does not expose it)")
    assert format_energy(section, brief=True).endswith("CPU not measured: no RAPL interface: "
                                                       "/sys/class/powercap does not exist")
    section["cpu_reason"] = "reading failed during the run: OSError: " + "x" * 80
    assert format_energy(section, brief=True).endswith("CPU not measured: reading failed during the run")
    assert format_energy(section).endswith("x" * 80)  # summary.json's text is whole


# A run ------------------------------------------------------------------------------------
CASE = """
[mesh]
elements = [2, 2, 1]
[discretization]
order = 3
[initial]
Ez = "sin(pi*x)*sin(pi*y)"
[time]
t_end = 0.2
"""


def test_lobatto_run_summary_has_the_energy_section(tmp_path):
    (tmp_path / "case.toml").write_text(CASE)
    env = dict(os.environ, PYTHONPATH=str(SRC), OMP_NUM_THREADS="1")
    result = subprocess.run([sys.executable, "-m", "lobatto", "run", str(tmp_path / "case.toml"), "--backend", "cpu",
                             "--output", str(tmp_path / "out"), "--quiet"], capture_output=True, text=True, env=env,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    use = summary["energy_use"]
    assert use["steps"] == summary["rate_steps"] > 0
    assert use["gpu"] == {"available": False, "reason": "the cpu backend uses no GPU"}
    line = next(line for line in result.stdout.splitlines() if line.strip().startswith("energy use"))
    if Path("/sys/class/powercap").is_dir() and use["cpu"]["available"]:  # a host that exposes RAPL
        assert use["counted"] == ["cpu"] and use["cpu_joules"] >= 0
        assert use["joules_per_step"] == pytest.approx(use["cpu_joules"] / use["steps"])
        assert "J/step" in line
    else:
        assert use["joules_per_step"] is None and use["cpu_reason"] == use["cpu"]["reason"]
        assert f"CPU not measured: {brief_reason(use['cpu_reason'])}" in line and len(line) < 160


def test_run_through_the_api_measures_a_fake_rapl_over_the_rate_window(tmp_path, monkeypatch):
    from lobatto.api import case_from_dict, run

    root = rapl_tree(tmp_path / "powercap", {"intel-rapl:0": ("package-0", 123, 262_143_328_850)})
    monkeypatch.setattr(power, "RAPL_ROOT", root)
    case = case_from_dict({"mesh": {"elements": [2, 2, 1]}, "discretization": {"order": 2},
                           "initial": {"Ez": "sin(pi*x)*sin(pi*y)"}, "time": {"t_end": 0.2}})
    summary = run(case, backend="cpu", output_dir=tmp_path / "out").summary
    use = summary["energy_use"]
    assert use["counted"] == ["cpu"] and use["cpu_method"] == "rapl"
    assert use["cpu_joules"] == 0.0 and use["joules_per_step"] == 0.0  # the fake counter stood still
    assert use["steps"] == summary["rate_steps"] and use["seconds"] > 0


# The two NVML bindings, against stand-ins ---------------------------------------------------
FAKE_LIBNVML = r"""
#include <string.h>
typedef struct device { int id; } *nvmlDevice_t;
static struct device devices[2] = {{1}, {2}};
static unsigned long long energy = 5000;
static int inits = 0;
int nvmlInit_v2(void) { inits++; return 0; }
int nvmlShutdown(void) { inits--; return 0; }
int fake_inits(void) { return inits; }
const char *nvmlErrorString(int code) { return code == 3 ? "Not Supported" : code == 6 ? "Not Found" : "Unknown"; }
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *device) {
    if (strcmp(bus, "00000000:3B:00.0") == 0) { *device = &devices[0]; return 0; }
    if (strcmp(bus, "00000000:5E:00.0") == 0) { *device = &devices[1]; return 0; }  /* no counter */
    return 6;
}
int nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    if (strncmp(uuid, "GPU-1", 5) == 0) { *device = &devices[0]; return 0; }
    return 6;
}
int nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    if (length < 96) return 999;
    strcpy(uuid, device->id == 1 ? "GPU-1111" : "GPU-2222");
    return 0;
}
int nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    strncpy(name, "Fake NVML GPU", length);
    return 0;
}
int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *mj) {
    if (device->id != 1) return 3;
    energy += 1500000000000ULL;  /* above 2^32 mJ per read: the value must travel as 64 bits */
    *mj = energy;
    return 0;
}
int nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *mw) { *mw = 123456; return 0; }
"""


def test_ctypes_binding_against_a_fake_libnvidia_ml(tmp_path, monkeypatch):
    import ctypes
    import shutil

    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    (tmp_path / "fake.c").write_text(FAKE_LIBNVML)
    library = tmp_path / "libnvidia-ml-fake.so.1"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(tmp_path / "fake.c")], check=True)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setattr(power, "NVML_LIBRARY", str(library))
    clock = Clock(1.0)
    meter = EnergyMeter("cuda", "00000000:3B:00.0", rapl_root="/no", clock=clock)  # load_nvml finds the fake
    meter.start()
    clock.t = 4.0
    gpu = meter.stop()["gpu"]
    assert gpu["method"] == "nvml-energy-counter" and gpu["joules"] == pytest.approx(1.5e9)
    assert gpu["devices"][0]["uuid"] == "GPU-1111" and gpu["devices"][0]["name"] == "Fake NVML GPU"
    assert gpu["mean_watts"] == pytest.approx(5e8)
    assert ctypes.CDLL(str(library)).fake_inits() == 0  # NVML shut down as often as started

    meter = EnergyMeter("cuda", "00000000:5E:00.0", rapl_root="/no", sample_seconds=None, clock=clock)  # no counter
    meter.start()
    clock.t = 6.0
    gpu = meter.stop()["gpu"]
    assert gpu["method"] == "nvml-power-sampled" and gpu["counter"] == "no energy counter: NVML error 3: Not Supported"
    assert gpu["mean_watts"] == pytest.approx(123.456) and gpu["devices"][0]["uuid"] == "GPU-2222"
    assert EnergyMeter("cuda", "GPU-1111", rapl_root="/no").about["gpu"]["devices"][0]["uuid"] == "GPU-1111"
    reason = EnergyMeter("cuda", "0000:99:00.0", rapl_root="/no").reasons["gpu"]
    assert reason == "NVML does not know the GPU 0000:99:00.0: NVML error 6: Not Found"


def test_pynvml_binding_against_a_stand_in_module(monkeypatch):
    import types

    class NVMLError(Exception):
        def __init__(self, value):
            super().__init__({3: "Not Supported", 6: "Not Found"}[value])
            self.value = value

    calls = []

    def by_bus(bus):
        calls.append(bus)
        if bus != BUS.encode():
            raise NVMLError(6)
        return "h"

    def not_supported(handle):
        raise NVMLError(3)

    module = types.SimpleNamespace(
        NVMLError=NVMLError, nvmlInit=lambda: calls.append("init"), nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlDeviceGetHandleByPciBusId=by_bus, nvmlDeviceGetHandleByUUID=lambda uuid: "h",
        nvmlDeviceGetUUID=lambda h: UUID.encode(),  # older nvidia-ml-py: bytes
        nvmlDeviceGetName=lambda h: "Fake", nvmlDeviceGetTotalEnergyConsumption=not_supported,
        nvmlDeviceGetPowerUsage=lambda h: 250_000)
    monkeypatch.setitem(sys.modules, "pynvml", module)
    clock = Clock(0.0)
    meter = EnergyMeter("cuda", BUS, rapl_root="/no", sample_seconds=None, clock=clock)
    meter.start()
    clock.t = 0.5
    gpu = meter.stop()["gpu"]
    assert gpu["method"] == "nvml-power-sampled" and gpu["counter"] == "no energy counter: Not Supported"
    assert gpu["devices"][0]["uuid"] == UUID and gpu["mean_watts"] == pytest.approx(250.0)
    assert calls == ["init", BUS.encode(), "shutdown"]
    assert EnergyMeter("cuda", "0000:99:00.0", rapl_root="/no").reasons["gpu"].endswith("Not Found")
