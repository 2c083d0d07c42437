"""``lobatto sysbench --compare BASELINE.json``: flag a slow node or a regressed machine.

Each result is flattened into named metrics (``flatten_metrics``); a metric regresses when it
is below ``tolerance`` x its baseline value, or, for a time (a latency), above baseline /
``tolerance``. Metrics present in only one of the two results are listed as not compared.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from lobatto.errors import InputError


def flatten_metrics(result: dict) -> dict[str, tuple[float, bool]]:
    """Metric name -> (value, higher_is_better) of a sysbench result; skipped sections and
    zero or non-finite values give none."""
    out: dict[str, tuple[float, bool]] = {}

    def put(name, value, higher):
        if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
            out[name] = (float(value), higher)

    results = result.get("results") or {}

    def section(name):
        s = results.get(name)
        return s if isinstance(s, dict) and "skipped" not in s else {}

    for kernel in ("copy", "scale", "add", "triad"):
        put(f"gpu_stream.{kernel}.bytes_per_second", (section("gpu_stream").get(kernel) or {}).get("bytes_per_second"),
            True)
    for dtype in ("float64", "float32"):
        put(f"gemm.{dtype}.flops_per_second", (section("gemm").get(dtype) or {}).get("flops_per_second"), True)
    for r in section("host_device").get("rows", []):
        put(f"host_device.{r['direction']}.{r['memory']}.{r['bytes']}B.bytes_per_second", r["bytes_per_second"], True)
    for r in section("gpu_gpu").get("rows", []):
        chunk = "" if r.get("chunk_bytes") is None else f".chunk_{r['chunk_bytes']}B"
        put(f"gpu_gpu.{r['transport']}.{r['bytes']}B{chunk}.bytes_per_second", r["bytes_per_second"], True)
    for r in section("mpi_pingpong").get("rows", []):
        put(f"mpi_pingpong.{r['bytes']}B.seconds_one_way", r["seconds_one_way"], False)
    for r in section("mpi_allreduce").get("rows", []):
        put(f"mpi_allreduce.{r['bytes']}B.seconds", r["seconds"], False)
    for r in section("cpu_stream").get("rows", []):
        for kernel in ("copy", "scale", "add", "triad"):
            put(f"cpu_stream.threads_{r['threads']}.{kernel}.bytes_per_second", r.get(kernel), True)
    return out


def compare(result: dict, baseline: dict, tolerance: float) -> list[dict]:
    """The regressions: [{"metric", "value", "baseline", "ratio" (performance relative to the
    baseline: < 1 is worse), "higher_is_better"}], in metric order."""
    now, before = flatten_metrics(result), flatten_metrics(baseline)
    flagged = []
    for name in sorted(now.keys() & before.keys()):
        (value, higher), (base, _) = now[name], before[name]
        ratio = value / base if higher else base / value
        if ratio < tolerance:
            flagged.append({"metric": name, "value": value, "baseline": base, "ratio": ratio,
                            "higher_is_better": higher})
    return flagged


def not_compared(result: dict, baseline: dict) -> dict[str, list[str]]:
    now, before = flatten_metrics(result), flatten_metrics(baseline)
    return {"only_in_result": sorted(now.keys() - before.keys()),
            "only_in_baseline": sorted(before.keys() - now.keys())}


def load_baseline(path: Path) -> dict:
    """A sysbench JSON result, or an InputError naming the file and what was expected."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise InputError(f"{path}: baseline file not found (expected a JSON file written by lobatto sysbench)") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the baseline ({exc.strerror or exc})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc}); expected a lobatto sysbench result") from None
    if not isinstance(data, dict) or data.get("benchmark") != "sysbench" or not isinstance(data.get("results"), dict):
        raise InputError(f"{path}: not a lobatto sysbench result (expected a JSON object with "
                         f"\"benchmark\": \"sysbench\" and a \"results\" object)")
    return data


def report(result: dict, baseline: dict, baseline_path, tolerance: float) -> tuple[dict, str]:
    """(the "compare" entry of the JSON, its text)."""
    flagged = compare(result, baseline, tolerance)
    missing = not_compared(result, baseline)
    compared = len(flatten_metrics(result).keys() & flatten_metrics(baseline).keys())
    lines = [f"compared with {baseline_path} ({baseline.get('hostname', '?')}, {baseline.get('date', '?')}), "
             f"tolerance {tolerance:g}: {compared} metrics, {len(flagged)} below tolerance"]
    for f in flagged:
        lines.append(f"  REGRESSION {f['metric']}: {f['value']:.4g} against {f['baseline']:.4g} "
                     f"({f['ratio']:.2f} of the baseline's performance)")
    for key, label in (("only_in_result", "only in this run"), ("only_in_baseline", "only in the baseline")):
        if missing[key]:
            lines.append(f"  not compared, {label} ({len(missing[key])}): {', '.join(missing[key])}")
    entry = {"baseline": str(baseline_path), "tolerance": tolerance, "compared": compared, "regressions": flagged,
             "not_compared": missing}
    return entry, "\n".join(lines)
