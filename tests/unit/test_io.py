"""Output writers: HDF5 and Nek5000 round trips, atomic replacement, summary."""

from __future__ import annotations

import errno
import json
import os
import struct

import numpy as np
import pytest

from lobatto.errors import OutputError
from lobatto.io import atomic, hdf5, hdf5_parts, nek5000, summary

NAMES = ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz")
NEK_NAMES = {"velocity": NAMES[0:3], "scalars": NAMES[3:6]}  # the Maxwell layout


@pytest.fixture
def rng():
    return np.random.default_rng()


def random_state(rng, dtype=np.float64):
    order = int(rng.integers(1, 6))
    nel = int(rng.integers(1, 9))
    n = order + 1
    coords = rng.uniform(-3, 3, size=(3, nel, n, n, n)).astype(dtype)
    fields = rng.standard_normal((6, nel, n, n, n)).astype(dtype)
    return order, coords, fields


def leftovers(directory) -> list[str]:
    return [p.name for p in directory.iterdir() if ".tmp-" in p.name]


# --------------------------------------------------------------------------- HDF5
def test_hdf5_round_trip(rng, tmp_path):
    order, coords, fields = random_state(rng)
    t, step = float(rng.uniform(0, 10)), int(rng.integers(0, 10**6))
    config = '[mesh]\nelements = [1, 2, 3]\n# "quoted" \u00e9\n'
    path = tmp_path / "snap.h5"
    hdf5.write_snapshot(path, coords, fields, NAMES, t, step, order, config,
                        extra_attrs={"backend": "cpu", "ranks": 2})
    assert leftovers(tmp_path) == []
    snap = hdf5.read_snapshot(path)
    assert np.array_equal(snap["coords"], coords) and snap["coords"].dtype == np.float64
    assert list(snap["fields"]) == list(NAMES)
    for i, name in enumerate(NAMES):
        assert np.array_equal(snap["fields"][name], fields[i])
    assert snap["time"] == t and snap["step"] == step and snap["order"] == order
    assert snap["config"] == config
    attrs = snap["attrs"]
    assert attrs["layout"] == "E,t,s,r"
    assert attrs["backend"] == "cpu" and attrs["ranks"] == 2
    from lobatto import __version__

    assert attrs["lobatto_version"] == __version__


def test_hdf5_layout_on_disk(rng, tmp_path):
    import h5py

    order, coords, fields = random_state(rng)
    path = tmp_path / "snap.h5"
    hdf5.write_snapshot(path, coords, fields, NAMES, 0.5, 3, order, "")
    n = order + 1
    with h5py.File(path, "r") as f:
        for i, c in enumerate("xyz"):
            assert f["mesh"][c].shape == (coords.shape[1], n, n, n)
            assert np.array_equal(f["mesh"][c][...], coords[i])
        for i, name in enumerate(NAMES):
            assert np.array_equal(f[f"fields/{name}"][...], fields[i])
        assert f.attrs["time"] == 0.5 and f.attrs["step"] == 3 and f.attrs["order"] == order


def test_hdf5_rejects_bad_shapes(rng, tmp_path):
    order, coords, fields = random_state(rng)
    with pytest.raises(ValueError, match="coords"):
        hdf5.write_snapshot(tmp_path / "a.h5", coords, fields, NAMES, 0, 0, order + 1, "")
    with pytest.raises(ValueError, match="field"):
        hdf5.write_snapshot(tmp_path / "a.h5", coords, fields[:, :, :-1], NAMES, 0, 0, order, "")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------ Nek5000
def test_nek_round_trip_float64(rng, tmp_path):
    order, coords, fields = random_state(rng)
    t, step = float(rng.uniform(0, 10)), int(rng.integers(0, 10**6))
    path = tmp_path / "cavity0.f00001"
    nek5000.write_field_file(path, coords, fields, t, step, order)
    assert leftovers(tmp_path) == []
    data = nek5000.read_field_file(path, **NEK_NAMES)
    assert np.array_equal(data["coords"], coords)
    for i, name in enumerate(NAMES):
        assert np.array_equal(data["fields"][name], fields[i]), name
    assert data["step"] == step and data["order"] == order and data["wdsz"] == 8
    assert data["time"] == pytest.approx(t, rel=1e-12)
    assert data["rdcode"] == "XUS03"
    assert list(data["element_ids"]) == list(range(1, coords.shape[1] + 1))


def test_nek_round_trip_float32(rng, tmp_path):
    order, coords, fields = random_state(rng)
    path = tmp_path / "c0.f00002"
    nek5000.write_field_file(path, coords, fields, 1.25, 7, order, wdsz=4)
    data = nek5000.read_field_file(path, **NEK_NAMES)
    assert data["wdsz"] == 4 and data["coords"].dtype == np.float32
    np.testing.assert_allclose(data["coords"], coords, rtol=1e-6, atol=1e-6)
    for i, name in enumerate(NAMES):
        np.testing.assert_allclose(data["fields"][name], fields[i], rtol=1e-6, atol=1e-6)
    assert not np.array_equal(data["fields"]["Ex"].astype(np.float64), fields[0])  # really float32


def test_nek_byte_layout(rng, tmp_path):
    """Check the layout independently of our reader: header, tag, map, X, U, S."""
    order, coords, fields = random_state(rng)
    nel, n = coords.shape[1], order + 1
    npts = n**3
    path = tmp_path / "c0.f00001"
    nek5000.write_field_file(path, coords, fields, 0.75, 12, order)
    raw = path.read_bytes()
    header = raw[:132].decode("ascii").split()
    assert header[0] == "#std" and header[1] == "8"
    assert header[2:5] == [str(n)] * 3
    assert header[5:7] == [str(nel)] * 2
    assert float(header[7]) == 0.75 and header[8] == "12"
    assert header[9:] == ["0", "1", "XUS03"]
    assert abs(struct.unpack("<f", raw[132:136])[0] - 6.54321) < 1e-6
    ids = np.frombuffer(raw, "<i4", nel, 136)
    assert list(ids) == list(range(1, nel + 1))
    body = np.frombuffer(raw, "<f8", 9 * nel * npts, 136 + 4 * nel)
    X = body[: 3 * nel * npts].reshape(nel, 3, n, n, n)  # element, then component
    U = body[3 * nel * npts : 6 * nel * npts].reshape(nel, 3, n, n, n)
    S = body[6 * nel * npts :].reshape(3, nel, n, n, n)  # scalar, then element
    for c in range(3):
        assert np.array_equal(X[:, c], coords[c])
        assert np.array_equal(U[:, c], fields[c])
        assert np.array_equal(S[c], fields[3 + c])
    # i (r) runs fastest: consecutive values in the file are coords[..., k, j, i], i = 0, 1.
    first = np.frombuffer(raw, "<f8", 2, 136 + 4 * nel)
    assert first[0] == coords[0, 0, 0, 0, 0] and first[1] == coords[0, 0, 0, 0, 1]
    # 3D metadata: float32 (min, max) for 3 + 3 + 3 components per element.
    assert len(raw) == 136 + 4 * nel + 9 * nel * npts * 8 + 9 * nel * 2 * 4
    meta = np.frombuffer(raw, "<f4", offset=136 + 4 * nel + 9 * nel * npts * 8)
    assert meta[0] == np.float32(coords[0, 0].min()) and meta[1] == np.float32(coords[0, 0].max())


def test_nek_custom_element_ids_sorted_on_read(rng, tmp_path):
    order, coords, fields = random_state(rng)
    nel = coords.shape[1]
    perm = rng.permutation(nel)
    ids = perm + 1  # block b holds global element perm[b]
    path = tmp_path / "p0.f00001"
    nek5000.write_field_file(path, coords, fields, 0.0, 0, order, element_ids=ids)
    data = nek5000.read_field_file(path, **NEK_NAMES)
    inv = np.argsort(perm)
    assert np.array_equal(data["coords"], coords[:, inv])
    assert np.array_equal(data["fields"]["Hz"], fields[5][inv])


def test_nek_dict_fields_accepted(rng, tmp_path):
    order, coords, fields = random_state(rng)
    path = tmp_path / "d0.f00001"
    nek5000.write_field_file(path, coords, dict(zip(NAMES, fields)), 0.0, 0, order, **NEK_NAMES)
    assert np.array_equal(nek5000.read_field_file(path, **NEK_NAMES)["fields"]["Hy"], fields[4])


def test_nek_read_with_pymech(rng, tmp_path):
    pymech = pytest.importorskip("pymech", reason="pymech is optional (pip install pymech)")
    order, coords, fields = random_state(rng)
    path = tmp_path / "case0.f00003"
    nek5000.write_field_file(path, coords, fields, 0.5, 40, order)
    data = pymech.readnek(str(path))
    assert data.nel == coords.shape[1] and tuple(data.lr1) == (order + 1,) * 3
    assert data.istep == 40 and data.time == pytest.approx(0.5)
    for e, el in enumerate(data.elem):
        assert np.array_equal(el.pos, coords[:, e])
        assert np.array_equal(el.vel, fields[0:3, e])
        assert np.array_equal(el.scal, fields[3:6, e])


def test_index_file(tmp_path, rng):
    k = int(rng.integers(1, 500))
    path = tmp_path / "cavity.nek5000"
    nek5000.write_index(path, "cavity", 1, k)
    assert path.read_text() == (
        f"filetemplate: cavity%01d.f%05d\nfirsttimestep: 1\nnumtimesteps: {k}\n"
    )
    assert nek5000.field_file_name("cavity", 3) == "cavity0.f00003"
    assert nek5000.field_file_name("cavity", 3) == "cavity%01d.f%05d" % (0, 3)
    assert leftovers(tmp_path) == []


# --------------------------------------------------------------------- HDF5 parts
def test_hdf5_parts_joined_by_virtual_snapshot(tmp_path, rng):
    """Two ranks' parts (written here one after the other) read back as one snapshot."""
    order, coords, fields = random_state(rng)
    nel = coords.shape[1]
    split = int(rng.integers(0, nel + 1))
    ids = rng.permutation(nel)
    path = tmp_path / "cav_000004.h5"
    attrs = dict(time=0.4, step=4, order=order, config_toml="c")
    for rank, (lo, hi) in enumerate(((0, split), (split, nel))):
        part = hdf5_parts.write_snapshot_part(path, rank, coords[:, lo:hi], fields[:, lo:hi], NAMES, ids[lo:hi],
                                              **attrs)
        assert part == tmp_path / "parts" / f"cav_000004.r{rank:05d}.h5"
    hdf5_parts.write_virtual_snapshot(path, [split, nel - split], order, NAMES, np.float64,
                                      {"time": 0.4, "step": 4, "order": order, "field_names": list(NAMES)})
    snap = hdf5.read_snapshot(path)
    assert np.array_equal(snap["element_ids"], ids)
    assert np.array_equal(snap["coords"], coords)
    assert np.array_equal(snap["fields"]["Hy"], fields[4])
    assert leftovers(tmp_path) == [] and leftovers(tmp_path / "parts") == []


def test_failing_part_write_names_the_part_file(tmp_path, rng, monkeypatch):
    order, coords, fields = random_state(rng)
    path = tmp_path / "cav_000008.h5"

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "replace", full)
    with pytest.raises(OutputError) as info:
        hdf5_parts.write_snapshot_part(path, 3, coords, fields, NAMES, np.arange(coords.shape[1]),
                                       time=0.8, step=8, order=order, config_toml="c")
    assert str(info.value) == f"{tmp_path / 'parts' / 'cav_000008.r00003.h5'}: cannot write (no space left on device)"
    assert list((tmp_path / "parts").iterdir()) == []


# ------------------------------------------------------------------------- atomic
def test_atomic_write_replaces_and_leaves_no_temp(tmp_path, rng):
    path = tmp_path / "out.bin"
    first = rng.bytes(1000)
    second = rng.bytes(2000)
    atomic.atomic_write_bytes(path, first)
    atomic.atomic_write_bytes(path, second)
    assert path.read_bytes() == second
    assert leftovers(tmp_path) == []


def test_failing_write_keeps_previous_file(tmp_path, rng):
    path = tmp_path / "out.txt"
    old = rng.bytes(64).hex()
    atomic.atomic_write_text(path, old)
    with pytest.raises(RuntimeError, match="boom"):
        with atomic.atomic_open(path, "w") as fh:
            fh.write("partial new content")
            assert atomic.temp_path_for(path).exists()
            assert atomic.temp_path_for(path).name == f"out.txt.tmp-{os.getpid()}"
            raise RuntimeError("boom")
    assert path.read_text() == old
    assert leftovers(tmp_path) == []


def test_failing_hdf5_write_keeps_previous_file(tmp_path, rng, monkeypatch):
    order, coords, fields = random_state(rng)
    path = tmp_path / "snap.h5"
    hdf5.write_snapshot(path, coords, fields, NAMES, 1.0, 1, order, "old")
    before = path.read_bytes()

    def broken(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(atomic.temp_path_for(path)))

    monkeypatch.setattr(atomic.os, "replace", broken)
    # an OSError while writing becomes a one-line OutputError naming the final file
    with pytest.raises(OutputError, match="no space left on device") as info:
        hdf5.write_snapshot(path, coords * 2, fields, NAMES, 2.0, 2, order, "new")
    assert str(info.value) == f"{path}: cannot write (no space left on device)"
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert hdf5.read_snapshot(path)["config"] == "old"
    assert leftovers(tmp_path) == []


def test_failing_nek_write_keeps_previous_file(tmp_path, rng, monkeypatch):
    order, coords, fields = random_state(rng)
    path = tmp_path / "c0.f00001"
    nek5000.write_field_file(path, coords, fields, 1.0, 1, order)
    before = path.read_bytes()

    def broken(*args, **kwargs):  # fails after the field data is already written
        raise RuntimeError("interrupted mid-file")

    monkeypatch.setattr(nek5000.np, "stack", broken)
    with pytest.raises(RuntimeError, match="mid-file"):
        nek5000.write_field_file(path, coords * 2, fields, 2.0, 2, order)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert leftovers(tmp_path) == []
    with pytest.raises(ValueError, match="must have shape"):
        nek5000.write_field_file(path, coords, fields[:, :-1], 2.0, 2, order)
    assert path.read_bytes() == before


# ------------------------------------------------------------------------ summary
def make_summary(rng) -> dict:
    return {
        "case": "cavity",
        "order": np.int64(rng.integers(1, 10)),
        "elements": int(rng.integers(1, 1000)),
        "points": int(rng.integers(1, 10**6)),
        "steps": np.int32(rng.integers(1, 1000)),
        "t_final": np.float64(rng.random()),
        "wall_seconds": float(rng.uniform(0.1, 100)),
        "seconds_per_step": float(rng.random()),
        "point_steps_per_second": float(rng.uniform(1e5, 1e9)),
        "gflops": float(rng.uniform(0.1, 100)),
        "backend": "cpu",
        "ranks": 1,
        "errors": {n: {"l2": float(rng.random()), "max": np.float32(rng.random())} for n in NAMES}
        | {"all": {"l2": float(rng.random()), "max": float(rng.random())}},
        "energy": {"initial": float(rng.random()), "final": float(rng.random())},
        "outputs": [{"step": 100, "time": 0.8, "files": ("a.h5", "a0.f00001")}],
        "config": {"mesh": {"elements": (4, 4, 4)}},
        "shape": np.arange(3),
    }


def test_summary_json_round_trip(tmp_path, rng):
    s = make_summary(rng)
    path = tmp_path / "summary.json"
    summary.write_summary(path, s)
    assert leftovers(tmp_path) == []
    back = json.loads(path.read_text())
    assert back == summary.read_summary(path)
    assert back["order"] == int(s["order"]) and isinstance(back["order"], int)
    assert back["t_final"] == float(s["t_final"])
    assert back["errors"]["Ez"]["max"] == float(s["errors"]["Ez"]["max"])
    assert back["errors"]["all"]["l2"] == s["errors"]["all"]["l2"]
    assert back["outputs"][0]["files"] == ["a.h5", "a0.f00001"]
    assert back["config"]["mesh"]["elements"] == [4, 4, 4]
    assert back["shape"] == [0, 1, 2]


def test_summary_non_finite_becomes_null(tmp_path):
    path = tmp_path / "summary.json"
    summary.write_summary(path, {"a": float("nan"), "b": np.float64("inf"), "c": 1.5})
    assert json.loads(path.read_text()) == {"a": None, "b": None, "c": 1.5}


def test_summary_table(rng):
    s = make_summary(rng)
    table = summary.format_summary_table(s)
    for label in ("order", "elements", "points", "steps", "t_final", "wall time", "s/step",
                  "point-steps/s", "GFLOP/s", "backend", "ranks", "energy", "L2", "max"):
        assert label in table, label
    for name in NAMES + ("all",):
        assert any(line.split()[:1] == [name] for line in table.splitlines()), name
    assert f"{s['errors']['Ez']['l2']:.4e}" in table
    assert f"{s['points']:,}" in table
    # Missing entries are simply left out.
    small = summary.format_summary_table({"order": 3, "steps": 10})
    assert "order" in small and "GFLOP/s" not in small and "energy" not in small


def test_summary_table_names_what_a_run_without_snapshots_wrote():
    # [output] formats = []: the final state is recorded with no files, so nothing was written
    s = {"order": 3, "outputs": [{"step": 40, "t": 1.0, "files": []}],
         "time_series": {"dft": {"file": "slab_dft.h5", "frequencies": [0.1, 0.2, 0.3], "steps": 41},
                         "far_field": {"file": "slab_farfield.h5", "frequencies": [0.2]}}}
    table = summary.format_summary_table(s)
    assert "no snapshots written" in table and "1 snapshot" not in table
    assert "transforms: slab_dft.h5 (3 frequencies)" in table
    assert "far field: slab_farfield.h5 (1 frequency)" in table
    s["outputs"].insert(0, {"step": 0, "t": 0.0, "files": ["slab_00000.h5"]})
    assert "1 snapshot written" in summary.format_summary_table(s)


@pytest.mark.parametrize("samples, words", [(1, "(1 sample)"), (6, "(6 samples)")])
def test_summary_table_counts_time_series_samples(samples, words):
    s = {"order": 3, "time_series": {"files": ["run_probes.csv", "run_probes.h5"], "samples": samples}}
    assert f"time series: run_probes.csv, run_probes.h5 {words}" in summary.format_summary_table(s)


def test_summary_table_shows_a_variable_dt_as_the_range_taken():
    # summary.json's dt of a variable-dt run is the controller's next step, not one taken
    table = summary.format_summary_table({"steps": 14, "dt": 0.1897, "dt_range": [0.158, 0.772]})
    assert [line.split(None, 1) for line in table.splitlines() if line.startswith("  dt")] == [
        ["dt", "0.158 to 0.772 (variable)"]]
    assert "0.1897" not in table
    assert "0.1897" in summary.format_summary_table({"steps": 14, "dt": 0.1897})


def test_summary_table_says_when_statistics_have_no_sample():
    # a chunk of a run that ends before [output.statistics] start writes files of zeros
    stats = {"files": ["c_statistics.h5", "c_statistics.csv"], "samples": 0, "time": [None, None], "weight": 0.0,
             "start": 60.0, "every": 10, "average": ["x", "z"]}
    table = summary.format_summary_table({"time_series": {"files": [], "samples": 0, "statistics": stats}})
    assert ("statistics: c_statistics.h5, c_statistics.csv (no sample: no step at t >= [output.statistics] "
            "start = 60 on a multiple of every = 10; the means in them are 0)") in table
    stats.update(samples=246, time=[60.0, 108.8])
    table = summary.format_summary_table({"time_series": {"files": [], "samples": 0, "statistics": stats}})
    assert "statistics: c_statistics.h5, c_statistics.csv (246 samples, t = 60 to 108.8)" in table
