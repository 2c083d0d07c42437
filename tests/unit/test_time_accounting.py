"""The run summary's seconds per step is the wall clock's over the loop: the loop's time is the
warm-up steps plus rate_steps x seconds_per_step and nothing else (outputs are accounted
separately), and what ``Simulation.run`` takes beyond the accounted parts is small. The
reconciliation against whole-process timings on the GPU is benchmarks/
seconds_per_step_reconcile.py (docs/benchmarks.md)."""

from __future__ import annotations

import time

from lobatto.api import Simulation, case_from_dict

CASE = {
    "mesh": {"elements": [3, 3, 2]},
    "discretization": {"order": 3},
    "initial": {"Ez": "sin(pi*x)*sin(pi*y)", "Hx": "0.2*cos(pi*z)"},
    "time": {"t_end": 2.0},
    "output": {"formats": ["hdf5"], "every": 10},
}


def test_loop_time_is_warmup_plus_rate_window(tmp_path):
    started = time.perf_counter()
    sim = Simulation(case_from_dict(CASE, name="acct"), backend="cpu", output_dir=tmp_path, comm=None)
    built = time.perf_counter()
    summary = sim.run()
    ran = time.perf_counter()
    account = summary["time_accounting"]
    assert summary["steps"] > 40 and account["warmup_steps"] == 2
    assert summary["rate_steps"] == summary["steps"] - 2
    assert account["rate_seconds"] == summary["seconds_per_step"] * summary["rate_steps"]
    # the loop is the warm-up and the rate window: the finite checks and the stepping's host work
    # are inside the rate window, only the snapshots are taken out (and counted)
    loop = account["warmup_seconds"] + account["rate_seconds"]
    assert abs(loop - summary["wall_seconds"]) <= 1e-9 * summary["wall_seconds"]
    assert account["loop_seconds"] == summary["wall_seconds"]
    assert account["output_seconds"] > 0 and account["final_output_seconds"] > 0
    assert 0 < account["setup_seconds"] <= built - started
    accounted = summary["wall_seconds"] + account["output_seconds"] + account["final_output_seconds"]
    outside = (ran - built) - accounted  # the summary itself, the errors, the first sample
    assert outside >= 0 and outside <= 0.25 * (ran - built) + 0.2
