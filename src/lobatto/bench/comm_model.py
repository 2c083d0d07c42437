"""Communication model of a Maxwell time step: LogGP exchange time + measured compute rate
-> step time and weak-scaling efficiency up to 16,384 ranks (docs/comm-model.md).

    T_stage(P) = t_c + T_x                         (no overlap)
               = t_c (1 - f) + max(t_c f, T_x)     (overlap: interior elements, fraction f,
                                                    updated while the exchange is in flight)
    T_step(P)  = S T_stage + T_allreduce / CHECK_EVERY
    efficiency = T_step(1) / T_step(P)

with t_c = (n + n_half) / R per stage (R: point-stage updates/s of one rank, n: its points),
S stages (lsrk45: 5) and T_x the exchange of the busiest rank:

    pairwise        T_net = L + 2o + (k - 1) max(g, 2o) + G sum_i m_i
    crystal router  T_net = ceil(log2 P) (L + 2o + G sum_i m_i)                (blocking)
    software        T_sw  = s0 + s_v V + s1 sum_i m_i + r0 + r_e E,     T_x = T_net + T_sw

k messages of m_i bytes; V the trace values the rank's gather-scatter touches (all its
element faces' points x components, shared or not). s0, s_v, s1: the software cost per
exchange (the multi-rank path's gather, pack and scatter over all V values, per-byte copies
into and out of the message buffers, Python), fitted from timed gather-scatters when
measured (else 0). r0, r_e: what a stage of the real run on P ranks costs beyond the one-rank
stage and the isolated exchange (split kernel launches, waiting for the slower neighbour,
caches), per stage and per element E of the rank, fitted from timed steps (comm_measure.py:
stage_in_situ). The software part runs on the rank's own core, so it is never hidden by
the overlap. The exchange method is the faster of the two,
as ``comm/auto.py`` picks it; the crystal router's bound assumes every stage forwards the
rank's whole outgoing volume. One allreduce (the run's state check every 20 steps) costs
ceil(log2 P) (L + 2o + 8 G).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from lobatto.bench.comm_loggp import LogGP
from lobatto.bench.comm_pattern import MAXWELL_TRACES, RankPattern, block_of, block_pattern, rank_grid

#: stages of the 2N-storage lsrk45 scheme, the default integrator
STAGES = 5
#: the run checks the state (one allreduce) every this many steps (runner.simulation.FINITE_CHECK_STEPS)
CHECK_EVERY = 20

#: one-GPU rates of the whole-step path on an affine box, H100, float64 (docs/benchmarks.md,
#: "Split-form curl on curved elements": 8.51e9 at N = 7, 6.48e9 at N = 14 point-stage/s;
#: n_half from the throughput sweep of the same page: 3.9e4 and 1.7e5 points)
H100_RATES = {7: (8.51e9, 3.9e4), 14: (6.48e9, 1.7e5)}

#: the two weak-scaling cases of issue 16
CASES = {
    "nekcem": {"order": 14, "elements_per_rank": 125,
               "label": "NekCEM weak scaling: 125 elements (125*15^3 points) per GPU, N = 14"},
    "1e7": {"order": 7, "elements_per_rank": 1e7 / 8**3, "label": "1e7 points per GPU, N = 7"},
}


@dataclass
class Software:
    """Per-exchange cost outside the network: s0 seconds, plus s_v seconds per trace value
    the rank's gather-scatter touches (local work, grows with the block's volume), plus s1
    seconds per message byte (packing into and out of the buffers, grows with its surface);
    then the stage term measured in the run itself: r0 seconds plus r_e per element of the
    rank (what a multi-rank stage costs beyond the one-rank stage and the isolated exchange;
    signed: on the fused GPU path the run's exchange is cheaper than the isolated one). The
    sum is never below 0. ``backend``: where s0, s_v, s1 were measured (cpu or cuda)."""

    s0: float = 0.0
    s1: float = 0.0
    source: str = "none (0)"
    s_v: float = 0.0
    r0: float = 0.0
    r_e: float = 0.0
    stage_source: str = "none (0)"
    backend: str = "cpu"

    def seconds(self, local_values: float, message_bytes: float, elements: float = 0.0) -> float:
        exchange = self.s0 + self.s_v * float(local_values) + self.s1 * float(message_bytes)
        return max(exchange + self.stage_seconds(elements), 0.0)

    def stage_seconds(self, elements: float) -> float:
        """The stage term alone (may be negative, see the class)."""
        return self.r0 + self.r_e * float(elements)


def local_trace_values(elements: int, order: int, components: int = MAXWELL_TRACES) -> int:
    """Values one gather-scatter of a rank touches: every face point of its elements
    (6 (N+1)^2 per element, on a rank boundary or not) times the components."""
    return int(elements) * 6 * (order + 1) ** 2 * components


def network_time(params: LogGP, message_bytes, ranks: int, method: str = "pairwise") -> float:
    sizes = list(message_bytes)
    if ranks <= 1 or not sizes:
        return 0.0
    total = float(sum(sizes))
    if method == "pairwise":
        k = len(sizes)
        return params.latency + (k - 1) * max(params.g, 2 * params.o) + params.G * total
    if method == "crystal_router":
        return math.ceil(math.log2(ranks)) * (params.latency + params.G * total)
    raise ValueError(f"unknown method {method!r}")


def exchange_time(params: LogGP, message_bytes, ranks: int, method: str = "pairwise",
                  software: Software | None = None, local_values: float = 0.0, elements: float = 0.0) -> float:
    """Network (LogGP) + software time of the busiest rank's exchange; 0 on one rank (the
    single-rank combine is part of the compute rate)."""
    sizes = list(message_bytes)
    if ranks <= 1 or not sizes:
        return 0.0
    sw = software or Software()
    return network_time(params, sizes, ranks, method) + sw.seconds(local_values, sum(sizes), elements)


def allreduce_time(params: LogGP, ranks: int, nbytes: int = 8) -> float:
    return 0.0 if ranks <= 1 else math.ceil(math.log2(ranks)) * (params.latency + params.G * nbytes)


def bandwidth_share(ranks: int, stream_rows) -> float:
    """Memory bandwidth one of ``ranks`` processes gets on a node, relative to one process
    alone: (triad(P) / P) / triad(1), from sysbench's ``cpu_stream`` rows (threads, triad
    bytes/s), linear in P between the measured thread counts, the last row's per-thread share
    beyond them; never above 1 (a rank is not faster than alone). 1 without rows."""
    rows = sorted((int(r["threads"]), float(r["triad"])) for r in (stream_rows or []) if r.get("triad"))
    if ranks <= 1 or not rows or rows[0][0] != 1:
        return 1.0
    single = rows[0][1]
    total = None
    for (p0, b0), (p1, b1) in zip(rows, rows[1:]):
        if p0 <= ranks <= p1:
            total = b0 + (b1 - b0) * (ranks - p0) / (p1 - p0)
            break
    if total is None:
        total = rows[-1][1] / rows[-1][0] * ranks
    return min(1.0, total / ranks / single)


def compute_time(points: float, rate: float, n_half: float = 0.0) -> float:
    """Seconds of one stage on one rank: (n + n_half) / R (the fit t = t0 + n/R)."""
    return (float(points) + float(n_half)) / float(rate)


def predict_step(pattern: RankPattern, order: int, ranks: int, params: LogGP, rate: float, n_half: float = 0.0,
                 software: Software | None = None, stages: int = STAGES, itemsize: int = 8,
                 components: int = MAXWELL_TRACES, rate_factor: float = 1.0) -> dict:
    """Step time of the busiest rank with and without overlap, each method, the chosen one.
    ``rate_factor``: what a rank's compute rate keeps of the single-rank rate: its share of a
    core (ranks > cores: cores / ranks) times its share of the node's memory bandwidth
    (:func:`bandwidth_share`)."""
    points = pattern.elements * (order + 1) ** 3
    t_c = compute_time(points, rate * rate_factor, n_half)
    sizes = list(pattern.message_bytes(order, components, itemsize).values())
    values = local_trace_values(pattern.elements, order, components)
    per_method = {m: exchange_time(params, sizes, ranks, m, software, values, pattern.elements)
                  for m in ("pairwise", "crystal_router")}
    method = min(per_method, key=lambda m: (per_method[m], m != "pairwise"))
    t_x = per_method[method]
    t_net = network_time(params, sizes, ranks, method) if ranks > 1 else 0.0
    t_sw = t_x - t_net
    interior = 1.0 - pattern.halo_elements / pattern.elements if ranks > 1 else 1.0
    t_ar = allreduce_time(params, ranks) / CHECK_EVERY
    no_overlap = stages * (t_c + t_x) + t_ar
    # the crystal router blocks in start(): nothing overlaps it; the software part runs on the
    # rank's own core (gather, pack, scatter), so only the network part can hide behind compute
    hidden = t_x if method == "crystal_router" else t_sw + max(t_c * interior, t_net)
    overlap = stages * (t_c * (1 - interior) + hidden) + t_ar if ranks > 1 else no_overlap
    return {"ranks": ranks, "points_per_rank": points, "neighbours": len(sizes), "message_bytes": max(sizes, default=0),
            "bytes_per_stage": int(sum(sizes)), "local_trace_values": values, "method": method,
            "exchange_seconds": t_x, "exchange_network_seconds": t_net, "exchange_software_seconds": t_sw,
            "stage_term_seconds": (software.stage_seconds(pattern.elements) if software and ranks > 1 else 0.0),
            "exchange_seconds_by_method": per_method, "compute_seconds_per_stage": t_c,
            "interior_fraction": interior, "allreduce_seconds_per_step": t_ar,
            "step_seconds": no_overlap, "step_seconds_overlap": overlap}


def weak_scaling(case: dict, params: LogGP, rate: float, n_half: float = 0.0, ranks_list=None,
                 software: Software | None = None, periodic: bool = False) -> list[dict]:
    """Rows of ``predict_step`` for each P of ``ranks_list`` (default 1, 2, 4, ..., 16384),
    each rank a block of elements, with efficiency = T(1) / T(P) with and without overlap."""
    ranks_list = ranks_list or [2**k for k in range(15)]
    block = block_of(case["elements_per_rank"])
    rows, base = [], None
    for P in ranks_list:
        grid = rank_grid(P)
        pattern = block_pattern(block, grid, periodic)
        row = predict_step(pattern, case["order"], P, params, rate, n_half, software)
        if base is None:
            base = predict_step(block_pattern(block, (1, 1, 1)), case["order"], 1, params, rate, n_half, software)
        row["grid"] = list(grid)
        row["block"] = list(block)
        row["efficiency"] = base["step_seconds"] / row["step_seconds"]
        row["efficiency_overlap"] = base["step_seconds"] / row["step_seconds_overlap"]
        rows.append(row)
    return rows


def format_weak(rows: list[dict], title: str) -> str:
    lines = [title, f"{'P':>6s} {'grid':>11s} {'nbrs':>4s} {'msg KB':>8s} {'method':>8s} {'exch us':>8s} "
             f"{'step ms':>8s} {'ovl ms':>8s} {'eff':>6s} {'eff ovl':>7s}"]
    for r in rows:
        grid = "x".join(map(str, r["grid"]))
        lines.append(f"{r['ranks']:6d} {grid:>11s} {r['neighbours']:4d} {r['message_bytes'] / 1e3:8.1f} "
                     f"{r['method'][:8]:>8s} {r['exchange_seconds'] * 1e6:8.1f} {r['step_seconds'] * 1e3:8.3f} "
                     f"{r['step_seconds_overlap'] * 1e3:8.3f} {r['efficiency']:6.3f} {r['efficiency_overlap']:7.3f}")
    return "\n".join(lines)


def plot_weak(studies: list[dict], png) -> str:
    """Efficiency against P for each study; the path, or why no figure was made."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "skipped: matplotlib is not installed (no PNG)"
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    overlap, plain = [], []
    for s in studies:
        P = [r["ranks"] for r in s["rows"]]
        line = ax.plot(P, [r["efficiency_overlap"] for r in s["rows"]], marker="o", label=f"{s['label']} (overlap)")[0]
        overlap.append(line)
        plain += ax.plot(P, [r["efficiency"] for r in s["rows"]], linestyle="--", color=line.get_color(),
                         label="no overlap")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("ranks (GPUs)")
    ax.set_ylabel("weak-scaling efficiency T(1)/T(P) (model)")
    ax.grid(True, which="both", alpha=0.3)
    # below the axes, one row per study (overlap | no overlap): inside, it hid the curves at 1.0
    ax.legend(handles=overlap + plain, fontsize=6, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    Path(png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return str(png)
