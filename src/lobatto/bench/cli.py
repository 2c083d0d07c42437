"""The command line of the performance observatory, in one place: the argument parsers of
``lobatto bench ...``, ``lobatto sysbench`` and ``lobatto doctor`` and the dispatch to the
measuring modules' ``command`` functions (the measuring modules never import this one).

    lobatto bench maxwell --backend cuda --order 7 --elements 32 32 32 [--curved]
                          [--precision float32] [--steps K] [--json PATH]
    lobatto bench maxwell --backend cuda --sweep [--orders 7 14] [--max-points P] --json sweep.json
    lobatto bench maxwell --plot-from sweep.json [--png throughput.png]     (bench/maxwell_report.py)
    lobatto bench copy [--bytes B]            # device-to-device copy bandwidth alone
    lobatto bench roofline --backend cuda --orders 7 14 [--sysbench SYSBENCH.json]   (bench/roofline.py)
    lobatto bench helmholtz ... / lobatto bench poisson ...   (bench/helmholtz.py, bench/poisson.py)
    lobatto bench navier-stokes [--elements E --order N | --case FILE] [--t-end T] ...   (bench/navier_stokes.py)
    lobatto bench comm-model [--measure | --sysbench F]       (bench/comm_study.py, docs/comm-model.md)
    lobatto bench scaling --strong|--weak [--ranks 1 2 4] [--sizes ...]   (bench/scaling.py, docs/scaling.md)
    lobatto sysbench ...                                      (bench/sysbench.py, docs/sysbench.md)
    lobatto doctor ...                                        (bench/doctor.py, docs/doctor.md)

Shared output helpers are in bench/report.py. See docs/benchmarks.md and docs/cuda.md (byte
and flop models).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lobatto.bench.report import check_output_options
from lobatto.errors import InputError


# lobatto bench ----------------------------------------------------------------------------------
def bench_parser() -> argparse.ArgumentParser:
    """The parser of ``lobatto bench`` and its subcommands (roofline has its own: roofline_parser)."""
    p = argparse.ArgumentParser(prog="lobatto bench", description="lobatto benchmarks", allow_abbrev=False)
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("maxwell", help="SEDG Maxwell whole-step throughput", allow_abbrev=False)
    m.add_argument("--backend", default="cuda", choices=("cuda", "cpu", "auto"))
    m.add_argument("--order", type=int, default=7)
    m.add_argument("--elements", type=int, nargs="+", default=(32, 32, 32), metavar="N",
                   help="NX NY NZ, or NX NY for a 2-D mesh of quadrilaterals (TE and TM fields)")
    m.add_argument("--curved", action="store_true", help="deformed (curvilinear) mesh: per-point metrics")
    m.add_argument("--periodic", action="store_true", help="periodic box instead of a PEC cavity")
    m.add_argument("--volume-form", default="split", choices=("split", "chain", "galerkin"),
                   help="the volume form (a case's default \"auto\" runs galerkin on curved 3-D meshes); the byte "
                        "model and kernel timings are the collocated forms' only")
    m.add_argument("--precision", default="float64", choices=("float64", "float32"))
    m.add_argument("--steps", type=int, default=None, help="steps per timed repeat (default: about 0.2 s)")
    m.add_argument("--repeats", type=int, default=5, help="timed repeats; the median is reported")
    m.add_argument("--device", type=int, default=None, help="CUDA device id")
    m.add_argument("--no-graph", action="store_true", help="plain kernel launches instead of graph replay")
    m.add_argument("--no-kernels", action="store_true", help="skip the per-kernel timings")
    m.add_argument(
        "--stages",
        action="store_true",
        help="time the system's stage-by-stage path with the gather-scatter instead of its whole-step "
             "path (on CUDA the Maxwell system folds the face exchange into the stage kernel)",
    )
    m.add_argument("--launch", type=int, nargs="+", default=None, metavar="V",
                   help="stage kernel launch: elements-per-block threads [maxrregcount]")
    m.add_argument("--copy-bytes", type=float, default=2 * 2**30, help="size of the copy-bandwidth test (0: skip)")
    m.add_argument("--sweep", action="store_true", help="throughput against problem size, fit n_1/2")
    m.add_argument("--orders", type=int, nargs="+", default=(7, 14), help="orders of the sweep")
    m.add_argument("--max-points", type=float, default=3.4e7, help="largest sweep size in points")
    m.add_argument("--json", type=Path, default=None, help="write the results here")
    m.add_argument("--plot-from", type=Path, default=None, help="make the PNG of a sweep JSON (no run)")
    m.add_argument("--png", type=Path, default=None, help="PNG path (default: the JSON's with .png)")
    sub.add_parser("roofline", add_help=False, allow_abbrev=False,
                   help="each Maxwell kernel against the memory and compute roofs (lobatto bench roofline --help)")
    c = sub.add_parser("copy", help="device-to-device copy bandwidth (needs CuPy and a GPU)", allow_abbrev=False)
    c.add_argument("--bytes", type=float, default=2 * 2**30, help="bytes copied (default: 2 GiB)")
    c.add_argument("--json", type=Path, default=None, help="write the result as JSON to this file")
    _add_elliptic(sub)
    _add_navier_stokes(sub)
    _add_scaling(sub)
    _add_comm_model(sub)
    return p


def _add_elliptic(sub) -> None:
    h = sub.add_parser("helmholtz", help="Helmholtz operator alone (BK5-like): points/s, GDOF/s, GB/s by N",
                       allow_abbrev=False)
    h.add_argument("--backend", default="cuda", choices=("cuda", "cpu", "auto"))
    h.add_argument("--orders", type=int, nargs="+", default=list(range(1, 16)), metavar="N")
    h.add_argument("--max-points", type=float, default=None,
                   help="largest size in local points (default: half the free memory)")
    h.add_argument("--h2", type=float, default=1.0, help="mass coefficient (0: no mass term, 64 bytes per point)")
    h.add_argument("--precision", default="float64", choices=("float64", "float32"))
    h.add_argument("--min-seconds", type=float, default=0.1, help="time of one timed repeat")
    h.add_argument("--repeats", type=int, default=3, help="timed repeats; the median is reported")
    h.add_argument("--copy-bytes", type=float, default=None, help="size of the copy-bandwidth test")
    h.add_argument("--device", type=int, default=None, help="CUDA device id")
    h.add_argument("--all-rows", action="store_true", help="print every size, not only each order's largest")
    h.add_argument("--json", type=Path, default=None, help="write the results here")
    p = sub.add_parser("poisson", help="a whole Poisson solve on a curved mesh: iterations, time, parts",
                       allow_abbrev=False)
    p.add_argument("--backend", default="cuda", choices=("cuda", "cpu", "auto"))
    p.add_argument("--order", type=int, default=7)
    p.add_argument("--elements", type=int, nargs="+", default=(32, 32, 32), metavar="N",
                   help="NX NY NZ, or NX NY for a 2-D mesh of quadrilaterals")
    p.add_argument("--method", default="fcg", choices=("cg", "fcg", "gmres"))
    p.add_argument("--preconditioner", default="multigrid", choices=("multigrid", "jacobi", "none"))
    p.add_argument("--precision", default="float64", choices=("float64", "float32"),
                   help="precision of the preconditioner")
    p.add_argument("--tolerance", type=float, default=1e-8)
    p.add_argument("--coarse-tolerance", type=float, default=1e-2,
                   help="relative tolerance of the iterative coarse solve (above 3000 coarse points)")
    p.add_argument("--smoother", default="jacobi", choices=("jacobi", "schwarz"),
                   help="[solver] smoother: the multigrid's Chebyshev-Jacobi or Chebyshev-Schwarz")
    p.add_argument("--smoother-degree", type=int, default=3, metavar="K", help="[solver] smoother_degree")
    p.add_argument("--repeats", type=int, default=3, help="timed solves; the median is reported")
    p.add_argument("--jacobi", action="store_true", help="also solve with Jacobi-PCG, for its iteration count")
    p.add_argument("--device", type=int, default=None, help="CUDA device id")
    p.add_argument("--json", type=Path, default=None, help="write the results here")


def _add_navier_stokes(sub) -> None:
    n = sub.add_parser("navier-stokes", allow_abbrev=False,
                       help="a Navier-Stokes case (default: the TGV): throughput per step, or time to --t-end")
    n.add_argument("--backend", default="cuda", choices=("cuda", "cpu", "auto"))
    n.add_argument("--case", type=Path, default=None, metavar="FILE",
                   help="a Navier-Stokes case file instead of the built-in Taylor-Green vortex")
    n.add_argument("--elements", type=int, default=None, metavar="E", help="TGV box of E^3 elements (default 16)")
    n.add_argument("--order", type=int, default=None, help="polynomial order (default: TGV 7, a case file's own)")
    step = n.add_mutually_exclusive_group()
    step.add_argument("--cfl", type=float, default=None,
                      help="fixed dt from this CFL number of the initial flow ([time] cfl; TGV default 0.5)")
    step.add_argument("--target-cfl", type=float, default=None, help="variable dt aiming at this CFL number")
    n.add_argument("--integrator", default=None, choices=("bdf1", "bdf2", "bdf3"),
                   help="[time] integrator (default: TGV bdf2, a case file's own)")
    n.add_argument("--substeps", type=int, default=None,
                   help="[time] substeps: sub-steps of the advection per step (0: extrapolated; default: the "
                        "case's, the TGV's 0)")
    n.add_argument("--max-cfl", type=float, default=None, help="[time] max_cfl: a step above it stops the run")
    n.add_argument("--pressure-coarse", default=None, metavar="KIND", help="[solver.pressure] coarse")
    n.add_argument("--precision", default=None, choices=("float64", "float32"),
                   help="[solver.pressure] precision (of the preconditioner)")
    n.add_argument("--pressure-smoother", default=None, choices=("jacobi", "schwarz"),
                   help="[solver.pressure] smoother: the multigrid's Chebyshev-Jacobi or Chebyshev-Schwarz")
    n.add_argument("--smoother-degree", type=int, default=None, metavar="K",
                   help="[solver.pressure] smoother_degree")
    n.add_argument("--diagnostics-every", type=int, default=None, metavar="K",
                   help="[physics] diagnostics_every (TGV default: 10, with --t-end 5)")
    n.add_argument("--steps", type=int, default=None, help="timed steps (default 20)")
    n.add_argument("--warmup", type=int, default=None, help="steps before the timed ones (default 10)")
    n.add_argument("--no-profile", action="store_true", help="skip the pressure solve's profiled steps")
    n.add_argument("--t-end", type=float, default=None, metavar="T",
                   help="time to solution: run from t = 0 to T (instead of --steps)")
    n.add_argument("--reference", nargs="?", const="auto", default=None, metavar="FILE",
                   help="with --t-end: compare with the 512^3 TGV history (default for the built-in TGV: "
                        "shared/reference/tgv beside the repository, else its README's peak)")
    n.add_argument("--json", type=Path, default=None, help="write the results here")


def _add_scaling(sub) -> None:
    from lobatto.bench import scaling
    from lobatto.bench.scaling_plan import OVERLAP
    from lobatto.mesh.partition import PARTITIONERS

    s = sub.add_parser("scaling", help="strong or weak scaling of Maxwell runs over ranks and sizes (mpiexec)",
                       allow_abbrev=False)
    which = s.add_mutually_exclusive_group()
    which.add_argument("--strong", action="store_true", help="fixed total size per curve (--sizes: total elements)")
    which.add_argument("--weak", action="store_true", help="fixed size per rank per curve (--sizes: elements/rank)")
    s.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    s.add_argument("--ranks", type=int, nargs="+", default=[1, 2], metavar="P", help="rank counts (default 1 2)")
    s.add_argument("--sizes", nargs="+", default=None, metavar="SIZE",
                   help="element counts (64) or boxes (4x4x8); per rank for --weak, total for --strong "
                        f"(default: cpu {' '.join(scaling.DEFAULT_SIZES['cpu'])}, cuda {' '.join(scaling.DEFAULT_SIZES['cuda'])})")
    s.add_argument("--overlap", nargs="+", default=None, choices=tuple(OVERLAP), metavar="on|off|auto",
                   help="[parallel] overlap of the runs, each setting a series of its own "
                        "(default: the case default, auto)")
    s.add_argument("--partitioner", default="rcb", choices=PARTITIONERS, help="[parallel] partitioner of the runs")
    s.add_argument("--order", type=int, default=7)
    s.add_argument("--precision", default="float64", choices=("float64", "float32"))
    s.add_argument("--steps", type=int, default=None,
                   help=f"steps per run (default cpu {scaling.DEFAULT_STEPS['cpu']}, cuda {scaling.DEFAULT_STEPS['cuda']})")
    s.add_argument("--repeats", type=int, default=1, help="runs of each point; the fastest is kept")
    s.add_argument("--threads", type=int, default=None,
                   help="OMP_NUM_THREADS of each rank (default: lobatto's, cores / ranks on the node)")
    s.add_argument("--mpiexec", default=None, metavar="CMD",
                   help="launcher command, may carry arguments (default: mpiexec beside Python, else on PATH)")
    s.add_argument("--mpiexec-args", default="", metavar="ARGS",
                   help="extra launcher arguments, one string (Open MPI's --oversubscribe and, as root, "
                        "--allow-run-as-root are added already)")
    s.add_argument("--timeout", type=float, default=600.0, help="seconds allowed to each run")
    s.add_argument("--keep", type=Path, default=None, metavar="DIR", help="keep each run's case and summary here")
    s.add_argument("--json", type=Path, default=None, help="write the study here")
    s.add_argument("--png", type=Path, default=None, help="figure (default: the JSON's path with .png)")
    s.add_argument("--plot-from", type=Path, nargs="+", default=None, metavar="JSON",
                   help="only redraw the figure and table of a study's JSON (no runs); several studies "
                        "of the same mode, order, backend and precision are merged (--json writes the merge)")
    s.add_argument("--model", type=Path, default=None, metavar="COMM_MODEL.json",
                   help="compare the runs with the communication model of this JSON "
                        "(lobatto bench comm-model --measure --json; docs/comm-model.md)")


def _add_comm_model(sub) -> None:
    from lobatto.bench.comm_loggp import ASSUMED

    p = sub.add_parser("comm-model", help="LogGP fit and weak-scaling prediction of the face exchange",
                       allow_abbrev=False)
    p.add_argument("--measure", action="store_true", help="measure this machine (under mpiexec, 2+ ranks)")
    p.add_argument("--sysbench", type=Path, default=None, help="fit from a 'lobatto sysbench' JSON")
    p.add_argument("--transport", default="mpi", choices=("mpi", "nccl", "cuda-aware-mpi", "host"),
                   help="with --sysbench: host MPI ping-pong (mpi) or a gpu_gpu transport")
    p.add_argument("--params", type=Path, default=None, help="LogGP (and software) of an earlier --json")
    p.add_argument("--network", default="ib-hdr200", choices=(*ASSUMED, "none"),
                   help="assumed interconnect to extrapolate with as well (default ib-hdr200)")
    p.add_argument("--rate", action="append", default=[], metavar="N=R[,NHALF]",
                   help="point-stage updates/s of one rank at order N, optionally its n_half "
                        "(default: the H100 figures of docs/benchmarks.md)")
    p.add_argument("--max-ranks", type=int, default=16384)
    p.add_argument("--order-points", type=int, default=5, help="--measure: order of the timed face exchange")
    p.add_argument("--backend", default="cpu", choices=("cpu", "cuda"),
                   help="--measure: where the timed exchanges and steps run (cuda: CuPy arrays on each rank's GPU)")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--png", type=Path, default=None)


def roofline_parser() -> argparse.ArgumentParser:
    """The parser of ``lobatto bench roofline``."""
    from lobatto.bench import roofline

    p = argparse.ArgumentParser(prog="lobatto bench roofline", description=roofline.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("--backend", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--orders", type=int, nargs="+", default=(7, 14))
    p.add_argument("--elements", type=int, nargs=3, default=(32, 32, 32), metavar=("NX", "NY", "NZ"))
    p.add_argument("--curved", action="store_true", help="deformed mesh: per-point metrics")
    p.add_argument("--precision", default="float64", choices=("float64", "float32"))
    p.add_argument("--sysbench", type=Path, default=None,
                   help="the ceilings from this `lobatto sysbench` JSON (same device); default: measure them")
    p.add_argument("--stream-bytes", type=float, default=2**30, help="array size of the STREAM ceiling")
    p.add_argument("--gemm-n", type=int, default=8192, help="matrix size of the GEMM ceiling")
    p.add_argument("--calls", type=int, default=20, help="calls per kernel timing")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--png", type=Path, default=None, help="the roofline plot (needs matplotlib)")
    return p


# lobatto sysbench, lobatto doctor ----------------------------------------------------------------
def sysbench_parser() -> argparse.ArgumentParser:
    """The parser of ``lobatto sysbench``."""
    from lobatto.bench import sysbench

    p = argparse.ArgumentParser(prog="lobatto sysbench", description="Node micro-benchmarks: device and CPU "
                                "STREAM, GEMM, host<->device and GPU<->GPU bandwidth, MPI latency (docs/sysbench.md).",
                                allow_abbrev=False)
    p.add_argument("--only", nargs="+", choices=sysbench.SECTIONS, metavar="SECTION", help=f"run only these: {', '.join(sysbench.SECTIONS)}")
    p.add_argument("--skip", nargs="+", choices=sysbench.SECTIONS, default=(), metavar="SECTION", help="leave these out")
    p.add_argument("--json", type=Path, default=Path("sysbench.json"), help="result file (default sysbench.json)")
    p.add_argument("--png", type=Path, default=None, metavar="DIR", help="directory of the plots (default: the JSON's)")
    p.add_argument("--no-png", action="store_true", help="no plots")
    p.add_argument("--quick", action="store_true", help="small sizes and 2 repeats: a smoke test, not a measurement")
    p.add_argument("--repeats", type=int, default=None, help="timed rounds, best reported (default 5)")
    p.add_argument("--gpu-stream-bytes", type=sysbench.byte_count, default=None, help="bytes per device STREAM array (1G)")
    p.add_argument("--gemm-n", type=int, default=None, help="matrix size of DGEMM/SGEMM (8192)")
    p.add_argument("--max-bytes", type=sysbench.byte_count, default=None, help="largest host<->device copy (1G)")
    p.add_argument("--gpu-gpu-bytes", type=sysbench.byte_count, default=None, help="largest GPU<->GPU message (64M)")
    p.add_argument("--chunks", type=sysbench.byte_count, nargs="+", default=None,
                   help="chunk sizes of the pipelined host-staged transfer (64K 256K 1M 4M 16M)")
    p.add_argument("--mpi-max-bytes", type=sysbench.byte_count, default=None, help="largest ping-pong message (64M)")
    p.add_argument("--allreduce-max-bytes", type=sysbench.byte_count, default=None, help="largest allreduce (8M)")
    p.add_argument("--cpu-stream-bytes", type=sysbench.byte_count, default=None, help="bytes per CPU STREAM array (256M)")
    p.add_argument("--threads", type=int, nargs="+", default=None, help="CPU STREAM thread counts (1 2 4 .. cores)")
    p.add_argument("--compare", type=Path, default=None, metavar="BASELINE.json",
                   help="flag metrics below --tolerance x the baseline's (exit 1 if any)")
    p.add_argument("--tolerance", type=float, default=0.8, help="fraction of the baseline to keep (default 0.8)")
    return p


def positive(kind):
    """An argparse type: a positive ``kind`` (int, float)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}")
        return value
    return parse


class CollectiveErrorParser(argparse.ArgumentParser):
    """A parser whose errors are one collective InputError (lobatto doctor under mpiexec)."""

    def error(self, message):  # one line and exit 2 (lobatto.cli), on every rank alike
        err = InputError(f"doctor: {message}")
        err.collective = True  # every rank parsed the same arguments
        raise err


def doctor_parser() -> argparse.ArgumentParser:
    """The parser of ``lobatto doctor``."""
    from lobatto.bench import doctor

    p = CollectiveErrorParser(prog="lobatto doctor", add_help=False, allow_abbrev=False,
                description="Check devices, the rank->GPU mapping, MPI, NCCL, lobatto's exchange transports, "
                            "kernel caches and package versions, on every rank (docs/doctor.md).")
    p.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    p.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto",
                   help="the backend to check (default auto: cuda where every rank has a GPU)")
    p.add_argument("--json", type=Path, default=None, metavar="PATH", help="write everything here")
    p.add_argument("--bytes", type=doctor.parse_bytes, default=1 << 20, metavar="N",
                   help="bytes exchanged per rank pair in the bandwidth figure (default 1M; K, M, G accepted)")
    p.add_argument("--repeats", type=positive(int), default=5, metavar="K",
                   help="timed exchanges per transport; the median is reported (default 5)")
    p.add_argument("--timeout", type=positive(float), default=60.0, metavar="S",
                   help="end the job (exit 1) if one check hangs longer than this (default 60 s)")
    return p


# Dispatch ---------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """``lobatto bench ARGS``; returns the exit status."""
    given = sys.argv[1:] if argv is None else list(argv)
    if given[:1] == ["roofline"]:  # its own parser
        return roofline_main(given[1:])
    args = bench_parser().parse_args(given)
    if args.what != "comm-model":  # comm-model checks on every rank (bench/comm_study.py)
        check_output_options(args)
    if args.what == "scaling":
        from lobatto.bench import scaling

        return scaling.command(args, sys.argv[1:] if argv is None else argv)
    if args.what == "helmholtz":
        from lobatto.bench import helmholtz

        return helmholtz.command(args)
    if args.what == "poisson":
        from lobatto.bench import poisson

        return poisson.command(args)
    if args.what == "navier-stokes":
        from lobatto.bench import navier_stokes

        return navier_stokes.command(args)
    if args.what == "comm-model":
        from lobatto.bench import comm_study

        return comm_study.command(args)
    from lobatto.bench import maxwell_report

    if args.what == "copy":
        return maxwell_report.copy_command(args)
    return maxwell_report.command(args)


def roofline_main(argv: list[str] | None = None) -> int:
    """``lobatto bench roofline ARGS``."""
    from lobatto.bench import roofline

    return roofline.command(roofline_parser().parse_args(argv))


def sysbench_main(argv: list[str] | None = None) -> int:
    """``lobatto sysbench ARGS``; a bad option is exit 2 (every rank alike)."""
    from lobatto.bench import sysbench

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = sysbench_parser().parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code) if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
    return sysbench.command(args, argv)


def doctor_main(argv: list[str] | None = None) -> int:
    """``lobatto doctor ARGS``."""
    from lobatto.bench import doctor

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = doctor_parser()
    return doctor.command(parser.parse_args(argv), argv, parser.print_help)


if __name__ == "__main__":
    raise SystemExit(main())
