"""``lobatto bench comm-model``: LogGP parameters and the weak-scaling prediction (the options
are parsed in bench/cli.py; ``read_params`` reads the JSON this command writes).

    lobatto bench comm-model                               # assumed interconnect only
    lobatto bench comm-model --sysbench sysbench.json [--transport nccl]
    mpiexec -n 2 lobatto bench comm-model --measure --json comm_model.json
    lobatto bench comm-model --params comm_model.json      # reuse a measurement
    options: --rate N=R[,NHALF] (point-stage updates/s of one rank), --network NAME|none,
             --max-ranks P, --json PATH, --png PATH

See docs/comm-model.md.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from lobatto.bench import comm_loggp
from lobatto.bench.comm_model import CASES, H100_RATES, Software, format_weak, plot_weak, weak_scaling
from lobatto.bench.report import check_output_options, run_meta, write_json
from lobatto.errors import InputError


def parse_rates(items) -> dict:
    rates = {k: v for k, v in H100_RATES.items()}
    for item in items:
        try:
            order, rest = item.split("=", 1)
            parts = [float(x) for x in rest.split(",")]
            if not (1 <= len(parts) <= 2) or parts[0] <= 0 or not math.isfinite(parts[0]):
                raise ValueError
            rates[int(order)] = (parts[0], parts[1] if len(parts) == 2 else 0.0)
        except ValueError:
            raise InputError(f"--rate {item!r}: expected N=RATE or N=RATE,NHALF with RATE > 0 "
                             "(point-stage updates/s of one rank), e.g. 7=8.51e9,3.9e4") from None
    return rates


def read_params(path: Path) -> tuple[comm_loggp.LogGP, Software]:
    try:
        data = json.loads(Path(path).read_text())
        data = data["measured"] if "measured" in data else data  # or the validation's JSON
        lg = data["loggp"]
        params = comm_loggp.LogGP(L=float(lg["L"]), o=float(lg["o"]), g=float(lg["g"]), G=float(lg["G"]),
                                  source=str(lg.get("source", path)), residuals=dict(lg.get("residuals", {})))
        sw = data.get("software") or {}
        software = Software(float(sw.get("s0", 0.0)), float(sw.get("s1", 0.0)), str(sw.get("source", path)),
                            float(sw.get("s_v", 0.0)), float(sw.get("r0", 0.0)), float(sw.get("r_e", 0.0)),
                            str(sw.get("stage_source", "none (0)")), str(sw.get("backend", "cpu")))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file (expected the JSON of 'lobatto bench comm-model --measure')") from None
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise InputError(f"{path}: expected the JSON of 'lobatto bench comm-model --measure' with "
                         "measured.loggp.{L, o, g, G}") from None
    return params, software


def command(args) -> int:
    """``lobatto bench comm-model`` (options of bench/cli.py): every rank checks the options and
    takes part in --measure; rank 0 prints the studies and writes the JSON."""
    from lobatto.machine.parallel import collective_errors, rank_and_size, world_comm

    comm = world_comm()
    rank, size = rank_and_size(comm)
    with collective_errors(comm):  # the same arguments on every rank: the same error, reported once
        if args.max_ranks < 1:
            raise InputError(f"--max-ranks must be >= 1, got {args.max_ranks}")
        rates = parse_rates(args.rate)
        check_output_options(args)
    out = {"meta": run_meta(), "measured": None, "studies": []}
    sources = []  # (label, LogGP, Software)
    if args.measure:
        if size < 2:
            raise InputError("--measure needs 2 or more MPI ranks: mpiexec -n 2 lobatto bench comm-model --measure")
        from lobatto.bench.comm_measure import measure

        with collective_errors(comm):
            m = measure(comm, order=args.order_points, backend_name=args.backend)
        if rank == 0:
            out["measured"] = m
            lg = m["loggp"]
            params = comm_loggp.LogGP(lg["L"], lg["o"], lg["g"], lg["G"], lg["source"], lg["residuals"])
            sources.append(("this machine (measured)", params, Software(**m["software"])))
    # every rank reads the inputs, so a bad one ends every rank with the same error (reported once)
    with collective_errors(comm):
        if args.sysbench is not None:
            params = comm_loggp.from_sysbench(args.sysbench, args.transport)
            out["measured"] = {"loggp": params.as_dict(), "software": vars(Software())}
            sources.append((f"sysbench {args.transport}", params, Software()))
        if args.params is not None:
            params, software = read_params(args.params)
            out["measured"] = {"loggp": params.as_dict(), "software": vars(software)}
            sources.append(("from " + str(args.params), params, software))
    if args.network != "none":
        sources.append((f"ASSUMED {args.network}", comm_loggp.ASSUMED[args.network], Software()))
    if not sources and not args.measure:
        raise InputError("nothing to model: give --measure, --sysbench, --params or a --network other than none")
    if rank != 0:
        return 0
    ranks_list = [2**k for k in range(int(math.log2(args.max_ranks)) + 1)]
    if ranks_list[-1] != args.max_ranks:
        ranks_list.append(args.max_ranks)
    text = []
    for label, params, software in sources:
        text.append(f"LogGP [{label}]: L = {params.L * 1e6:.3g} us, o = {params.o * 1e6:.3g} us, "
                    f"g = {params.g * 1e6:.3g} us, G = {params.G * 1e9:.4g} ns/B "
                    f"({1 / params.G / 1e9 if params.G else math.inf:.3g} GB/s); residuals {params.residuals}; "
                    f"software s0 = {software.s0 * 1e6:.3g} us, s_v = {software.s_v * 1e9:.3g} ns per local "
                    f"trace value, s1 = {software.s1 * 1e9:.3g} ns/B, stage term r0 = {software.r0 * 1e6:.3g} us + "
                    f"r_e = {software.r_e * 1e6:.3g} us per element (measured on {software.backend}; this machine's "
                    "path, not used for the extrapolation)")
        for key, case in CASES.items():
            if case["order"] not in rates:
                raise InputError(f"no compute rate for N = {case['order']}: give --rate {case['order']}=R")
            rate, n_half = rates[case["order"]]
            # the software cost is this machine's CPU packing path: not carried to GPU ranks
            rows = weak_scaling(case, params, rate, n_half, ranks_list)
            title = f"{case['label']} -- network: {label}; compute {rate:.3g} point-stage/s, n_half {n_half:.3g}"
            out["studies"].append({"case": key, "label": f"{key}, {label}", "network": label,
                                   "loggp": params.as_dict(), "rate": rate, "n_half": n_half, "rows": rows})
            text.append("")
            text.append(format_weak(rows, title))
    if m := out.get("measured"):
        if (m.get("sharing") or {}).get("note"):
            text += ["", "NOTE: " + m["sharing"]["note"]]
        fx = m.get("face_exchange") or []
        if fx:
            text += ["", "face exchange on this machine (measured; busiest rank's messages):",
                     f"{'P':>3s} {'box':>12s} {'bytes':>9s} {'local vals':>10s} {'measured us':>12s} "
                     f"{'model us':>9s} {'net us':>7s}"]
            for r in fx:
                text.append(f"{r['ranks']:3d} {'x'.join(map(str, r['elements'])):>12s} {sum(r['message_bytes']):9d} "
                            f"{r['local_values']:10d} {r['seconds'] * 1e6:12.1f} {r['predicted_seconds'] * 1e6:9.1f} "
                            f"{r['network_seconds'] * 1e6:7.1f}")
        st = m.get("stage") or []
        if st:
            text += ["", f"a stage of the run on {st[0]['ranks']} ranks against the block on one rank (single), on "
                         "every rank at once (alone); run - alone is fitted by isolated exchange + r0 + r_e E:",
                     f"{'block':>8s} {'run us':>8s} {'single us':>9s} {'alone us':>8s} {'run-alone':>9s} "
                     f"{'exch model':>10s} {'model us':>8s}"]
            for r in st:
                text.append(f"{'x'.join(map(str, r['block'])):>8s} {r['stage_seconds'] * 1e6:8.1f} "
                            f"{r['single_stage_seconds'] * 1e6:9.1f} "
                            f"{r['alone_stage_seconds'] * 1e6:8.1f} {r['beyond_alone'] * 1e6:9.1f} "
                            f"{r['exchange_model'] * 1e6:10.1f} {r['predicted_beyond_alone'] * 1e6:8.1f}")
    if args.png is not None:
        text.append(f"figure: {plot_weak(out['studies'], args.png)}")
    print("\n".join(text))
    write_json(args.json, out)
    return 0
