"""GPU check of the gather-scatter transports; run as ``mpiexec -n P python tests/gpu/gs_gpu_check.py``.

One GPU per rank (device = node-local rank modulo the GPU count).  The random global
problem and the serial NumPy reference are those of ``tests/mpi/gs_check.py``.  For every
transport that works here (host always; nccl and cuda-aware-mpi when available) x method
(auto, pairwise, crystal_router, allreduce) x op x vn in {1, 6} x {apply, start/finish with
GPU work in between} the CuPy result must equal the reference; also: ``xp=None`` picks the
transport at the first CuPy call, a non-default stream, CUDA-graph capture of ``apply``
(device-direct transports), and bitwise agreement across ranks for the neighbour methods.
``--require nccl,cuda-aware-mpi`` fails if a named transport is unavailable.
Exits 1 on every rank if anything failed; prints one line per transport.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mpi"))
try:
    import lobatto  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))

import cupy
from gs_check import make_problem, reference
from mpi4py import MPI

from lobatto.comm import GatherScatter
from lobatto.comm.transport import local_status
from lobatto.errors import InputError

METHODS = ["auto", "pairwise", "crystal_router", "allreduce"]
OPS = ["sum", "prod", "min", "max"]


def local_rank(comm) -> int:
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return node.Get_rank()
    finally:
        node.Free()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--nid", type=int, default=400)
    ap.add_argument("--require", default="", help="comma-separated transports that must be available")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    me, P = comm.Get_rank(), comm.Get_size()
    ndev = cupy.cuda.runtime.getDeviceCount()
    cupy.cuda.Device(local_rank(comm) % ndev).use()
    failures: list[str] = []
    lines: list[str] = []
    ncases = 0

    def fail(msg):
        failures.append(f"[rank {me}/{P}] {msg}")

    # which transports work on every rank
    avail = {}
    for ex in ("host", "nccl", "cuda-aware-mpi"):
        whys = comm.allgather(local_status(ex))
        avail[ex] = next((w for w in whys if w is not None), None)
    for ex in filter(None, args.require.split(",")):
        if avail.get(ex) is not None:
            fail(f"required transport {ex} unavailable: {avail[ex]}")
    exchanges = [ex for ex, why in avail.items() if why is None]
    if me == 0:
        for ex, why in avail.items():
            print(f"transport {ex}: {'available' if why is None else 'unavailable: ' + why}", flush=True)

    work = cupy.random.standard_normal((2048, 2048))  # "other GPU work" between start and finish
    for prob, empty_last in enumerate([False, True]):
        ids_g, owner, real, ints = make_problem(args.seed + prob, P, args.nid, empty_last)
        mine = np.flatnonzero(owner == me)
        ids = ids_g[mine]
        for exchange in exchanges:
            for method in METHODS:
                label = f"problem {prob} exchange={exchange} method={method}"
                try:
                    gs = GatherScatter(ids, comm, method=method, vn_hint=6, exchange=exchange, xp=cupy)
                except Exception:  # noqa: BLE001
                    fail(f"{label}: setup raised\n{traceback.format_exc()}")
                    continue
                label += f" -> {gs.method}/{gs.exchange}"
                if P > 1:
                    want = exchange if gs.method == "pairwise" else "host"
                    if gs.exchange != want:
                        fail(f"{label}: transport {gs.exchange!r}, expected {want!r}")
                if prob == 0 and me == 0:
                    lines.append(gs.describe())
                for op in OPS:
                    src = real if op == "sum" else ints
                    ref, scale = reference(ids_g, src, op)
                    for vn in (1, 6):
                        for mode in ("blocking", "start/finish"):
                            ncases += 1
                            case = f"{label} op={op} vn={vn} mode={mode}"
                            u = cupy.asarray(src[:vn, mine])
                            if vn == 1:
                                u = u[0].copy()
                            try:
                                if mode == "blocking":
                                    r = gs.apply(u, op)
                                else:
                                    h = gs.start(u, op)
                                    work @ work
                                    r = gs.finish(h)
                            except Exception:  # noqa: BLE001
                                fail(f"{case}: raised\n{traceback.format_exc()}")
                                continue
                            if r is not u:
                                fail(f"{case}: did not return u")
                            got = cupy.asnumpy(u).reshape(vn, -1)
                            want = ref[:vn, mine]
                            if op == "sum":
                                bad = np.abs(got - want) > 1e-13 * np.maximum(scale[:vn, mine], 1e-300)
                            else:
                                bad = got != want
                            if bad.any():
                                v, i = np.argwhere(bad)[0]
                                fail(f"{case}: {int(bad.sum())} wrong; first field {v} point {i}: got"
                                     f" {got[v, i]!r}, expected {want[v, i]!r}")
                            if op == "sum" and vn == 1 and mode == "blocking" and gs.method != "allreduce" and P > 1:
                                allv = comm.allgather((ids, got[0]))
                                best: dict = {}
                                for rid, rv in allv:
                                    for a, b in zip(rid.tolist(), rv.tolist()):
                                        if a and best.setdefault(a, b) != b:
                                            fail(f"{case}: id {a} differs across ranks")
                                            break
                # a non-default stream and (device-direct) CUDA-graph capture
                ref, scale = reference(ids_g, real, "sum")
                want = ref[:6, mine]
                tol = 1e-13 * np.maximum(scale[:6, mine], 1e-300)
                s = cupy.cuda.Stream(non_blocking=True)
                with s:
                    u = cupy.asarray(real[:6, mine])
                    gs.apply(u, "sum")
                    s.synchronize()
                if (np.abs(cupy.asnumpy(u) - want) > tol).any():
                    fail(f"{label}: wrong on a non-default stream")
                if gs.exchange in ("nccl",) and prob == 0:
                    try:
                        u = cupy.asarray(real[:6, mine])
                        u0 = u.copy()
                        gs.apply(u, "sum")  # warm: buffers and kernels exist before capture
                        with s:
                            u[...] = u0
                            s.begin_capture()
                            gs.apply(u, "sum")
                            g = s.end_capture()
                        u[...] = u0
                        g.launch(stream=cupy.cuda.get_current_stream())
                        cupy.cuda.get_current_stream().synchronize()
                        if (np.abs(cupy.asnumpy(u) - want) > tol).any():
                            fail(f"{label}: CUDA-graph replay gave wrong values")
                        elif me == 0 and method == "pairwise":
                            lines.append(f"{exchange}: CUDA-graph capture of apply works")
                    except Exception:  # noqa: BLE001
                        fail(f"{label}: CUDA-graph capture failed\n{traceback.format_exc()}")
                gs.free()
        # xp=None: transport chosen at the first CuPy call
        try:
            gs = GatherScatter(ids, comm, method="pairwise")
            u = cupy.asarray(real[:6, mine])
            gs.apply(u, "sum")
            ref, scale = reference(ids_g, real, "sum")
            if (np.abs(cupy.asnumpy(u) - ref[:6, mine]) > 1e-13 * np.maximum(scale[:6, mine], 1e-300)).any():
                fail(f"problem {prob}: xp=None on CuPy data gave wrong values")
            if me == 0 and prob == 0:
                lines.append(f"xp=None, exchange=auto on CuPy data -> {gs.describe()}")
            uh = real[:6, mine].copy()
            gs.apply(uh, "sum")  # NumPy data afterwards: host route
            if P > 1 and gs.exchange != "host":
                fail(f"problem {prob}: NumPy data after CuPy data reported {gs.exchange!r}")
            gs.free()
        except Exception:  # noqa: BLE001
            fail(f"problem {prob}: xp=None on CuPy data raised\n{traceback.format_exc()}")

    # NumPy data with a device transport: InputError on every rank
    try:
        GatherScatter(np.array([1, 2], dtype=np.int64), comm, exchange="nccl", xp=np)
        fail("exchange=nccl with xp=numpy: no InputError")
    except InputError:
        pass

    allf = comm.gather(failures, root=0)
    nfail = comm.allreduce(len(failures))
    if me == 0:
        for ln in lines:
            print(ln, flush=True)
        for fl in allf:
            for f in fl[:20]:
                print("FAIL", f, flush=True)
        print(f"gs_gpu_check P={P}: {ncases} cases per rank, {nfail} failures", flush=True)
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
