"""``lobatto bench maxwell`` and ``lobatto bench copy``: the option checks, the runs
(bench/maxwell.py, bench/maxwell_sweep.py) and their tables; bench/cli.py parses the options."""

from __future__ import annotations

import json

from lobatto.bench.report import write_json
from lobatto.errors import InputError


def _fmt_rate(x: float) -> str:
    return f"{x:.3e}"


def format_run(r: dict) -> str:
    """The table of one ``lobatto bench maxwell`` run."""
    be = r["backend"]
    lines = [
        (
            f"maxwell  backend={be['name']}  device={be.get('device', '-')}  precision={r['precision']}  "
            f"N={r['order']}  elements={'x'.join(map(str, r['elements']))} ({r['num_elements']})  "
            f"points={r['points']}  {'curved' if r['curved'] else 'affine'}"
            f"  {r.get('step_path', '')}{'  ' + r['volume_form'] if r.get('volume_form', 'split') != 'split' else ''}"
        ),
        "",
        f"{'quantity':34s} {'value':>14s}",
        f"{'-' * 34} {'-' * 14}",
        f"{'time per step [ms]':34s} {r['seconds_per_step'] * 1e3:14.4f}",
        f"{'point-stage updates/s':34s} {_fmt_rate(r['point_stage_updates_per_s']):>14s}",
        f"{'point-steps/s':34s} {_fmt_rate(r['point_steps_per_s']):>14s}",
    ]
    if r.get("gflops") is not None:  # the work model counts 3-D work: none on a 2-D mesh
        lines.append(f"{'GFLOP/s (paper work model)':34s} {r['gflops']:14.1f}")
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
    """The tables of a ``lobatto bench maxwell --sweep``: each size's rate, each order's fit."""
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


def copy_command(args) -> int:
    """``lobatto bench copy``: the device-to-device copy bandwidth alone."""
    from lobatto.backends import get_backend
    from lobatto.bench.maxwell import copy_bandwidth
    from lobatto.errors import InputError

    if not (1 <= args.bytes <= 2**40):  # (NaN fails too) a copy of 1 TiB fits no GPU
        raise InputError(f"--bytes must be from 1 to 2**40, got {args.bytes!r}")
    get_backend("cuda")  # a clear error (exit 2) where there is no CuPy or no device
    cb = copy_bandwidth(int(args.bytes))
    print(f"device-to-device copy of {cb['bytes']} bytes: memcpy {cb['memcpy'] / 1e9:.1f} GB/s, "
          f"copy kernel {cb['copy_kernel'] / 1e9:.1f} GB/s (read + written)")
    write_json(args.json, cb)
    return 0


def command(args) -> int:
    """``lobatto bench maxwell``: one run, a sweep (--sweep) or the figure of a sweep (--plot-from)."""
    if args.plot_from is not None:
        from lobatto.bench.plot import plot_sweep

        png = args.png or args.plot_from.with_suffix(".png")
        plot_sweep(json.loads(args.plot_from.read_text()), png)
        print(f"figure written to {png}")
        return 0

    from lobatto.bench import maxwell as mb
    from lobatto.bench.maxwell_sweep import sweep
    from lobatto.discretization.gll import MAX_ORDER

    orders = list(args.orders) if args.sweep else [args.order]
    if any(not 1 <= order <= MAX_ORDER for order in orders):
        raise InputError(f"--order{'s' if args.sweep else ''} must be from 1 to {MAX_ORDER}, got "
                         f"{' '.join(map(str, orders))}")
    if len(args.elements) not in (2, 3) or min(args.elements) < 1:
        raise InputError(f"--elements takes 2 (a 2-D mesh) or 3 counts, each >= 1, got "
                         f"{' '.join(map(str, args.elements))}")
    if args.steps is not None and args.steps < 1:
        raise InputError(f"--steps must be >= 1 (got {args.steps})")
    if args.repeats < 1:
        raise InputError(f"--repeats must be >= 1 (got {args.repeats})")
    if args.sweep:
        s = sweep(args.backend, tuple(args.orders), curved=args.curved, precision=args.precision,
                  max_points=args.max_points, device=args.device, stages=args.stages)
        print()
        print(format_sweep(s))
        write_json(args.json, s)
        return 0
    r = mb.run(
        args.backend, args.order, tuple(args.elements), curved=args.curved, precision=args.precision,
        steps=args.steps, repeats=args.repeats, device=args.device, graph=not args.no_graph,
        periodic=args.periodic, launch=args.launch, copy_bytes=int(args.copy_bytes),
        kernels=not args.no_kernels, stages=args.stages, volume_form=args.volume_form,
    )
    print(format_run(r))
    write_json(args.json, r)
    return 0
