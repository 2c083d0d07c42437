"""Validate the communication model (docs/comm-model.md) against real Maxwell steps.

    python benchmarks/comm_model_validate.py [--ranks 1 2 3 4] [--order 5] [--block 4 4 4]
        [--backend cpu|cuda] [--params comm_model.json] [--sysbench sysbench.json]
        [--rate-from job|p1] [--cores C] [--repeats R] [--json out.json]

Weak scaling: P ranks run the box of P blocks along x (lobatto's rcb gives each rank one
block), lsrk45, PEC walls, through ``lobatto.api.Simulation``. For each P it measures the
step time (slowest rank; steps with the run's state check every 20) and the exchange's own
time (``GatherScatter.apply`` on P ranks less the same sums on one rank, with the run's method
and transport on the run's backend: CuPy arrays on a GPU, warmed up, synchronised, the median
of 30 calls). The model gets
the single-rank rate (rank 0 running its block alone while the others sleep, in rounds
interleaved with the run's inside the same job; ``--rate-from p1``: the P = 1 job's), LogGP, the software cost and the stage term from
``--params`` (else from ``lobatto bench comm-model --measure --backend <this backend>`` on 2
ranks, run first: exchanges and timed steps on the same backend), the busiest rank's
pattern from lobatto's partition, and each rank's share of the node: of a core (cores / P,
with more ranks than cores) and, on the CPU backend, of the memory bandwidth (STREAM triad by
thread count from ``--sysbench``, else ``lobatto sysbench --only cpu_stream`` run first). It
also times each rank's block as a one-rank run on all ranks at once (``alone``: compute with
the node shared, no exchange), which the model does not use: it shows whether an error is in
the compute part or the exchange part. Prints a table and writes JSON.
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

    from lobatto.api import Simulation
    from lobatto.bench.comm_measure import (face_exchange, maxwell_case, one_rank_simulation, seconds_per_step,
                                            weak_box)
    from lobatto.bench.sysbench_mpi import phase_end

    comm = MPI.COMM_WORLD
    P = comm.Get_size()
    elements = weak_box(args.block, P)
    case = maxwell_case(elements, args.order, args.backend)
    with tempfile.TemporaryDirectory() as tmp:
        sim = Simulation(case, output_dir=tmp, comm=comm if P > 1 else None)
        alone_sim = (one_rank_simulation(comm, args.block, args.order, args.backend, os.path.join(tmp, "alone"))
                     if P > 1 else None)  # a directory of its own: sim is live in tmp
        sim.advance(5)  # warm-up: compilation, graph recording
        if alone_sim is not None:
            alone_sim.advance(5)
        # rounds interleave the run, its block alone on every rank at once, and on rank 0 alone
        # (the others sleep): drift of the machine (clocks, other jobs) hits all three alike
        run, alone, single = [], [], []
        for _ in range(args.repeats):
            run.append(seconds_per_step(sim, comm, 20, 1, warmup=0))
            if alone_sim is not None:
                alone.append(seconds_per_step(alone_sim, comm, 20, 1, warmup=0))
                single.append(seconds_per_step(alone_sim, None, 20, 1, warmup=0) if comm.Get_rank() == 0 else 0.0)
                phase_end(comm, busy=comm.Get_rank() == 0)
        step = comm.allreduce(float(np.median(run)), op=MPI.MAX)
        alone_step = comm.allreduce(float(np.median(alone)), op=MPI.MAX) if alone else step
        single_step = comm.bcast(float(np.median(single)), root=0) if single else step
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
                                              "alone_step_seconds": alone_step, "single_step_seconds": single_step,
                                              "points": int(np.prod(elements)) * (args.order + 1) ** 3,
                                              "exchange": fx, "system": summary}, default=str))


def read_stream_rows(args, tmp: Path) -> list[dict]:
    """sysbench ``cpu_stream`` rows from --sysbench, else measured now (1 .. the ranks' thread
    counts, capped at the cores)."""
    path = args.sysbench
    if path is None:
        path = tmp / "sysbench.json"
        threads = sorted({1, *(min(P, args.cores) for P in args.ranks)})
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        res = subprocess.run([sys.executable, "-m", "lobatto", "sysbench", "--only", "cpu_stream", "--no-png",
                              "--threads", *map(str, threads), "--json", str(path)],
                             capture_output=True, text=True, env=env, timeout=600)
        if res.returncode != 0:
            raise SystemExit(f"lobatto sysbench --only cpu_stream failed:\n{res.stdout}\n{res.stderr}")
    from lobatto.bench.comm_loggp import read_sysbench, sysbench_section
    from lobatto.errors import InputError

    try:
        return sysbench_section(read_sysbench(path), "cpu_stream", path, hint="run 'lobatto sysbench'")["rows"]
    except InputError as exc:
        print(f"comm_model_validate: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--order", type=int, default=5)
    ap.add_argument("--block", type=int, nargs=3, default=[4, 4, 4])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--params", type=Path, default=None, help="comm-model JSON with measured LogGP")
    ap.add_argument("--cores", type=int, default=os.cpu_count(), help="cores (GPUs) the ranks share")
    ap.add_argument("--rate-from", choices=("job", "p1"), default="job",
                    help="single-rank rate: rank 0 alone inside each P's job (default) or the P = 1 job's")
    ap.add_argument("--sysbench", type=Path, default=None,
                    help="sysbench JSON with cpu_stream rows (CPU backend; default: measure them first)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0
    from lobatto.bench.comm_study import read_params
    from lobatto.bench.comm_measure import weak_box
    from lobatto.bench.comm_model import STAGES, bandwidth_share, predict_step
    from lobatto.bench.comm_pattern import partition_pattern

    with tempfile.TemporaryDirectory() as tmp:
        stream_rows = []
        if args.backend == "cpu":
            stream_rows = read_stream_rows(args, Path(tmp))
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
        # the single-rank rate: by default the same job's (rank 0 alone, rounds interleaved
        # with the run), so that a machine drifting between jobs does not pass for model error
        job_rate = m["points"] / P * STAGES / m.get("single_step_seconds", m["step_seconds"])
        rate_P = job_rate if args.rate_from == "job" else rate
        pats = partition_pattern(weak_box(args.block, P), P)
        busiest = max(pats, key=lambda p: (sum(p.message_bytes(args.order).values()), p.halo_elements))
        # each rank's share of a core and of the node's memory bandwidth (CPU: from STREAM by
        # thread count; a GPU per rank shares nothing)
        share = bandwidth_share(min(P, args.cores), stream_rows)
        pred = predict_step(busiest, args.order, P, params, rate_P, 0.0, software,
                            rate_factor=min(1.0, args.cores / P) * share)
        fx = m["exchange"]
        rows.append({"ranks": P, "measured_step_seconds": m["step_seconds"],
                     "predicted_step_seconds": pred["step_seconds"],
                     "predicted_step_seconds_overlap": pred["step_seconds_overlap"],
                     "step_error_overlap": pred["step_seconds_overlap"] / m["step_seconds"] - 1,
                     "step_error": pred["step_seconds"] / m["step_seconds"] - 1,
                     "bandwidth_share": share, "rate": rate_P,
                     "measured_single_step_seconds": m.get("single_step_seconds", m["step_seconds"]),
                     "measured_alone_step_seconds": m.get("alone_step_seconds", m["step_seconds"]),
                     "predicted_compute_step_seconds": STAGES * pred["compute_seconds_per_stage"],
                     "measured_exchange_seconds": fx["seconds"] if fx else 0.0,
                     "predicted_exchange_seconds": pred["exchange_seconds"],
                     "predicted_exchange_network_seconds": pred["exchange_network_seconds"],
                     "predicted_stage_term_seconds": pred["stage_term_seconds"],
                     "exchange_method": fx["method"] if fx else None, "exchange_transport": fx["exchange"] if fx else None,
                     "oversubscribed": P > args.cores, "prediction": pred, "system": m["system"]})
    print(f"single-rank rate of the P = 1 job {rate:.3e} point-stage/s (model uses: {args.rate_from}); LogGP {params.source}: L {params.L * 1e6:.3g} us, "
          f"o {params.o * 1e6:.3g} us, g {params.g * 1e6:.3g} us, {1 / params.G / 1e9:.3g} GB/s; "
          f"software (on {software.backend}) s0 {software.s0 * 1e6:.3g} us, s_v {software.s_v * 1e9:.3g} ns/value, "
          f"s1 {software.s1 * 1e9:.3g} ns/B; stage term r0 {software.r0 * 1e6:.3g} us + r_e "
          f"{software.r_e * 1e6:.3g} us/element; cores {args.cores}")
    if sharing.get("note"):
        print("NOTE: " + sharing["note"])
    for r in stage_fit:
        print(f"  stage fit, block {'x'.join(map(str, r['block']))}: run {r['stage_seconds'] * 1e6:.1f} us/stage, "
              f"single {r['single_stage_seconds'] * 1e6:.1f}, all ranks alone {r['alone_stage_seconds'] * 1e6:.1f}; "
              f"run - alone {r['beyond_alone'] * 1e6:.1f} = isolated exchange (model) {r['exchange_model'] * 1e6:.1f}"
              f" + stage term; fitted {r['predicted_beyond_alone'] * 1e6:.1f}")
    if stream_rows:
        print("memory bandwidth share per rank (STREAM triad): "
              + ", ".join(f"P={r['ranks']} {r['bandwidth_share']:.3f}" for r in rows))
    print(f"{'P':>2s} {'meas ms':>8s} {'model ms':>8s} {'err':>6s} {'ovl ms':>8s} {'err':>6s} "
          f"{'exch meas us':>12s} {'exch model us':>13s} {'stage term us':>13s} {'single ms':>9s} {'alone ms':>8s} "
          f"{'compute ms':>10s}")
    for r in rows:
        print(f"{r['ranks']:2d} {r['measured_step_seconds'] * 1e3:8.3f} {r['predicted_step_seconds'] * 1e3:8.3f} "
              f"{r['step_error'] * 100:5.1f}% {r['predicted_step_seconds_overlap'] * 1e3:8.3f} "
              f"{r['step_error_overlap'] * 100:5.1f}% {r['measured_exchange_seconds'] * 1e6:12.1f} "
              f"{r['predicted_exchange_seconds'] * 1e6:13.1f} {r['predicted_stage_term_seconds'] * 1e6:13.1f} "
              f"{r['measured_single_step_seconds'] * 1e3:9.3f} {r['measured_alone_step_seconds'] * 1e3:8.3f} "
              f"{r['predicted_compute_step_seconds'] * 1e3:10.3f}"
              f"{'  (oversubscribed)' if r['oversubscribed'] else ''}")
    print("single: the rank's block on rank 0 alone in the same job (the model's rate with --rate-from job); "
          "alone: on every rank at once, no exchange (measured, not used by the model); "
          "compute: the model's compute part of the step")
    if args.json is not None:
        from lobatto.bench.report import run_meta, write_json

        meta = dict(run_meta(), command=" ".join([sys.executable, *sys.argv]))
        write_json(args.json, {"meta": meta, "rate": rate, "loggp": params.as_dict(), "software": vars(software),
                               "sharing": sharing, "cpu_stream": stream_rows, "stage_fit": stage_fit, "rows": rows},
                   default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
