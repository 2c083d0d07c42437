"""Checkpoint and restart on one rank (docs/restart.md).

A run continued from a checkpoint equals the uninterrupted run bitwise on the same backend,
and to 1e-13 when the backend changes (NumPy reference kernels <-> compiled CPU kernels);
bad restarts (another case, a truncated or damaged part, a missing or unfinished checkpoint)
are one-line exit-2 errors naming what is wrong; the files are read back with plain h5py.
"""

from __future__ import annotations

import json
import shutil

import h5py
import numpy as np
import pytest

from lobatto import cli
from lobatto.api import Simulation, case_from_dict, with_changes
from lobatto.errors import InputError
from lobatto.io import checkpoint_dir
from lobatto.io.checkpoint import Checkpoint, write_checkpoint

MAXWELL = {
    "mesh": {"elements": [3, 2, 2], "deform": {"x": "0.04*sin(pi*x)*sin(pi*y)*sin(pi*z)"}},
    "discretization": {"order": 3},
    "initial": {"Ez": "sin(pi*x)*sin(pi*y)", "Hx": "0.3*cos(pi*z)*x"},
    "time": {"t_end": 0.4},
    "output": {"formats": ["hdf5"], "every": 6},
}
ACOUSTICS = {
    "physics": {"equations": "acoustics"},
    "mesh": {"elements": [2, 2, 3], "boundary": "wall"},
    "discretization": {"order": 4},
    "initial": {"p": "cos(pi*x)*cos(pi*y)*cos(pi*z)", "ux": "0.2*sin(pi*z)"},
    "time": {"t_end": 0.3, "integrator": "rk4"},
    "output": {"formats": ["hdf5"]},
}


@pytest.fixture(autouse=True)
def numpy_backend(monkeypatch):
    """backend="numpy": the NumPy reference kernels (NumpyBackend), which lobatto run does not
    offer by name; "cpu" runs the compiled C kernels."""
    from lobatto.runner import simulation as driver
    from lobatto.backends.numpy_backend import NumpyBackend

    real = driver.get_backend

    def get_backend(name, precision="float64", **kwargs):
        return NumpyBackend(precision=precision) if name == "numpy" else real(name, precision=precision, **kwargs)

    monkeypatch.setattr(driver, "get_backend", get_backend)


def uninterrupted(case, backend, directory):
    sim = Simulation(case, backend=backend, output_dir=directory, comm=None)
    sim.run()
    return sim


def continued(case, backend, directory, checkpoint):
    sim = Simulation(case, backend=backend, output_dir=directory, comm=None).restart(checkpoint)
    sim.run()
    return sim


def state(sim):
    return sim.backend.to_host(sim.u).copy()


@pytest.mark.parametrize("data,backend", [(MAXWELL, "cpu"), (ACOUSTICS, "cpu"), (MAXWELL, "numpy")],
                         ids=["maxwell-lsrk45-cpu", "acoustics-rk4-cpu", "maxwell-numpy"])
def test_continued_run_equals_the_uninterrupted_one_bitwise(tmp_path, data, backend):
    case = case_from_dict(data, name="run")
    full = uninterrupted(case, backend, tmp_path / "full")
    first = Simulation(case, backend=backend, output_dir=tmp_path / "part", comm=None)
    first.advance(7)
    path = first.checkpoint()
    assert path == tmp_path / "part" / "checkpoints" / "run_000007"
    first.close()  # one live run per directory: the continued run writes there
    rest = continued(case, backend, tmp_path / "part", path)
    assert rest.step_count == full.step_count and rest.t == full.t and rest.dt == full.dt
    assert np.array_equal(state(rest), state(full))
    assert rest.summary["energy"] == full.summary["energy"]
    assert rest.summary["restarts"][0]["step"] == 7 and "restarts" not in full.summary


def test_checkpoint_holds_what_the_docs_say(tmp_path):
    case = case_from_dict(MAXWELL, name="run")
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    sim.advance(4)
    path = sim.checkpoint(tmp_path / "here")
    with h5py.File(path / "index.h5", "r") as index, h5py.File(path / "rank00000.h5", "r") as part:
        attrs = dict(index.attrs)
        assert attrs["format"] == "lobatto-checkpoint" and attrs["step"] == 4 and attrs["time"] == sim.t
        assert attrs["dt"] == sim.dt and attrs["integrator"] == "lsrk45" and attrs["equations"] == "maxwell"
        assert attrs["ranks"] == 1 and attrs["backend"] == "cpu" and attrs["order"] == 3
        assert "[mesh]" in attrs["config"] and json.loads(attrs["field_names"])[0] == "Ex"
        assert list(index["parts/elements"][...]) == [12]
        assert index["parts/bytes"][0] == (path / "rank00000.h5").stat().st_size
        stored = part["state"]
        assert stored.shape == (12, 6, 4, 4, 4) and stored.fletcher32
        ids = part["element_ids"][...]
        assert np.array_equal(np.moveaxis(stored[...], 0, 1), sim.backend.to_host(sim.u))
        assert np.array_equal(ids, sim.system.mesh.element_ids)


def test_reading_by_global_id_in_any_order(tmp_path):
    rng = np.random.default_rng(7)
    total = 40
    # three "ranks" holding shuffled element ids, written with the serial writer one by one
    ids = rng.permutation(total)
    values = rng.standard_normal((total, 2, 3))
    cuts = [0, 11, 25, total]
    for rank in range(3):
        part = slice(cuts[rank], cuts[rank + 1])
        write_checkpoint(tmp_path / f"one{rank}", {"state": values[part]}, ids[part],
                         {"step": 1, "num_global_elements": total})
    # join them by hand into one three-part checkpoint
    joined = tmp_path / "joined"
    joined.mkdir()
    for rank in range(3):
        shutil.copy(tmp_path / f"one{rank}" / "rank00000.h5", joined / f"rank{rank:05d}.h5")
    with h5py.File(tmp_path / "one0" / "index.h5", "r") as source, h5py.File(joined / "index.h5", "w") as f:
        for key, value in source.attrs.items():
            if key != "index_sha256":  # the one part's checksum; joined by hand, the index has none
                f.attrs[key] = value
        f["parts/elements"] = np.diff(cuts)
        f["parts/bytes"] = [(joined / f"rank{r:05d}.h5").stat().st_size for r in range(3)]
        f["element_ids"] = ids
    wanted = rng.permutation(total)[:17]
    got = Checkpoint(joined).read(wanted)["state"]
    expected = values[np.argsort(ids)][wanted]
    assert np.array_equal(got, expected)
    with pytest.raises(InputError, match="element 40"):
        Checkpoint(joined).read([3, 40])


def test_arrays_with_an_empty_axis_are_written_and_read(tmp_path):
    """A Navier-Stokes checkpoint before the first step holds an empty projection basis, an
    array (E, 0, ...): HDF5 refuses chunks with a zero extent on any axis."""
    rng = np.random.default_rng(11)
    full = rng.standard_normal((5, 2, 3))
    empty = np.zeros((5, 0, 3))
    write_checkpoint(tmp_path / "ck", {"state": full, "basis": empty}, np.arange(5), {"step": 0, "num_global_elements": 5})
    got = Checkpoint(tmp_path / "ck").read(np.arange(5))
    assert np.array_equal(got["state"], full)
    assert got["basis"].shape == (5, 0, 3)


def test_numpy_and_cpu_backends_continue_each_other_to_1e13(tmp_path):
    case = case_from_dict(MAXWELL, name="run")
    full = uninterrupted(case, "cpu", tmp_path / "full")
    first = Simulation(case, backend="numpy", output_dir=tmp_path / "a", comm=None)
    first.advance(6)
    path = first.checkpoint()
    first.close()  # one live run per directory: the continued run writes there
    on_cpu = continued(case, "cpu", tmp_path / "a", path)
    scale = np.abs(state(full)).max()
    assert np.abs(state(on_cpu) - state(full)).max() <= 1e-13 * scale
    assert on_cpu.summary["restarts"][0]["step"] == 6
    second = Simulation(case, backend="cpu", output_dir=tmp_path / "b", comm=None)
    second.advance(6)
    path = second.checkpoint()
    second.close()
    on_numpy = continued(case, "numpy", tmp_path / "b", path)
    assert np.abs(state(on_numpy) - state(full)).max() <= 1e-13 * scale


def test_history_hook_round_trips_by_element(tmp_path):
    """A system with history (as Navier-Stokes' BDF will have): its arrays and numbers come
    back with the elements in this rank's order."""
    case = case_from_dict(MAXWELL, name="run")
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    ids = sim.system.mesh.element_ids
    lagged = np.stack([ids * 1.0, -ids * 2.0])[:, :, None]  # (2, E, 1): elements on axis 1
    sim.system.history = lambda: {"lagged": lagged, "dt_previous": 0.125}
    path = sim.checkpoint()
    other = Simulation(case, backend="cpu", output_dir=tmp_path / "b", comm=None)
    got = {}
    other.system.history = lambda: {"lagged": None, "dt_previous": 0.0}
    other.system.restore_history = got.update
    other.restart(path)
    assert got["dt_previous"] == 0.125 and np.array_equal(got["lagged"], lagged)
    plain = Simulation(case, backend="cpu", output_dir=tmp_path / "c", comm=None)
    with pytest.raises(InputError, match="history"):
        plain.restart(path)


def test_outputs_with_state_get_it_back(tmp_path):
    """An output that carries state between writes (the probes' time series) is handed its
    checkpoint_state() back through restore_checkpoint_state()."""

    class Series:
        def __init__(self, rows):
            self.rows = rows

        def checkpoint_state(self):
            return {"rows": self.rows, "file": "run_probes.csv"}

        def restore_checkpoint_state(self, state):
            self.rows = state["rows"]

    case = case_from_dict(MAXWELL, name="run")
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    sim.series = Series(rows=17)
    path = sim.checkpoint()
    sim.close()  # one live run per directory
    other = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    other.series = Series(rows=0)
    other.restart(path)
    assert other.series.rows == 17


def test_checkpoints_every_k_steps_keep_the_newest(tmp_path):
    case = case_from_dict({**MAXWELL, "checkpoint": {"every": 3, "keep": 2}}, name="run")
    sim = uninterrupted(case, "cpu", tmp_path)
    steps = [step for step, _ in checkpoint_dir.find_checkpoints(tmp_path, "run")]
    last_multiple = (sim.step_count - 1) // 3 * 3
    assert steps == [last_multiple, sim.step_count]  # the at-end one and the last before it
    assert checkpoint_dir.latest_checkpoint(tmp_path, "run").name == f"run_{sim.step_count:06d}"


@pytest.mark.parametrize("given, written", [({"at_end": True}, True), ({"at_end": False}, False), ({}, False),
                                            ({"every": 0, "at_end": True}, True)])
def test_at_end_alone_writes_the_final_checkpoint(tmp_path, given, written):
    """[checkpoint] at_end = true without every or wall_minutes: one checkpoint, at the end."""
    data = {**MAXWELL, "checkpoint": given} if given else MAXWELL
    case = case_from_dict(data, name="run")
    assert case_from_dict(case.to_dict(), name="run").checkpoint == case.checkpoint  # the effective config
    sim = uninterrupted(case, "cpu", tmp_path)
    found = checkpoint_dir.find_checkpoints(tmp_path, "run")
    if not written:
        assert found == [] and not case.checkpoint.enabled
        return
    assert [step for step, _ in found] == [sim.step_count]
    path = found[0][1]
    with h5py.File(path / "index.h5", "r") as index, h5py.File(path / "rank00000.h5", "r") as part:
        assert index.attrs["step"] == sim.step_count and index.attrs["time"] == sim.t
        assert np.array_equal(np.moveaxis(part["state"][...], 0, 1), state(sim))
    sim.close()
    longer = with_changes(case, {"time.t_end": 0.5})  # the final checkpoint extends the run
    rest = continued(longer, "cpu", tmp_path, path)
    assert rest.step_count > sim.step_count and 0.5 <= rest.t < 0.5 + rest.dt  # docs/restart.md: at most a dt past


def test_wall_minutes_checkpoints(tmp_path, monkeypatch):
    from lobatto.runner import schedule

    case = case_from_dict({**MAXWELL, "checkpoint": {"wall_minutes": 1.0, "keep": 50, "at_end": False}}, name="run")
    clock = [0.0]

    def fake_clock():
        clock[0] += 25.0  # every reading of the clock is 25 s later: a checkpoint every few steps
        return clock[0]

    monkeypatch.setattr(schedule.time, "monotonic", fake_clock)
    sim = uninterrupted(case, "cpu", tmp_path)
    steps = [step for step, _ in checkpoint_dir.find_checkpoints(tmp_path, "run")]
    assert len(steps) >= 2 and steps[-1] < sim.step_count
    assert all(b - a >= 1 for a, b in zip(steps, steps[1:]))


@pytest.mark.parametrize("compression", ["gzip", "lz4", "zstd"])
def test_compressed_checkpoints_and_snapshots(tmp_path, compression):
    pytest.importorskip("hdf5plugin")
    data = {**MAXWELL, "checkpoint": {"every": 5, "keep": 50, "compression": compression},
            "output": {"formats": ["hdf5"], "compression": compression}}
    case = case_from_dict(data, name="run")
    plain = uninterrupted(case_from_dict(MAXWELL, name="run"), "cpu", tmp_path / "plain")
    packed = uninterrupted(case, "cpu", tmp_path / "packed")
    assert np.array_equal(state(packed), state(plain))  # compression changes no value
    last = plain.summary["outputs"][-1]["files"][0]
    with h5py.File(tmp_path / "plain" / last, "r") as a, h5py.File(tmp_path / "packed" / last, "r") as b:
        filters = b["fields/Ez"]._filters  # HDF5's filter pipeline of the dataset
        assert "shuffle" in filters and {"gzip": "gzip", "lz4": "32004", "zstd": "32015"}[compression] in filters
        assert not a["fields/Ez"]._filters
        for name in ("fields/Ez", "fields/Hx", "mesh/x"):
            assert np.array_equal(a[name][...], b[name][...])
    checkpoint = tmp_path / "packed" / "checkpoints" / "run_000005"
    with h5py.File(checkpoint / "rank00000.h5", "r") as f:
        filters = f["state"]._filters
        assert "fletcher32" in filters and {"gzip": "gzip", "lz4": "32004", "zstd": "32015"}[compression] in filters
    rest = continued(case, "cpu", tmp_path / "again", checkpoint)
    assert np.array_equal(state(rest), state(plain))


def test_missing_hdf5plugin_is_a_clear_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "hdf5plugin", None)  # import hdf5plugin now fails
    with pytest.raises(InputError, match=r'\[checkpoint\] compression = "zstd" needs the hdf5plugin package'):
        case_from_dict({**MAXWELL, "checkpoint": {"compression": "zstd"}}, name="run")
    case_from_dict({**MAXWELL, "checkpoint": {"compression": "gzip"}}, name="run")  # built into HDF5


# ------------------------------------------------------------------ the command line
CASE = """
[mesh]
elements = [3, 2, 2]
[discretization]
order = 4
[initial]
Ez = "sin(pi*x)*sin(pi*y)"
[time]
t_end = 0.3
[output]
every = 4
[checkpoint]
every = 5
keep = 5
"""


def lobatto(capsys, *args):
    code = cli.main(["run", *map(str, args), "--quiet"])
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("lobatto: error:")]
    return code, errors


@pytest.fixture()
def finished(tmp_path, capsys):
    """A finished run with checkpoints at steps 5, 10 and the end (11)."""
    case = tmp_path / "cavity.toml"
    case.write_text(CASE)
    code, errors = lobatto(capsys, case, "-o", tmp_path / "out")
    assert code == 0, errors
    return case, tmp_path / "out"


def final_fields(directory):
    summary = json.loads((directory / "summary.json").read_text())
    with h5py.File(directory / summary["outputs"][-1]["files"][0], "r") as f:
        return summary, np.stack([f[f"fields/{n}"][...] for n in f.attrs["field_names"]])


def test_cli_restart_latest_and_explicit(finished, tmp_path, capsys):
    case, out = finished
    summary, expected = final_fields(out)
    assert [s for s, _ in checkpoint_dir.find_checkpoints(out, "cavity")] == [5, 10, 11]
    # a fresh run into the same directory is refused: it would mix with the checkpoints
    code, errors = lobatto(capsys, case, "-o", out)
    assert code == 2 and "--overwrite" in errors[0]
    # continuing from step 5 would write steps 8 and 11 again: refused, then allowed
    code, errors = lobatto(capsys, case, "-o", out, "--restart", out / "checkpoints" / "cavity_000005")
    assert code == 2 and "after step 5" in errors[0] and "cavity_000008.h5" in errors[0]
    assert (out / "cavity_000004.h5").exists()
    code, errors = lobatto(capsys, case, "-o", out, "--restart", out / "checkpoints" / "cavity_000005", "--overwrite")
    assert code == 0, errors
    assert (out / "cavity_000004.h5").exists()  # the earlier snapshot is kept
    again, fields = final_fields(out)
    assert np.array_equal(fields, expected)
    assert [o["step"] for o in again["outputs"]] == [o["step"] for o in summary["outputs"]]
    assert again["restarts"][0]["step"] == 5
    # extend the run: a larger t_end from the latest (the end) checkpoint
    longer = tmp_path / "longer" / "cavity.toml"
    longer.parent.mkdir()
    longer.write_text(CASE.replace("t_end = 0.3", "t_end = 0.6"))
    code, errors = lobatto(capsys, longer, "-o", out, "--restart", "latest")
    assert code == 0, errors
    extended, _ = final_fields(out)
    assert extended["steps"] == 22 and abs(extended["t_final"] - 0.6) < 1e-12
    assert extended["restarts"][-1]["step"] == 11 and len(extended["restarts"]) == 2


BAD_CASES = {
    "order": ([("order = 4", "order = 5")], "[discretization] order differs"),
    "elements": ([("elements = [3, 2, 2]", "elements = [2, 3, 2]")], "[mesh] elements differs"),
    "upper": ([("[discretization]", "upper = [1.0, 2.0, 1.0]\n[discretization]")], "[mesh] upper differs"),
    "equations": ([('Ez = "sin(pi*x)*sin(pi*y)"', 'p = "x"'), ("[initial]", '[physics]\nequations = "acoustics"\n'
                                                                          "[initial]")],
                  "[physics] equations differs"),
    "integrator": ([("t_end = 0.3", 't_end = 0.3\nintegrator = "rk4"')], "[time] integrator differs"),
    "t_end": ([("t_end = 0.3", "t_end = 0.1")], "is before the time of the checkpoint"),
}


@pytest.mark.parametrize("what", sorted(BAD_CASES))
def test_restart_with_an_incompatible_case(finished, tmp_path, capsys, what):
    case, out = finished
    changes, fragment = BAD_CASES[what]
    text = CASE
    for change in changes:
        text = text.replace(*change)
    other = tmp_path / "other" / "cavity.toml"
    other.parent.mkdir()
    other.write_text(text)
    code, errors = lobatto(capsys, other, "-o", tmp_path / "new", "--restart", out / "checkpoints" / "cavity_000010")
    assert code == 2 and len(errors) == 1, errors
    assert fragment in errors[0] and "cavity.toml" in errors[0]


def test_bad_checkpoint_files(finished, tmp_path, capsys):
    case, out = finished
    new = tmp_path / "new"

    def refused(path, *fragments):
        code, errors = lobatto(capsys, case, "-o", new, "--restart", path)
        assert code == 2 and len(errors) == 1, errors
        for fragment in fragments:
            assert fragment in errors[0], errors[0]

    refused(tmp_path / "nowhere", "nowhere: no such checkpoint")
    refused(case, "not a checkpoint")
    code, errors = lobatto(capsys, case, "-o", new, "--restart", "latest")
    assert code == 2 and "no checkpoint of 'cavity'" in errors[0]
    # truncated part
    damaged = tmp_path / "truncated"
    shutil.copytree(out / "checkpoints" / "cavity_000010", damaged)
    part = damaged / "rank00000.h5"
    part.write_bytes(part.read_bytes()[:-1000])
    refused(damaged, "rank00000.h5", "truncated")
    # no index
    shutil.copytree(out / "checkpoints" / "cavity_000010", tmp_path / "noindex")
    (tmp_path / "noindex" / "index.h5").unlink()
    refused(tmp_path / "noindex", "index.h5: missing")
    # a flipped byte inside the stored state: the chunk's checksum fails
    flipped = tmp_path / "flipped"
    shutil.copytree(out / "checkpoints" / "cavity_000010", flipped)
    part = flipped / "rank00000.h5"
    with h5py.File(part, "r") as f:
        offset = f["state"].id.get_chunk_info(0).byte_offset
    raw = bytearray(part.read_bytes())
    raw[offset + 100] ^= 0xFF
    part.write_bytes(bytes(raw))
    refused(flipped, "rank00000.h5", "cannot read the checkpoint part")
    # an unfinished checkpoint (the temporary of a killed writer)
    unfinished = out / "checkpoints" / "cavity_000012.tmp-99999"
    shutil.copytree(out / "checkpoints" / "cavity_000010", unfinished)
    refused(unfinished, "unfinished checkpoint")
    # it is not "latest", and the next run of that name removes it
    assert checkpoint_dir.latest_checkpoint(out, "cavity").name == "cavity_000011"
    longer = tmp_path / "longer.toml"
    longer.write_text(CASE.replace("t_end = 0.3", "t_end = 0.4").replace("[output]", "[output]\nname = \"cavity\""))
    code, errors = lobatto(capsys, longer, "-o", out, "--restart", "latest")
    assert code == 0, errors
    assert not unfinished.exists()


def test_a_checkpoint_is_replaced_only_when_the_new_one_is_complete(tmp_path, monkeypatch):
    """A failing write leaves the checkpoint of the same name and no temporary."""
    from lobatto.errors import LobattoError, OutputError
    from lobatto.io import checkpoint

    case = case_from_dict(MAXWELL, name="run")
    sim = Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    sim.advance(2)
    path = sim.checkpoint(tmp_path / "ck")
    before = (path / "rank00000.h5").read_bytes()

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checkpoint, "_write_index", disk_full)
    sim.advance(1)
    with pytest.raises(LobattoError, match="No space left on device"):
        sim.checkpoint(tmp_path / "ck")
    monkeypatch.undo()
    assert (path / "rank00000.h5").read_bytes() == before
    kept = [".lobatto.lock", "ck"]  # the live Simulation holds its output directory's lock (io.run_lock)
    assert sorted(p.name for p in tmp_path.iterdir()) == kept
    monkeypatch.setattr(checkpoint, "_write_part", disk_full)
    with pytest.raises(OutputError, match="ck/rank00000.h5: cannot write"):
        sim.checkpoint(tmp_path / "ck")
    assert sorted(p.name for p in tmp_path.iterdir()) == kept
    assert Checkpoint(path).attrs["step"] == 2


def test_with_changes_keeps_checkpoint_settings():
    case = case_from_dict({**MAXWELL, "checkpoint": {"every": 4, "wall_minutes": 30}}, name="run")
    changed = with_changes(case, {"checkpoint.keep": 3})
    assert (changed.checkpoint.every, changed.checkpoint.wall_minutes, changed.checkpoint.keep) == (4, 30.0, 3)
    with pytest.raises(InputError, match=r"\[checkpoint\] keep must be an integer >= 1"):
        with_changes(case, {"checkpoint.keep": 0})
