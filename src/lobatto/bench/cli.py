"""``lobatto bench``: benchmarks.

    lobatto bench maxwell --backend cuda --order 7 --elements 32 32 32 [--curved]
                          [--precision float32] [--steps K] [--json PATH]
    lobatto bench maxwell --backend cuda --sweep [--orders 7 14] [--max-points P] --json sweep.json
    lobatto bench maxwell --plot-from sweep.json [--png throughput.png]
    lobatto bench copy [--bytes B]            # device-to-device copy bandwidth alone
    lobatto bench roofline --backend cuda --orders 7 14 [--sysbench SYSBENCH.json]   (bench/roofline.py)
    lobatto bench helmholtz ... / lobatto bench poisson ...   (bench/elliptic_cli.py)
    lobatto bench comm-model [--measure | --sysbench F]       (bench/comm_cli.py, docs/comm-model.md)
    lobatto bench scaling --strong|--weak [--ranks 1 2 4] [--sizes ...]   (bench/scaling.py, docs/scaling.md)

See docs/benchmarks.md and docs/cuda.md (byte and flop models).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lobatto.errors import InputError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lobatto bench", description="lobatto benchmarks", allow_abbrev=False)
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("maxwell", help="SEDG Maxwell whole-step throughput", allow_abbrev=False)
    m.add_argument("--backend", default="cuda", choices=("cuda", "cpu", "auto"))
    m.add_argument("--order", type=int, default=7)
    m.add_argument("--elements", type=int, nargs=3, default=(32, 32, 32), metavar=("NX", "NY", "NZ"))
    m.add_argument("--curved", action="store_true", help="deformed (curvilinear) mesh: per-point metrics")
    m.add_argument("--periodic", action="store_true", help="periodic box instead of a PEC cavity")
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
    c = sub.add_parser("copy", help="device-to-device copy bandwidth", allow_abbrev=False)
    c.add_argument("--bytes", type=float, default=2 * 2**30)
    c.add_argument("--json", type=Path, default=None)
    from lobatto.bench import elliptic_cli

    elliptic_cli.add_parsers(sub)
    from lobatto.bench import scaling

    scaling.add_parser(sub)  # lobatto bench scaling (bench/scaling.py)
    from lobatto.bench import comm_cli

    comm_cli.add_parser(sub)  # lobatto bench comm-model (bench/comm_cli.py)
    return p


def _fmt_rate(x: float) -> str:
    return f"{x:.3e}"


def format_run(r: dict) -> str:
    be = r["backend"]
    lines = [
        (
            f"maxwell  backend={be['name']}  device={be.get('device', '-')}  precision={r['precision']}  "
            f"N={r['order']}  elements={'x'.join(map(str, r['elements']))} ({r['num_elements']})  "
            f"points={r['points']}  {'curved' if r['curved'] else 'affine'}"
            f"  {r.get('step_path', '')}"
        ),
        "",
        f"{'quantity':34s} {'value':>14s}",
        f"{'-' * 34} {'-' * 14}",
        f"{'time per step [ms]':34s} {r['seconds_per_step'] * 1e3:14.4f}",
        f"{'point-stage updates/s':34s} {_fmt_rate(r['point_stage_updates_per_s']):>14s}",
        f"{'point-steps/s':34s} {_fmt_rate(r['point_steps_per_s']):>14s}",
        f"{'GFLOP/s (paper work model)':34s} {r['gflops']:14.1f}",
    ]
    energy = r.get("energy")  # lobatto.machine.power: joules of the timed repeats
    if energy and energy.get("joules_per_step") is not None:
        what = "+".join(part.upper() for part in energy["counted"])
        lines.append(f"{f'energy per step [J] ({what})':34s} {energy['joules_per_step']:14.4g}")
        lines.append(f"{f'mean power [W] ({what})':34s} {energy['mean_watts']:14.1f}")
    for part in ("gpu", "cpu"):
        if energy and f"{part}_reason" in energy:
            lines.append(f"{part.upper()} energy not measured: {energy[f'{part}_reason']}")
    if "bandwidth_model_bytes_per_s" in r:
        bm = r["bytes_model"]
        lines.append(f"{'model bytes / point / stage':34s} {bm['per_point_per_stage']:14.1f}")
        lines.append(f"{'achieved bandwidth (model) [GB/s]':34s} {r['bandwidth_model_bytes_per_s'] / 1e9:14.1f}")
        cb = r.get("copy_bandwidth")
        if cb:
            lines.append(f"{'d2d copy bandwidth [GB/s]':34s} {cb['peak'] / 1e9:14.1f}")
            lines.append(f"{'percent of copy bandwidth':34s} {r['percent_of_copy']:14.1f}")
    if r.get("graph") is not None:
        lines.append(f"{'CUDA graph replay':34s} {r['graph']!s:>14s}")
    kt = r.get("kernel_seconds")
    if kt:
        lines += ["", f"{'kernel (one stage)':20s} {'time [us]':>10s} {'model GB/s':>11s}", f"{'-' * 20} {'-' * 10} {'-' * 11}"]
        kb = r.get("kernel_bandwidth", {})
        for name, sec in kt.items():
            bw = f"{kb[name] / 1e9:11.1f}" if name in kb else f"{'':11s}"
            lines.append(f"{name:20s} {sec * 1e6:10.1f} {bw}")
    return "\n".join(lines)


def format_sweep(s: dict) -> str:
    lines = [f"{'N':>3s} {'points n':>12s} {'pt-stage/s':>12s}"]
    for order, data in s["orders"].items():
        for row in data["rows"]:
            lines.append(f"{order:>3s} {row['points']:12d} {row['point_stage_updates_per_s']:12.3e}")
    lines.append("")
    lines.append(f"{'N':>3s} {'peak (meas)':>12s} {'peak (fit)':>12s} {'n1/2 (fit)':>12s} {'n1/2 (meas)':>12s}")
    for order, data in s["orders"].items():
        f = data["fit"]
        nm = f"{f['n_half_measured']:.3g}" if f["n_half_measured"] else "-"
        lines.append(f"{order:>3s} {f['peak_measured']:12.3e} {f['peak_fit']:12.3e} {f['n_half_fit']:12.3g} {nm:>12s}")
    return "\n".join(lines)


def check_output_options(args, options=("json", "png")) -> None:
    """Before anything is measured: every output file given (--json, --png) can be written
    there (io.output_dir.check_output_path; the writers create missing directories)."""
    from lobatto.io.output_dir import check_output_path

    for option in options:
        path = getattr(args, option, None)
        if path is not None:
            check_output_path(path, f"--{option} ")


def _write_json(path: Path | None, data: dict) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=float))
    print(f"results written to {path}")


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    if given[:1] == ["roofline"]:  # its own parser (bench/roofline.py)
        from lobatto.bench import roofline

        return roofline.main(given[1:])
    args = _parser().parse_args(given)
    if args.what != "comm-model":  # comm-model checks on every rank (bench/comm_cli.py)
        check_output_options(args)
    if args.what == "scaling":
        from lobatto.bench import scaling

        return scaling.main(args, sys.argv[1:] if argv is None else argv)
    if args.what in ("helmholtz", "poisson"):
        from lobatto.bench import elliptic_cli

        return elliptic_cli.run(args)
    if args.what == "comm-model":
        from lobatto.bench import comm_cli

        return comm_cli.run(args)
    if args.what == "copy":
        from lobatto.bench.maxwell import copy_bandwidth

        cb = copy_bandwidth(int(args.bytes))
        print(f"device-to-device copy of {cb['bytes']} bytes: memcpy {cb['memcpy'] / 1e9:.1f} GB/s, "
              f"copy kernel {cb['copy_kernel'] / 1e9:.1f} GB/s (read + written)")
        _write_json(args.json, cb)
        return 0

    if args.plot_from is not None:
        from lobatto.bench.plot import plot_sweep

        png = args.png or args.plot_from.with_suffix(".png")
        plot_sweep(json.loads(args.plot_from.read_text()), png)
        print(f"figure written to {png}")
        return 0

    from lobatto.bench import maxwell as mb
    from lobatto.discretization.gll import MAX_ORDER

    orders = list(args.orders) if args.sweep else [args.order]
    if any(not 1 <= order <= MAX_ORDER for order in orders):
        raise InputError(f"--order{'s' if args.sweep else ''} must be from 1 to {MAX_ORDER}, got "
                         f"{' '.join(map(str, orders))}")
    if args.steps is not None and args.steps < 1:
        raise InputError(f"--steps must be >= 1 (got {args.steps})")
    if args.repeats < 1:
        raise InputError(f"--repeats must be >= 1 (got {args.repeats})")
    if args.sweep:
        s = mb.sweep(args.backend, tuple(args.orders), curved=args.curved, precision=args.precision,
                     max_points=args.max_points, device=args.device, stages=args.stages)
        print()
        print(format_sweep(s))
        _write_json(args.json, s)
        return 0
    r = mb.run(
        args.backend, args.order, tuple(args.elements), curved=args.curved, precision=args.precision,
        steps=args.steps, repeats=args.repeats, device=args.device, graph=not args.no_graph,
        periodic=args.periodic, launch=args.launch, copy_bytes=int(args.copy_bytes),
        kernels=not args.no_kernels, stages=args.stages,
    )
    print(format_run(r))
    _write_json(args.json, r)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
