"""A scaling study's runs against the communication model (bench/comm_model.py,
docs/comm-model.md): ``lobatto bench scaling ... --model COMM_MODEL.json``.

For every run the model predicts the step time of each rank of the run's own partition
(``comm_pattern.partition_pattern``: the box, the rank count, the partitioner) and keeps the
slowest, with overlap where the run overlapped (the summary's ``overlap.enabled``). Its
compute rate comes from the study itself, so only the exchange is predicted:

- weak: from the series' own 1-rank run (same points per rank), t_c = t(1) / stages;
- strong: from the study's 1-rank fit t = t0 + n/R over its sizes (rate = stages R,
  n_half = t0 R) where there is one with t0 > 0, else linear from the series' 1-rank run.

On the CPU a rank gets cores/P of a core when P exceeds the cores; unlike
benchmarks/comm_model_validate.py it does not scale by the memory-bandwidth share (the study
has no STREAM rows), so on CPU ranks that share a memory bus it predicts too little; on GPUs each rank is assumed to have its own device (not so under
LOBATTO_SHARE_GPUS=1, which the output says).
"""

from __future__ import annotations

from lobatto.bench.comm_model import STAGES, predict_step
from lobatto.bench.comm_pattern import partition_pattern
from lobatto.bench.scaling_analysis import DEFAULT_OVERLAP, overlap_settings, series


def _rate_factor(study: dict, ranks: int) -> float:
    cores = study.get("cores")
    if study.get("backend") == "cpu" and cores and ranks > cores:
        return cores / ranks
    return 1.0


def _efficiency(mode: str, seconds: float, one_rank_seconds: float, ranks: int) -> float:
    return one_rank_seconds / seconds if mode == "weak" else one_rank_seconds / (seconds * ranks)


def _strong_rate(study: dict, overlap: str):
    """(rate, n_half, source) of the 1-rank fit of this overlap setting, or None."""
    key = "1" if len(overlap_settings(study["runs"])) <= 1 else f"1 overlap {overlap}"
    fit = (study.get("fits") or {}).get(key) or {}
    if fit.get("t0", 0) > 0 and fit.get("peak_fit", 0) > 0:
        return STAGES * fit["peak_fit"], fit["t0"] * fit["peak_fit"], "1-rank fit t0 + n/R over the sizes"
    return None


def compare(study: dict, params, software, source: str = "") -> dict:
    """Rows of measured against predicted ms per step and efficiency (JSON-ready)."""
    mode, order = study["mode"], study["order"]
    patterns: dict = {}
    rows, notes = [], []
    if software.backend != study["backend"]:
        notes.append(f"the software cost was measured on {software.backend}, the study ran on {study['backend']}")
    if study.get("share_gpus"):
        notes.append("ranks shared GPUs (LOBATTO_SHARE_GPUS=1); the model assumes one GPU per rank")
    for name, (size, overlap, runs) in series(study["runs"]).items():
        reference = runs[0]
        if reference["ranks"] != 1:
            notes.append(f"series {name}: no 1-rank run, no compute rate; not compared")
            continue
        n1, t1 = reference["points_per_rank"], reference["seconds_per_step"]
        rate, n_half, rate_source = STAGES * n1 / t1, 0.0, "the series' 1-rank run"
        if mode == "strong":
            rate, n_half, rate_source = _strong_rate(study, overlap) or (rate, n_half, rate_source + " (linear)")
        predicted_reference = None
        for run in runs:
            p = run["ranks"]
            key = (tuple(run["elements"]), p, run.get("partitioner", "rcb"))
            if key not in patterns:
                patterns[key] = partition_pattern(run["elements"], p, method=key[2])
            overlapped = bool(run.get("overlap_used")) and p > 1
            predictions = [predict_step(pattern, order, p, params, rate, n_half, software,
                                        rate_factor=_rate_factor(study, p)) for pattern in patterns[key]]
            which = "step_seconds_overlap" if overlapped else "step_seconds"
            slowest = max(predictions, key=lambda r: r[which])
            t_pred = slowest[which]
            if predicted_reference is None:
                predicted_reference = t_pred
            rows.append({
                "series": name, "size": size, "overlap_setting": overlap, "overlap_used": run.get("overlap_used"),
                "ranks": p, "elements": run["elements"], "points_per_rank": run["points_per_rank"],
                "measured_seconds_per_step": run["seconds_per_step"], "predicted_seconds_per_step": t_pred,
                "relative_error": t_pred / run["seconds_per_step"] - 1,
                "measured_efficiency": _efficiency(mode, run["seconds_per_step"], t1, p),
                "predicted_efficiency": _efficiency(mode, t_pred, predicted_reference, p),
                "method": slowest["method"], "neighbours_max": max(r["neighbours"] for r in predictions),
                "exchange_seconds": slowest["exchange_seconds"],
                "compute_seconds_per_stage": slowest["compute_seconds_per_stage"],
                "rate": rate, "n_half": n_half, "rate_source": rate_source,
            })
    return {"source": source, "loggp": params.as_dict(), "software": vars(software), "notes": notes, "rows": rows,
            "overlap_default": DEFAULT_OVERLAP}


def format_comparison(comparison: dict) -> str:
    lines = [f"against the communication model ({comparison['source']}):",
             f"{'series':>22s} {'ranks':>5s} {'nbrs':>4s} {'overlap':>7s} {'ms meas':>9s} {'ms model':>9s} "
             f"{'error':>7s} {'E meas':>6s} {'E model':>7s} {'exch us':>8s}"]
    for r in comparison["rows"]:
        used = {None: "-", True: "on", False: "off"}[r["overlap_used"]]
        lines.append(f"{r['series']:>22s} {r['ranks']:5d} {r['neighbours_max']:4d} {used:>7s} "
                     f"{r['measured_seconds_per_step'] * 1e3:9.4g} {r['predicted_seconds_per_step'] * 1e3:9.4g} "
                     f"{r['relative_error']:+7.1%} {r['measured_efficiency']:6.3f} {r['predicted_efficiency']:7.3f} "
                     f"{r['exchange_seconds'] * 1e6:8.1f}")
    lines += [f"note: {n}" for n in comparison["notes"]]
    return "\n".join(lines)
