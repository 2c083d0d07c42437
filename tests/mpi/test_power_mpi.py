"""lobatto.machine.power under ``mpiexec -n 2`` and ``-n 3``: every rank gets the same report, a GPU
shared by two ranks and the RAPL packages of a host are counted once (fake NVML and fake
sysfs trees, two fake hosts), and a `lobatto` run on every rank carries the same energy section."""

from __future__ import annotations

import json

import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

SCRIPT = r'''
import json, sys
from pathlib import Path

from mpi4py import MPI

from lobatto.machine import power

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
mode, root = sys.argv[1], Path(sys.argv[2])
tree = root / f"rank{rank}" / "intel-rapl:0"  # each rank its own copy of its host's counters
tree.mkdir(parents=True)
(tree / "name").write_text("package-0\n")
(tree / "max_energy_range_uj").write_text("262143328850\n")
(tree / "energy_uj").write_text("1000\n")

if mode == "meter":
    host = "node-a" if rank < 2 else "node-b"  # ranks 0 and 1 share node-a and its GPU
    uuid, bus, watts = {"node-a": ("GPU-aaaa", "0000:01:00.0", 300), "node-b": ("GPU-bbbb", "0000:02:00.0", 200)}[host]

    class FakeNvml:
        source = "fake"
        reads = 0

        def device(self, identity):
            assert identity == bus, identity
            return "handle"

        def uuid(self, handle):
            return uuid

        def name(self, handle):
            return "Fake GPU"

        def total_energy_mj(self, handle):  # each read: `watts` joules later
            self.reads += 1
            return self.reads * watts * 1000

        def close(self):
            pass

    meter = power.EnergyMeter("cuda", bus, comm, nvml=FakeNvml(), rapl_root=root / f"rank{rank}",
                              rapl_poll_seconds=None, host=host)
    meter.start()
    (tree / "energy_uj").write_text(f"{1000 + (5_000_000 if host == 'node-a' else 7_000_000)}\n")
    report = meter.stop()
else:  # a run of the driver on every rank, its RAPL counters in the fake tree
    from lobatto.api import run

    power.RAPL_ROOT = root / f"rank{rank}"
    case = {"mesh": {"elements": [3, 2, 1]}, "discretization": {"order": 2},
            "initial": {"Ez": "sin(pi*x)*sin(pi*y)"}, "time": {"t_end": 0.2}}
    report = run(case, backend="cpu", output_dir=root / "out", comm="world").summary["energy_use"]
(root / f"report{rank}.json").write_text(json.dumps(report, sort_keys=True))
'''


def reports(tmp_path, nprocs, mode):
    script = tmp_path / "power_ranks.py"
    script.write_text(SCRIPT)
    result = run(nprocs, [str(script), mode, str(tmp_path)], timeout=120)
    assert result.returncode == 0, describe(result)
    texts = [(tmp_path / f"report{rank}.json").read_text() for rank in range(nprocs)]
    assert len(set(texts)) == 1, texts  # every rank has the same report
    return json.loads(texts[0])


@pytest.mark.parametrize("nprocs", [2, 3])
def test_shared_gpus_and_hosts_are_counted_once(tmp_path, nprocs):
    report = reports(tmp_path, nprocs, "meter")
    gpu, cpu = report["gpu"], report["cpu"]
    expected_devices = [("node-a", "GPU-aaaa", [0, 1])] + ([("node-b", "GPU-bbbb", [2])] if nprocs == 3 else [])
    assert [(d["host"], d["uuid"], d["ranks"]) for d in gpu["devices"]] == expected_devices
    assert gpu["joules"] == pytest.approx(300.0 + (200.0 if nprocs == 3 else 0.0))
    assert gpu["method"] == "nvml-energy-counter" and "missing" not in gpu
    assert [(h["host"], h["ranks"]) for h in cpu["hosts"]] == [("node-a", [0, 1])] + ([("node-b", [2])] if nprocs == 3
                                                                                       else [])
    assert cpu["joules"] == pytest.approx(5.0 + (7.0 if nprocs == 3 else 0.0))


@pytest.mark.parametrize("nprocs", [2, 3])
def test_a_run_on_every_rank_has_the_same_energy_section(tmp_path, nprocs):
    use = reports(tmp_path, nprocs, "run")
    assert use["gpu"] == {"available": False, "reason": "the cpu backend uses no GPU"}
    assert use["counted"] == ["cpu"] and use["cpu_joules"] == 0.0  # the fake counters stood still
    assert len(use["cpu"]["hosts"]) == 1 and use["cpu"]["hosts"][0]["ranks"] == list(range(nprocs))  # one host
    assert use["steps"] > 0 and use["joules_per_step"] == 0.0
