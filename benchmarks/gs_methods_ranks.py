"""Gather-scatter methods at P ranks with many neighbours, and what ``auto`` picks (issue 17).

    mpiexec -n P python benchmarks/gs_methods_ranks.py [--box 13 11 7] [--order 7]
        [--partitioners rsb rcb] [--backend cpu|cuda] [--exchange auto|nccl|cuda-aware-mpi|host]
        [--trials 30] [--auto-repeats 3] [--json PATH]

For each partitioner, every rank builds its part of the box (``partition_box``, halo elements
last, as ``lobatto run`` does) and the Maxwell face exchange's gather-scatter on it: the ids of
``face_point_ids`` at order N, 6 trace values per point (``MaxwellSystem.trace_components``),
on the run's backend (CPU: NumPy; CUDA: CuPy arrays on the rank's GPU, the node-local rank's,
``LOBATTO_SHARE_GPUS=1`` to share) and transport (``--exchange``). It reports:

- each rank's neighbour ranks (ranks it shares face points with) and shared points: the
  busiest rank's count and the mean; whether some rank has more than six;
- each method's time of one ``apply(u, "sum")`` of the (6, n) traces: the methods take turns
  in every trial (fresh data copied in and synchronised before the barrier, outside the timed
  window; the device synchronised before the clock stops), each rank's median over
  ``--trials``, the slowest rank's median reported (an exchange is as slow as its slowest
  rank), and the noise: the largest relative interquartile range of the fastest method over ranks;
- that the three methods give the same sums (to 1e-12 of the largest value);
- each method's exchange alone (pack, transport, unpack of the shared values; what ``auto``
  times) over ``--trials`` trials, as ``auto`` measures it (comm/auto.py ``choose``);
- the method ``auto`` picks, in ``--auto-repeats`` separate set-ups (each times the
  candidates itself: comm/auto.py), and auto/fastest, the ratio of the time of its pick to
  the fastest's in the timing above: "fastest" if they are the same method, "within noise"
  if the ratio is within 1 + noise.

On the CUDA whole-step path (lsrk45) the ghost exchange is always pairwise
(systems/maxwell/fused.py); the method matters to the stage-by-stage path (other
integrators, the CPU). The box 13x11x7 gives a rank 7 neighbours under rsb at P = 8;
39x33x21 does too, with 1.7e6 points per rank at N = 7 (docs/scaling.md).
Prints a table (rank 0) and writes JSON with device, date, commit and command.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from mpi4py import MPI  # noqa: E402

METHODS = ("pairwise", "crystal_router", "allreduce")


def device_name(backend) -> str:
    if backend.name == "cuda":
        return f"{backend.device_name} (GPU {backend.device_id} of rank 0)"
    from lobatto.bench.report import device_description

    return device_description("cpu")


def rank_ids(box, order: int, partitioner: str, comm) -> tuple[np.ndarray, int]:
    """This rank's face-point ids (flat) and element count, as the driver builds them."""
    from lobatto.mesh import box_mesh, face_point_ids
    from lobatto.mesh.partition import partition_box

    elements = partition_box(box, comm.Get_size(), comm.Get_rank(), partitioner)
    mesh = box_mesh(box, element_ids=elements).halo_last()
    return face_point_ids(mesh, order).reshape(-1), mesh.num_elements


def time_methods(objs, u0, work, trials: int, backend, comm) -> np.ndarray:
    """(methods, trials) seconds of one apply on this rank, the methods taking turns."""
    times = np.empty((len(objs), trials))
    for i in range(-2, trials):  # two untimed rounds: kernels, buffers, NCCL set-up
        for j, gs in enumerate(objs):
            work[j][...] = u0
            backend.synchronize()
            comm.Barrier()
            t0 = MPI.Wtime()
            gs.apply(work[j], "sum")
            backend.synchronize()
            if i >= 0:
                times[j, i] = MPI.Wtime() - t0
    return times


def exchange_only(topo, vn: int, trials: int, backend, comm, requested: str) -> dict:
    """{method: seconds} of the exchange alone (pack, transport, unpack of the shared values),
    measured as ``auto`` measures it (comm/auto.py: vn 1 and vn, medians summed, max over
    ranks) but with ``trials`` trials: the less noisy reference for auto's 10-trial choice."""
    from lobatto.comm import local
    from lobatto.comm.auto import choose
    from lobatto.comm.transport import DEVICE_METHODS, HostTransport, select

    host = HostTransport(comm)
    device = host if backend.name != "cuda" or requested == "host" else select(requested, comm)[0]
    _, _, timings = choose(comm, topo, vn, trials=trials, k=local.kernels_for(backend.xp),
                           transport_for=lambda name: device if name in DEVICE_METHODS else host,
                           sync=backend.synchronize)
    for transport in {id(t): t for t in (host, device)}.values():
        transport.free()
    return timings


def study(box, order: int, partitioner: str, args, backend, comm) -> dict:
    from lobatto.comm import GatherScatter
    from lobatto.systems.maxwell.system import MaxwellSystem

    vn = MaxwellSystem.trace_components
    ids, elements = rank_ids(box, order, partitioner, comm)
    rng = np.random.default_rng(17 + comm.Get_rank())
    u0 = backend.asarray(rng.standard_normal((vn, ids.size)))
    objs = [GatherScatter(ids, comm, method=m, xp=backend.xp, vn_hint=vn, exchange=args.exchange) for m in METHODS]
    info = objs[0].setup_info()
    work = [backend.zeros(u0.shape) for _ in objs]
    mine = time_methods(objs, u0, work, args.trials, backend, comm)
    # the same sums from every method (allreduce may add in another order)
    results = [backend.to_host(w) for w in work]
    scale = max(comm.allreduce(float(np.abs(results[0]).max()), op=MPI.MAX), 1e-300)
    disagreement = comm.allreduce(max(float(np.abs(r - results[0]).max()) for r in results), op=MPI.MAX) / scale
    medians = np.median(mine, axis=1)
    slowest = np.empty_like(medians)
    comm.Allreduce(medians, slowest, op=MPI.MAX)
    q25, q75 = np.percentile(mine, [25, 75], axis=1)
    rel_iqr = (q75 - q25) / medians
    worst_iqr = np.empty_like(rel_iqr)
    comm.Allreduce(rel_iqr, worst_iqr, op=MPI.MAX)
    transports = [gs.exchange for gs in objs]
    alone = exchange_only(objs[0].topo, vn, args.trials, backend, comm, args.exchange)
    for gs in objs:
        gs.free()
    picks = []
    for _ in range(args.auto_repeats):
        auto = GatherScatter(ids, comm, method="auto", xp=backend.xp, vn_hint=vn, exchange=args.exchange)
        picks.append({"method": auto.method, "exchange": auto.exchange,
                      "timings_us": {k: v * 1e6 for k, v in auto.timings.items()}})
        auto.free()
    per_rank = comm.gather({"elements": int(elements), "neighbours": int(info["neighbours"]),
                            "shared_points": int(info["nshared"]), "points": int(ids.size)}, root=0)
    fastest = int(np.argmin(slowest))
    noise = float(worst_iqr[fastest])
    out = {
        "partitioner": partitioner, "box": list(box), "elements": int(np.prod(box)), "order": order,
        "ranks": comm.Get_size(), "vn": vn, "trials": args.trials, "exchange_requested": args.exchange,
        "per_rank": per_rank,
        "methods": {m: {"median_us": float(t * 1e6), "relative_iqr": float(q), "transport": x,
                        "exchange_only_us": alone[m] * 1e6}
                    for m, t, q, x in zip(METHODS, slowest, worst_iqr, transports)},
        "fastest_exchange_only": min(alone, key=alone.get),
        "methods_disagree_by": float(disagreement),
        "fastest": METHODS[fastest], "noise": noise, "auto": picks,
    }
    for pick in picks:
        ratio = float(slowest[METHODS.index(pick["method"])] / slowest[fastest])
        pick["ratio_to_fastest"] = ratio
        pick["exchange_only_ratio"] = alone[pick["method"]] / min(alone.values())
        pick["verdict"] = ("fastest" if pick["method"] == METHODS[fastest]
                           else "within noise" if ratio <= 1 + noise else "slower")
    if per_rank is not None:
        nbrs = [r["neighbours"] for r in per_rank]
        out.update(neighbours_max=max(nbrs), neighbours_mean=float(np.mean(nbrs)), more_than_six=max(nbrs) > 6)
    return out


def format_study(s: dict) -> str:
    nbrs = [r["neighbours"] for r in s["per_rank"]]
    lines = [f"partitioner {s['partitioner']}: box {'x'.join(map(str, s['box']))} ({s['elements']} elements), "
             f"N = {s['order']}, P = {s['ranks']}, {s['vn']} values per point, {s['trials']} trials",
             f"  neighbours per rank {nbrs}: max {s['neighbours_max']}, mean {s['neighbours_mean']:.2f}; "
             f"more than six: {'YES' if s['more_than_six'] else 'no'}",
             f"  elements per rank {[r['elements'] for r in s['per_rank']]}, "
             f"shared points per rank {[r['shared_points'] for r in s['per_rank']]}",
             f"  {'method':<15s} {'transport':<15s} {'apply us':>10s} {'IQR/median':>10s} {'exchange us':>11s}"]
    for m, r in s["methods"].items():
        mark = ("  <- fastest apply" if m == s["fastest"] else "") + (
            "  <- fastest exchange" if m == s["fastest_exchange_only"] else "")
        lines.append(f"  {m:<15s} {r['transport']:<15s} {r['median_us']:10.1f} {r['relative_iqr']:10.2f} "
                     f"{r['exchange_only_us']:11.1f}{mark}")
    lines.append(f"  the methods' sums agree to {s['methods_disagree_by']:.1e} of the largest value")
    for i, p in enumerate(s["auto"], 1):
        own = ", ".join(f"{k} {v:.1f}" for k, v in p["timings_us"].items())
        lines.append(f"  auto set-up {i}: picks {p['method']} ({p['exchange']}); its own timings [us]: {own}; "
                     f"auto/fastest = {p['ratio_to_fastest']:.2f} in apply -> {p['verdict']} (noise "
                     f"{s['noise']:.2f}), {p['exchange_only_ratio']:.2f} in the exchange alone")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--box", type=int, nargs=3, default=[13, 11, 7], metavar=("NX", "NY", "NZ"))
    ap.add_argument("--order", type=int, default=7)
    ap.add_argument("--partitioners", nargs="+", default=["rsb", "rcb"], choices=("rsb", "rcb", "metis"))
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--exchange", default="auto", choices=("auto", "nccl", "cuda-aware-mpi", "host"))
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--auto-repeats", type=int, default=3)
    ap.add_argument("--json", default=None, metavar="PATH")
    args = ap.parse_args()
    from lobatto.backends import get_backend
    from lobatto.bench.surroundings import git_commit
    from lobatto.machine.parallel import node_local_rank

    comm = MPI.COMM_WORLD
    me, size = comm.Get_rank(), comm.Get_size()
    if size < 2:
        print("gs_methods_ranks.py: start it under mpiexec with 2 or more ranks", file=sys.stderr)
        return 2
    if args.backend == "cuda":
        backend = get_backend("cuda", device_id=node_local_rank(comm), rank=me)
    else:
        backend = get_backend("cpu")
    record = {
        "benchmark": "gs_methods_ranks", "device": device_name(backend), "backend": backend.name,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(), "commit": git_commit(), "ranks": size,
        "command": shlex.join(["mpiexec", "-n", str(size), "python", *sys.argv]),
        "mpi": MPI.Get_library_version().splitlines()[0].strip().strip("\x00"),
        "share_gpus": os.environ.get("LOBATTO_SHARE_GPUS") == "1", "studies": [],
    }
    if me == 0:
        print(f"# gather-scatter methods: P = {size}, backend {backend.name} ({record['device']}), "
              f"{record['mpi']}, commit {record['commit']}", flush=True)
    for partitioner in args.partitioners:
        s = study(tuple(args.box), args.order, partitioner, args, backend, comm)
        if me == 0:
            record["studies"].append(s)
            print(format_study(s), flush=True)
    if me == 0 and args.json:
        from lobatto.bench.report import write_json

        write_json(args.json, record, indent=1, default=None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
