"""Measurements of the communication model on this machine (run under mpiexec): ping-pong,
a burst of small sends, lobatto's own face exchange on its real partition of a box (on the
run's backend: host arrays, or CuPy arrays on the device), from which the per-exchange
software cost (s0, s_v, s1) is fitted, and timed steps of the real run against the same block
alone on each rank, from which the stage term (r0, r_e) is fitted (docs/comm-model.md)."""

from __future__ import annotations

import gc
import itertools
import os
import tempfile
import time

import numpy as np

from lobatto.bench import comm_loggp
from lobatto.bench.comm_model import Software, network_time
from lobatto.bench.comm_pattern import MAXWELL_TRACES, partition_pattern
from lobatto.bench.sysbench_mpi import phase_end

#: blocks of elements per rank for the software fit: the busiest rank's message bytes grow with
#: the block's cross-section (by bz) and its local work with its volume, so blocks of the same
#: cross-section and different lengths (and the reverse) separate the two terms
FIT_BLOCKS = ((2, 2, 2), (6, 2, 2), (3, 3, 3), (2, 4, 4), (5, 4, 4), (4, 5, 5))
#: the same on a GPU: blocks up to the 16^3 of the GPU validation, since small ones measure
#: only the launch latency of the device passes
DEVICE_FIT_BLOCKS = ((4, 4, 4), (12, 4, 4), (8, 8, 8), (6, 12, 12), (12, 12, 12), (16, 16, 16))
#: blocks per rank of the stage term's fit (timed steps of whole runs, so fewer)
STAGE_BLOCKS = ((2, 2, 2), (3, 3, 3), (4, 4, 4), (5, 4, 4))
DEVICE_STAGE_BLOCKS = ((4, 4, 4), (8, 8, 8), (16, 16, 16))


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


def run_backend(comm, name: str):
    """The backend a run on this rank gets (the driver's choice of GPU: the node-local rank,
    modulo the GPUs with LOBATTO_SHARE_GPUS=1); None for host arrays (cpu)."""
    if name == "cpu":
        return None
    from lobatto.backends import get_backend
    from lobatto.machine.parallel import node_local_rank

    return get_backend(name, device_id=node_local_rank(comm), rank=comm.Get_rank())


def device_sharing(comm, backend) -> dict:
    """Collective: which GPU each rank uses and whether ranks share one (the model's s_v then
    describes ranks taking turns on one device, not one rank per GPU)."""
    import platform

    device = getattr(backend, "device_id", None) if backend is not None else None
    where = comm.allgather((platform.node(), device))
    on_gpus = [w for w in where if w[1] is not None]
    shared = len(set(on_gpus)) < len(on_gpus)
    note = None
    if shared:
        note = (f"{len(on_gpus)} ranks on {len(set(on_gpus))} GPU(s): ranks SHARE a GPU"
                f"{' (LOBATTO_SHARE_GPUS=1)' if os.environ.get('LOBATTO_SHARE_GPUS') == '1' else ''}; the fitted "
                "costs are those of ranks taking turns on one device, not of one rank per GPU")
    return {"devices": [list(w) for w in where], "shared_gpu": shared, "note": note}


def maxwell_case(elements, order: int, backend_name: str):
    """The validation's case: lsrk45, PEC walls, a smooth initial field (api.case_from_dict)."""
    from lobatto.api import case_from_dict

    upper = [float(e) for e in elements]
    return case_from_dict({
        "physics": {"equations": "maxwell"},
        "mesh": {"elements": [int(e) for e in elements], "boundary": "pec", "upper": upper},
        "discretization": {"order": int(order)},
        "initial": {"Ez": "sin(pi*x/4)*sin(pi*y/4)", "Hx": "0.1*sin(pi*z/4)"},
        "time": {"t_end": 1e6},
        "backend": {"name": backend_name},
    }, name="comm_model")


def one_rank_simulation(comm, block, order: int, backend_name: str, output_dir, local_rank=None):
    """``block`` as a one-rank case (no exchange) on this rank's own device: the driver would put
    a one-rank run on the node's first GPU, while the fair comparison with a multi-rank run is
    the GPU this rank's share of it used. ``local_rank``: the rank's node-local rank, when
    already known (collective otherwise)."""
    import lobatto.runner.simulation as simulation
    from lobatto.runner.simulation import Simulation

    if local_rank is None:
        local_rank = simulation.node_local_rank(comm)
    choose = simulation.node_local_rank
    simulation.node_local_rank = lambda _comm: local_rank
    try:
        return Simulation(maxwell_case(block, order, backend_name), output_dir=output_dir, comm=None)
    finally:
        simulation.node_local_rank = choose


def seconds_per_step(sim, comm, steps: int, chunks: int, warmup: int = 5) -> float:
    """Median over ``chunks`` of ``steps`` consecutive steps (no barrier between the steps, as in
    a run: a rank waits for its neighbours inside the exchange), after ``warmup`` steps."""
    if warmup:
        sim.advance(warmup)
    sim.backend.synchronize()
    times = []
    for _ in range(chunks):
        if comm is not None:
            comm.Barrier()
        t0 = time.perf_counter()
        sim.advance(steps)
        sim.backend.synchronize()
        times.append((time.perf_counter() - t0) / steps)
    return float(np.median(times))


def stage_in_situ(comm, block, order: int, backend_name: str = "cpu", steps: int = 4, chunks: int = 5) -> dict:
    """Collective. Seconds per stage of the real run on P ranks (the box of P ``block``s along
    x), of the same block run alone on every rank at the same time (the one-rank path:
    compiled combine, one kernel launch, no neighbour to wait for; the slowest rank), and of
    it on rank 0 alone while the others sleep (``single``: the P = 1 run). ``extra`` = run -
    single: what running on P ranks costs per stage; of it, ``contention`` = alone - single is
    the ranks sharing memory bandwidth, caches (or cores, or a GPU) without exchanging, which
    the model predicts from the node's shares (cores, STREAM), and ``beyond_alone`` = run -
    alone is what the exchange and the stage term must account for."""
    from mpi4py import MPI

    import lobatto.runner.simulation as simulation
    from lobatto.runner.simulation import Simulation

    size = comm.Get_size()
    local_rank = simulation.node_local_rank(comm)
    with tempfile.TemporaryDirectory() as tmp:
        multi = Simulation(maxwell_case(weak_box(block, size), order, backend_name), output_dir=tmp, comm=comm)
        stages = multi.stepper.stages
        t_multi = comm.allreduce(seconds_per_step(multi, comm, steps, chunks), op=MPI.MAX) / stages
        summary = multi.system.summary(multi.stepper, comm)
        split = comm.allreduce(int(multi.system.split), op=MPI.MIN)
        del multi
        gc.collect()
        alone = one_rank_simulation(comm, block, order, backend_name, os.path.join(tmp, "alone"), local_rank)
        comm.Barrier()
        t_alone = comm.allreduce(seconds_per_step(alone, None, steps, chunks), op=MPI.MAX) / stages
        # rank 0 alone on the machine (the others sleep: a spinning rank would take a core): the
        # P = 1 run whose rate the model's compute term uses
        t_single = seconds_per_step(alone, None, steps, chunks, warmup=1) / stages if comm.Get_rank() == 0 else 0.0
        phase_end(comm, busy=comm.Get_rank() == 0)
        t_single = comm.bcast(t_single, root=0)
        del alone
        gc.collect()
        comm.Barrier()
    return {"block": list(block), "elements": int(np.prod(block)), "ranks": size, "order": order,
            "backend": backend_name, "stage_seconds": t_multi, "alone_stage_seconds": t_alone,
            "single_stage_seconds": t_single, "extra": t_multi - t_single, "contention": t_alone - t_single,
            "beyond_alone": t_multi - t_alone,
            "interior_elements_min": split,
            "exchange_method": summary.get("exchange_method"), "overlap": summary.get("overlap")}


def fit_stage_term(software, rows) -> tuple[float, float, float]:
    """r0 + r_e E: weighted least squares (signed) of each row's ``beyond_alone`` (the run's
    stage less the same block on every rank at once: the node's shared compute is the compute
    term's, through the core and bandwidth shares) less its isolated exchange (rows:
    stage_in_situ's, with ``exchange_model``: that cost for the busiest rank, network
    included); (r0, r_e, relative rms residual of the total). One block size gives r0 alone."""
    E = np.array([float(r["elements"]) for r in rows])
    extra = np.array([float(r["beyond_alone"]) for r in rows])
    y = extra - np.array([float(r["exchange_model"]) for r in rows])
    w = 1.0 / np.maximum(np.abs(extra), 1e-9)
    if len(set(E)) < 2:
        r0, r_e = float(np.average(y, weights=w)), 0.0
    else:
        A = np.stack([np.ones_like(E), E], axis=1)
        (r0, r_e), *_ = np.linalg.lstsq(A * w[:, None], y * w, rcond=None)
    fitted = np.array([float(r["exchange_model"]) for r in rows]) + r0 + r_e * E
    rel = (fitted - extra) / np.where(np.abs(extra) > 0, np.abs(extra), 1.0)
    return float(r0), float(r_e), float(np.sqrt(np.mean(rel**2)))


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


def measure(comm, order: int = 5, blocks=None, max_bytes: int = 1 << 22, repeats: int = 30,
            backend_name: str = "cpu", stage_blocks=None) -> dict | None:
    """Collective. On rank 0: {"loggp", "software", "pingpong", "burst", "face_exchange",
    "stage", "backend", "sharing"}. The face exchanges run on ``backend_name`` (cuda: CuPy
    arrays on this rank's GPU, the transport the run would pick); ``stage_blocks=()`` skips the
    stage term."""
    device = backend_name != "cpu"
    blocks = (DEVICE_FIT_BLOCKS if device else FIT_BLOCKS) if blocks is None else blocks
    stage_blocks = (DEVICE_STAGE_BLOCKS if device else STAGE_BLOCKS) if stage_blocks is None else stage_blocks
    backend = run_backend(comm, backend_name)
    sharing = device_sharing(comm, backend)
    sizes = [8 * 4**k for k in range(12) if 8 * 4**k <= max_bytes]
    pp = host_pp = comm_loggp.measure_pingpong(comm, sizes)
    network = "host MPI ping-pong"
    if device and not sharing["shared_gpu"]:
        # one GPU per rank: the run exchanges over NCCL where it can, so L and G are NCCL's
        nccl_rows, why = nccl_pingpong(comm, sizes)
        if why is None:
            pp, network = nccl_rows, "NCCL ping-pong between the GPUs"
    burst = comm_loggp.measure_burst(comm)
    rows = []
    for block in blocks:
        elements = weak_box(block, comm.Get_size())
        t0 = time.perf_counter()
        r = face_exchange(comm, elements, order, repeats, backend=backend)
        r["setup_and_run_seconds"] = time.perf_counter() - t0
        rows.append(r)
    stage_rows = [stage_in_situ(comm, block, order, backend_name) for block in stage_blocks]
    if comm.Get_rank() != 0:
        return None
    params = comm_loggp.fit(pp, burst, source=f"measured here: {network} and host burst between ranks 0 and 1 "
                                              f"of {comm.Get_size()}")
    for r in rows:
        busiest = max(r["rank_lists"], key=lambda o: (o["local_values"], sum(o["message_bytes"]), len(o["neighbours"])))
        r["message_bytes"] = busiest["message_bytes"]
        r["local_values"] = busiest["local_values"]
        r["busiest_rank"] = busiest["rank"]
        pat = partition_pattern(r["elements"], r["ranks"])[busiest["rank"]]
        r["pattern_bytes"] = list(pat.message_bytes(order).values())
    software = fit_software(params, rows) if comm.Get_size() > 1 else Software()
    software.backend = backend_name
    if sharing["shared_gpu"]:
        software.source += " [ranks share a GPU]"
    for r in rows:
        r["network_seconds"] = network_time(params, r["message_bytes"], r["ranks"])
        r["predicted_seconds"] = r["network_seconds"] + software.seconds(r["local_values"], sum(r["message_bytes"]))
    add_stage_term(params, software, stage_rows, order)
    return {"loggp": params.as_dict(), "software": vars(software), "pingpong": pp, "pingpong_host": host_pp,
            "pingpong_network": network, "burst": burst,
            "face_exchange": rows, "stage": stage_rows, "backend": backend_name, "sharing": sharing}


def nccl_pingpong(comm, sizes, repeats: int = 5):
    """Collective. ({bytes, seconds_one_way} rows of NCCL send/recv between the GPUs of ranks 0
    and 1 (device buffers, timed by CUDA events; sysbench's gpu_gpu path) on rank 0, else None;
    the reason NCCL cannot run, the same on every rank, or None)."""
    from lobatto.bench.sysbench_gpu_gpu import nccl_pair, nccl_reason, timed_pingpong
    from lobatto.bench.sysbench_mpi import agree

    why = agree(comm, nccl_reason())
    if why is not None:
        return None, why
    rank = comm.Get_rank()
    pair = comm.Split(0 if rank < 2 else 1, rank)
    rows = []
    if rank < 2:
        nc, pingpong = nccl_pair(pair)
        try:
            rows = [{"bytes": int(s), "seconds_one_way": timed_pingpong(pair, s, repeats, pingpong)} for s in sizes]
        finally:
            nc.destroy()
    pair.Free()
    phase_end(comm, rank < 2)
    return (rows if rank == 0 else None), None


def add_stage_term(params, software: Software, stage_rows, order: int) -> None:
    """Fit r0, r_e of ``software`` from stage_in_situ rows (in place), after s0, s_v, s1: each
    row gets ``exchange_model`` (the busiest rank's isolated exchange as modelled) and
    ``predicted_beyond_alone``."""
    from lobatto.bench.comm_model import local_trace_values

    if not stage_rows:
        return
    for r in stage_rows:
        pats = partition_pattern(weak_box(r["block"], r["ranks"]), r["ranks"])
        busiest = max(pats, key=lambda p: (sum(p.message_bytes(order).values()), p.halo_elements))
        sizes = list(busiest.message_bytes(order).values())
        values = local_trace_values(busiest.elements, order)
        r["exchange_model"] = network_time(params, sizes, r["ranks"]) + software.seconds(values, sum(sizes))
    software.r0, software.r_e, res = fit_stage_term(software, stage_rows)
    software.stage_source = (f"timed steps of {len(stage_rows)} block(s) on {stage_rows[0]['ranks']} ranks against "
                             f"the block alone, least squares (rel. rms {res:.2f})")
    for r in stage_rows:
        r["predicted_beyond_alone"] = r["exchange_model"] + software.stage_seconds(r["elements"])
