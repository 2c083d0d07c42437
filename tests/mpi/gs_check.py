"""MPI correctness check of lobatto.comm.GatherScatter; run as ``mpiexec -n P python gs_check.py``.

Every rank builds the same random global problem from a fixed seed (random
global ids with multiplicities 1..5, some zeros, points randomly partitioned
over the ranks), keeps its slice, and checks every method x op x vn in {1, 6} x
{blocking, start/finish} x exchange in {auto, host} against a serial reference
computed from the whole problem, and that asking for a device transport (nccl,
cuda-aware-mpi) with NumPy data or without CuPy raises InputError on every rank.  Exits 1 (on every rank) and prints each failing case on mismatch.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

import numpy as np

try:
    import lobatto  # noqa: F401
except ImportError:  # running from a checkout without install
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src"))

from mpi4py import MPI

from lobatto.comm import GatherScatter
from lobatto.errors import InputError

METHODS = ["auto", "pairwise", "crystal_router", "allreduce"]
EXCHANGES = ["auto", "host"]  # NumPy data: both are the host transport
OPS = ["sum", "prod", "min", "max"]
UFUNC = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}


def make_problem(seed: int, P: int, nid: int, empty_last: bool):
    rng = np.random.default_rng(seed)
    # distinct ids spread over a wide range (exercises the id % P owner hashing)
    gids = rng.choice(np.arange(1, 50 * nid + 1, dtype=np.int64), size=nid, replace=False) * 1_000_003
    mult = rng.integers(1, 6, size=nid)
    ids = np.repeat(gids, mult)
    ids = np.concatenate([ids, np.zeros(max(1, len(ids) // 10), dtype=np.int64)])
    ids = ids[rng.permutation(len(ids))]
    nranks = P - 1 if (empty_last and P > 1) else P
    owner = rng.integers(0, nranks, size=len(ids))
    N = len(ids)
    real = rng.standard_normal((6, N))
    # integer-valued data: products, minima and maxima are exact
    ints = rng.choice(np.array([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0]), size=(6, N))
    return ids, owner, real, ints


def reference(ids, data, op):
    """Serial reference: plain accumulation per id (ufunc.at), then write back."""
    out = data.copy()
    nz = np.flatnonzero(ids)
    uniq, inv = np.unique(ids[nz], return_inverse=True)
    ident = {"sum": 0.0, "prod": 1.0, "min": np.inf, "max": -np.inf}[op]
    acc = np.full((data.shape[0], len(uniq)), ident)
    for v in range(data.shape[0]):
        UFUNC[op].at(acc[v], inv, data[v, nz])
    out[:, nz] = acc[:, inv]
    scale = None
    if op == "sum":
        a = np.zeros((data.shape[0], len(uniq)))
        for v in range(data.shape[0]):
            np.add.at(a[v], inv, np.abs(data[v, nz]))
        scale = data.copy()
        scale[:, nz] = a[:, inv]
        scale = np.abs(scale)
    return out, scale


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--nid", type=int, default=400, help="global distinct ids per problem")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    me, P = comm.Get_rank(), comm.Get_size()
    failures: list[str] = []
    ncases = 0

    def fail(msg):
        failures.append(f"[rank {me}/{P}] {msg}")

    for prob, empty_last in enumerate([False, True]):
        ids_g, owner, real, ints = make_problem(args.seed + prob, P, args.nid, empty_last)
        mine = np.flatnonzero(owner == me)
        ids = ids_g[mine]
        # reference nshared: points whose id also lives on another rank
        nz = ids_g != 0
        uniq, inv = np.unique(ids_g[nz], return_inverse=True)
        nranks_of = np.zeros(len(uniq), dtype=np.int64)
        pairs = np.unique(np.stack([inv, owner[nz]]), axis=1)
        np.add.at(nranks_of, pairs[0], 1)
        sharedpt = np.zeros(len(ids_g), dtype=bool)
        sharedpt[np.flatnonzero(nz)] = nranks_of[inv] > 1
        want_nshared = int(sharedpt[mine].sum())

        for method, exchange in [(m, x) for m in METHODS for x in EXCHANGES]:
            try:
                gs = GatherScatter(ids, comm, method=method, vn_hint=6, exchange=exchange)
            except Exception:  # noqa: BLE001
                fail(f"problem {prob} method {method} exchange {exchange}: setup raised\n{traceback.format_exc()}")
                continue
            want_exchange = "local" if P == 1 else "host"
            if gs.exchange != want_exchange or gs.setup_info()["exchange"] != want_exchange:
                fail(f"problem {prob} {method}/{exchange}: exchange reported as {gs.exchange!r}, expected"
                     f" {want_exchange!r}")
            if not gs.describe().startswith("gather-scatter:"):
                fail(f"problem {prob} {method}/{exchange}: describe() = {gs.describe()!r}")
            if method == "auto":
                chosen = comm.allgather(gs.method)
                if len(set(chosen)) != 1:
                    fail(f"problem {prob}: auto chose different methods on different ranks: {chosen}")
                if P > 1 and set(gs.timings) != {"pairwise", "crystal_router", "allreduce"}:
                    fail(f"problem {prob}: auto timings incomplete: {gs.timings}")
            expect_method = "local" if P == 1 else method
            if method != "auto" and gs.method != expect_method:
                fail(f"problem {prob}: method {method!r} reported as {gs.method!r}")
            if gs.nshared != want_nshared or gs.n != len(ids):
                fail(f"problem {prob} {method}: n/nshared {gs.n}/{gs.nshared}, expected {len(ids)}/{want_nshared}")
            for op in OPS:
                src = real if op == "sum" else ints
                ref, scale = reference(ids_g, src, op)
                for vn in (1, 6):
                    for mode in ("blocking", "start/finish"):
                        ncases += 1
                        case = (f"problem {prob} method={method}({gs.method}) exchange={exchange}({gs.exchange})"
                                f" op={op} vn={vn} mode={mode}")
                        u = src[:vn, mine].copy()
                        if vn == 1:
                            u = u[0].copy()
                        try:
                            if mode == "blocking":
                                r = gs.apply(u, op)
                            else:
                                h = gs.start(u, op)
                                _ = np.sqrt(np.arange(1000.0)).sum()  # "other work"
                                r = gs.finish(h)
                        except Exception:  # noqa: BLE001
                            fail(f"{case}: raised\n{traceback.format_exc()}")
                            continue
                        if r is not u:
                            fail(f"{case}: apply/finish did not return u")
                        got = u.reshape(vn, -1)
                        want = ref[:vn, mine]
                        if op == "sum":
                            bad = np.abs(got - want) > 1e-13 * np.maximum(scale[:vn, mine], 1e-300)
                        else:
                            bad = got != want
                        if bad.any():
                            v, i = np.argwhere(bad)[0]
                            fail(
                                f"{case}: {int(bad.sum())} wrong values; first field {v} local point {i}"
                                f" (id {ids[i]}): got {float(got[v, i])!r}, expected {float(want[v, i])!r}"
                            )
                        if (
                            op == "sum"
                            and vn == 1
                            and mode == "blocking"
                            and gs.method in ("pairwise", "crystal_router")
                        ):
                            # neighbour methods combine in rank order: every copy of an id is bitwise equal
                            allv = comm.allgather((ids, got[0]))
                            best = {}
                            for rid, rv in allv:
                                for a, b in zip(rid.tolist(), rv.tolist()):
                                    if a and best.setdefault(a, b) != b:
                                        fail(f"{case}: id {a} differs across ranks ({best[a]!r} vs {b!r})")
                                        break
            info = gs.setup_info()
            if info["method"] != gs.method or info["nshared"] != gs.nshared:
                fail(f"problem {prob} {method}: setup_info inconsistent: {info}")
            gs.free()

    # a setup mistake on one rank raises InputError on every rank (no hang)
    for label, bad_ids in [("float ids", np.array([1.0, 2.0])), ("negative ids", np.array([3, -1], dtype=np.int64))]:
        ids = bad_ids if me == 0 else np.array([1, 2], dtype=np.int64)
        try:
            GatherScatter(ids, comm)
        except InputError as exc:
            if me != 0 and P > 1 and "rank 0" not in str(exc):
                fail(f"{label}: message does not name rank 0: {exc}")
        except Exception:  # noqa: BLE001
            fail(f"{label}: raised a non-InputError\n{traceback.format_exc()}")
        else:
            if me == 0 or P > 1:
                fail(f"{label}: no InputError")

    # device transports on NumPy data (or without CuPy): InputError on every rank, no hang
    ids = np.array([1, 2, 3 + me], dtype=np.int64)
    for exchange in ("nccl", "cuda-aware-mpi"):
        for xp in (None, np):
            label = f"exchange={exchange} xp={'numpy' if xp is np else None}"
            try:
                gs = GatherScatter(ids, comm, exchange=exchange, xp=xp)
            except InputError as exc:
                if exchange not in str(exc):
                    fail(f"{label}: message does not name the transport: {exc}")
                continue
            except Exception:  # noqa: BLE001
                fail(f"{label}: raised a non-InputError\n{traceback.format_exc()}")
                continue
            if xp is np:
                fail(f"{label}: no InputError at setup")
                continue
            # CuPy and the transport exist here: NumPy data must still be refused
            try:
                gs.apply(np.ones(3), "sum")
            except InputError as exc:
                if "NumPy" not in str(exc):
                    fail(f"{label}: unclear message: {exc}")
            except Exception:  # noqa: BLE001
                fail(f"{label}: apply on NumPy raised a non-InputError\n{traceback.format_exc()}")
            else:
                fail(f"{label}: apply on NumPy data did not raise InputError")
            gs.free()
    try:
        GatherScatter(ids, comm, exchange="mpi")
    except InputError as exc:
        if "unknown exchange" not in str(exc):
            fail(f"exchange='mpi': unclear message: {exc}")
    else:
        fail("exchange='mpi': no InputError")

    allf = comm.gather(failures, root=0)
    nfail = comm.allreduce(len(failures))
    if me == 0:
        for fl in allf:
            for f in fl[:20]:
                print("FAIL", f, flush=True)
        print(f"gs_check P={P}: {ncases} cases per rank, {nfail} failures", flush=True)
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
