"""`lobatto doctor` on one rank, in process: the checks run for real (a gather-scatter on fresh
random data against NumPy, the kernel caches, the versions), and failures forced in process
(a corrupted exchange, an unwritable C kernel cache, --backend cuda without a GPU) give exit 1
and a FAIL verdict naming the rank and the check. The verdict logic over several ranks (GPU
mapping, versions) is tested on constructed rows; tests/mpi/test_doctor_mpi.py runs 1-3 ranks."""

from __future__ import annotations

import json
import socket
from collections import defaultdict

import numpy as np
import pytest

from lobatto import cli
from lobatto.bench import doctor, doctor_exchange, doctor_probe
from lobatto.comm.gather_scatter import GatherScatter


def run_doctor(tmp_path, capsys, *options):
    path = tmp_path / "doctor.json"
    code = cli.main(["doctor", "--json", str(path), *options])
    out = capsys.readouterr().out
    return code, out.strip().splitlines()[-1], json.loads(path.read_text())


def test_one_rank_passes_and_reports_everything(tmp_path, capsys):
    code, last, report = run_doctor(tmp_path, capsys, "--backend", "cpu")  # the same on a GPU machine
    assert code == 0 and report["exit_code"] == 0
    assert last == report["verdict"]
    assert last.startswith("doctor: OK (1 rank, cpu; transports: host ok")
    assert "nccl not available: one rank" in last
    (row,) = report["rows"]
    assert row["rank"] == 0 and row["size"] == 1 and row["hostname"] == socket.gethostname()
    (host,) = report["transports"]["host"]["ranks"]
    # a real check: thousands of values compared, sums of several points per id, round-off only
    assert host["ok"] and host["values_checked"] > 1000 and host["data"] == "numpy"
    assert 0 <= host["max_relative_error"] <= 1e-12
    assert host["exchange_used"] == "local" and host["neighbours"] == 0
    assert not report["transports"]["nccl"]["available"]
    names = {c["name"]: c for c in row["caches"]}
    assert names["C kernels (jit.c)"]["writable"]
    for key in ("lobatto", "python", "numpy", "h5py", "mpi4py", "cupy", "matplotlib", "gmsh", "cuda_runtime"):
        assert key in row["packages"]
    assert row["packages"]["numpy"] == np.__version__
    assert report["meta"]["command"].startswith("lobatto doctor --json")


def test_corrupted_exchange_fails_naming_rank_and_transport(tmp_path, capsys, monkeypatch):
    finish = GatherScatter.finish

    def corrupted(self, handle):
        out = finish(self, handle)
        handle.u2[:, 0] += 0.5
        return out

    monkeypatch.setattr(GatherScatter, "finish", corrupted)
    code, last, report = run_doctor(tmp_path, capsys)
    assert code == 1 and report["exit_code"] == 1
    assert last == "doctor: FAIL: rank 0: host exchange wrong (max error 0.5)"
    assert report["transports"]["host"]["ranks"][0]["max_error"] == pytest.approx(0.5)


def test_unwritable_kernel_cache_fails(tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("LOBATTO_CACHE_DIR", str(blocker / "cache"))  # unwritable even for root
    code, last, report = run_doctor(tmp_path, capsys)
    assert code == 1
    assert last.startswith(f"doctor: FAIL: rank 0: C kernels (jit.c) cache {blocker / 'cache'} is not writable (")
    cache = report["rows"][0]["caches"][0]
    assert cache["set_by"] == "LOBATTO_CACHE_DIR" and not cache["writable"]


def test_backend_cuda_without_gpu_fails(tmp_path, capsys):
    pytest.importorskip("numpy")
    if doctor_probe.cupy_reason() is None:
        pytest.skip("this machine has a GPU")
    code, last, _ = run_doctor(tmp_path, capsys, "--backend", "cuda")
    assert code == 1 and last.startswith("doctor: FAIL: rank 0: backend cuda: no ")


@pytest.mark.parametrize("options, words", [
    (["--bytes", "lots"], "argument --bytes: expected a size in bytes"),
    (["--bytes", "4"], "argument --bytes: expected between 8 bytes"),
    (["--repeats", "0"], "argument --repeats: expected a positive int"),
    (["--backend", "gpu"], "argument --backend: invalid choice"),
    (["--json", "/nonexistent-dir/x.json"], "the directory /nonexistent-dir does not exist"),
])
def test_bad_options_are_one_line_exit_2(options, words, capsys):
    assert cli.main(["doctor", *options]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lobatto: error: doctor: ") and words in err[0], err


def test_parse_bytes():
    assert doctor.parse_bytes("4096") == 4096
    assert doctor.parse_bytes("1e6") == 1_000_000
    assert doctor.parse_bytes("64K") == 65536
    assert doctor.parse_bytes("1MiB") == doctor.parse_bytes("1m") == 1 << 20
    assert doctor.parse_bytes("2G") == 2 << 30


def test_problem_every_pair_exchanges_and_reference_is_the_sum():
    ids, owner, data = doctor_exchange.problem(seed=7, size=4)
    for p in range(4):
        for q in range(p + 1, 4):
            assert set(ids[owner == p]) & set(ids[owner == q]) - {0}
    assert (ids == 0).any() and np.bincount(np.unique(ids[ids > 0], return_counts=True)[1]).size > 3
    want, scale = doctor_exchange.reference(ids, data)
    sums = defaultdict(lambda: np.zeros(data.shape[0]))
    for i, k in enumerate(ids):
        sums[k] += data[:, i]
    for i, k in enumerate(ids):
        np.testing.assert_allclose(want[:, i], data[:, i] if k == 0 else sums[k], rtol=1e-13, atol=1e-13)
    assert np.all(scale >= np.abs(want) - 1e-12)
    other = doctor_exchange.problem(seed=8, size=4)[2]
    assert not np.array_equal(other[:, :10], data[:, :10])


def test_pair_ids_shared_by_exactly_two_ranks():
    size, n = 4, 5
    every = np.concatenate([doctor_exchange.pair_ids(r, size, n) for r in range(size)])
    _, counts = np.unique(every, return_counts=True)
    assert len(counts) == n * size * (size - 1) // 2 and np.all(counts == 2)


def row(rank, host, bus, visible=("b0", "b1"), share=False, physical=None, **packages):
    return {"rank": rank, "hostname": host, "share_gpus": share,
            "visible": {"devices": [{"pci_bus_id": b} for b in visible], "physical_gpus": physical},
            "device": {"backend": "cuda", "pci_bus_id": bus},
            "packages": {"lobatto": "1", "python": "3", "numpy": "2", **packages}}


def test_two_ranks_on_one_gpu_with_enough_gpus_fail():
    failures, notes = doctor_probe.mapping_problems([row(0, "n1", "b0"), row(1, "n1", "b0")])
    assert len(failures) == 1 and not notes
    assert failures[0].startswith("ranks 0, 1 on n1 use the same GPU b0 while the host has 2 GPUs for its 2 ranks")


def test_each_rank_restricted_to_one_gpu_uses_nvml_count():
    rows = [row(0, "n1", "b0", visible=("b0",), share=True, physical=4),
            row(1, "n1", "b0", visible=("b0",), share=True, physical=4)]
    failures, _ = doctor_probe.mapping_problems(rows)
    assert failures and "4 GPUs for its 2 ranks" in failures[0]


def test_sharing_on_purpose_is_a_note_and_without_it_a_failure():
    shared = [row(r, "n1", "b0", visible=("b0",), share=True) for r in range(3)]
    failures, notes = doctor_probe.mapping_problems(shared)
    assert not failures and notes == ["ranks 0, 1, 2 on n1 use the same GPU b0 on purpose "
                                      "(LOBATTO_SHARE_GPUS=1, 1 GPU for 3 ranks)"]
    unshared = [row(r, "n1", "b0", visible=("b0",)) for r in range(2)]
    assert doctor_probe.mapping_problems(unshared)[0] == [
        "ranks 0, 1 on n1 use the same GPU b0 without LOBATTO_SHARE_GPUS=1"]


def test_same_bus_on_different_hosts_is_fine():
    assert doctor_probe.mapping_problems([row(0, "n1", "b0"), row(1, "n2", "b0")]) == ([], [])
    assert doctor_probe.mapping_problems([row(0, "n1", "b0"), row(1, "n1", "b1")]) == ([], [])


def test_versions_that_differ_between_ranks_fail():
    rows = [row(0, "n1", "b0"), row(1, "n2", "b0", numpy="1.26"), row(2, "n3", "b0", numpy="1.26")]
    assert doctor_probe.version_mismatches(rows) == ["numpy differs between ranks: 2 on rank 0; 1.26 on ranks 1, 2"]
    assert doctor_probe.version_mismatches(rows[1:]) == []


def test_backend_choice_over_ranks():
    assert doctor._choose_backend("auto", [None, None]) == ("cuda", None, [])
    assert doctor._choose_backend("auto", ["no CuPy", "no CuPy"]) == ("cpu", "no CuPy", [])
    backend, _, failures = doctor._choose_backend("auto", [None, "no GPU"])
    assert backend == "cpu" and failures == ["GPUs on some ranks only: rank 1: no GPU"]
    assert doctor._choose_backend("cuda", ["no GPU", None])[2] == ["rank 0: backend cuda: no GPU"]
    assert doctor._choose_backend("cpu", [None]) == ("cpu", "--backend cpu", [])


def test_verdict_groups_a_failure_met_on_several_ranks():
    bad = {"ok": False, "problem": "exchange wrong (max error 0.5)"}
    found = {"backend": "cpu", "failures": [], "rows": [],
             "transports": {"host": {"available": True, "ranks": [{"ok": True}, bad, bad]}}}
    failures, _ = doctor.judge(found)
    assert doctor.verdict(found, failures) == ("doctor: FAIL: ranks 1, 2: host exchange wrong (max error 0.5)", 1)


def test_version_codes_as_text():
    assert doctor_probe.nccl_version_text(21805) == "2.18.5"
    assert doctor_probe.nccl_version_text(2708) == "2.7.8"
    assert doctor_probe.cuda_version_text(12040) == "12.4"
    assert doctor_probe.cuda_version_text(11080) == "11.8"
