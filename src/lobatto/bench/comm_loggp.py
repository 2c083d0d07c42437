"""LogGP parameters of a machine: fitted from measurements, read from ``lobatto sysbench`` JSON,
or measured here under mpiexec (docs/comm-model.md).

LogGP (Alexandrov et al. 1995): a message of m bytes from one rank to another takes
``L + 2o + m G`` one way (L: wire latency, o: CPU overhead at each end, G: seconds per byte);
a rank can inject a new message every ``g`` seconds (gap). Ping-pong gives only ``L + 2o`` and
``G``; a burst of small sends gives ``o`` (time inside ``Isend``) and ``g`` (time per message
when many are sent back to back), so ``L`` is what is left of the latency.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from lobatto.bench.sysbench_mpi import phase_end
from lobatto.errors import InputError


@dataclass
class LogGP:
    L: float  # s, latency of the network
    o: float  # s, CPU overhead of one send or receive
    g: float  # s, gap between consecutive message injections
    G: float  # s per byte
    source: str = ""
    residuals: dict = field(default_factory=dict)  # fit quality, relative rms per measurement

    @property
    def latency(self) -> float:
        """L + 2o: the one-way time of an empty message."""
        return self.L + 2 * self.o

    def one_way(self, nbytes) -> float:
        return self.latency + np.asarray(nbytes, dtype=float) * self.G

    def as_dict(self) -> dict:
        d = asdict(self)
        d["latency"] = self.latency
        d["bandwidth_bytes_per_s"] = 1.0 / self.G if self.G > 0 else None
        return d


#: Interconnects assumed for extrapolation: stated numbers, not measurements of this machine.
ASSUMED = {
    "ib-hdr200": LogGP(
        L=2.0e-6, o=0.5e-6, g=0.5e-6, G=1 / 25e9,
        source=("assumed: InfiniBand HDR 200 Gb/s with GPU-direct RDMA, 25 GB/s per rank and 2 us "
                "latency (vendor figures of the link, not measured here)")),
    "nvlink-h100": LogGP(
        L=5.0e-6, o=2.0e-6, g=1.0e-6, G=1 / 150e9,
        source=("assumed: NCCL over NVLink 4 inside one node, 150 GB/s per direction usable and about "
                "9 us per small message (NCCL launch + protocol), not measured here")),
}


def _line_fit(x, y, weights=None) -> tuple[float, float, float]:
    """Least squares y = a + b x (weights: per row); (a, b, relative rms residual)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=float)
    A = np.stack([np.ones_like(x), x], axis=1) * w[:, None]
    (a, b), *_ = np.linalg.lstsq(A, y * w, rcond=None)
    fitted = a + b * x
    rel = (fitted - y) / np.where(y > 0, y, 1.0)
    return float(a), float(b), float(np.sqrt(np.mean(rel**2)))


def fit_pingpong(rows) -> tuple[float, float, float]:
    """(L + 2o, G, relative rms) from rows {bytes, seconds_one_way}. Relative least squares
    (each row weighted by 1/t), so the small messages fix the latency and the large ones G."""
    b = np.array([r["bytes"] for r in rows], dtype=float)
    t = np.array([r["seconds_one_way"] for r in rows], dtype=float)
    if len(b) < 2 or len(np.unique(b)) < 2:
        raise InputError("ping-pong: need rows of at least two message sizes to fit latency and bandwidth")
    if np.any(~np.isfinite(t)) or np.any(t <= 0):
        raise InputError("ping-pong: every seconds_one_way must be a positive number")
    lat, G, res = _line_fit(b, t, 1.0 / t)
    return max(lat, 0.0), max(G, 0.0), res


def fit_burst(rows) -> tuple[float, float, float, float]:
    """(o, g, rms of o's fit, rms of g's fit) from rows {messages, seconds_post, seconds_total}:
    the slope of the time spent in the k Isend calls is o, that of the time to complete the
    k sends is the gap g (never below o: a rank cannot inject faster than it posts)."""
    k = np.array([r["messages"] for r in rows], dtype=float)
    if len(np.unique(k)) < 2:
        raise InputError("burst: need rows of at least two message counts to fit o and g")
    _, o, res_o = _line_fit(k, [r["seconds_post"] for r in rows], 1.0 / k)
    _, g, res_g = _line_fit(k, [r["seconds_total"] for r in rows], 1.0 / k)
    o = max(o, 0.0)
    return o, max(g, o), res_o, res_g


def fit(pingpong_rows, burst_rows=None, source: str = "") -> LogGP:
    """LogGP from ping-pong rows and, if given, burst rows (else o = g = 0: all of the
    latency is taken as L, and messages sent back to back cost no gap)."""
    lat, G, res_pp = fit_pingpong(pingpong_rows)
    residuals = {"pingpong": res_pp}
    o = g = 0.0
    if burst_rows:
        o, g, res_o, res_g = fit_burst(burst_rows)
        residuals.update({"burst_o": res_o, "burst_g": res_g})
        o = min(o, lat / 2)  # L >= 0
    return LogGP(L=lat - 2 * o, o=o, g=g, G=G, source=source, residuals=residuals)


# -- lobatto sysbench JSON ------------------------------------------------------------------
def sysbench_section(results: dict, name: str, path,
                     hint: str = "run 'lobatto sysbench' under mpiexec -n 2 or more") -> dict:
    """``results[name]`` of a sysbench file, with rows; InputError naming the file otherwise."""
    sec = results.get(name)
    if not isinstance(sec, dict):
        raise InputError(f"{path}: no results.{name} section ({hint})")
    if sec.get("skipped"):
        raise InputError(f"{path}: results.{name} was skipped: {sec['skipped']}")
    rows = sec.get("rows")
    if not isinstance(rows, list) or not rows:
        raise InputError(f"{path}: results.{name}.rows is missing or empty")
    return sec


def read_sysbench(path) -> dict:
    """The ``results`` of a sysbench JSON file; InputError naming the file otherwise."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{path}: no such file (expected the JSON written by 'lobatto sysbench')") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a JSON file ({exc}); expected the output of 'lobatto sysbench'") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise InputError(f"{path}: no 'results' table; expected the JSON written by 'lobatto sysbench'")
    return data["results"]


def from_sysbench(path, transport: str = "mpi") -> LogGP:
    """LogGP of host MPI (``transport="mpi"``: results.mpi_pingpong, plus results.comm_burst if
    present) or of one GPU<->GPU transport (results.gpu_gpu rows of that transport; the fastest
    chunking of each size)."""
    results = read_sysbench(path)
    if transport == "mpi":
        pp = sysbench_section(results, "mpi_pingpong", path)["rows"]
        try:
            rows = [{"bytes": int(r["bytes"]), "seconds_one_way": float(r["seconds_one_way"])} for r in pp]
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{path}: results.mpi_pingpong.rows need numbers 'bytes' and 'seconds_one_way'") from None
        burst = results.get("comm_burst", {}).get("rows") if isinstance(results.get("comm_burst"), dict) else None
        return fit(rows, burst, source=f"{path}: mpi_pingpong" + (" + comm_burst" if burst else ""))
    gg = sysbench_section(results, "gpu_gpu", path)["rows"]
    best: dict[int, float] = {}
    for r in gg:
        try:
            if r.get("transport") != transport or r.get("skipped"):
                continue
            b, s = int(r["bytes"]), float(r["seconds"])
        except (KeyError, TypeError, ValueError, AttributeError):
            raise InputError(f"{path}: results.gpu_gpu.rows need 'transport', 'bytes' and 'seconds'") from None
        best[b] = min(best.get(b, np.inf), s)
    if len(best) < 2:
        have = sorted({str(r.get("transport")) for r in gg if isinstance(r, dict)})
        raise InputError(f"{path}: results.gpu_gpu has fewer than two sizes for transport {transport!r} "
                         f"(transports present: {', '.join(have) or 'none'})")
    rows = [{"bytes": b, "seconds_one_way": s} for b, s in sorted(best.items())]
    return fit(rows, None, source=f"{path}: gpu_gpu {transport}")


# -- measuring here (under mpiexec) ---------------------------------------------------------
def measure_pingpong(comm, sizes, repeats: int = 5) -> list[dict] | None:
    """Rows {bytes, seconds_one_way} (best of ``repeats`` batches) between ranks 0 and 1;
    on rank 0 (None elsewhere)."""
    rank = comm.Get_rank()
    rows = []
    if rank < 2:
        other = 1 - rank
        for size in sizes:
            buf = np.zeros(max(int(size), 1), dtype=np.uint8)
            count = int(min(200, max(4, (1 << 22) // max(int(size), 1))))
            best = np.inf
            for _ in range(repeats + 1):  # the first batch warms up
                t0 = time.perf_counter()
                for _ in range(count):
                    if rank == 0:
                        comm.Send([buf[:size], size], other, 11)
                        comm.Recv([buf[:size], size], other, 11)
                    else:
                        comm.Recv([buf[:size], size], other, 11)
                        comm.Send([buf[:size], size], other, 11)
                best = min(best, (time.perf_counter() - t0) / (2 * count))
            rows.append({"bytes": int(size), "seconds_one_way": float(best)})
    phase_end(comm, rank < 2)
    return rows if rank == 0 else None


def measure_burst(comm, counts=(1, 2, 4, 8, 16, 32, 64), nbytes: int = 8, repeats: int = 20) -> list[dict] | None:
    """Rank 0 sends k small messages back to back to rank 1: rows {messages, seconds_post
    (time inside the k Isend calls), seconds_total (until all k sends completed)}, medians;
    on rank 0 (None elsewhere)."""
    from mpi4py import MPI

    rank = comm.Get_rank()
    rows = []
    if rank < 2:
        buf = np.zeros((max(counts), nbytes), dtype=np.uint8)
        for k in counts:
            post, total = [], []
            for _ in range(repeats + 2):
                if rank == 0:
                    comm.Recv([buf[0], nbytes], 1, 12)  # rank 1 has posted its receives
                    t0 = time.perf_counter()
                    reqs = [comm.Isend([buf[i], nbytes], 1, 13) for i in range(k)]
                    t1 = time.perf_counter()
                    MPI.Request.Waitall(reqs)
                    t2 = time.perf_counter()
                    post.append(t1 - t0)
                    total.append(t2 - t0)
                else:
                    reqs = [comm.Irecv([buf[i], nbytes], 0, 13) for i in range(k)]
                    comm.Send([buf[0], nbytes], 0, 12)
                    MPI.Request.Waitall(reqs)
            if rank == 0:
                rows.append({"messages": int(k), "bytes": nbytes, "seconds_post": float(np.median(post[2:])),
                             "seconds_total": float(np.median(total[2:]))})
    phase_end(comm, rank < 2)
    return rows if rank == 0 else None
