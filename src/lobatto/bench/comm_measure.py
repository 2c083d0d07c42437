"""Measurements of the communication model on this machine (run under mpiexec): ping-pong,
a burst of small sends, and lobatto's own face exchange on its real partition of a box,
from which the per-exchange software cost (s0, s_v, s1) is fitted (docs/comm-model.md)."""

from __future__ import annotations

import itertools
import time

import numpy as np

from lobatto.bench import comm_loggp
from lobatto.bench.comm_model import Software, network_time
from lobatto.bench.comm_pattern import MAXWELL_TRACES, partition_pattern

#: blocks of elements per rank for the software fit: the busiest rank's message bytes grow with
#: the block's cross-section (by bz) and its local work with its volume, so blocks of the same
#: cross-section and different lengths (and the reverse) separate the two terms
FIT_BLOCKS = ((2, 2, 2), (6, 2, 2), (3, 3, 3), (2, 4, 4), (5, 4, 4), (4, 5, 5))


def weak_box(block, ranks: int) -> tuple[int, int, int]:
    """The box of ``ranks`` blocks along x (rcb then gives each rank one block)."""
    return (int(block[0]) * ranks, int(block[1]), int(block[2]))


def face_exchange(comm, elements, order: int, repeats: int = 30, method: str = "pairwise", backend=None,
                  exchange: str = "auto", warmup: int = 3) -> dict:
    """Time ``GatherScatter.apply`` of the Maxwell traces (6 fields of the face points) on
    lobatto's rcb partition of the box ``elements``: the slowest rank's median, plus this
    rank's neighbour lists as the gather-scatter set them up.

    ``backend``: where the data lives (None or a NumPy backend: host arrays; a CuPy backend:
    device arrays, the gather-scatter on the device and ``exchange`` its transport). Each
    timed call starts from a fresh copy of the data (copied outside the timed window), after
    ``warmup`` untimed calls (kernel compilation, NCCL set-up, buffer allocation) and ends with
    ``backend.synchronize()``, so device work queued by the call is inside its time."""
    from mpi4py import MPI

    from lobatto.comm import GatherScatter
    from lobatto.mesh import face_point_ids
    from lobatto.mesh.box import box_mesh
    from lobatto.mesh.partition import partition_box

    rank, size = comm.Get_rank(), comm.Get_size()
    mesh = box_mesh(elements, element_ids=partition_box(elements, size, rank))
    ids = face_point_ids(mesh, order).reshape(-1)
    xp = np if backend is None else backend.xp
    sync = (lambda: None) if backend is None else backend.synchronize
    device = xp is not np
    gs = GatherScatter(ids, comm=comm, method=method, vn_hint=MAXWELL_TRACES, xp=xp if device else None,
                       exchange=exchange if device else "auto")
    # the same sums on one rank: what a single-rank step already pays (compiled one-pass combine)
    local = GatherScatter(ids, xp=xp if device else None)
    host = np.random.default_rng(rank).standard_normal((MAXWELL_TRACES, ids.size))
    u0 = xp.asarray(host) if device else host
    work = xp.empty_like(u0)
    times, local_times = [], []
    for i in range(repeats + warmup):
        work[...] = u0
        sync()
        comm.Barrier()
        t0 = MPI.Wtime()
        gs.apply(work)
        sync()
        t1 = MPI.Wtime()
        work[...] = u0
        sync()
        t2 = MPI.Wtime()
        local.apply(work)
        sync()
        t3 = MPI.Wtime()
        if i >= warmup:
            times.append(t1 - t0)
            local_times.append(t3 - t2)
    seconds = comm.allreduce(float(np.median(times)), op=MPI.MAX)
    # the exchange's own cost: the multi-rank apply less the single-rank one (slowest rank)
    extra = comm.allreduce(float(np.median(times) - np.median(local_times)), op=MPI.MAX)
    topo = gs.topo
    own = {"rank": rank, "neighbours": [int(q) for q in topo.nbr_ranks],
           "shared_ids": [int(c) for c in topo.nbr_counts],
           "message_bytes": [int(c) * MAXWELL_TRACES * 8 for c in topo.nbr_counts],
           "local_values": int(ids.size) * MAXWELL_TRACES}
    info = gs.setup_info()
    gs.free()
    return {"elements": list(elements), "order": order, "ranks": size, "method": info["method"],
            "exchange": info["exchange"], "device": bool(device), "repeats": repeats, "warmup": warmup,
            "apply_seconds": seconds, "local_apply_seconds": comm.allreduce(float(np.median(local_times)), op=MPI.MAX),
            "seconds": max(extra, 0.0), "rank_lists": comm.gather(own, root=0)}


def nonnegative_lstsq(A, y, weights=None) -> tuple[np.ndarray, float]:
    """min |W (A x - y)| over x >= 0, exactly, by trying every set of free columns (A has a
    handful); (x, relative rms residual of A x against y)."""
    A, y = np.asarray(A, dtype=float), np.asarray(y, dtype=float)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=float)
    Aw, yw = A * w[:, None], y * w
    best, best_cost = np.zeros(A.shape[1]), float(np.sum(yw**2))
    for r in range(1, A.shape[1] + 1):
        for cols in itertools.combinations(range(A.shape[1]), r):
            sol, *_ = np.linalg.lstsq(Aw[:, cols], yw, rcond=None)
            if np.any(sol < 0):
                continue
            x = np.zeros(A.shape[1])
            x[list(cols)] = sol
            cost = float(np.sum((Aw @ x - yw) ** 2))
            if cost < best_cost * (1 - 1e-12):
                best, best_cost = x, cost
    rel = (A @ best - y) / np.where(y > 0, y, 1.0)
    return best, float(np.sqrt(np.mean(rel**2)))


def fit_software(params, rows) -> Software:
    """s0 + s_v V + s1 B: non-negative least squares, relative (each row weighted by 1 / its
    measured time), of (measured - LogGP network time) of the busiest rank's exchange over the
    rows (each {ranks, seconds, message_bytes: the busiest rank's list, local_values: V, the
    trace values its gather-scatter touches}). ``seconds`` is the multi-rank apply less the
    single-rank one, so the software cost is the multi-rank path's extra work over the
    one-rank compiled combine. Rows of one size give s0 only; the V and B terms separate only
    where V / B (the block's volume over its shared surface) varies among the rows."""
    B = np.array([float(sum(r["message_bytes"])) for r in rows])
    V = np.array([float(r.get("local_values", 0)) for r in rows])
    t = np.array([float(r["seconds"]) for r in rows])
    y = t - np.array([network_time(params, r["message_bytes"], r["ranks"]) for r in rows])
    if len(set(zip(B, V))) < 2:
        return Software(max(float(np.mean(y)), 0.0), 0.0, "face exchange, one size: s0 only")
    A = np.stack([np.ones_like(B), V, B], axis=1)
    (s0, s_v, s1), res = nonnegative_lstsq(A, y, 1.0 / np.maximum(t, 1e-9))
    return Software(s0=float(s0), s1=float(s1), s_v=float(s_v),
                    source=f"face exchange, {len(rows)} block shapes, non-negative least squares (rel. rms {res:.2f})")


def measure(comm, order: int = 5, blocks=FIT_BLOCKS, max_bytes: int = 1 << 22, repeats: int = 30) -> dict | None:
    """Collective. On rank 0: {"loggp", "software", "pingpong", "burst", "face_exchange"}."""
    sizes = [8 * 4**k for k in range(12) if 8 * 4**k <= max_bytes]
    pp = comm_loggp.measure_pingpong(comm, sizes)
    burst = comm_loggp.measure_burst(comm)
    rows = []
    for block in blocks:
        elements = weak_box(block, comm.Get_size())
        t0 = time.perf_counter()
        r = face_exchange(comm, elements, order, repeats)
        r["setup_and_run_seconds"] = time.perf_counter() - t0
        rows.append(r)
    if comm.Get_rank() != 0:
        return None
    params = comm_loggp.fit(pp, burst, source=f"measured here: ping-pong and burst between ranks 0 and 1 of "
                                              f"{comm.Get_size()}")
    for r in rows:
        busiest = max(r["rank_lists"], key=lambda o: (o["local_values"], sum(o["message_bytes"]), len(o["neighbours"])))
        r["message_bytes"] = busiest["message_bytes"]
        r["local_values"] = busiest["local_values"]
        r["busiest_rank"] = busiest["rank"]
        pat = partition_pattern(r["elements"], r["ranks"])[busiest["rank"]]
        r["pattern_bytes"] = list(pat.message_bytes(order).values())
    software = fit_software(params, rows) if comm.Get_size() > 1 else Software()
    for r in rows:
        r["network_seconds"] = network_time(params, r["message_bytes"], r["ranks"])
        r["predicted_seconds"] = r["network_seconds"] + software.seconds(r["local_values"], sum(r["message_bytes"]))
    return {"loggp": params.as_dict(), "software": vars(software), "pingpong": pp, "burst": burst,
            "face_exchange": rows}
