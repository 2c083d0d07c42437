"""The communication model's NCCL ping-pong (comm_measure.nccl_pingpong) between two GPUs,
under mpiexec: rows on rank 0 only, every size present, one-way times positive and growing
with the message, and a LogGP fit from them with a bandwidth above host MPI's on the same
pair. Needs 2 GPUs (NCCL refuses two ranks on one device)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mpi"))
from mpirun import SKIP_REASON, describe, run


def _gpus() -> int:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001
        return 0


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(_gpus() < 2, reason="needs 2 GPUs (one per rank) and CuPy"),
    pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or ""),
]

CHECK = """
import json
from mpi4py import MPI
import cupy
from lobatto.bench import comm_loggp
from lobatto.bench.comm_measure import nccl_pingpong
comm = MPI.COMM_WORLD
cupy.cuda.Device(comm.Get_rank() % cupy.cuda.runtime.getDeviceCount()).use()
sizes = [8, 4096, 1 << 20, 1 << 22]
rows, why = nccl_pingpong(comm, sizes)
host = comm_loggp.measure_pingpong(comm, sizes)
print(f"RANK {comm.Get_rank()} " + json.dumps({"rows": rows, "why": why, "host": host}))
"""


def test_nccl_pingpong_rows_and_fit():
    res = run(2, ["-c", CHECK], timeout=180)
    assert res.returncode == 0, describe(res)
    out = {int(l.split()[1]): json.loads(l.split(" ", 2)[2]) for l in res.stdout.splitlines() if l.startswith("RANK ")}
    assert out[0]["why"] is None and out[1]["why"] is None
    assert out[1]["rows"] is None
    rows = out[0]["rows"]
    assert [r["bytes"] for r in rows] == [8, 4096, 1 << 20, 1 << 22]
    times = [r["seconds_one_way"] for r in rows]
    assert all(t > 0 for t in times) and times[-1] > times[0]
    from lobatto.bench import comm_loggp

    nccl = comm_loggp.fit(rows)
    host = comm_loggp.fit(out[0]["host"])
    assert nccl.G > 0 and 1 / nccl.G > 1 / host.G
