"""``lobatto bench helmholtz`` and ``lobatto bench poisson`` (the parsers and their runs;
bench/cli.py adds them beside the other benchmarks).

    lobatto bench helmholtz --backend cuda [--orders 1 ... 15] [--max-points P] [--h2 1]
                            [--precision float64] [--all-rows] [--json PATH]
    lobatto bench poisson --backend cuda --order 7 --elements 32 32 32 [--method fcg]
                          [--preconditioner multigrid] [--precision float64] [--jacobi] [--json PATH]

See docs/benchmarks.md and docs/elliptic.md (the byte model).
"""

from __future__ import annotations

from pathlib import Path

from lobatto.errors import InputError

NAMES = ("helmholtz", "poisson")


def add_parsers(sub) -> None:
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
    p.add_argument("--elements", type=int, nargs=3, default=(32, 32, 32), metavar=("NX", "NY", "NZ"))
    p.add_argument("--method", default="fcg", choices=("cg", "fcg", "gmres"))
    p.add_argument("--preconditioner", default="multigrid", choices=("multigrid", "jacobi", "none"))
    p.add_argument("--precision", default="float64", choices=("float64", "float32"),
                   help="precision of the preconditioner")
    p.add_argument("--tolerance", type=float, default=1e-8)
    p.add_argument("--coarse-tolerance", type=float, default=1e-2,
                   help="relative tolerance of the iterative coarse solve (above 3000 coarse points)")
    p.add_argument("--repeats", type=int, default=3, help="timed solves; the median is reported")
    p.add_argument("--jacobi", action="store_true", help="also solve with Jacobi-PCG, for its iteration count")
    p.add_argument("--device", type=int, default=None, help="CUDA device id")
    p.add_argument("--json", type=Path, default=None, help="write the results here")


def run(args) -> int:
    from lobatto.bench.cli import _write_json

    if args.what == "helmholtz":
        from lobatto.bench import helmholtz

        if not args.orders or min(args.orders) < 1 or args.repeats < 1 or args.min_seconds <= 0:
            raise InputError("--orders must be >= 1, --repeats >= 1 and --min-seconds > 0")
        result = helmholtz.run(args.backend, args.orders, args.max_points, args.precision, args.h2,
                               args.min_seconds, args.repeats, args.copy_bytes, args.device)
        print()
        print(helmholtz.format_table(result, args.all_rows))
    else:
        from lobatto.bench import poisson

        if args.order < 1 or min(args.elements) < 1 or args.repeats < 1 or args.coarse_tolerance <= 0:
            raise InputError("--order, --elements and --repeats must be >= 1 and --coarse-tolerance > 0")
        result = poisson.run(args.backend, args.order, tuple(args.elements), args.method, args.preconditioner,
                             args.precision, args.tolerance, args.repeats, args.jacobi, args.device,
                             args.coarse_tolerance)
        print(poisson.format_result(result))
    _write_json(args.json, result)
    return 0
