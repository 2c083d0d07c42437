"""`lobatto bench scaling` past two GPUs (issue 17): overlap settings as series, the partitioner,
the strong-scale limit, studies merged from separate calls, and the comparison with the
communication model, on synthetic runs with known answers. The real runs under mpiexec are in
tests/mpi/test_scaling_mpi.py."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lobatto.bench import scaling, scaling_analysis, scaling_plan
from lobatto.bench.comm_loggp import LogGP
from lobatto.bench.comm_model import STAGES, Software
from lobatto.bench.scaling_model import compare, format_comparison
from lobatto.errors import InputError
from lobatto.mesh.partition import partition_box

SRC = Path(__file__).resolve().parent.parent.parent / "src"


def lobatto(*argv, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, "-m", "lobatto", *argv], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.parametrize("box", [(5, 4, 3), (7, 7, 7), (13, 11, 7)])
@pytest.mark.parametrize("parts", [2, 3, 5, 8])
def test_rsb_part_sizes_are_known_without_partitioning(box, parts):
    counts = scaling_plan.elements_per_rank(box, parts, "rsb")
    assert counts == [len(partition_box(box, parts, r, "rsb")) for r in range(parts)]
    assert scaling_plan.elements_per_rank(box, parts, "metis") is None


def test_plan_has_a_run_per_overlap_setting_and_checks_them():
    runs = scaling.plan("weak", [1, 2, 4], ["8", "2x1x1"], ["on", "off", "auto"], "rsb")
    assert len(runs) == 2 * 3 * 3
    assert {(r["size"], r["overlap_setting"], r["ranks"]) for r in runs} == {
        (s, o, p) for s in ("8", "2x1x1") for o in ("on", "off", "auto") for p in (1, 2, 4)}
    assert all(r["partitioner"] == "rsb" and sum(r["elements_per_rank"]) == math.prod(r["elements"]) for r in runs)
    with pytest.raises(InputError, match="--overlap 'maybe'"):
        scaling.plan("weak", [1], ["8"], ["maybe"])
    with pytest.raises(InputError, match="--partitioner 'kway'"):
        scaling.plan("weak", [1], ["8"], ["on"], "kway")


@pytest.mark.parametrize("overlap, expected", [("on", True), ("off", False), ("auto", "auto")])
@pytest.mark.parametrize("partitioner", ["rcb", "rsb"])
def test_case_text_sets_overlap_and_partitioner(tmp_path, overlap, expected, partitioner):
    from lobatto.api import load_case

    path = tmp_path / "case.toml"
    path.write_text(scaling.case_text((3, 2, 1), 3, 4, "cpu", overlap=overlap, partitioner=partitioner))
    case = load_case(path)
    assert case.parallel.overlap == expected and case.parallel.partitioner == partitioner


def synthetic(mode, ranks, sizes, overlaps, seconds, order=3):
    """Run records as run_one makes them; seconds(ranks, points per rank, overlap)."""
    runs = []
    for point in scaling.plan(mode, ranks, sizes, overlaps):
        points = math.prod(point["elements"]) * (order + 1) ** 3
        t = seconds(point["ranks"], points / point["ranks"], point["overlap_setting"])
        run = dict(point, points=points, seconds_per_step=t, overlap_used=point["overlap_setting"] != "off"
                   and point["ranks"] > 1, steps=10)
        runs.append(scaling.with_rates(run))
    return runs


def study_of(runs, mode, order=3, **extra):
    return scaling_analysis.analyse(dict({"benchmark": "scaling", "mode": mode, "order": order, "backend": "cpu",
                                          "precision": "float64", "steps": 10, "runs": runs, "cores": 64}, **extra))


def test_each_overlap_setting_is_a_series_against_its_own_smallest_rank_count():
    base = {"on": 1.0e-3, "off": 1.2e-3}
    growth = {"on": 0.05, "off": 0.2}
    runs = synthetic("weak", [2, 4, 8], ["27"], ["on", "off"],
                     lambda p, n, o: base[o] * (1 + growth[o] * np.log2(p / 2)))
    study = study_of(runs, "weak")
    assert list(study["scaling"]) == ["27 overlap on", "27 overlap off"]
    for name, curve in study["scaling"].items():
        o = curve["overlap"]
        assert curve["size"] == "27" and curve["reference_ranks"] == 2
        for row in curve["rows"]:
            assert row["efficiency"] == pytest.approx(1 / (1 + growth[o] * np.log2(row["ranks"] / 2)), rel=1e-12)
            assert row["overlap_used"] is (o == "on")
    assert set(study["fits"]) == {f"{p} overlap {o}" for p in (2, 4, 8) for o in ("on", "off")}
    table = scaling_analysis.format_table(study)
    assert table.count("27 overlap on ") == 3 and "on>on" in table and "off>off" in table
    # one setting: the series is named by its size alone (studies written before --overlap read the same)
    single = study_of(synthetic("weak", [1, 2], ["27"], ["auto"], lambda p, n, o: 1e-3), "weak")
    assert list(single["scaling"]) == ["27"] and set(single["fits"]) == {"1", "2"}
    for run in single["runs"]:
        del run["overlap_setting"]
    assert list(scaling_analysis.analyse(single)["scaling"]) == ["27"]


def test_strong_limit_is_interpolated_where_efficiency_falls_below_80_percent():
    rows = [{"ranks": p, "efficiency": e, "points_per_rank": 1e6 / p} for p, e in ((1, 1.0), (2, 0.9), (4, 0.7))]
    lim = scaling_analysis.strong_limit(rows)
    assert lim["between_ranks"] == [2, 4]
    assert lim["points_per_rank"] == pytest.approx(math.sqrt(5e5 * 2.5e5), rel=1e-12)  # half way in E, log n
    never = scaling_analysis.strong_limit(rows[:2])
    assert never["points_per_rank"] is None and "not reached" in never["note"] and "0.900" in never["note"]
    # in a study: t(P) = t1 / (P E(P)) with E falling below 0.8 between 4 and 8 ranks
    eff = {1: 1.0, 2: 0.95, 4: 0.85, 8: 0.65}
    runs = synthetic("strong", [1, 2, 4, 8], ["64"], ["auto"], lambda p, n, o: 1e-2 / (p * eff[p]))
    curve = study_of(runs, "strong")["scaling"]["64"]
    assert curve["strong_limit"]["between_ranks"] == [4, 8]
    n4, n8 = 64 * 64 / 4, 64 * 64 / 8
    f = (0.85 - 0.8) / (0.85 - 0.65)
    assert curve["strong_limit"]["points_per_rank"] == pytest.approx(n4 * (n8 / n4) ** f, rel=1e-9)


def test_studies_of_separate_calls_merge_into_one(tmp_path):
    t = {1: 1e-3, 2: 1.1e-3, 4: 1.3e-3}
    runs = synthetic("weak", [1, 2, 4], ["8", "27"], ["on", "off"], lambda p, n, o: t[p] * (n / 512))
    whole = study_of([dict(r) for r in runs], "weak")
    parts = [study_of([dict(r) for r in runs if r["ranks"] == p], "weak", date=f"day {p}") for p in (1, 2, 4)]
    # a repeated point: the faster run is kept
    slower = dict(runs[0], seconds_per_step=runs[0]["seconds_per_step"] * 3)
    parts[1]["runs"].append(slower)
    merged = scaling_analysis.analyse(scaling_analysis.merge_studies(parts, sources=["a", "b", "c"]))
    assert merged["scaling"] == whole["scaling"]
    assert merged["ranks"] == [1, 2, 4] and [m["date"] for m in merged["merged_from"]] == ["day 1", "day 2", "day 4"]
    with pytest.raises(ValueError, match="order"):
        scaling_analysis.merge_studies([parts[0], dict(parts[1], order=5)])
    # the same through the command line: two JSONs, the merge written with --json
    paths = []
    for i, part in enumerate(parts):
        paths.append(tmp_path / f"part{i}.json")
        paths[-1].write_text(json.dumps(part))
    out = tmp_path / "merged.json"
    result = lobatto("bench", "scaling", "--plot-from", *map(str, paths), "--json", str(out), "--png",
                     str(tmp_path / "m.png"))
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["scaling"] == json.loads(json.dumps(whole["scaling"]))
    assert result.stdout.rstrip().endswith(scaling_analysis.format_table(scaling_analysis.analyse(
        json.loads(out.read_text()))))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(parts[0], backend="cuda")))
    result = lobatto("bench", "scaling", "--plot-from", str(paths[0]), str(bad))
    assert result.returncode == 2 and "backend" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_model_with_a_free_network_predicts_the_one_rank_time():
    runs = synthetic("weak", [1, 2, 4, 8], ["8"], ["auto"], lambda p, n, o: 1e-3 * (1 + 0.1 * np.log2(p)))
    cmp = compare(study_of(runs, "weak"), LogGP(0.0, 0.0, 0.0, 0.0), Software())
    for row in cmp["rows"]:
        assert row["predicted_seconds_per_step"] == pytest.approx(1e-3, rel=1e-12)
        assert row["predicted_efficiency"] == pytest.approx(1.0, rel=1e-12)
        assert row["measured_efficiency"] == pytest.approx(1 / (1 + 0.1 * np.log2(row["ranks"])), rel=1e-12)


def test_model_adds_the_exchange_of_the_runs_own_partition():
    order, latency, per_byte = 3, 7e-6, 2e-9
    t1 = 2e-3
    runs = synthetic("weak", [1, 2], ["2x2x2"], ["off"], lambda p, n, o: t1 * (1.5 if p > 1 else 1.0), order)
    study = study_of(runs, "weak", order)
    cmp = compare(study, LogGP(latency, 0.0, 0.0, per_byte), Software(), source="test")
    one, two = cmp["rows"]
    assert one["predicted_seconds_per_step"] == pytest.approx(t1, rel=1e-12)
    # 4x2x2 elements split in two 2x2x2 blocks: 4 shared faces of (N+1)^2 points, 6 values of 8 bytes
    message = 4 * (order + 1) ** 2 * 6 * 8
    expected = t1 + STAGES * (latency + per_byte * message) + (latency + 8 * per_byte) / 20
    assert two["neighbours_max"] == 1 and two["overlap_used"] is False
    assert two["predicted_seconds_per_step"] == pytest.approx(expected, rel=1e-12)
    assert two["relative_error"] == pytest.approx(expected / (1.5 * t1) - 1, rel=1e-12)
    assert two["predicted_efficiency"] == pytest.approx(t1 / expected, rel=1e-12)
    text = format_comparison(cmp)
    assert "against the communication model (test)" in text and len(text.splitlines()) == 4


def test_model_option_reads_a_comm_model_json(tmp_path):
    runs = synthetic("strong", [1, 2, 4], ["64", "512"], ["auto"], lambda p, n, o: 1e-4 + n / 3e7)
    path = tmp_path / "study.json"
    path.write_text(json.dumps(study_of(runs, "strong")))
    params = tmp_path / "comm.json"
    params.write_text(json.dumps({"measured": {"loggp": {"L": 1e-6, "o": 1e-7, "g": 2e-7, "G": 1e-10},
                                               "software": {"s0": 1e-6, "backend": "cpu"}}}))
    out = tmp_path / "with_model.json"
    result = lobatto("bench", "scaling", "--plot-from", str(path), "--model", str(params), "--json", str(out),
                     "--png", str(tmp_path / "x.png"))
    assert result.returncode == 0, result.stderr
    rows = json.loads(out.read_text())["model_comparison"]["rows"]
    assert len(rows) == 6 and all(r["rate_source"].startswith("1-rank fit") for r in rows)
    # the strong study's 1-rank fit is exact here (t = 1e-4 + n / 3e7): the model gives t(1) back
    for r in rows:
        if r["ranks"] == 1:
            assert r["predicted_seconds_per_step"] == pytest.approx(r["measured_seconds_per_step"], rel=1e-9)
    assert "against the communication model" in result.stdout
    params.write_text("{}")
    result = lobatto("bench", "scaling", "--plot-from", str(path), "--model", str(params))
    assert result.returncode == 2 and str(params) in result.stderr
