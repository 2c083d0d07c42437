"""Device-resident exchange benchmark; run as ``mpiexec -n 2 python benchmarks/bench_exchange_gpu.py``.

One GPU per rank (device = node-local rank).  Two parts:

(a) ``gs``: gather-scatter ``apply(u, "sum")`` (pairwise) per transport (nccl, host,
    cuda-aware-mpi when the MPI reports CUDA support) vs message size, on a ring of ranks where
    each pair of neighbours shares ``m`` ids (message = vn*m*8 bytes).  Time per apply:
    CUDA events around ``--repeats`` back-to-back applies after warm-up, max over ranks.
(b) ``maxwell``: weak scaling 1 -> P GPUs of the Maxwell system at N=7 (periodic box,
    ``--points`` per GPU, default 1e6, 1e7, 3e7); per size: seconds per LSRK45 step on rank 0
    alone (1 GPU, no exchange) and on all P ranks with each transport; efficiency =
    t(1 GPU) / t(P GPUs) at equal points per GPU, with the stage's interior elements updated
    while the exchange is in flight (overlap) and without, and which of the two the default
    ``overlap = "auto"`` picks from its own trial steps (on the CUDA whole-step path); the
    exchange's share of the step (x stages per step): on the CUDA whole-step path the
    ghost-trace round trip (pack, send/receive) timed alone; on the stage path
    (``--dry-run``) ``exchange_traces`` = traces kernel + gather-scatter, and the
    gather-scatter ``apply`` alone, each timed separately.  Steps are plain calls (no CUDA graph),
    timed with CUDA events after warm-up; the max over ranks is reported.

Prints tables and progress; ``--json PATH`` writes everything (rewritten after each part, so
a run cut short keeps what it finished).  ``--dry-run`` runs the same logic on NumPy arrays
and the CPU backend at tiny sizes with the host transport (no GPU needed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback

import numpy as np

try:
    import lobatto  # noqa: F401
except ImportError:  # running from a checkout without install
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from mpi4py import MPI

from lobatto.comm import GatherScatter
from lobatto.comm.transport import local_status
from lobatto.integrators.stepper import Stepper
from lobatto.systems.maxwell.fused import FusedExchangeStepper

ORDER = 7
T0 = time.perf_counter()


def log(comm, msg: str) -> None:
    if comm.Get_rank() == 0:
        print(f"[{time.perf_counter() - T0:7.1f} s] {msg}", flush=True)


def ring_ids(me: int, P: int, m: int) -> np.ndarray:
    """``m`` ids shared with each ring neighbour (one link when P == 2); P == 1: local pairs."""
    edges = sorted({(min(r, (r + 1) % P), max(r, (r + 1) % P)) for r in range(P)} - {(0, 0)})
    mine = [e for e, (a, b) in enumerate(edges) if me in (a, b)]
    if not mine:
        return np.repeat(np.arange(1, m + 1, dtype=np.int64), 2)
    return np.concatenate([e * m + 1 + np.arange(m, dtype=np.int64) for e in mine])


class Clock:
    """Seconds of a callable run ``reps`` times: CUDA events on the GPU, perf_counter on the host."""

    def __init__(self, xp):
        self.xp = xp

    def __call__(self, fn, reps: int, warmup: int, comm) -> float:
        for _ in range(warmup):
            fn()
        self.sync()
        comm.Barrier()
        if self.xp is np:
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            t = (time.perf_counter() - t0) / reps
        else:
            cp = self.xp
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            for _ in range(reps):
                fn()
            b.record()
            b.synchronize()
            t = cp.cuda.get_elapsed_time(a, b) / 1e3 / reps
        return comm.allreduce(t, op=MPI.MAX)

    def sync(self):
        if self.xp is not np:
            self.xp.cuda.get_current_stream().synchronize()


def transports(comm, dry: bool) -> tuple[list[str], dict]:
    if dry:
        return ["host"], {"nccl": "dry run", "cuda-aware-mpi": "dry run"}
    out, why = [], {}
    for name in ("nccl", "cuda-aware-mpi", "host"):
        ws = comm.allgather(local_status(name))
        w = next((x for x in ws if x is not None), None)
        if w is None:
            out.append(name)
        else:
            why[name] = w
    return out, why


# (a) gather-scatter vs message size ---------------------------------------------------------
def bench_gs(comm, xp, names, sizes, vn, repeats, clock) -> list[dict]:
    me, P = comm.Get_rank(), comm.Get_size()
    rows = []
    log(comm, f"(a) gather-scatter pairwise apply(sum), vn={vn}, P={P}: {', '.join(names)}")
    if me == 0:
        print(f"{'points':>9} {'bytes/msg':>11} " + " ".join(f"{n + ' us':>18}" for n in names), flush=True)
    for m in sizes:
        ids = ring_ids(me, P, m)
        u = xp.ones((vn, len(ids)))
        row = {"points": m, "vn": vn, "bytes_per_message": m * vn * 8, "us": {}}
        reps = repeats if m <= 65536 else max(10, repeats // 10)
        for name in names:
            gs = GatherScatter(ids, comm, method="pairwise", exchange=name, xp=xp)
            row["us"][name] = 1e6 * clock(lambda gs=gs, u=u: gs.apply(u, "sum"), reps, 5, comm)
            row.setdefault("exchange", {})[name] = gs.exchange
            gs.free()
        rows.append(row)
        if me == 0:
            print(f"{m:>9} {m * vn * 8:>11} " + " ".join(f"{row['us'][n]:>18.1f}" for n in names), flush=True)
    return rows


# (b) Maxwell weak scaling ----------------------------------------------------------------------
def cube_side(points_per_gpu: float) -> int:
    return max(2, round((points_per_gpu / (ORDER + 1) ** 3) ** (1 / 3)))


def build(k: int, P: int, rank: int, comm, backend):
    import lobatto.mesh
    import lobatto.mesh.partition
    from lobatto.integrators.stepper import Stepper, get_scheme
    from lobatto.systems.maxwell.system import MaxwellSystem

    elements = (P * k, k, k)
    mesh = lobatto.mesh.box_mesh(
        elements, periodic=[True] * 3, element_ids=lobatto.mesh.partition.partition_box(elements, P, rank)
    ).halo_last()
    system = MaxwellSystem(mesh, ORDER, backend, comm=comm, exchange_method="pairwise")
    stepper = Stepper(system, get_scheme("lsrk45"))
    return mesh, system, stepper


def time_system(system, stepper, comm, clock, steps: int, xp) -> dict:
    """Step times with and without overlap, and the exchange alone: the ghost-trace round trip
    on the whole-step path (CUDA), else traces kernel + gather-scatter and the apply alone."""
    u = system.allocate_state()
    rng = np.random.default_rng(1)
    u[...] = xp.asarray(1e-3 * rng.standard_normal(u.shape))
    dt = 1e-4
    system.overlap = True
    t_step = clock(lambda: stepper.step(u, 0.0, dt), steps, 2, comm)
    system.overlap = False
    t_plain = clock(lambda: stepper.step(u, 0.0, dt), steps, 2, comm)
    system.overlap = True
    whole = stepper.whole_step if isinstance(stepper.whole_step, FusedExchangeStepper) else None
    ghosts = None if whole is None else whole.ghosts  # None on one rank
    auto = None
    if ghosts is not None:  # what overlap = "auto" (the default) picks from its trial steps
        system.overlap, whole.auto_overlap = "auto", None
        stepper.step(u, 0.0, dt)
        auto = dict(whole.auto_overlap)
        system.overlap = True
    if ghosts is not None:
        t_x = clock(lambda: ghosts.finish(ghosts.start(whole.buffers[0])), steps, 2, comm)
        t_gs = t_x
    else:
        t_x = clock(lambda: system.exchange_traces(u), steps, 2, comm)
        buf = system.trace_buffer.reshape(6, -1)
        t_gs = clock(lambda: system.exchange.apply(buf, "sum"), steps, 2, comm)
    stages = stepper.stages
    return {
        "seconds_per_step": t_step,
        "seconds_per_step_no_overlap": t_plain,
        "step_path": stepper.path,
        "interior_elements": system.split,
        "elements": system.num_elements,
        "exchange_traces_s": t_x,
        "gs_apply_s": t_gs,
        "stages": stages,
        "exchange_fraction": stages * t_x / t_step,
        "gs_fraction": stages * t_gs / t_step,
        "auto_trial": auto,
        "seconds_per_step_auto": None if auto is None else (t_step if auto["overlap"] else t_plain),
        "exchange": system.exchange.exchange if whole is None else whole.exchange,
        "method": system.exchange.method if whole is None else whole.method,
    }


def bench_maxwell(comm, xp, names, points_list, steps, clock, backend_of, dry) -> list[dict]:
    from lobatto.mesh import face_point_ids

    me, P = comm.Get_rank(), comm.Get_size()
    rows = []
    log(comm, f"(b) Maxwell weak scaling, N={ORDER}, 1 -> {P} GPUs, transports: {', '.join(names)}")
    for pts in points_list:
        k = cube_side(pts)
        npts = k**3 * (ORDER + 1) ** 3
        row = {"points_per_gpu_target": pts, "elements_per_gpu": k**3, "points_per_gpu": npts, "P": P}
        # 1 GPU: rank 0 alone, no exchange
        res1 = None
        if me == 0:
            try:
                log(comm, f"  {npts:.3g} points/GPU ({k}^3 elements): building the 1-GPU system")
                _, s1, st1 = build(k, 1, 0, None, backend_of())
                res1 = time_system(s1, st1, MPI.COMM_SELF, clock, steps, xp)
                del s1, st1
            except Exception:  # noqa: BLE001
                res1 = {"error": traceback.format_exc(limit=3)}
            log(comm, f"  1 GPU: {res1.get('seconds_per_step', float('nan')) * 1e3:.2f} ms/step, local gather-scatter"
                      f" share {100 * res1.get('exchange_fraction', float('nan')):.1f} % (apply alone"
                      f" {100 * res1.get('gs_fraction', float('nan')):.1f} %)")
        clock.sync()
        row["one_gpu"] = comm.bcast(res1, root=0)
        if "error" in row["one_gpu"]:
            log(comm, "  1-GPU run failed:\n" + row["one_gpu"]["error"])
        # P GPUs: one system, the gather-scatter swapped per transport
        log(comm, f"  building the {P}-GPU system ({P * k}x{k}x{k} elements)")
        err = None
        try:
            mesh, system, stepper = build(k, P, me, comm, backend_of())
            ids = face_point_ids(mesh, ORDER).reshape(-1)
        except Exception:  # noqa: BLE001
            err = traceback.format_exc(limit=3)
        errs = comm.allgather(err)
        if any(errs):
            row["error"] = next(e for e in errs if e)
            log(comm, "  build failed:\n" + row["error"])
            rows.append(row)
            continue
        row["multi"] = {}
        for name in names:
            system.exchange.free()
            system.exchange = GatherScatter(ids, comm, method="pairwise", exchange=name, xp=xp)
            stepper = Stepper(system, stepper.scheme)  # its whole step takes the new transport
            res = time_system(system, stepper, comm, clock, steps, xp)
            if "seconds_per_step" in row["one_gpu"]:
                res["efficiency"] = row["one_gpu"]["seconds_per_step"] / res["seconds_per_step"]
                res["efficiency_no_overlap"] = row["one_gpu"]["seconds_per_step"] / res["seconds_per_step_no_overlap"]
                if res["seconds_per_step_auto"] is not None:
                    res["efficiency_auto"] = row["one_gpu"]["seconds_per_step"] / res["seconds_per_step_auto"]
            whole = stepper.whole_step
            res["describe"] = system.exchange.describe() if whole is None else whole.detail()
            row["multi"][name] = res
            log(comm, f"  {P} GPUs {name}: {res['seconds_per_step'] * 1e3:.2f} ms/step, "
                      f"efficiency {res.get('efficiency', float('nan')):.3f} (without overlap "
                      f"{res['seconds_per_step_no_overlap'] * 1e3:.2f} ms, "
                      f"{res.get('efficiency_no_overlap', float('nan')):.3f}); auto picks "
                      f"{'-' if res['auto_trial'] is None else ('overlap' if res['auto_trial']['overlap'] else 'no overlap')}"
                      f" ({res.get('efficiency_auto', float('nan')):.3f}), exchange share "
                      f"{100 * res['exchange_fraction']:.1f} % (gs apply alone {100 * res['gs_fraction']:.1f} %)")
        system.exchange.free()
        del system, stepper, mesh
        clock.sync()
        rows.append(row)
    return rows


def auto_pick(res) -> str:
    trial = res.get("auto_trial")
    return "-" if trial is None else ("on" if trial["overlap"] else "off")


def print_maxwell_table(rows, names, P):
    print(f"\nMaxwell N={ORDER} weak scaling, ms per LSRK45 step (max over ranks)")
    print(f"{'points/GPU':>11} {'1 GPU':>9} " + " ".join(f"{P}:{n:>14}" for n in names)
          + "   efficiency (without overlap) [auto's pick] / exchange share per transport")
    for r in rows:
        if "multi" not in r:
            print(f"{r['points_per_gpu']:>11.3g}  failed")
            continue
        one = r["one_gpu"].get("seconds_per_step", float("nan")) * 1e3
        ms = " ".join(f"{r['multi'][n]['seconds_per_step'] * 1e3:>16.2f}" for n in names)
        eff = "  ".join(f"{n}: {r['multi'][n].get('efficiency', float('nan')):.3f}"
                        f" ({r['multi'][n].get('efficiency_no_overlap', float('nan')):.3f})"
                        f" [{auto_pick(r['multi'][n])}]/"
                        f"{100 * r['multi'][n]['exchange_fraction']:.1f}%" for n in names)
        print(f"{r['points_per_gpu']:>11.3g} {one:>9.2f} {ms}   {eff}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="PATH", help="write the results as JSON")
    ap.add_argument("--parts", default="gs,maxwell", help="which parts: gs, maxwell (default both)")
    ap.add_argument("--sizes", default=",".join(str(4**i) for i in range(11)), help="ids per neighbour, part (a)")
    ap.add_argument("--vn", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--points", default="1e6,1e7,3e7", help="points per GPU, part (b)")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per measurement")
    ap.add_argument("--dry-run", action="store_true", help="NumPy + CPU backend at tiny sizes (no GPU)")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    me, P = comm.Get_rank(), comm.Get_size()
    dry = args.dry_run
    if dry:
        xp = np
        sizes = [1, 16, 256]
        points_list = [4e3, 1.4e4]
        steps = min(args.steps, 2)

        def backend_of():
            from lobatto.backends import get_backend

            return get_backend("cpu")
    else:
        try:
            import cupy as xp
        except ImportError as exc:
            if me == 0:
                print(f"error: CuPy is needed ({exc}); use --dry-run to check the logic on NumPy", file=sys.stderr)
            return 2
        ndev = xp.cuda.runtime.getDeviceCount()
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        local_rank, local_size = node.Get_rank(), node.Get_size()
        node.Free()
        if local_size > ndev:
            if me == 0:
                print(f"error: {local_size} ranks on a node with {ndev} GPU(s); start one rank per GPU", file=sys.stderr)
            return 2
        xp.cuda.Device(local_rank).use()
        sizes = [int(s) for s in args.sizes.split(",") if s]
        points_list = [float(s) for s in args.points.split(",") if s]
        steps = args.steps

        def backend_of():
            from lobatto.backends import get_backend

            return get_backend("cuda", device_id=local_rank, rank=me)

    names, unavailable = transports(comm, dry)
    clock = Clock(xp)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "host": platform.node(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "mpi": MPI.Get_library_version().splitlines()[0].strip().strip("\x00"),
        "ranks": P,
        "dry_run": dry,
        "transports": names,
        "unavailable": unavailable,
        "command": " ".join(sys.argv),
    }
    if not dry:
        meta["cupy"] = xp.__version__
        meta["gpu"] = xp.cuda.runtime.getDeviceProperties(xp.cuda.runtime.getDevice())["name"].decode()
        try:
            from cupy.cuda import nccl

            meta["nccl"] = nccl.get_version()
        except Exception:  # noqa: BLE001,S110
            pass
    log(comm, f"{P} ranks, transports {names}; unavailable: {unavailable or 'none'}")
    out = {"meta": meta, "gs": [], "maxwell": []}

    def dump():
        if me == 0 and args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)

    parts = set(args.parts.split(","))
    if "gs" in parts:
        out["gs"] = bench_gs(comm, xp, names, sizes, args.vn, args.repeats, clock)
        dump()
    if "maxwell" in parts:
        if P < 2:
            log(comm, "(b) needs >= 2 ranks; skipped")
        else:
            out["maxwell"] = bench_maxwell(comm, xp, names, points_list, steps, clock, backend_of, dry)
            if me == 0:
                print_maxwell_table(out["maxwell"], names, P)
            dump()
    log(comm, "done" + (f"; wrote {args.json}" if args.json and me == 0 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
