"""``lobatto doctor``'s transport checks: a real gather-scatter across the ranks through
lobatto's exchange with one transport, on fresh random data, against a NumPy reference;
then the time of an exchange of ``--bytes`` per rank pair.

Every function here is collective over ``comm`` (None: one rank). A check runs on its own
duplicate of the communicator, so a rank that fails inside it cannot meet the others in a
collective call of the next step; a rank left waiting is ended by ``deadline``.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from contextlib import contextmanager

import numpy as np

from lobatto.bench.doctor_probe import short_error

#: lobatto's transports (comm/transport), in the order they are checked
TRANSPORTS = ("host", "cuda-aware-mpi", "nccl")
#: largest relative error (to the sum of magnitudes at a point) a correct sum may have
TOLERANCE = 1e-12
#: components per point, as Maxwell's traces (E and H)
COMPONENTS = 6


@contextmanager
def deadline(seconds: float, what: str, rank: int):
    """End the job (exit 1) if the block is still running after ``seconds``: a partner rank
    failed or hangs, and this one would otherwise wait for it for ever."""
    from lobatto.machine.parallel import end_job

    def expire():
        print(f"doctor: FAIL: rank {rank}: {what} did not finish within {seconds:g} s "
              "(a rank is stuck in communication or on its device)", flush=True)
        end_job(None, 1)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def allgather(comm, value) -> list:
    """Collective: every rank's ``value`` in rank order (``[value]`` without a communicator)."""
    return [value] if comm is None else comm.allgather(value)


def availability(name: str, comm, backend: str, device_reason: str | None, device_key) -> str | None:
    """Collective: None when transport ``name`` can run on every rank, else why not (the
    same answer on every rank). ``device_reason``: why the ranks use no GPU (None: they do);
    ``device_key``: (host, PCI bus id) of this rank's GPU, for NCCL's one-GPU-per-rank rule."""
    size = 1 if comm is None else comm.Get_size()
    if name == "host":
        return None
    if size == 1:
        return "one rank (nothing to exchange)"
    if backend != "cuda":
        return device_reason or "--backend cpu"
    from lobatto.comm.transport import local_status

    everyone = comm.allgather(local_status(name))
    bad = [(r, why) for r, why in enumerate(everyone) if why is not None]
    if bad:
        r, why = bad[0]
        return f"{why} (rank {r})"
    if name == "nccl":
        keys = comm.allgather(device_key)
        for r, key in enumerate(keys):
            if key in keys[:r]:
                return (f"ranks {keys.index(key)} and {r} use the same GPU ({key[1]} on {key[0]}); "
                        "NCCL needs one GPU per rank")
    return None


# -- the correctness problem ---------------------------------------------------------------
def problem(seed: int, size: int):
    """(ids, owner rank, data (COMPONENTS, n)) of one global gather-scatter, the same on every
    rank for the same seed: 600 ids with 1-4 copies on random ranks (so some are summed on
    one rank, some across two, three or four), 4 ids on each pair of ranks (every pair
    exchanges), and 5 % non-participating points (id 0)."""
    rng = np.random.default_rng(seed)
    nid = 600
    ids = np.repeat(rng.choice(np.arange(1, 100 * nid), size=nid, replace=False) * 1009, rng.integers(1, 5, nid))
    owner = rng.integers(0, size, len(ids))
    pairs = [(p, q) for p in range(size) for q in range(p + 1, size)]
    pair_ids = 1 + np.arange(4 * len(pairs), dtype=np.int64) * 1009 + 1  # never a multiple of 1009
    ids = np.concatenate([ids, np.repeat(pair_ids, 2), np.zeros(len(ids) // 20, dtype=np.int64)])
    pair_owner = np.array([r for p, q in pairs for _ in range(4) for r in (p, q)], dtype=np.int64)
    owner = np.concatenate([owner, pair_owner, rng.integers(0, size, len(ids) - len(owner) - len(pair_owner))])
    order = rng.permutation(len(ids))
    return ids[order].astype(np.int64), owner[order], rng.standard_normal((COMPONENTS, len(ids)))


def reference(ids, data):
    """(sums, sums of magnitudes) per point: every participating point gets the sum over its
    id, computed with np.add.at on the whole problem (no lobatto code)."""
    out, scale = data.copy(), np.abs(data)
    nz = np.flatnonzero(ids)
    uniq, inv = np.unique(ids[nz], return_inverse=True)
    for target, values in ((out, data), (scale, np.abs(data))):
        acc = np.zeros((data.shape[0], len(uniq)))
        np.add.at(acc, (slice(None), inv), values[:, nz])
        target[:, nz] = acc[:, inv]
    return out, scale


def _sync(xp):
    if xp.__name__ == "cupy":
        xp.cuda.get_current_stream().synchronize()


def _to_host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def correctness(name: str, comm, xp, seed: int) -> dict:
    """Collective: one gather-scatter sum of fresh random data through transport ``name``
    (pairwise method: the one device transports carry) compared with ``reference``."""
    from lobatto.comm import GatherScatter

    rank, size = (0, 1) if comm is None else (comm.Get_rank(), comm.Get_size())
    ids_all, owner, data_all = problem(seed, size)
    want, scale = reference(ids_all, data_all)
    mine = owner == rank
    ids, data, want, scale = ids_all[mine], data_all[:, mine], want[:, mine], scale[:, mine]
    gs = GatherScatter(ids, comm, method="pairwise", xp=xp, exchange=name)
    try:
        u = xp.asarray(data)
        gs.apply(u, "sum")
        _sync(xp)
        got = _to_host(u)
        info = gs.setup_info()
    finally:
        gs.free()
    diff = np.abs(got - want)
    max_error = float(diff.max()) if diff.size else 0.0
    relative = float((diff / np.maximum(scale, np.finfo(float).tiny)).max()) if diff.size else 0.0
    used, expected = info["exchange"], (name if size > 1 else "local")
    result = {"data": xp.__name__, "method": info["method"], "exchange_used": used, "points": int(len(ids)),
              "values_checked": int(data.size), "shared_values": int(info["nshared"]) * COMPONENTS,
              "neighbours": int(info["neighbours"]), "max_error": max_error, "max_relative_error": relative}
    problems = []
    if not np.all(np.isfinite(got)):
        problems.append("non-finite values")
    elif relative > TOLERANCE:
        problems.append(f"exchange wrong (max error {max_error:.2g})")
    if used != expected:
        problems.append(f"the exchange went through {used!r}, not {expected!r}")
    if size > 1 and result["shared_values"] == 0:
        problems.append("no values crossed ranks (empty check)")
    result["ok"], result["problem"] = not problems, "; ".join(problems) or None
    return result


def pair_ids(rank: int, size: int, n: int) -> np.ndarray:
    """n ids this rank shares with each other rank, and with no one else."""
    chunks = []
    for q in range(size):
        if q != rank:
            p0, p1 = min(rank, q), max(rank, q)
            index = p0 * size + p1  # distinct for each pair
            chunks.append(1 + index * n + np.arange(n, dtype=np.int64))
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)


def bandwidth(name: str, comm, xp, nbytes: int, repeats: int) -> dict:
    """Collective (> 1 rank): seconds of one exchange of ``nbytes`` (float64) between every pair
    of ranks (slowest rank of each repeat; the median repeat), and the figure per pair. The
    data start at 1 and every id lives on two ranks, so after k sums every value is 2**k:
    checked too, a second correctness check at the requested size."""
    from lobatto.comm import GatherScatter

    rank, size = comm.Get_rank(), comm.Get_size()
    n = max(1, nbytes // 8)
    gs = GatherScatter(pair_ids(rank, size, n), comm, method="pairwise", xp=xp, exchange=name)
    try:
        u = xp.ones(gs.n)
        warm = 2
        for _ in range(warm):
            gs.apply(u, "sum")
        times = []
        for _ in range(repeats):
            comm.Barrier()
            _sync(xp)
            start = time.perf_counter()
            gs.apply(u, "sum")
            _sync(xp)
            times.append(comm.allreduce(time.perf_counter() - start, op=_mpi_max()))
        got = _to_host(u)
    finally:
        gs.free()
    expected = 2.0 ** (warm + repeats)
    seconds = statistics.median(times)
    wrong = int(np.count_nonzero(got != expected))
    return {"bytes_per_pair": n * 8, "pairs_per_rank": size - 1, "repeats": repeats, "seconds": seconds,
            "seconds_each": times, "gbytes_per_s_per_pair": n * 8 / seconds / 1e9 if seconds > 0 else None,
            "values_checked": int(got.size), "wrong_values": wrong, "ok": wrong == 0,
            "problem": None if wrong == 0 else f"exchange of {n * 8} bytes per pair wrong at {wrong} values"}


def _mpi_max():
    from mpi4py import MPI

    return MPI.MAX


def run_check(name: str, comm, xp, seed: int, nbytes: int, repeats: int, timeout: float) -> dict:
    """Collective: correctness, then (several ranks, correct) bandwidth, each on its own
    duplicate communicator and under ``deadline``. An error is recorded, not raised."""
    rank = 0 if comm is None else comm.Get_rank()
    result: dict = {"ok": False}
    for step in ("correctness", "bandwidth"):
        if step == "bandwidth" and (comm is None or not result.get("ok")):
            break
        sub = None if comm is None else comm.Dup()
        try:
            with deadline(timeout, f"the {name} {step} check", rank):
                if step == "correctness":
                    result = correctness(name, sub, xp, seed)
                else:
                    result["bandwidth"] = bandwidth(name, sub, xp, nbytes, repeats)
                    if not result["bandwidth"]["ok"]:
                        result["ok"], result["problem"] = False, result["bandwidth"]["problem"]
        except Exception as exc:  # noqa: BLE001  (recorded as this rank's failure)
            result.update(ok=False, problem=f"{step} check raised {short_error(exc)}")
            print(f"doctor: rank {rank}: the {name} {step} check raised {short_error(exc)}", file=sys.stderr,
                  flush=True)
        finally:
            if sub is not None:
                with deadline(timeout, f"freeing the {name} check's communicator", rank):
                    sub.Free()
        # every rank learns whether all passed, so all of them take the bandwidth step or none
        if step == "correctness" and comm is not None:
            with deadline(timeout, f"the agreement after the {name} {step} check", rank):
                everyone_ok = all(comm.allgather(bool(result.get("ok"))))
            if not everyone_ok:
                result["bandwidth_skipped"] = "a rank failed the correctness check"
                break
    return result
