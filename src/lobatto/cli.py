"""The ``lobatto`` command.

    lobatto run CASE.toml [--backend cpu|cuda|auto] [--output DIR] [--quiet]
    lobatto bench ...        (benchmarks, when lobatto.bench.cli is installed)
    lobatto --version

Errors in the input (exit 2) and failed runs (exit 1) are reported as one
line, ``lobatto: error: <message>``, on standard error, without a traceback;
Ctrl-C exits with 130. Set ``LOBATTO_DEBUG=1`` to get the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Sequence

from lobatto import __version__
from lobatto.errors import InputError, LobattoError

__all__ = ["main", "build_parser"]

EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lobatto",
        description="GPU-native high-order spectral-element framework.",
        epilog="Case files: docs/case-file.md. Output: docs/output.md.",
    )
    parser.add_argument("--version", action="version", version=f"lobatto {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="run a case file",
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

    sub.add_parser(
        "bench",
        help="run benchmarks (see 'lobatto bench --help')",
        add_help=False,
        description="Benchmarks; the arguments are passed to lobatto.bench.cli.",
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
    from lobatto.io.summary import format_summary_table

    case = load_case(args.case)
    backend = args.backend or case.backend.name
    output_dir = Path(args.output) if args.output else Path(f"{case.name}_out")
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError(f"{output_dir}: output path exists and is not a directory") from None
    except OSError as err:
        raise InputError(
            f"{output_dir}: cannot create the output directory ({err.strerror or err})"
        ) from None

    if args.quiet or _world_rank() != 0:  # one progress bar per run, on rank 0
        progress = None
        callback = _no_progress
    else:
        from lobatto.progress import ProgressBar

        progress = ProgressBar(None, stream=sys.stderr)
        callback = progress
    try:
        summary = run_case(case, backend=backend, output_dir=output_dir, progress=callback)
    finally:
        if progress is not None:
            progress.close()
    if _world_rank() == 0:  # with several MPI ranks, one table is enough
        print(format_summary_table(summary))
        print(f"\noutput written to {output_dir}{os.sep}")
        sys.stdout.flush()
    return 0


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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = bool(os.environ.get("LOBATTO_DEBUG"))
    try:
        if argv and argv[0] == "bench":
            return _cmd_bench(argv[1:])
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exit_:
            return int(exit_.code) if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
        if args.command == "run":
            return _cmd_run(args)
        parser.print_help(sys.stderr)
        return 2
    except LobattoError as err:
        if debug:
            raise
        _error(str(err))
        return int(getattr(err, "exit_code", 1))
    except KeyboardInterrupt:
        if debug:
            raise
        print("lobatto: interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except OSError as err:
        # Environment problems with a named file (disk full, permission denied
        # while writing output): one line, exit 1. Anything else is a bug and
        # keeps its traceback.
        if debug or err.filename is None:
            raise
        _error(f"{err.filename}: {err.strerror or err}")
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
