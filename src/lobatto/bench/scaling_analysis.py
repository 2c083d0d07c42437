"""Analysis of a scaling study (bench/scaling.py): curves, fits, the strong-scale limit, the
table, and the merging of studies run in separate calls (docs/scaling.md).

A study's runs fall into **series**: one per size and overlap setting (``--overlap on off
auto``). Each series' efficiency is against its own smallest rank count, so the overlap
settings are compared at equal work. A series is named by its size alone when the study
has one overlap setting (as before the setting existed), else ``"<size> overlap <setting>"``.
"""

from __future__ import annotations

import math

from lobatto.bench.report import number

#: strong-scaling efficiency below which a rank count is past the strong-scale limit
#: (NekCEM's paper: 80 %, reached near n/P ~ 1e5 points per K20X)
STRONG_LIMIT = 0.8
#: the overlap setting of runs recorded before --overlap existed: the case default
DEFAULT_OVERLAP = "auto"


def overlap_of(run: dict) -> str:
    return run.get("overlap_setting") or DEFAULT_OVERLAP


def overlap_settings(runs) -> list[str]:
    return list(dict.fromkeys(overlap_of(r) for r in runs))


def series_name(size: str, overlap: str, settings) -> str:
    return str(size) if len(settings) <= 1 else f"{size} overlap {overlap}"


def series(runs: list[dict]) -> dict:
    """{series name: (size, overlap setting, its runs sorted by rank count)} in the runs' order."""
    settings = overlap_settings(runs)
    out = {}
    for size in dict.fromkeys(r["size"] for r in runs):
        for overlap in settings:
            rows = sorted((r for r in runs if r["size"] == size and overlap_of(r) == overlap), key=lambda r: r["ranks"])
            if rows:
                out[series_name(size, overlap, settings)] = (size, overlap, rows)
    return out


def scaling_curves(runs: list[dict], mode: str) -> dict:
    """For each series, its runs by rank count with speed-up and efficiency against the
    smallest rank count P0: strong S = t0 / t, E = S P0 / P; weak E = t0 / t and the scaled
    speed-up S = E P / P0 (the work done in t0 grows with P)."""
    curves = {}
    for name, (size, overlap, rows) in series(runs).items():
        p0, t0 = rows[0]["ranks"], rows[0]["seconds_per_step"]
        curve = []
        for r in rows:
            p, t = r["ranks"], r["seconds_per_step"]
            efficiency = None if not t or not t0 else (t0 * p0 / (t * p) if mode == "strong" else t0 / t)
            speedup = None if efficiency is None else efficiency * p / p0
            curve.append({"ranks": p, "seconds_per_step": t, "speedup": speedup, "efficiency": efficiency,
                          "points": r["points"], "points_per_rank": r["points_per_rank"],
                          "overlap_used": r.get("overlap_used")})
        curves[name] = {"size": size, "overlap": overlap, "reference_ranks": p0, "rows": curve}
        if mode == "strong":
            curves[name]["strong_limit"] = strong_limit(curve)
    return curves


def strong_limit(rows: list[dict], threshold: float = STRONG_LIMIT) -> dict:
    """Where a strong curve's efficiency first falls below ``threshold``: the points per rank
    there, interpolated (log n/P linear in E) between the last rank count at or above it and
    the first below; or how low n/P went without falling below."""
    rows = [r for r in rows if r["efficiency"] is not None]
    for before, after in zip(rows, rows[1:]):
        if before["efficiency"] >= threshold > after["efficiency"]:
            f = (before["efficiency"] - threshold) / (before["efficiency"] - after["efficiency"])
            n = math.exp(math.log(before["points_per_rank"])
                         + f * (math.log(after["points_per_rank"]) - math.log(before["points_per_rank"])))
            return {"threshold": threshold, "points_per_rank": n, "between_ranks": [before["ranks"], after["ranks"]]}
    lowest = rows[-1] if rows else None
    return {"threshold": threshold, "points_per_rank": None,
            "note": "not reached" + (f": E = {lowest['efficiency']:.3f} at {lowest['ranks']} ranks, "
                                     f"{lowest['points_per_rank']:.3g} points per rank" if lowest else "")}


def rank_fits(runs: list[dict]) -> dict:
    """For each rank count (and overlap setting): t(n) = t0 + n / R_inf over its sizes, n the
    points per rank (bench.maxwell_sweep.fit_half_performance); R_inf is then point-steps/s per rank."""
    from lobatto.bench.maxwell_sweep import fit_half_performance  # imports the systems: only when needed

    settings = overlap_settings(runs)
    fits = {}
    for overlap in settings:
        for p in sorted({r["ranks"] for r in runs if overlap_of(r) == overlap}):
            key = str(p) if len(settings) <= 1 else f"{p} overlap {overlap}"
            rows = sorted((r for r in runs if r["ranks"] == p and overlap_of(r) == overlap and r["seconds_per_step"]),
                          key=lambda r: r["points_per_rank"])
            n = [r["points_per_rank"] for r in rows]
            if len(set(n)) < 2:
                fits[key] = {"ranks": p, "overlap": overlap, "skipped": "needs runs of two sizes or more"}
                continue
            fit = dict(fit_half_performance(n, [r["seconds_per_step"] for r in rows]), sizes=len(n),
                       points_per_rank=n, ranks=p, overlap=overlap)
            if fit["t0"] <= 0:
                fit["note"] = ("t0 <= 0: the time is not t0 + n/R here (throughput falls with size, "
                               "or noise); n1/2 (fit) means nothing")
            fits[key] = fit
    return fits


def analyse(study: dict) -> dict:
    study["scaling"] = scaling_curves(study["runs"], study["mode"])
    study["fits"] = rank_fits(study["runs"])
    return study


# Merging ----------------------------------------------------------------------------------------
#: what the studies to merge must share
MERGE_KEYS = ("mode", "order", "backend", "precision")


def merge_studies(records: list[dict], sources=None) -> dict:
    """One study from several (the stages of benchmarks/run_multi_gpu.sh, one rank count per
    call): their runs joined, the fastest kept where two ran the same point (size, ranks,
    overlap, partitioner); the first study's description, each source's own in ``merged_from``.
    ValueError naming the field where they differ in mode, order, backend or precision."""
    if not records:
        raise ValueError("no studies to merge")
    first = records[0]
    for i, r in enumerate(records[1:], 1):
        for key in MERGE_KEYS:
            if r.get(key) != first.get(key):
                raise ValueError(f"study {i + 1} has {key} = {r.get(key)!r}, the first {first.get(key)!r}")
    best = {}
    for r in records:
        for run in r["runs"]:
            point = (run["size"], run["ranks"], overlap_of(run), run.get("partitioner", "rcb"))
            if point not in best or run["seconds_per_step"] < best[point]["seconds_per_step"]:
                best[point] = run
    merged = {k: v for k, v in first.items() if k not in ("scaling", "fits", "model_comparison")}
    merged["runs"] = list(best.values())
    merged["ranks"] = sorted({run["ranks"] for run in merged["runs"]})
    merged["sizes"] = list(dict.fromkeys(run["size"] for run in merged["runs"]))
    merged["steps"] = sorted({r["steps"] for r in records}) if len({r["steps"] for r in records}) > 1 else first["steps"]
    sources = sources or [None] * len(records)
    merged["merged_from"] = [{"source": None if s is None else str(s), **{k: r.get(k) for k in
                              ("date", "commit", "command", "device", "host", "ranks")}}
                             for s, r in zip(sources, records)]
    return merged


# The table ----------------------------------------------------------------------------------------
def _overlap_cell(run: dict) -> str:
    used = run.get("overlap_used")
    return f"{overlap_of(run)}>{'-' if used is None else ('on' if used else 'off')}"


def format_table(study: dict) -> str:
    mode = study["mode"]
    label = "series (el/rank)" if mode == "weak" else "series (elements)"
    steps = study["steps"]
    lines = [f"{mode} scaling: maxwell N={study['order']} backend={study['backend']} {study['precision']} "
             f"steps={steps} best of {study.get('repeats', 1)} partitioner={study.get('partitioner', 'rcb')}", "",
             f"{label:>22s} {'ranks':>5s} {'box':>12s} {'overlap':>9s} {'points/rank':>12s} {'ms/step':>10s} "
             f"{'pt-steps/s/rank':>15s} {'speed-up':>8s} {'efficiency':>10s} {'load':>5s}"]
    by_key = {(r["size"], overlap_of(r), r["ranks"]): r for r in study["runs"]}
    for name, curve in study["scaling"].items():
        for row in curve["rows"]:
            r = by_key[(curve.get("size", name), curve.get("overlap", DEFAULT_OVERLAP), row["ranks"])]
            lines.append(f"{name:>22s} {row['ranks']:5d} {'x'.join(map(str, r['elements'])):>12s} "
                         f"{_overlap_cell(r):>9s} {r['points_per_rank']:12.4g} {row['seconds_per_step'] * 1e3:10.4g} "
                         f"{number(r['point_steps_per_second_per_rank']):>15s} {number(row['speedup'], '.2f'):>8s} "
                         f"{number(row['efficiency'], '.2f'):>10s} {number(r.get('load_average_before'), '.2f'):>5s}")
    if mode == "strong":
        lines += ["", f"strong-scale limit (efficiency below {STRONG_LIMIT:.0%}):"]
        for name, curve in study["scaling"].items():
            lim = curve.get("strong_limit") or {}
            lines.append(f"{name:>22s}  " + (f"n/P = {lim['points_per_rank']:.3g} points per rank (between "
                                             f"{lim['between_ranks'][0]} and {lim['between_ranks'][1]} ranks)"
                                             if lim.get("points_per_rank") else lim.get("note", "-")))
    lines += ["", f"{'ranks':>15s} {'sizes':>5s} {'peak/rank (meas)':>16s} {'peak/rank (fit)':>15s} "
              f"{'n1/2 (fit)':>10s} {'n1/2 (meas)':>11s}   [pt-steps/s; points per rank]"]
    for p, fit in study["fits"].items():
        if "skipped" in fit:
            lines.append(f"{p:>15s}   fit skipped: {fit['skipped']}")
            continue
        lines.append(f"{p:>15s} {fit['sizes']:5d} {fit['peak_measured']:16.3e} {fit['peak_fit']:15.3e} "
                     f"{fit['n_half_fit']:10.3g} {number(fit['n_half_measured'], '.3g'):>11s}"
                     + (f"   {fit['note']}" if "note" in fit else ""))
    return "\n".join(lines)
