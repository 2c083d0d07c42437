"""Validate the communication model (docs/comm-model.md) against real Maxwell steps.

    python benchmarks/comm_model_validate.py [--ranks 1 2 3 4] [--order 5] [--block 4 4 4]
        [--backend cpu|cuda] [--params comm_model.json] [--json out.json]

Weak scaling: P ranks run the box of P blocks along x (lobatto's rcb gives each rank one
block), lsrk45, PEC walls, through ``lobatto.api.Simulation``. For each P it measures the
step time (slowest rank; steps with the run's state check every 20) and the exchange's own
time (``GatherScatter.apply`` on P ranks less the same sums on one rank, with the run's method
and transport on the run's backend: CuPy arrays on a GPU, warmed up, synchronised, the median
of 30 calls). The model gets
the single-rank rate from the P = 1 run, LogGP, the software cost and the stage term from
``--params`` (else from ``lobatto bench comm-model --measure --backend <this backend>`` on 2
ranks, run first: exchanges and timed steps on the same backend), the busiest rank's
pattern from lobatto's partition, and, with more ranks than cores, each rank's share of a
core (cores / P). Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))


def mpiexec(nprocs: int, argv: list[str]) -> subprocess.CompletedProcess:
    sys.path.insert(0, str(ROOT / "tests" / "mpi"))
    from mpirun import MPIEXEC, launcher_flags

    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("NCCL_NVLS_ENABLE", "0")
    cmd = [MPIEXEC, *launcher_flags(MPIEXEC), "-n", str(nprocs), sys.executable, *argv]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if res.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{res.stdout}\n{res.stderr}")
    return res


def worker(args) -> None:
    """Under mpiexec: time steps and the exchange; rank 0 writes args.out."""
    import numpy as np
    from mpi4py import MPI

    from lobatto.api import Simulation, case_from_dict
    from lobatto.bench.comm_measure import face_exchange, weak_box

    comm = MPI.COMM_WORLD
    P = comm.Get_size()
    elements = weak_box(args.block, P)
    case = case_from_dict({
        "physics": {"equations": "maxwell"},
        "mesh": {"elements": list(elements), "boundary": "pec", "upper": [float(elements[0]), float(elements[1]),
                                                                             float(elements[2])]},
        "discretization": {"order": args.order},
        "initial": {"Ez": "sin(pi*x/4)*sin(pi*y/4)", "Hx": "0.1*sin(pi*z/4)"},
        "time": {"t_end": 1e6},
        "backend": {"name": args.backend},
    }, name="comm_model_validate")
    with tempfile.TemporaryDirectory() as tmp:
        sim = Simulation(case, output_dir=tmp, comm=comm if P > 1 else None)
        sim.advance(5)  # warm-up: compilation, graph recording
        times = []
        for _ in range(args.repeats):
            comm.Barrier()
            t0 = MPI.Wtime()
            sim.advance(20)  # 20 steps, then the state check (one allreduce), as in a run
            sim.backend.synchronize()
            times.append((MPI.Wtime() - t0) / 20)
        step = comm.allreduce(float(np.median(times)), op=MPI.MAX)
        summary = sim.system.summary(sim.stepper, comm if P > 1 else None)
        fx = None
        if P > 1:
            # the run's own method and transport, on the run's backend (device arrays on a GPU),
            # warmed up, synchronised and the median of 30 calls
            info = sim.system.exchange.setup_info()
            fx = face_exchange(comm, elements, args.order, repeats=30, method=info["method"],
                               backend=sim.backend, exchange=info["exchange"])
    if comm.Get_rank() == 0:
        Path(args.out).write_text(json.dumps({"ranks": P, "elements": list(elements), "step_seconds": step,
                                              "points": int(np.prod(elements)) * (args.order + 1) ** 3,
                                              "exchange": fx, "system": summary}, default=str))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--order", type=int, default=5)
    ap.add_argument("--block", type=int, nargs=3, default=[4, 4, 4])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--params", type=Path, default=None, help="comm-model JSON with measured LogGP")
    ap.add_argument("--cores", type=int, default=os.cpu_count(), help="cores (GPUs) the ranks share")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0
    from lobatto.bench.comm_cli import read_params
    from lobatto.bench.comm_measure import weak_box
    from lobatto.bench.comm_model import STAGES, predict_step
    from lobatto.bench.comm_pattern import partition_pattern

    with tempfile.TemporaryDirectory() as tmp:
        params_path = args.params
        if params_path is None:
            params_path = Path(tmp) / "params.json"
            mpiexec(2, ["-m", "lobatto", "bench", "comm-model", "--measure", "--network", "none", "--max-ranks", "2",
                        "--order-points", str(args.order), "--backend", args.backend, "--json", str(params_path)])
        params, software = read_params(params_path)
        fit = json.loads(Path(params_path).read_text())
        fit = fit.get("measured") or fit
        sharing, stage_fit = fit.get("sharing") or {}, fit.get("stage") or []
        if software.backend != args.backend:
            print(f"WARNING: the software cost in {params_path} was measured on {software.backend}, this run is on "
                  f"{args.backend}")
        measured = []
        for P in args.ranks:
            out = Path(tmp) / f"worker{P}.json"
            mpiexec(P, [__file__, "--worker", "--out", str(out), "--order", str(args.order), "--block",
                        *map(str, args.block), "--backend", args.backend, "--repeats", str(args.repeats)])
            measured.append(json.loads(out.read_text()))
    one = next((m for m in measured if m["ranks"] == 1), None)
    if one is None:
        raise SystemExit("--ranks must include 1 (the single-rank rate)")
    rate = one["points"] * STAGES / one["step_seconds"]
    rows = []
    for m in measured:
        P = m["ranks"]
        pats = partition_pattern(weak_box(args.block, P), P)
        busiest = max(pats, key=lambda p: (sum(p.message_bytes(args.order).values()), p.halo_elements))
        pred = predict_step(busiest, args.order, P, params, rate, 0.0, software,
                            rate_factor=min(1.0, args.cores / P))
        fx = m["exchange"]
        rows.append({"ranks": P, "measured_step_seconds": m["step_seconds"],
                     "predicted_step_seconds": pred["step_seconds"],
                     "predicted_step_seconds_overlap": pred["step_seconds_overlap"],
                     "step_error_overlap": pred["step_seconds_overlap"] / m["step_seconds"] - 1,
                     "step_error": pred["step_seconds"] / m["step_seconds"] - 1,
                     "measured_exchange_seconds": fx["seconds"] if fx else 0.0,
                     "predicted_exchange_seconds": pred["exchange_seconds"],
                     "predicted_exchange_network_seconds": pred["exchange_network_seconds"],
                     "predicted_stage_term_seconds": pred["stage_term_seconds"],
                     "exchange_method": fx["method"] if fx else None, "exchange_transport": fx["exchange"] if fx else None,
                     "oversubscribed": P > args.cores, "prediction": pred, "system": m["system"]})
    print(f"single-rank rate {rate:.3e} point-stage/s; LogGP {params.source}: L {params.L * 1e6:.3g} us, "
          f"o {params.o * 1e6:.3g} us, g {params.g * 1e6:.3g} us, {1 / params.G / 1e9:.3g} GB/s; "
          f"software (on {software.backend}) s0 {software.s0 * 1e6:.3g} us, s_v {software.s_v * 1e9:.3g} ns/value, "
          f"s1 {software.s1 * 1e9:.3g} ns/B; stage term r0 {software.r0 * 1e6:.3g} us + r_e "
          f"{software.r_e * 1e6:.3g} us/element; cores {args.cores}")
    if sharing.get("note"):
        print("NOTE: " + sharing["note"])
    for r in stage_fit:
        print(f"  stage fit, block {'x'.join(map(str, r['block']))}: run {r['stage_seconds'] * 1e6:.1f} us/stage, "
              f"single {r['single_stage_seconds'] * 1e6:.1f}, all ranks alone {r['alone_stage_seconds'] * 1e6:.1f}; "
              f"extra {r['extra'] * 1e6:.1f} = isolated exchange (model) {r['exchange_model'] * 1e6:.1f} + "
              f"contention {r['contention'] * 1e6:.1f} + rest; fitted extra {r['predicted_extra'] * 1e6:.1f}")
    print(f"{'P':>2s} {'meas ms':>8s} {'model ms':>8s} {'err':>6s} {'ovl ms':>8s} {'err':>6s} "
          f"{'exch meas us':>12s} {'exch model us':>13s} {'stage term us':>13s}")
    for r in rows:
        print(f"{r['ranks']:2d} {r['measured_step_seconds'] * 1e3:8.3f} {r['predicted_step_seconds'] * 1e3:8.3f} "
              f"{r['step_error'] * 100:5.1f}% {r['predicted_step_seconds_overlap'] * 1e3:8.3f} "
              f"{r['step_error_overlap'] * 100:5.1f}% {r['measured_exchange_seconds'] * 1e6:12.1f} "
              f"{r['predicted_exchange_seconds'] * 1e6:13.1f} {r['predicted_stage_term_seconds'] * 1e6:13.1f}"
              f"{'  (oversubscribed)' if r['oversubscribed'] else ''}")
    if args.json is not None:
        from lobatto.bench.comm_cli import _meta
        from lobatto.io.atomic import atomic_write_text

        meta = dict(_meta(), command=" ".join([sys.executable, *sys.argv]))
        atomic_write_text(args.json, json.dumps({"meta": meta, "rate": rate, "loggp": params.as_dict(),
                                                 "software": vars(software), "sharing": sharing,
                                                 "stage_fit": stage_fit, "rows": rows}, indent=2, default=str))
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
