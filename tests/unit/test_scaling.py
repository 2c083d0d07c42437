"""`lobatto bench scaling` (bench/scaling.py): sizes, the generated case, the efficiency and
n_1/2 logic on synthetic summaries, the table and figure, and its errors. The real study under
mpiexec is in tests/mpi/test_scaling_mpi.py."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lobatto.bench import scaling, scaling_analysis, scaling_plan
from lobatto.errors import InputError

SRC = Path(__file__).resolve().parent.parent.parent / "src"
RNG = np.random.default_rng(20240516)


def lobatto(*argv, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, "-m", "lobatto", *argv], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.parametrize("count", [1, 2, 7, 8, 12, 27, 48, 64, 100, 4096])
def test_near_cube_is_the_most_cubic_factorisation(count):
    a, b, c = scaling_plan.near_cube(count)
    assert a * b * c == count and a >= b >= c >= 1
    brute = min(max(x, y, count // (x * y)) for x in range(1, count + 1) for y in range(1, count + 1)
                if count % (x * y) == 0)
    assert a == brute


def test_parse_size():
    assert scaling_plan.parse_size("64") == (4, 4, 4)
    assert scaling_plan.parse_size("4x4x8") == (4, 4, 8)
    assert scaling_plan.parse_size("2X3X5") == (2, 3, 5)
    for bad in ("0", "-8", "4x4", "4x0x2", "abc", "1.5"):
        with pytest.raises(InputError, match="--sizes"):
            scaling_plan.parse_size(bad)


@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 5, 6, 8, 12])
@pytest.mark.parametrize("size", ["8", "27", "3x2x1", "4x4x8"])
def test_weak_plan_gives_every_rank_the_size_asked(ranks, size):
    (run,) = scaling.plan("weak", [ranks], [size])
    per_rank = math.prod(scaling_plan.parse_size(size))
    assert math.prod(run["elements"]) == per_rank * ranks
    # the rcb partition the run uses gives each rank exactly that many elements
    assert run["elements_per_rank"] == [per_rank] * ranks


def test_strong_plan_keeps_the_total():
    runs = scaling.plan("strong", [1, 2, 3, 4], ["64", "6x5x4"])
    for size, total in (("64", 64), ("6x5x4", 120)):
        mine = [r for r in runs if r["size"] == size]
        assert [r["ranks"] for r in mine] == [1, 2, 3, 4]
        assert all(math.prod(r["elements"]) == total and sum(r["elements_per_rank"]) == total for r in mine)
        assert all(max(r["elements_per_rank"]) - min(r["elements_per_rank"]) <= math.ceil(total / r["ranks"]) // 2
                   for r in mine)
    with pytest.raises(InputError, match="cannot be shared by 9 ranks"):
        scaling.plan("strong", [9], ["8"])


@pytest.mark.parametrize("order", [3, 7])
def test_case_runs_exactly_the_steps_asked(tmp_path, order):
    from lobatto.api import load_case
    from lobatto.runner.simulation import Simulation

    steps = int(RNG.integers(3, 7))
    path = tmp_path / "case.toml"
    path.write_text(scaling.case_text((3, 2, 1), order, steps, "cpu"))
    case = load_case(path)
    assert case.mesh.elements == (3, 2, 1) or list(case.mesh.elements) == [3, 2, 1]
    summary = Simulation(case, backend="cpu", output_dir=tmp_path / "out", comm=None).run()
    assert summary["steps"] == steps and summary["rate_steps"] == steps - 2
    assert summary["points"] == 6 * (order + 1) ** 3
    assert summary["outputs"][-1]["files"] == []  # no outputs written
    assert summary["energy"]["final"] <= summary["energy"]["initial"] * (1 + 1e-12)


def synthetic_runs(mode, ranks, sizes, seconds):
    """Run records as run_one makes them, with seconds_per_step from seconds(ranks, points per rank)."""
    runs = []
    for point in scaling.plan(mode, ranks, sizes):
        points = math.prod(point["elements"]) * 64
        run = dict(point, points=points, seconds_per_step=seconds(point["ranks"], points / point["ranks"]))
        runs.append(scaling.with_rates(run))
    return runs


def test_strong_efficiency():
    t1 = {"8": 0.8, "64": 6.4}
    # the time of P ranks: t1 / P times a known efficiency
    eff = {1: 1.0, 2: 0.9, 3: 0.7, 4: 0.5}
    runs = synthetic_runs("strong", [1, 2, 3, 4], ["8", "64"], lambda p, n: None)
    for r in runs:
        r["seconds_per_step"] = t1[r["size"]] / (r["ranks"] * eff[r["ranks"]])
    curves = scaling_analysis.scaling_curves(runs, "strong")
    for size in t1:
        assert curves[size]["reference_ranks"] == 1
        for row in curves[size]["rows"]:
            assert row["efficiency"] == pytest.approx(eff[row["ranks"]], rel=1e-12)
            assert row["speedup"] == pytest.approx(row["ranks"] * eff[row["ranks"]], rel=1e-12)


def test_weak_efficiency_against_the_smallest_rank_count():
    # without a 1-rank run the reference is the smallest rank count given
    runs = synthetic_runs("weak", [2, 4, 8], ["27"], lambda p, n: 1e-3 * (1 + 0.1 * np.log2(p)))
    rows = scaling_analysis.scaling_curves(runs, "weak")["27"]["rows"]
    assert [r["ranks"] for r in rows] == [2, 4, 8]
    for r in rows:
        e = 1.1 / (1 + 0.1 * np.log2(r["ranks"]))
        assert r["efficiency"] == pytest.approx(e, rel=1e-12)
        assert r["speedup"] == pytest.approx(e * r["ranks"] / 2, rel=1e-12)
        assert r["points_per_rank"] == 27 * 64


def test_fits_recover_half_performance_per_rank_count():
    # t = t0(P) + n / R(P) exactly: the fit per rank count gives t0, R and n_1/2 = t0 R back
    t0 = {1: 2e-4, 2: 5e-4, 3: 9e-4}
    rate = {1: 4e7, 2: 3e7, 3: 2.5e7}
    runs = synthetic_runs("weak", [1, 2, 3], ["1", "8", "64", "512"], lambda p, n: t0[p] + n / rate[p])
    fits = scaling_analysis.rank_fits(runs)
    assert set(fits) == {"1", "2", "3"}
    for p in t0:
        f = fits[str(p)]
        assert f["sizes"] == 4
        assert f["t0"] == pytest.approx(t0[p], rel=1e-9)
        assert f["peak_fit"] == pytest.approx(rate[p], rel=1e-9)
        assert f["n_half_fit"] == pytest.approx(t0[p] * rate[p], rel=1e-9)
    assert all("note" not in f for f in fits.values())
    # throughput that falls with size (a CPU out of cache) gives t0 < 0: said, not hidden
    falling = scaling_analysis.rank_fits(synthetic_runs("weak", [1], ["8", "64", "512"], lambda p, n: n / 1e7 - 1e-5))
    assert falling["1"]["t0"] == pytest.approx(-1e-5, rel=1e-9) and "t0 <= 0" in falling["1"]["note"]
    one = scaling_analysis.rank_fits(synthetic_runs("weak", [1, 2], ["8"], lambda p, n: 1e-3))
    assert "skipped" in one["1"] and "skipped" in one["2"]


def synthetic_study(mode="strong"):
    runs = synthetic_runs(mode, [1, 2, 4], ["8", "64", "512"], lambda p, n: 1e-4 * p + n / 3e7)
    record = {"benchmark": "scaling", "mode": mode, "order": 3, "backend": "cpu", "precision": "float64",
              "steps": 10, "device": "test", "date": "today", "runs": runs}
    return scaling_analysis.analyse(record)


def test_table_lists_every_run_and_fit():
    study = synthetic_study()
    table = scaling_analysis.format_table(study).splitlines()
    rows = [line.split() for line in table if line.split()[:1] in (["8"], ["64"], ["512"]) and "x" in line.split()[2]]
    assert len(rows) == 9
    for cols in rows:
        run = next(r for r in study["runs"] if r["size"] == cols[0] and r["ranks"] == int(cols[1]))
        assert float(cols[5]) == pytest.approx(run["seconds_per_step"] * 1e3, rel=1e-3)
        assert cols[3] == "auto>-"  # the setting, and what the run used (not recorded here)
    fits = [line.split() for line in table if line.split()[:2] in (["1", "3"], ["2", "3"], ["4", "3"])]
    assert len(fits) == 3


def test_plot_and_plot_from(tmp_path):
    pytest.importorskip("matplotlib")
    study = synthetic_study("weak")
    path = tmp_path / "study.json"
    path.write_text(json.dumps(study))
    result = lobatto("bench", "scaling", "--plot-from", str(path))
    assert result.returncode == 0, result.stderr
    png = tmp_path / "study.png"
    assert "figure written" in result.stdout and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert result.stdout.rstrip().endswith(scaling_analysis.format_table(study))  # the table is printed last


def test_figure_skipped_without_matplotlib(tmp_path, monkeypatch):
    from lobatto.bench.scaling_plot import plot_study

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    line = plot_study(synthetic_study(), tmp_path / "x.png")
    assert line.startswith("figure skipped: matplotlib") and not (tmp_path / "x.png").exists()


def one_line_error(result, code, *words):
    assert result.returncode == code, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lobatto: error:"), result.stderr
    for w in words:
        assert w in lines[0]


@pytest.mark.parametrize("argv, words", [
    ([], ["--strong or --weak"]),
    (["--weak", "--sizes", "4x4"], ["--sizes", "4x4"]),
    (["--weak", "--ranks", "0", "2"], ["--ranks"]),
    (["--strong", "--order", "0"], ["--order"]),
    (["--strong", "--steps", "2"], ["--steps"]),
    (["--weak", "--repeats", "0"], ["--repeats"]),
    (["--strong", "--sizes", "2", "--ranks", "3"], ["cannot be shared by 3 ranks"]),
    (["--strong", "--mpiexec", "/no/such/mpiexec"], ["--mpiexec", "/no/such/mpiexec"]),
])
def test_bad_options_are_one_line_and_exit_2(argv, words):
    one_line_error(lobatto("bench", "scaling", *argv), 2, *words)


def test_plot_from_a_file_that_is_not_a_study(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"benchmark": "maxwell"}))
    one_line_error(lobatto("bench", "scaling", "--plot-from", str(bad)), 2, str(bad))


def test_a_failing_run_reports_its_stderr_and_exits_1(tmp_path):
    # a launcher that fails the way a broken MPI or a crashed rank does
    fake = tmp_path / "fake_mpiexec"
    fake.write_text("#!/bin/sh\necho 'rank 1: the interconnect is on fire' >&2\nexit 3\n")
    fake.chmod(0o755)
    json_path = tmp_path / "s.json"
    result = lobatto("bench", "scaling", "--weak", "--sizes", "1", "--mpiexec", str(fake), "--json", str(json_path))
    one_line_error(result, 1, "exit code 3", "the interconnect is on fire", "P1_1x1x1")
    assert not json_path.exists()
