"""`lobatto bench navier-stokes` on the CPU: a tiny TGV's throughput and time-to-solution
records (read back from the JSON), a case file's, the comparison with the 512^3 reference on
histories whose peak is known, and bad options refused with exit 2."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lobatto.bench.navier_stokes_report import REFERENCE_PEAK, compare_with_reference, find_reference, peak

ROOT = Path(__file__).resolve().parent.parent.parent
# 2^3 elements at N = 3 is the smallest TGV that runs; at CFL 0.5 it blows up within a few
# steps (under-resolved), at 0.05 it does not
TINY = ["--backend", "cpu", "--elements", "2", "--order", "3", "--cfl", "0.05"]


def bench(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1")
    env.pop("LOBATTO_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "lobatto", "bench", "navier-stokes", *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=cwd)


def test_throughput_record(tmp_path):
    out = tmp_path / "ns.json"
    proc = bench(*TINY, "--steps", "3", "--warmup", "2", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    r = json.loads(out.read_text())
    assert r["benchmark"] == "navier-stokes" and r["mode"] == "throughput"
    assert r["meta"]["commit"] and r["meta"]["device"] and r["backend"]["name"] == "cpu"
    c = r["case"]
    assert c["points"] == 8 * 4**3 and c["order"] == 3 and c["integrator"] == "bdf2" and c["substeps"] == 0
    assert c["cfl"] == 0.05 and c["target_cfl"] is None
    assert r["steps"] == 3 and r["warmup"] == 2 and r["t"] == pytest.approx(5 * c["dt"])
    assert r["point_steps_per_second"] == pytest.approx(c["points"] / r["seconds_per_step"], rel=1e-12)
    assert r["pressure_iterations_per_step"] >= 1 and r["velocity_iterations_per_step"] >= 1
    assert 0 < r["cfl"] < 0.1
    parts = r["parts"]
    assert {"advection", "pressure", "velocity", "diagnostics", "untimed"} <= set(parts)
    assert sum(p["share"] for p in parts.values()) == pytest.approx(1.0)
    assert sum(p["seconds"] for p in parts.values()) == pytest.approx(r["seconds_per_step"])
    assert parts["pressure"]["share"] > 0.1  # the pressure solve is a real part of every step
    assert {"operator", "smoother", "coarse_solve", "other"} <= set(r["pressure_parts"])
    assert r["pressure_profile"]["steps"] == 3
    assert "point-steps/s" in proc.stdout and "pressure solve's parts" in proc.stdout


def test_time_to_solution_record(tmp_path):
    out = tmp_path / "ns.json"
    proc = bench(*TINY, "--t-end", "0.5", "--diagnostics-every", "2", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    r = json.loads(out.read_text())
    assert r["mode"] == "time_to_solution" and r["case"]["t_end"] == 0.5
    assert r["t_end"] == pytest.approx(0.5, abs=1e-12)  # a fixed dt lands on t_end
    assert r["steps"] >= 5 and r["steps"] * r["mean_dt"] == pytest.approx(0.5)
    assert r["total_seconds"] == pytest.approx(r["setup_seconds"] + r["run_seconds"])
    assert r["seconds_per_step"] == pytest.approx(r["run_seconds"] / r["steps"])
    assert r["first_steps"]["steps"] == 2 and 0 < r["first_steps"]["seconds"] < r["run_seconds"]
    assert r["seconds_per_step_after_first"] == pytest.approx(
        (r["run_seconds"] - r["first_steps"]["seconds"]) / (r["steps"] - 2))
    h = r["history"]
    assert h["t"][0] == 0.0 and h["t"][-1] == pytest.approx(0.5) and len(h["t"]) == len(h["kinetic_energy"]) >= 4
    assert h["kinetic_energy"][0] == pytest.approx(0.125, rel=0.05)  # 1/8, by an under-resolved quadrature
    assert all(a > b for a, b in zip(h["kinetic_energy"][1:], h["kinetic_energy"][2:]))  # it decays
    ref = r["reference"]
    assert ref["reference_peak"] == pytest.approx(REFERENCE_PEAK[1], abs=1e-7)
    assert ref["reference_peak_time"] == pytest.approx(REFERENCE_PEAK[0])
    # the dissipation grows until t ~ 9: by t = 0.5 its peak is not reached (the largest -dE/dt
    # is at an end of the run: t = 0, the initial projection's loss, is left out), and it says so
    assert ref["peak_reached"] is False and ref["relative_difference"] is None
    assert ref["peak_minus_dEdt"] > 0 and ref["peak_dissipation"] > 0
    assert ref["peak_time"] in (pytest.approx(h["t"][1]), pytest.approx(0.5))
    assert "not reached by t = 0.5" in proc.stdout


def test_a_case_file_runs_in_throughput_mode(tmp_path):
    out = tmp_path / "ns.json"
    proc = bench("--backend", "cpu", "--case", str(ROOT / "examples" / "beltrami.toml"), "--order", "2",
                 "--steps", "2", "--warmup", "1", "--no-profile", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    r = json.loads(out.read_text())
    c = r["case"]
    assert c["name"] == "beltrami" and c["integrator"] == "bdf3" and c["dt"] == 1e-3 and c["cfl"] is None
    assert c["points"] == 27 * 3**3 and r["steps"] == 2 and "pressure_parts" not in r


def test_peak_of_a_known_history():
    """-dE/dt = P - a (t - T)^2 sampled every 0.1: the peak (P, T) back, and the reference's
    README figures when no file is given."""
    p, t_peak, a = 0.0125, 8.9, 1e-3
    t = np.arange(0.0, 12.0 + 1e-9, 0.1)
    energy = 0.125 - (p * t - a * ((t - t_peak) ** 3 + t_peak**3) / 3)  # dE/dt = -(P - a (t - T)^2)
    r = compare_with_reference({"t": list(t), "kinetic_energy": list(energy), "dissipation": list(0.9 * energy)},
                               None)
    assert r["peak_reached"] and r["peak_time"] == pytest.approx(t_peak, abs=1e-6)
    # centred differences of a cubic are off by h^2 E'''/6: -dE/dt by a h^2 / 3
    assert r["peak_minus_dEdt"] == pytest.approx(p - a * 0.1**2 / 3, rel=1e-9)
    assert r["reference_peak"] == REFERENCE_PEAK[1] and r["relative_difference"] == pytest.approx(
        r["peak_minus_dEdt"] / REFERENCE_PEAK[1] - 1)
    assert peak([0, 1, 2], [1.0, 2.0, 3.0]) == (2.0, 3.0, False)


def test_the_reference_history_against_itself():
    reference = find_reference(None)
    if reference is None:
        pytest.skip("the shared TGV reference is not beside this repository")
    ref = np.loadtxt(reference, comments="#")[::5]  # every 0.05
    r = compare_with_reference({"t": list(ref[:, 0]), "kinetic_energy": list(ref[:, 1]),
                                "dissipation": list(ref[:, 2])}, reference)
    assert r["reference_peak"] == pytest.approx(0.0128575, abs=1e-7) and r["reference_peak_time"] == 8.97
    assert r["peak_reached"] and abs(r["relative_difference"]) < 1e-3 and abs(r["time_difference"]) < 0.02
    assert r["energy_max_relative_difference"] < 1e-12
    assert math.isclose(r["final"]["kinetic_energy"], r["final"]["reference_kinetic_energy"], rel_tol=1e-12)


@pytest.mark.parametrize("args, fragment", [
    (["--elements", "0"], "--elements must be >= 1"),
    (["--order", "0"], "--order must be >= 1"),
    (["--steps", "0"], "--steps must be >= 1"),
    (["--t-end", "-1"], "--t-end must be a positive number"),
    (["--t-end", "1", "--steps", "3"], "--steps and --warmup are the throughput mode's"),
    (["--substeps", "-1"], "--substeps must be >= 0"),
    (["--case", "examples/acoustics_mode.toml"], "needs a Navier–Stokes case"),
    (["--case", "examples/tgv.toml", "--elements", "3"], "with --case, set [mesh] elements"),
    (["--case", "missing.toml"], "missing.toml: no such case file"),
    (["--t-end", "1", "--reference", "missing.gdiag"], "--reference missing.gdiag: no such file"),
    (["--reference", "missing.gdiag"], "the throughput mode does not"),
    (["--elements", "2", "--order", "3", "--pressure-coarse", "nonsense"], "coarse"),
])
def test_bad_options_exit_2(args, fragment):
    proc = bench("--backend", "cpu", *args, cwd=ROOT)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lobatto: error:") and fragment in lines[0], proc.stderr
    assert proc.stdout == ""  # nothing measured


def test_cfl_and_target_cfl_are_one_or_the_other():
    proc = bench("--backend", "cpu", "--cfl", "0.5", "--target-cfl", "0.5")
    assert proc.returncode == 2 and "not allowed with argument" in proc.stderr


def test_options_change_only_their_keys():
    """The parser's options as case keys: [time] substeps only above 0, one rule for the step,
    the pressure solver's coarse and precision; a case file's other keys stay as written."""
    from lobatto.bench.cli import bench_parser
    from lobatto.bench.navier_stokes import apply_options, tgv_data

    def changed(*argv, data=None):
        args = bench_parser().parse_args(["navier-stokes", *argv])
        return apply_options(data or tgv_data(2, 3), args, "time" if args.t_end else "throughput")

    d = changed()
    assert d["time"] == {"integrator": "bdf2", "t_end": 20.0, "cfl": 0.5} and d["physics"]["diagnostics_every"] == 10
    d = changed("--substeps", "2", "--target-cfl", "3", "--max-cfl", "5", "--integrator", "bdf3", "--t-end", "4",
                "--pressure-coarse", "pcg", "--precision", "float32")
    assert d["time"] == {"integrator": "bdf3", "t_end": 4.0, "target_cfl": 3.0, "substeps": 2, "max_cfl": 5.0}
    assert d["solver"]["pressure"]["coarse"] == "pcg" and d["solver"]["pressure"]["precision"] == "float32"
    assert d["physics"]["diagnostics_every"] == 5
    case = {"physics": {"equations": "navier_stokes", "diagnostics_every": 3},
            "time": {"integrator": "bdf3", "dt": 1e-3, "t_end": 0.1}}
    d = changed("--case", "x.toml", "--substeps", "0", data=json.loads(json.dumps(case)))
    assert d["time"] == case["time"] and d["physics"]["diagnostics_every"] == 3  # the file's own step
    d = changed("--case", "x.toml", "--cfl", "0.3", data=json.loads(json.dumps(case)))
    assert d["time"] == {"integrator": "bdf3", "t_end": 0.1, "cfl": 0.3}
    sub_stepped = {**case, "time": {**case["time"], "substeps": 2}}
    d = changed("--case", "x.toml", data=json.loads(json.dumps(sub_stepped)))
    assert d["time"]["substeps"] == 2  # no --substeps: the file's own
    d = changed("--case", "x.toml", "--substeps", "0", data=json.loads(json.dumps(sub_stepped)))
    assert "substeps" not in d["time"]  # --substeps 0 turns them off
