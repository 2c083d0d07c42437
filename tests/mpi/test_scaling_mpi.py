"""`lobatto bench scaling` launches real runs under mpiexec (MPICH here) on 1, 2 and 3 ranks:
every run's summary comes back, with the rank count and size asked, and the JSON has the
curves and the n_1/2 fits; with --overlap on off each setting is a series and each run
reports the setting and what it did. No timing is asserted (a shared 2-core machine)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpirun import SKIP_REASON, SRC

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

RANKS = [1, 2, 3]
ORDER = 3
STEPS = 5


def study(tmp_path, mode, sizes, repeats=1):
    out = tmp_path / f"{mode}.json"
    keep = tmp_path / "runs"
    cmd = [sys.executable, "-m", "lobatto", "bench", "scaling", f"--{mode}", "--backend", "cpu",
           "--ranks", *map(str, RANKS), "--order", str(ORDER), "--sizes", *sizes, "--steps", str(STEPS),
           "--threads", "1", "--repeats", str(repeats), "--json", str(out), "--keep", str(keep)]
    env = dict(os.environ, PYTHONPATH=str(SRC))
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads(out.read_text())
    assert record["mode"] == mode and record["ranks"] == RANKS and record["order"] == ORDER
    assert len(record["runs"]) == len(RANKS) * len(sizes)
    progress = [line for line in result.stdout.splitlines() if line.startswith("[")]
    assert len(progress) == len(record["runs"])
    for run in record["runs"]:
        # each run's own summary.json, as the child wrote it, agrees with what was collected
        assert run["run_dir"].startswith(str(keep / mode / f"P{run['ranks']}_{'x'.join(map(str, run['elements']))}"))
        summary = json.loads((Path(run["run_dir"]) / "out" / "summary.json").read_text())
        assert summary["ranks"] == run["ranks"]
        assert summary["elements"] == math.prod(run["elements"]) == run["num_elements"]
        assert summary["points"] == run["points"] == run["num_elements"] * (ORDER + 1) ** 3
        assert summary["steps"] == STEPS and summary["rate_steps"] == STEPS - 2
        assert summary["seconds_per_step"] == run["seconds_per_step"] > 0
        assert summary["threads"]["per_rank"] == 1
        assert sum(run["elements_per_rank"]) == run["num_elements"] and len(run["elements_per_rank"]) == run["ranks"]
        # the fastest of the repeats is kept
        assert len(run["repeats_seconds_per_step"]) == repeats
        assert run["seconds_per_step"] == min(run["repeats_seconds_per_step"])
        if run["ranks"] > 1:
            assert summary["exchange_method"] is not None
    # a curve per size over every rank count, and a fit for every rank count
    assert list(record["scaling"]) == sizes
    for curve in record["scaling"].values():
        assert [row["ranks"] for row in curve["rows"]] == RANKS and curve["reference_ranks"] == 1
        assert curve["rows"][0]["efficiency"] == pytest.approx(1.0)
    assert set(record["fits"]) == {str(p) for p in RANKS}
    for fit in record["fits"].values():
        assert fit["sizes"] == len(sizes) and fit["peak_fit"] != 0 and "n_half_fit" in fit
    assert result.stdout.rstrip().splitlines()[-1].split()[0] == str(RANKS[-1])  # the fit table is last
    return record


def test_weak_study(tmp_path):
    record = study(tmp_path, "weak", ["1", "2x2x1", "8"])
    for run in record["runs"]:
        per_rank = math.prod(int(n) for n in run["size"].split("x")) if "x" in run["size"] else int(run["size"])
        assert run["elements_per_rank"] == [per_rank] * run["ranks"]
        assert run["points_per_rank"] == per_rank * (ORDER + 1) ** 3


def test_strong_study(tmp_path):
    record = study(tmp_path, "strong", ["6", "12"], repeats=2)
    for size in ("6", "12"):
        totals = {r["num_elements"] for r in record["runs"] if r["size"] == size}
        assert totals == {int(size)}


def test_overlap_settings_are_series_and_runs_report_what_they_used(tmp_path):
    """--overlap on off: a series per setting; each run's case has the setting, its summary
    what the run did (on the CPU the stage path overlaps whenever asked and there is a second
    rank), and the JSON and table carry both."""
    out = tmp_path / "weak.json"
    keep = tmp_path / "runs"
    cmd = [sys.executable, "-m", "lobatto", "bench", "scaling", "--weak", "--backend", "cpu", "--ranks", "1", "2",
           "--order", str(ORDER), "--sizes", "4x2x1", "--steps", str(STEPS), "--threads", "1",
           "--overlap", "on", "off", "--json", str(out), "--keep", str(keep)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=dict(os.environ, PYTHONPATH=str(SRC)))
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads(out.read_text())
    assert record["overlap_settings"] == ["on", "off"] and record["partitioner"] == "rcb"
    assert list(record["scaling"]) == ["4x2x1 overlap on", "4x2x1 overlap off"]
    for name, curve in record["scaling"].items():
        assert [row["ranks"] for row in curve["rows"]] == [1, 2] and curve["rows"][0]["efficiency"] == pytest.approx(1.0)
        assert name.endswith(curve["overlap"])
    assert len(record["runs"]) == 4
    for run in record["runs"]:
        directory = Path(run["run_dir"])
        assert f"_overlap-{run['overlap_setting']}" in directory.name
        case = (directory / "case.toml").read_text()
        assert f"overlap = {'true' if run['overlap_setting'] == 'on' else 'false'}" in case
        summary = json.loads((directory / "out" / "summary.json").read_text())
        assert summary["config"]["parallel"]["overlap"] is (run["overlap_setting"] == "on")
        assert summary["overlap"]["setting"] is (run["overlap_setting"] == "on")
        assert run["overlap"] == summary["overlap"]
        assert run["overlap_used"] is summary["overlap"]["enabled"] is (run["ranks"] == 2 and run["overlap_setting"] == "on")
        if run["ranks"] == 2 and run["overlap_setting"] == "on":
            # the stage really split (summed over the ranks: 16 elements in all)
            assert 0 < summary["overlap"]["interior_elements"] < 16
            assert summary["overlap"]["interior_elements"] + summary["overlap"]["elements_after_exchange"] == 16
    rows = [line.split() for line in result.stdout.splitlines() if line.split()[:1] == ["4x2x1"] and "x" in line.split()[4]]
    assert sorted((r[2], r[5]) for r in rows) == [("off", "off>off"), ("off", "off>off"), ("on", "on>off"), ("on", "on>on")]
