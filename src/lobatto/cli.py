"""The ``lobatto`` command.

    lobatto run CASE.toml [--backend cpu|cuda|auto] [--output DIR] [--quiet]
                          [--restart CHECKPOINT|latest [--interpolate]]
    lobatto plot RUN_DIR [--output FILE.png] [--quantities NAME ...]   (time series as a PNG)
    lobatto resonances RUN_DIR [--probe NAME] [--field Ez] [--band f1 f2] [--start T]   (modes of a probe's series)
    lobatto bench ...        (benchmarks, when lobatto.bench.cli is installed)
    lobatto sysbench [--only SECTION ...] [--json PATH] [--compare BASELINE.json]   (node micro-benchmarks)
    lobatto doctor [--backend auto|cpu|cuda] [--json PATH] [--bytes N]   (check devices, MPI, transports)
    lobatto --version

Errors in the input (exit 2) and failed runs (exit 1) are reported as one
line, ``lobatto: error: <message>``, on standard error, without a traceback;
Ctrl-C exits with 130 and SIGTERM with 143, removing the run's temporary files. Set
``LOBATTO_DEBUG=1`` to get the traceback instead.

Under MPI an error on any rank ends every rank (lobatto.machine.parallel): an error the ranks agreed
on is printed once, by rank 0; any other ends the job from the rank that met it. SIGINT and
SIGTERM end every rank at once (130, 143). Several ranks on one node share its cores: unless
OMP_NUM_THREADS is set, each rank's threads are limited to cores / ranks on the node, fewer
where other work keeps cores busy, and idle threads sleep (lobatto/machine/threads.py).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import os
import sys
from pathlib import Path
from typing import Sequence

from lobatto import __version__
from lobatto.errors import InputError, LobattoError

__all__ = ["main", "build_parser"]

EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as under MPI


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lobatto",
        description="GPU-native high-order spectral-element framework.",
        epilog="Case files: docs/case-file.md. Output: docs/output.md.",
        allow_abbrev=False,  # --out is not --output: a prefix is an unknown option
    )
    parser.add_argument("--version", action="version", version=f"lobatto {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="run a case file",
        allow_abbrev=False,
        description="Run the case described by a TOML case file and print a summary.",
    )
    run.add_argument("case", metavar="CASE.toml", help="the case file")
    run.add_argument(
        "--backend",
        choices=("cpu", "cuda", "auto"),
        default=None,
        help="where to compute (default: [backend] name of the case, else cpu)",
    )
    run.add_argument(
        "--output",
        "-o",
        metavar="DIR",
        default=None,
        help="output directory (default: ./<case name>_out)",
    )
    run.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    run.add_argument("--overwrite", action="store_true",
                     help="replace the outputs of an earlier run of this name in the output directory (with "
                          "--restart: only those written after the checkpoint)")
    run.add_argument("--restart", metavar="CHECKPOINT", default=None,
                     help="continue from a checkpoint directory, or 'latest' for the newest in the output "
                          "directory (docs/restart.md)")
    run.add_argument("--interpolate", action="store_true",
                     help="with --restart: the case may have another [discretization] order or [mesh]; the "
                          "checkpoint's fields are interpolated onto it (docs/restart.md)")

    plot = sub.add_parser(
        "plot",
        help="plot a run's probes and integrals (time series) as a PNG",
        allow_abbrev=False,
        description="Turn a run's time series (NAME_probes.csv, from [output.probes] and "
                    "[output.integrals]) into a PNG, one panel per quantity (docs/probes.md).",
    )
    plot.add_argument("run_dir", metavar="RUN_DIR", help="the run's output directory (or its NAME_probes.csv)")
    plot.add_argument("--output", "-o", metavar="FILE.png", default=None,
                      help="the PNG to write (default: NAME_probes.png beside the CSV file)")
    plot.add_argument("--quantities", nargs="+", metavar="NAME", default=None,
                      help="columns (Ez@p0, energy@all) or quantities (Ez: at every probe); default all")

    modes = sub.add_parser(
        "resonances",
        help="frequencies, decay rates and Q of the modes in a probe's time series",
        allow_abbrev=False,
        description="Fit a probe's time series (NAME_probes.csv or .h5) by damped sinusoids (matrix pencil) "
                    "and print the modes (docs/electromagnetics.md).",
    )
    modes.add_argument("run_dir", metavar="RUN_DIR", help="the run's output directory, NAME_probes.csv or .h5")
    modes.add_argument("--probe", default="p0", metavar="NAME", help="the probe: p0, p1, ... (default p0)")
    modes.add_argument("--field", default=None, metavar="FIELD", help="the field (default: the first sampled)")
    modes.add_argument("--band", nargs=2, type=float, default=None, metavar=("F1", "F2"),
                       help="keep only modes with F1 <= omega/2pi <= F2")
    modes.add_argument("--start", type=float, default=None, metavar="T",
                       help="fit only the samples at t >= T (after the sources: Meep's until_after_sources)")
    modes.add_argument("--max-error", type=float, default=1e-3, metavar="REL",
                       help="reject modes whose relative error estimate exceeds REL (default 1e-3)")

    sub.add_parser(
        "bench",
        allow_abbrev=False,
        help="run benchmarks (see 'lobatto bench --help')",
        add_help=False,
        description="Benchmarks; the arguments are passed to lobatto.bench.cli.",
    )
    sub.add_parser(
        "sysbench",
        allow_abbrev=False,
        help="node micro-benchmarks: STREAM, GEMM, host<->device, GPU<->GPU, MPI (see 'lobatto sysbench --help')",
        add_help=False,
        description="Node micro-benchmarks; the arguments are passed to lobatto.bench.cli.sysbench_main.",
    )
    sub.add_parser(
        "doctor",
        allow_abbrev=False,
        help="check GPUs, the rank->GPU mapping, MPI, NCCL, transports, caches (see 'lobatto doctor --help')",
        add_help=False,
        description="Checks of this machine or allocation; the arguments are passed to lobatto.bench.doctor.",
    )
    return parser


def _one_line(message: str) -> str:
    return " ".join(str(message).split())


def _error(message: str) -> None:
    print(f"lobatto: error: {_one_line(message)}", file=sys.stderr, flush=True)


def _no_progress(step, total=None, t=None) -> None:
    return None


_RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID")


def _world_rank() -> int:
    """This process's MPI rank (0 when not started by an MPI launcher).

    Asks mpi4py when the run has already initialised MPI, else reads the
    launcher's environment; never initialises MPI itself.
    """
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None:
        try:
            if mpi.Is_initialized() and not mpi.Is_finalized():
                return int(mpi.COMM_WORLD.Get_rank())
        except Exception:
            pass
    for var in _RANK_VARIABLES:
        value = os.environ.get(var)
        if value is not None and value.strip().isdigit():
            return int(value)
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from lobatto.api import load_case, run_case
    from lobatto.io.output_dir import prepare_output_dir
    from lobatto.io.summary import format_summary_table
    from lobatto.machine.parallel import collective_errors, world_comm

    from lobatto.io.checkpoint_dir import prepare_for_checkpoints, prepare_for_restart

    comm = world_comm()
    restart = None
    removals: list = []  # what --overwrite replaces: removed once the run is set up (rank 0)
    with collective_errors(comm):  # every rank reads the case; rank 0 alone prepares the directory
        if args.output is not None and not args.output:
            raise InputError("--output: expected the output directory, got an empty path (leave --output out "
                             "for ./<case name>_out)")
        if args.restart is not None and not args.restart.strip():
            raise InputError("--restart: expected a checkpoint directory or 'latest', got an empty path")
        if args.interpolate and args.restart is None:
            raise InputError("--interpolate: applies to --restart only (interpolates the checkpoint onto the case)")
        case = load_case(args.case)
        output_dir = Path(args.output) if args.output else Path(f"{case.name}_out")
        if _world_rank() == 0:  # one run per directory (io.run_lock): before anything is written or removed
            from lobatto.io.run_lock import lock_output_dir

            lock_output_dir(output_dir, overwrite=args.overwrite)
        if _world_rank() == 0 and args.restart is not None:
            _check_checkpoint_directory(case, output_dir)
            restart = prepare_for_restart(output_dir, case.output.name, args.restart, overwrite=args.overwrite,
                                          removals=removals)
        elif _world_rank() == 0:
            prepare_output_dir(output_dir, case.output.name, overwrite=args.overwrite, removals=removals)
            _check_checkpoint_directory(case, output_dir)
            prepare_for_checkpoints(output_dir, case.output.name, overwrite=args.overwrite, removals=removals)
    if comm is not None and args.restart is not None:
        restart = comm.bcast(restart)
    backend = args.backend or case.backend.name

    if args.quiet or _world_rank() != 0:  # one progress bar per run, on rank 0
        progress = None
        callback = _no_progress
    else:
        from lobatto.io.progress import ProgressBar

        progress = ProgressBar(None, stream=sys.stderr)
        callback = progress

    def remove_replaced() -> None:  # a case refused at set-up leaves the earlier outputs as they were
        with collective_errors(comm):
            for remove in removals:
                remove()

    try:
        continued = {} if restart is None else {"restart": restart}
        if args.interpolate:
            continued["interpolate"] = True
        if args.overwrite:  # the same on every rank: remove_replaced is collective
            continued["before_writing"] = remove_replaced
        summary = run_case(case, backend=backend, output_dir=output_dir, progress=callback, comm=comm, **continued)
    finally:
        if progress is not None:
            progress.close()
    if _world_rank() == 0:  # with several MPI ranks, one table is enough
        print(format_summary_table(summary))
        print(f"\noutput written to {output_dir}{os.sep}")
        sys.stdout.flush()
    return 0


def _check_checkpoint_directory(case, output_dir: Path) -> None:
    """A case that writes checkpoints: <output>/checkpoints must be a directory, or absent,
    now rather than at the first checkpoint (an output path that is no directory is the
    output directory's own check, io.output_dir)."""
    from lobatto.io.checkpoint_dir import CHECKPOINT_DIRECTORY
    from lobatto.io.output_dir import check_output_path

    if case.checkpoint.enabled and output_dir.is_dir():
        check_output_path(output_dir / CHECKPOINT_DIRECTORY, directory=True,
                          hint="the case's [checkpoint] writes the run's checkpoints into it; move the file away "
                               "or give another --output")


def _cmd_plot(args: argparse.Namespace) -> int:
    from lobatto.io.output_dir import check_output_path
    from lobatto.io.plot import find_series, plot_time_series

    if args.output is not None:
        if not args.output:
            raise InputError("--output: expected the PNG file to write, got an empty path (leave --output out for "
                             "NAME_probes.png beside the CSV file)")
        check_output_path(args.output, "--output ", create_parents=False)
    csv_path = find_series(Path(args.run_dir))
    png = Path(args.output) if args.output else csv_path.with_suffix(".png")
    result = plot_time_series(csv_path, png, args.quantities, title=f"{csv_path.parent.name}/{csv_path.name}")
    print(f"{png}: {result['panels']} panel{'s' if result['panels'] != 1 else ''}, "
          f"{len(result['columns'])} series, {result['pixels'][0]} x {result['pixels'][1]} pixels")
    return 0


def _check_resonance_options(args: argparse.Namespace) -> None:
    """The numbers of ``lobatto resonances`` in range, before the series is read."""
    if not (math.isfinite(args.max_error) and args.max_error > 0):
        raise InputError(f"--max-error must be a positive number (the largest relative error estimate of a mode "
                         f"kept, such as 1e-3), got {args.max_error:g}")
    if args.start is not None and not math.isfinite(args.start):
        raise InputError(f"--start must be a finite time (the first sample fitted), got {args.start:g}")
    if args.band is not None:
        f1, f2 = args.band
        if not 0 <= f1 < f2:
            raise InputError(f"--band F1 F2 must be two frequencies (omega / 2 pi) with 0 <= F1 < F2, got "
                             f"{f1:g} {f2:g}")


def _cmd_bench(argv: list[str]) -> int:
    try:
        spec = importlib.util.find_spec("lobatto.bench.cli")
    except ModuleNotFoundError:
        spec = None
    if spec is None:
        raise InputError("'lobatto bench' is not available in this installation (no lobatto.bench.cli)")
    module = importlib.import_module("lobatto.bench.cli")
    rc = module.main(argv)
    return int(rc or 0)


def _clean_up() -> None:
    """On SIGINT / SIGTERM: remove this process's temporary files (io.atomic) and release the
    output directory's lock (io.run_lock); the finished outputs stay as they are."""
    atomic = sys.modules.get("lobatto.io.atomic")  # nothing to do before any output code loaded
    if atomic is not None:
        atomic.remove_temporaries()
    run_lock = sys.modules.get("lobatto.io.run_lock")
    if run_lock is not None:
        run_lock.release_all()


def _end_on_sigterm() -> None:
    """Serially, SIGTERM ends the run as Ctrl-C does (exit 143, "interrupted"), its temporaries
    removed; Python's default would end it without removing them."""
    import signal

    def terminated(signum, frame):
        _clean_up()
        print("lobatto: interrupted", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(EXIT_TERMINATED)

    signal.signal(signal.SIGTERM, terminated)


def _leave(code: int, message: str | None, everyone_knows: bool, mpi: bool) -> int:
    """Report an error: serially print it and return the code; under MPI print it once if
    every rank raised it (rank 0), else from this rank, and end the job (parallel.end_job)."""
    if not mpi:
        if message:
            _error(message)
        return code
    from lobatto.machine.parallel import end_job

    if everyone_knows:  # rank 0 reports; the others wait for that before the job ends
        if _world_rank() == 0 and message:
            _error(message)
        mpi_module = sys.modules.get("mpi4py.MPI")
        if mpi_module is not None and mpi_module.Is_initialized() and not mpi_module.Is_finalized():
            mpi_module.COMM_WORLD.Barrier()
        message = None
    end_job(message, code)
    return code  # not reached


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = bool(os.environ.get("LOBATTO_DEBUG"))
    # before NumPy and the compiled kernels load, as they read these variables once; here and
    # not at `import lobatto`, so that a Python program's environment stays its own
    from lobatto.machine.threads import apply_thread_policy

    apply_thread_policy()
    from lobatto.machine import parallel

    mpi = parallel.launched_size() > 1 and not debug
    if mpi:  # threads per rank: chosen above (lobatto/machine/threads.py)
        parallel.end_job_on_signals(_world_rank(), cleanup=_clean_up)
    elif not debug:
        _end_on_sigterm()
    try:
        if argv and argv[0] == "bench":
            return _cmd_bench(argv[1:])
        if argv and argv[0] == "sysbench":
            from lobatto.bench import cli as bench_cli

            return int(bench_cli.sysbench_main(argv[1:]) or 0)
        if argv and argv[0] == "doctor":
            from lobatto.bench import cli as bench_cli

            return int(bench_cli.doctor_main(argv[1:]) or 0)
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exit_:
            return int(exit_.code) if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
        if args.command == "run":
            try:
                return _cmd_run(args)
            finally:  # the output directory's lock (io.run_lock), also when main() is called in-process
                run_lock = sys.modules.get("lobatto.io.run_lock")
                if run_lock is not None:
                    run_lock.release_all()
        if args.command == "plot":
            return _cmd_plot(args)
        if args.command == "resonances":
            from lobatto.analysis.resonance_table import resonance_report

            _check_resonance_options(args)
            print(resonance_report(args.run_dir, args.probe, args.field, args.band, args.max_error, args.start)[1])
            return 0
        parser.print_help(sys.stderr)
        return 2
    except LobattoError as err:
        if debug:
            raise
        return _leave(int(getattr(err, "exit_code", 1)), str(err), getattr(err, "collective", False), mpi)
    except KeyboardInterrupt:
        _clean_up()
        if debug:
            raise
        if not mpi or _world_rank() == 0:
            print("lobatto: interrupted", file=sys.stderr, flush=True)
        return _leave(EXIT_INTERRUPTED, None, True, mpi)
    except OSError as err:
        # Environment problems with a named file (disk full, permission denied
        # while writing output): one line, exit 1. Anything else is a bug and
        # keeps its traceback.
        if debug or (err.filename is None and not mpi):
            raise
        if err.filename is None:
            return _bug(mpi)
        return _leave(1, f"{err.filename}: {err.strerror or err}", False, mpi)
    except Exception:
        if debug or not mpi:
            raise
        return _bug(mpi)


def _bug(mpi: bool) -> int:
    """An unexpected error under MPI: its traceback, then the job ends (no rank left waiting)."""
    import traceback

    # one write, flushed before the job is ended: a rank ended meanwhile by another must not
    # lose the traceback's last line (the exception) from a half-written report
    sys.stderr.write(traceback.format_exc())
    sys.stderr.flush()
    return _leave(1, None, False, mpi)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
