"""The communication model: LogGP fits, the exchange pattern, the weak-scaling prediction and
the errors of `lobatto bench comm-model` (docs/comm-model.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lobatto.bench import comm_loggp
from lobatto.bench.comm_model import CASES, predict_step, weak_scaling
from lobatto.bench.comm_pattern import block_pattern, partition_pattern, rank_grid
from lobatto.errors import InputError

SRC = Path(__file__).resolve().parents[2] / "src"


def synthetic(rng, L, o, g, G, noise=0.02):
    sizes = [8 * 4**k for k in range(10)]
    pp = [{"bytes": b, "seconds_one_way": (L + 2 * o + b * G) * (1 + noise * rng.standard_normal())} for b in sizes]
    burst = [{"messages": k, "seconds_post": (0.3e-6 + k * o) * (1 + noise * rng.standard_normal()),
              "seconds_total": (2e-6 + k * g) * (1 + noise * rng.standard_normal())} for k in (1, 2, 4, 8, 16, 32, 64)]
    return pp, burst


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fit_recovers_loggp(seed):
    rng = np.random.default_rng(seed)
    L, o, g, G = rng.uniform(0.5e-6, 5e-6), rng.uniform(0.1e-6, 1e-6), rng.uniform(1.2e-6, 3e-6), 1 / rng.uniform(5e9, 50e9)
    pp, burst = synthetic(rng, L, o, g, G)
    p = comm_loggp.fit(pp, burst)
    assert p.latency == pytest.approx(L + 2 * o, rel=0.05)
    assert p.G == pytest.approx(G, rel=0.05)
    assert p.o == pytest.approx(o, rel=0.1)
    assert p.g == pytest.approx(g, rel=0.1)
    assert p.L == pytest.approx(L, rel=0.15)
    assert 0 < p.residuals["pingpong"] < 0.1


def test_sysbench_json(tmp_path):
    rng = np.random.default_rng(5)
    pp, _ = synthetic(rng, 1e-6, 0, 0, 1 / 10e9, noise=0.0)
    gg = [{"transport": "nccl", "bytes": b, "chunk_bytes": None, "seconds": 8e-6 + b / 100e9} for b in (1e3, 1e6, 1e8)]
    gg += [{"transport": "host", "bytes": b, "chunk_bytes": c, "seconds": 2e-5 + b / 20e9 * (2 if c else 1)}
           for b in (1e3, 1e6) for c in (None, 65536)]
    path = tmp_path / "sys.json"
    path.write_text(json.dumps({"results": {"mpi_pingpong": {"rows": pp}, "gpu_gpu": {"rows": gg}}}))
    mpi = comm_loggp.from_sysbench(path)
    assert mpi.latency == pytest.approx(1e-6, rel=1e-6) and mpi.G == pytest.approx(1e-10, rel=1e-6)
    nccl = comm_loggp.from_sysbench(path, "nccl")
    assert nccl.latency == pytest.approx(8e-6, rel=1e-6) and 1 / nccl.G == pytest.approx(100e9, rel=1e-6)
    host = comm_loggp.from_sysbench(path, "host")  # the faster chunking of each size
    assert 1 / host.G == pytest.approx(20e9, rel=1e-6)
    with pytest.raises(InputError, match="cuda-aware-mpi.*nccl"):
        comm_loggp.from_sysbench(path, "cuda-aware-mpi")


@pytest.mark.parametrize("periodic", [False, True])
def test_partition_matches_block_pattern(periodic):
    """lobatto's rcb of an 8^3 box on 8 ranks is a 2x2x2 grid of 4^3 blocks: every rank's pattern
    equals the block model's."""
    pats = partition_pattern((8, 8, 8), 8, periodic=(periodic,) * 3)
    block = block_pattern((4, 4, 4), rank_grid(8), periodic)
    for p in pats:
        assert p.elements == 64
        assert sorted(p.neighbours.values()) == sorted(block.neighbours.values())
        assert p.halo_elements == block.halo_elements
    assert block.halo_elements == 64 - (8 if periodic else 27)  # interior 2^3 or 3^3
    # 16 faces of (N+1)^2 points, 6 traces, 8 bytes
    assert set(pats[0].message_bytes(5).values()) == {(32 if periodic else 16) * 36 * 6 * 8}


def test_block_pattern_interior_rank():
    p = block_pattern((5, 5, 5), (4, 4, 4))
    assert len(p.neighbours) == 6 and set(p.neighbours.values()) == {25}
    assert p.halo_elements == 125 - 27
    assert rank_grid(16384) == (32, 32, 16)


@pytest.mark.parametrize("case", list(CASES))
def test_weak_scaling_monotone(case):
    params = comm_loggp.ASSUMED["ib-hdr200"]
    rows = weak_scaling(CASES[case], params, rate=6e9, n_half=1e5)
    assert rows[0]["ranks"] == 1 and rows[-1]["ranks"] == 16384
    assert rows[0]["efficiency"] == 1.0 and rows[0]["efficiency_overlap"] == 1.0
    for key in ("efficiency", "efficiency_overlap"):
        eff = [r[key] for r in rows]
        assert all(b <= a + 1e-12 for a, b in zip(eff, eff[1:])), (key, eff)
        assert 0 < eff[-1] < 1
    # a slower network can only lower the efficiency
    slow = comm_loggp.LogGP(L=params.L * 10, o=params.o, g=params.g, G=params.G * 10)
    slow_rows = weak_scaling(CASES[case], slow, rate=6e9, n_half=1e5)
    assert all(s["efficiency"] <= r["efficiency"] for s, r in zip(slow_rows, rows))


def test_step_time_by_hand():
    """One neighbour, no overlap: 5 (t_c + L + 2o + m G) + allreduce / 20."""
    params = comm_loggp.LogGP(L=1e-6, o=0.5e-6, g=1e-6, G=1e-9)
    pat = block_pattern((2, 2, 2), (2, 1, 1))
    r = predict_step(pat, 3, 2, params, rate=1e8)
    m = 4 * 16 * 6 * 8
    t_c = 8 * 64 / 1e8
    assert r["step_seconds"] == pytest.approx(5 * (t_c + 2e-6 + m * 1e-9) + (2e-6 + 8e-9) / 20)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fit_software_recovers_local_and_byte_costs(seed):
    """Synthetic exchange times of blocks of varying shape (volume over shared surface varies):
    the non-negative fit recovers the per-value and per-byte costs and the constant."""
    from lobatto.bench.comm_measure import FIT_BLOCKS, fit_software, weak_box
    from lobatto.bench.comm_model import Software, local_trace_values, network_time

    rng = np.random.default_rng(seed)
    params = comm_loggp.LogGP(L=1e-6, o=0.8e-6, g=1e-6, G=1 / 7e9)
    truth = Software(s0=rng.uniform(5e-6, 50e-6), s1=rng.uniform(5e-9, 40e-9), s_v=rng.uniform(5e-9, 30e-9))
    rows = []
    for ranks in (2, 3):
        for block in FIT_BLOCKS:
            pats = partition_pattern(weak_box(block, ranks), ranks)
            busiest = max(pats, key=lambda p: (p.elements, sum(p.message_bytes(5).values())))
            sizes = list(busiest.message_bytes(5).values())
            V = local_trace_values(busiest.elements, 5)
            t = network_time(params, sizes, ranks) + truth.seconds(V, sum(sizes))
            rows.append({"ranks": ranks, "message_bytes": sizes, "local_values": V,
                         "seconds": t * (1 + 0.01 * rng.standard_normal())})
    fit = fit_software(params, rows)
    assert fit.s_v == pytest.approx(truth.s_v, rel=0.1)
    assert fit.s1 == pytest.approx(truth.s1, rel=0.25)
    assert fit.s0 == pytest.approx(truth.s0, rel=0.5, abs=3e-6)
    # a local cost alone (no per-byte cost): the per-byte term stays at (about) zero, not negative
    only_local = [dict(r, seconds=network_time(params, r["message_bytes"], r["ranks"]) + 20e-9 * r["local_values"])
                  for r in rows]
    fit = fit_software(params, only_local)
    assert fit.s_v == pytest.approx(20e-9, rel=1e-6) and fit.s1 == pytest.approx(0, abs=1e-15) and fit.s0 >= 0


def test_nonnegative_lstsq_agrees_with_scipy():
    from scipy.optimize import nnls

    from lobatto.bench.comm_measure import nonnegative_lstsq

    rng = np.random.default_rng(7)
    for _ in range(20):
        A = rng.uniform(0, 1, (8, 3))
        y = A @ rng.normal(size=3) + 0.1 * rng.normal(size=8)
        w = rng.uniform(0.5, 2, 8)
        x, _ = nonnegative_lstsq(A, y, w)
        ref, _ = nnls(A * w[:, None], y * w)
        assert np.all(x >= 0)
        assert np.linalg.norm((A @ x - y) * w) == pytest.approx(np.linalg.norm((A @ ref - y) * w), rel=1e-9, abs=1e-12)


def test_software_not_hidden_by_overlap():
    """With overlap only the network part hides behind the interior's compute; the software
    part (same core) adds to the stage in both variants."""
    from lobatto.bench.comm_model import Software, local_trace_values

    params = comm_loggp.LogGP(L=1e-6, o=0.5e-6, g=1e-6, G=1e-9)
    sw = Software(s0=1e-6, s1=2e-9, s_v=3e-9)
    pat = block_pattern((4, 4, 4), (2, 1, 1))
    r = predict_step(pat, 3, 2, params, rate=1e8, software=sw)
    m = 16 * 16 * 6 * 8
    t_net, t_sw = 2e-6 + m * 1e-9, 1e-6 + 3e-9 * local_trace_values(64, 3) + 2e-9 * m
    t_c, f = 64 * 64 / 1e8, 1 - 16 / 64
    t_ar = (2e-6 + 8e-9) / 20
    assert r["exchange_software_seconds"] == pytest.approx(t_sw) and r["exchange_network_seconds"] == pytest.approx(t_net)
    assert r["step_seconds"] == pytest.approx(5 * (t_c + t_net + t_sw) + t_ar)
    assert r["step_seconds_overlap"] == pytest.approx(5 * (t_c * (1 - f) + t_sw + max(t_c * f, t_net)) + t_ar)


def lobatto(*argv, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, "-m", "lobatto", "bench", "comm-model", *argv], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=120)


@pytest.mark.parametrize("content, expect", [
    (None, "no such file"),
    ("not json", "not a JSON file"),
    ('{"hostname": "x"}', "no 'results' table"),
    ('{"results": {"mpi_allreduce": {"rows": []}}}', "no results.mpi_pingpong section"),
    ('{"results": {"mpi_pingpong": {"skipped": "needs 2 or more MPI ranks"}}}', "was skipped: needs 2"),
    ('{"results": {"mpi_pingpong": {"rows": [{"bytes": 8}]}}}', "need numbers 'bytes' and 'seconds_one_way'"),
])
def test_bad_sysbench_one_line_exit_2(tmp_path, content, expect):
    path = tmp_path / "sys.json"
    if content is not None:
        path.write_text(content)
    res = lobatto("--sysbench", str(path), tmp_path=tmp_path)
    assert res.returncode == 2, res.stderr
    assert expect in res.stderr and str(path) in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_bad_rate_and_measure_on_one_rank(tmp_path):
    res = lobatto("--rate", "7=fast", tmp_path=tmp_path)
    assert res.returncode == 2 and "--rate '7=fast'" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = lobatto("--measure", tmp_path=tmp_path)
    assert res.returncode == 2 and "2 or more MPI ranks" in res.stderr


def test_cli_writes_json(tmp_path):
    res = lobatto("--max-ranks", "64", "--json", "out.json", tmp_path=tmp_path)
    assert res.returncode == 0, res.stderr
    data = json.loads((tmp_path / "out.json").read_text())
    assert {s["case"] for s in data["studies"]} == set(CASES)
    assert data["studies"][0]["rows"][-1]["ranks"] == 64 and data["meta"]["command"].startswith("lobatto")
    assert "eff ovl" in res.stdout


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fit_stage_term_recovers_constant_and_per_element(seed):
    """Synthetic in-run stages (alone + isolated exchange as modelled + r0 + r_e E, 1 % noise) over the
    stage blocks and one more: add_stage_term recovers r0 and r_e, signed (a negative r0, as
    on a fused GPU path whose exchange is cheaper than the isolated one, is kept)."""
    from lobatto.bench.comm_measure import STAGE_BLOCKS, add_stage_term, weak_box
    from lobatto.bench.comm_model import Software, local_trace_values, network_time

    rng = np.random.default_rng(seed)
    params = comm_loggp.LogGP(L=1e-6, o=0.8e-6, g=1e-6, G=1 / 7e9)
    sw = Software(s0=20e-6, s_v=8e-9, s1=1e-9)
    r0, r_e = rng.uniform(-50e-6, 50e-6), rng.uniform(2e-6, 20e-6)
    rows = []
    for block in (*STAGE_BLOCKS, (6, 4, 4)):
        pats = partition_pattern(weak_box(block, 2), 2)
        busiest = max(pats, key=lambda p: (sum(p.message_bytes(5).values()), p.halo_elements))
        sizes = list(busiest.message_bytes(5).values())
        exchange = network_time(params, sizes, 2) + sw.seconds(local_trace_values(busiest.elements, 5), sum(sizes))
        E = int(np.prod(block))
        # the node-shared compute (alone) is the compute term's and must not leak into the fit
        alone = rng.uniform(1e-4, 1e-3) * E
        beyond = (exchange + r0 + r_e * E) * (1 + 0.01 * rng.standard_normal())
        rows.append({"block": list(block), "elements": E, "ranks": 2, "alone_stage_seconds": alone,
                     "stage_seconds": alone + beyond, "beyond_alone": beyond})
    add_stage_term(params, sw, rows, 5)
    assert sw.r_e == pytest.approx(r_e, rel=0.1)
    assert sw.r0 == pytest.approx(r0, abs=20e-6)
    for r in rows:
        assert r["predicted_beyond_alone"] == pytest.approx(r["beyond_alone"], rel=0.05)
    # one block size: the constant alone
    one = [dict(rows[2]), dict(rows[2])]
    sw1 = Software(s0=20e-6, s_v=8e-9, s1=1e-9)
    add_stage_term(params, sw1, one, 5)
    assert sw1.r_e == 0 and sw1.r0 == pytest.approx(rows[2]["beyond_alone"] - rows[2]["exchange_model"])


def test_stage_term_in_the_step():
    """The stage term adds r0 + r_e E to every stage's exchange on P > 1 (not hidden by the
    overlap, not on one rank), and the software sum never goes below zero."""
    from lobatto.bench.comm_model import Software, local_trace_values

    params = comm_loggp.LogGP(L=1e-6, o=0.5e-6, g=1e-6, G=1e-9)
    base = Software(s0=1e-6, s1=2e-9, s_v=3e-9)
    staged = Software(s0=1e-6, s1=2e-9, s_v=3e-9, r0=4e-6, r_e=5e-6)
    pat = block_pattern((4, 4, 4), (2, 1, 1))
    a = predict_step(pat, 3, 2, params, rate=1e8, software=base)
    b = predict_step(pat, 3, 2, params, rate=1e8, software=staged)
    term = 4e-6 + 5e-6 * 64
    assert b["stage_term_seconds"] == pytest.approx(term)
    assert b["step_seconds"] - a["step_seconds"] == pytest.approx(5 * term)
    assert b["step_seconds_overlap"] - a["step_seconds_overlap"] == pytest.approx(5 * term)
    one = block_pattern((4, 4, 4), (1, 1, 1))
    assert predict_step(one, 3, 1, params, rate=1e8, software=staged)["step_seconds"] == pytest.approx(
        predict_step(one, 3, 1, params, rate=1e8)["step_seconds"])
    negative = Software(s0=1e-6, s_v=1e-9, r0=-1.0)
    assert negative.seconds(local_trace_values(64, 3), 100, 64) == 0.0


def test_read_params_round_trip(tmp_path):
    """read_params takes back every field of the Software a --measure JSON stores (the stage
    term and the backend included) and accepts an older file without them."""
    from lobatto.bench.comm_study import read_params
    from lobatto.bench.comm_model import Software

    lg = comm_loggp.LogGP(L=1e-6, o=0.5e-6, g=1e-6, G=1e-9, source="t")
    sw = Software(s0=1e-6, s1=2e-9, source="x", s_v=3e-9, r0=-4e-6, r_e=5e-6, stage_source="y", backend="cuda")
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"measured": {"loggp": lg.as_dict(), "software": vars(sw)}}))
    assert read_params(path)[1] == sw
    old = {k: v for k, v in vars(sw).items() if k in ("s0", "s1", "source", "s_v")}
    path.write_text(json.dumps({"measured": {"loggp": lg.as_dict(), "software": old}}))
    got = read_params(path)[1]
    assert (got.r0, got.r_e, got.backend) == (0.0, 0.0, "cpu") and got.s_v == sw.s_v


def test_bandwidth_share_from_stream_rows():
    """Per-process share of the node's STREAM triad: 1 alone and while the total grows
    linearly, the measured per-thread ratio at the measured counts, linear in P between them,
    the last per-thread share beyond, never above 1; no rows (or no 1-thread row) gives 1."""
    from lobatto.bench.comm_model import bandwidth_share

    rows = [{"threads": 1, "triad": 10e9}, {"threads": 2, "triad": 20.4e9}, {"threads": 4, "triad": 36e9},
            {"threads": 8, "triad": 48e9}]
    assert bandwidth_share(1, rows) == 1.0
    assert bandwidth_share(2, rows) == 1.0  # 10.2 GB/s per process: capped at alone
    assert bandwidth_share(4, rows) == pytest.approx(0.9)
    assert bandwidth_share(8, rows) == pytest.approx(0.6)
    assert bandwidth_share(6, rows) == pytest.approx(42e9 / 6 / 10e9)
    assert bandwidth_share(16, rows) == pytest.approx(0.6)
    assert bandwidth_share(4, list(reversed(rows))) == pytest.approx(0.9)
    assert bandwidth_share(4, []) == 1.0 and bandwidth_share(4, rows[1:]) == 1.0


def test_bandwidth_share_slows_compute_only():
    """predict_step's rate_factor scales the compute term and nothing else."""
    from lobatto.bench.comm_model import predict_step

    params = comm_loggp.LogGP(L=1e-6, o=0.8e-6, g=1e-6, G=1 / 7e9)
    pat = partition_pattern((8, 4, 4), 2)[0]
    full = predict_step(pat, 5, 2, params, 2e7)
    half = predict_step(pat, 5, 2, params, 2e7, rate_factor=0.5)
    assert half["compute_seconds_per_stage"] == pytest.approx(2 * full["compute_seconds_per_stage"])
    assert half["exchange_seconds"] == full["exchange_seconds"]
    assert half["step_seconds"] - full["step_seconds"] == pytest.approx(5 * full["compute_seconds_per_stage"])


def test_nothing_to_model_names_what_is_missing(tmp_path):
    res = lobatto("--network", "none", tmp_path=tmp_path)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "a --network other than none" in res.stderr
