"""``lobatto bench scaling``: strong and weak scaling of Maxwell runs over ranks and sizes.

    lobatto bench scaling --weak   [--ranks 1 2 4] [--sizes 8 64 512] [--order 7] [--steps K]
    lobatto bench scaling --strong [--backend cpu|cuda] [--overlap on off auto] [--partitioner rsb]
                                   [--mpiexec CMD] [--json PATH] [--png PATH] [--model COMM.json]
    lobatto bench scaling --plot-from A.json [B.json ...]     (redraw; several studies are merged)

Each (rank count, size) point is one child process, ``mpiexec -n P python -m lobatto run``
of a generated Maxwell box case (PEC cavity of unit elements, lsrk45, upwind flux, no
outputs), so the figure is the one a user's run reports: the summary's ``seconds_per_step``
(slowest rank, first WARMUP_STEPS left out; runner.simulation.Simulation.run). A size is a number of
elements (``64``, made a near-cubic box) or a box (``4x4x8``): per rank for --weak, in total
for --strong. From the summaries: time per step, speed-up and parallel efficiency against
the smallest rank count of each size, and for each rank count the throughput per rank
against points per rank with an n_1/2 fit (NekCEM's Figures 5-8; docs/scaling.md). Each
``--overlap`` setting is a series of its own (bench/scaling_analysis.py); ``--model`` compares
the runs with the communication model's prediction (bench/scaling_model.py). The plan of the
runs and their generated case are in bench/scaling_plan.py, the options in bench/cli.py.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lobatto.bench.report import device_description, number, write_json
from lobatto.bench.scaling_analysis import analyse, format_table, merge_studies
from lobatto.bench.scaling_plan import case_text, plan
from lobatto.bench.surroundings import find_mpiexec, git_commit, open_mpi_flags
from lobatto.discretization.gll import MAX_ORDER
from lobatto.errors import InputError, SolverError
from lobatto.machine.threads import set_threads

STDERR_TAIL = 1500  # characters of a failed child's standard error kept in the error
DEFAULT_SIZES = {"cpu": ("8", "27", "64"), "cuda": ("512", "4096", "32768")}
DEFAULT_STEPS = {"cpu": 20, "cuda": 200}
#: summary entries kept for each run (runner/summary.py make_summary, systems/dg.py summary)
SUMMARY_KEYS = ("points", "steps", "rate_steps", "seconds_per_step", "point_steps_per_second",
                "wall_seconds", "stages", "step_path", "cuda_graph", "threads", "exchange_method", "exchange",
                "overlap", "gflops", "backend", "precision", "energy_use")  # energy_use: lobatto.machine.power, where measured


# Launching --------------------------------------------------------------------------------------
def launcher(mpiexec: str | None, extra_args: str = "") -> list[str]:
    """The launcher's argv before ``-n P``: --mpiexec (may carry its own arguments), else the
    one found, with Open MPI's flags and the extra arguments."""
    if mpiexec:
        argv = shlex.split(mpiexec)
        if not argv or shutil.which(argv[0]) is None:
            raise InputError(f"--mpiexec: '{mpiexec}' is not an executable command")
    else:
        found = find_mpiexec()
        if found is None:
            raise InputError("no mpiexec beside the Python executable or on PATH: install MPI or give --mpiexec")
        argv = [found]
    return argv + open_mpi_flags(argv[0]) + shlex.split(extra_args or "")


def child_env(threads: int | None) -> dict:
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parent.parent.parent)  # children import this lobatto
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if threads is not None:
        set_threads(env, threads)
    # the exchange is point to point; NVLink multicast only matters to collectives, and is
    # kept off so that runs on shared GPU hosts do not take it
    env.setdefault("NCCL_NVLS_ENABLE", "0")
    return env


def run_one(point: dict, workdir: Path, launch: list[str], *, order: int, steps: int, backend: str,
            precision: str, threads: int | None, timeout: float, attempt: int = 0) -> dict:
    """Launch one run, return its record (the plan's entry, the command and the summary's figures);
    SolverError with the child's standard error tail when it fails."""
    overlap, partitioner = point.get("overlap_setting", "auto"), point.get("partitioner", "rcb")
    name = (f"P{point['ranks']}_{'x'.join(map(str, point['elements']))}_overlap-{overlap}"
            + (f"_{partitioner}" if partitioner != "rcb" else "") + (f"_{attempt}" if attempt else ""))
    directory = workdir / name
    directory.mkdir(parents=True, exist_ok=True)
    case = directory / "case.toml"
    case.write_text(case_text(point["elements"], order, steps, backend, precision, overlap, partitioner))
    out = directory / "out"
    cmd = [*launch, "-n", str(point["ranks"]), sys.executable, "-m", "lobatto", "run", str(case),
           "--output", str(out), "--quiet", "--overwrite"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None  # others' work on a shared node
    start = time.perf_counter()
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=child_env(threads))
    except subprocess.TimeoutExpired:
        raise SolverError(f"scaling run {name} ({point['ranks']} ranks) took over {timeout:.0f} s "
                          f"(--timeout): {shlex.join(cmd)}") from None
    seconds = time.perf_counter() - start
    summary_path = out / "summary.json"
    if result.returncode != 0 or not summary_path.is_file():
        tail = (result.stderr or result.stdout or "")[-STDERR_TAIL:].strip()
        raise SolverError(f"scaling run {name} ({point['ranks']} ranks) failed with exit code "
                          f"{result.returncode}: {shlex.join(cmd)}; its standard error ends: {tail}")
    summary = json.loads(summary_path.read_text())
    if summary.get("ranks") != point["ranks"]:  # P singletons, each rank 0 of 1, also "succeed"
        raise SolverError(f"scaling run {name}: launched on {point['ranks']} ranks, the run reports "
                          f"{summary.get('ranks')}; is mpi4py built against the MPI of {launch[0]}?")
    record = dict(point, command=shlex.join(cmd), launch_seconds=seconds, load_average_before=load,
                  run_dir=str(directory))
    record.update({k: summary.get(k) for k in SUMMARY_KEYS}, num_elements=summary.get("elements"))
    # what the run did under the setting: "auto" decides at its first step (CUDA whole step)
    record["overlap_used"] = (summary.get("overlap") or {}).get("enabled")
    return with_rates(record)


def with_rates(run: dict) -> dict:
    """Per-rank figures of a run record (points / ranks; point-steps per second per rank)."""
    run["points_per_rank"] = run["points"] / run["ranks"]
    t = run["seconds_per_step"]
    run["point_steps_per_second_per_rank"] = run["points_per_rank"] / t if t else None
    return run


# The study --------------------------------------------------------------------------------------

def check_options(args) -> None:
    if not 1 <= args.order <= MAX_ORDER:
        raise InputError(f"--order must be from 1 to {MAX_ORDER} (got {args.order})")
    if args.steps is not None and args.steps < 3:
        raise InputError(f"--steps must be >= 3 (the first 2 are left out of the rate; got {args.steps})")
    if not args.ranks or any(p < 1 for p in args.ranks):
        raise InputError(f"--ranks must be positive rank counts (got {args.ranks})")
    if args.threads is not None and args.threads < 1:
        raise InputError(f"--threads must be >= 1 (got {args.threads})")
    if args.repeats < 1:
        raise InputError(f"--repeats must be >= 1 (got {args.repeats})")
    if args.timeout <= 0:
        raise InputError(f"--timeout must be positive (got {args.timeout})")


def study(args, log=print) -> dict:
    """Plan, launch and collect every run; the study's record with its curves and fits."""
    check_options(args)
    mode = "strong" if args.strong else "weak"
    sizes = args.sizes or DEFAULT_SIZES[args.backend]
    steps = args.steps or DEFAULT_STEPS[args.backend]
    ranks = sorted(set(args.ranks))
    overlaps = list(dict.fromkeys(args.overlap or ["auto"]))  # default: the case default, auto
    runs = plan(mode, ranks, sizes, overlaps, args.partitioner)
    launch = launcher(args.mpiexec, args.mpiexec_args)
    record = {
        "benchmark": "scaling", "mode": mode, "equations": "maxwell", "order": args.order,
        "backend": args.backend, "precision": args.precision, "steps": steps, "ranks": ranks,
        "sizes": [str(s) for s in sizes], "size_meaning": "elements per rank" if mode == "weak" else "total elements",
        "overlap_settings": overlaps, "partitioner": args.partitioner,
        "repeats": args.repeats, "threads_requested": args.threads, "device": device_description(args.backend),
        "cores": os.cpu_count(), "share_gpus": os.environ.get("LOBATTO_SHARE_GPUS") == "1",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(), "commit": git_commit(), "command": shlex.join(["lobatto", "bench", *args.argv]),
        "launcher": shlex.join(launch), "runs": [],
    }
    keep = args.keep is not None
    workdir = Path(args.keep) if keep else Path(tempfile.mkdtemp(prefix="lobatto-scaling-"))
    try:
        for i, point in enumerate(runs, 1):
            # best of --repeats: on a shared node others' work only ever adds time
            tries = [run_one(point, workdir / mode, launch, order=args.order, steps=steps, backend=args.backend,
                             precision=args.precision, threads=args.threads, timeout=args.timeout, attempt=k)
                     for k in range(args.repeats)]
            run = min(tries, key=lambda r: r["seconds_per_step"])
            run["repeats_seconds_per_step"] = [r["seconds_per_step"] for r in tries]
            record["runs"].append(run)
            used = {None: "-", True: "on", False: "off"}[run["overlap_used"]]
            log(f"[{i}/{len(runs)}] {mode} size {point['size']} overlap {point['overlap_setting']} (used: {used}): "
                f"{run['ranks']} ranks, "
                f"{'x'.join(map(str, run['elements']))} elements, {run['points_per_rank']:.4g} points/rank: "
                f"{run['seconds_per_step'] * 1e3:.4g} ms/step, "
                f"{number(run['point_steps_per_second_per_rank'])} point-steps/s/rank, exchange "
                f"{run['exchange_method']}/{run['exchange']} ({run['launch_seconds']:.1f} s)",
                flush=True)
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
            for run in record["runs"]:
                run["run_dir"] = None  # removed with the temporary directory
    return analyse(record)


# The command -----------------------------------------------------------------------------------
def command(args, argv: list[str]) -> int:
    """``lobatto bench scaling`` (options of bench/cli.py): a study, or the redraw of studies
    (--plot-from); its table, figure and JSON."""
    from lobatto.bench.scaling_plot import plot_study

    args.argv = list(argv)
    model = None
    if args.model is not None:  # read before any run: a bad file is found at once
        from lobatto.bench.comm_study import read_params

        model = read_params(args.model)
    if args.plot_from is not None:
        record = read_studies(args.plot_from)
    else:
        if not (args.strong or args.weak):
            raise InputError("lobatto bench scaling: give --strong or --weak")
        record = study(args)
    if model is not None:
        from lobatto.bench.scaling_model import compare

        record["model_comparison"] = compare(record, *model, source=str(args.model))
    if args.json is not None and (args.plot_from is None or len(args.plot_from) > 1 or model is not None):
        write_json(args.json, record, default=None)
    png = args.png
    if png is None and args.json is not None:
        png = args.json.with_suffix(".png")
    elif png is None and args.plot_from is not None:
        first = args.plot_from[0]
        png = first.with_suffix(".png") if len(args.plot_from) == 1 else first.with_name(first.stem + "_merged.png")
    if png is not None:
        print(plot_study(record, png))
    print()
    print(format_table(record))
    if model is not None:
        from lobatto.bench.scaling_model import format_comparison

        print()
        print(format_comparison(record["model_comparison"]))
    return 0


def read_studies(paths) -> dict:
    """The study of one JSON, or the merge of several (bench.scaling_analysis.merge_studies)."""
    records = []
    for path in paths:
        try:
            record = json.loads(Path(path).read_text())
            if record.get("benchmark") != "scaling" or not isinstance(record.get("runs"), list):
                raise ValueError("no 'benchmark': 'scaling' with a list of runs")
            records.append(record)
        except (OSError, ValueError, KeyError) as err:
            raise InputError(f"--plot-from {path}: not a scaling study's JSON ({err})") from None
    try:
        record = records[0] if len(records) == 1 else merge_studies(records, sources=paths)
        return analyse(record)
    except (ValueError, KeyError, TypeError) as err:
        raise InputError(f"--plot-from {' '.join(map(str, paths))}: cannot be analysed together ({err})") from None
