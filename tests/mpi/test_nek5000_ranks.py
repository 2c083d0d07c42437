"""Nek5000 files written on 2 and 3 ranks (rcb and rsb partitions) read by VTK's
vtkNek5000Reader and pymech give exactly what the 1-rank files give.

Two levels: the writer alone (nek_write_ranks.py: seeded random data, float64 and float32,
the ranks' elements in random order, writes split into many small collective calls for rsb),
and `lobatto run` of a curved acoustics case. The readers' element order is checked to be
the global one before elements are compared one by one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nek_write_ranks
from mpirun import SKIP_REASON, describe, read_final, run
from nek_readers import read_with_pymech, read_with_vtk

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

HERE = Path(__file__).resolve().parent
SEED = 20240611


def read_both(index: Path) -> list[tuple]:
    """For every snapshot of the series: (VTK's data, pymech's data), as float64 arrays."""
    first = index.read_text().split("firsttimestep:")[1].split()[0]
    count = int(index.read_text().split("numtimesteps:")[1].split()[0])
    template = index.read_text().split("filetemplate:")[1].split()[0]
    times = read_with_vtk(index)["times"]
    assert len(times) == count
    snapshots = []
    for k, t in enumerate(times):
        vtk = read_with_vtk(index, t)
        nek = read_with_pymech(index.parent / (template % (0, int(first) + k)))
        assert nek["time"] == t
        snapshots.append((vtk, nek))
    return snapshots


def element_ids_in_file(path: Path) -> np.ndarray:
    """The element map as stored: the order in which VTK shows the elements."""
    raw = path.read_bytes()
    nelt = int(raw[:132].split()[5])
    return np.frombuffer(raw, "<i4", nelt, 136)


def assert_same(mine, serial, what: str) -> None:
    """Equal, element by element, in VTK's and in pymech's reading."""
    (vtk, nek), (vtk1, nek1) = mine, serial
    assert vtk["time"] == vtk1["time"]
    for key in ("coords", "velocity"):
        assert np.array_equal(vtk[key], vtk1[key]), f"{what}: VTK {key}"
    assert vtk["arrays"].keys() == vtk1["arrays"].keys()
    for name in vtk["arrays"]:
        assert np.array_equal(vtk["arrays"][name], vtk1["arrays"][name]), f"{what}: VTK {name}"
    for key in ("coords", "velocity", "pressure", "scalars"):
        assert np.array_equal(nek[key], nek1[key]), f"{what}: pymech {key}"


# ------------------------------------------------------------------------------ the writer
@pytest.fixture(scope="module")
def serial_files(tmp_path_factory):
    """The 1-rank files, written in this process (no MPI: the serial writer)."""
    out = tmp_path_factory.mktemp("serial-writer")
    nek_write_ranks.main(out, SEED)
    return out


@pytest.mark.parametrize("nprocs", [2, 3])
def test_ranks_write_the_serial_files(serial_files, tmp_path, nprocs):
    result = run(nprocs, [str(HERE / "nek_write_ranks.py"), str(tmp_path), str(SEED)], timeout=120)
    assert result.returncode == 0, describe(result)
    coords, fields = nek_write_ranks.global_data(SEED)
    for partitioner in ("rcb", "rsb"):
        for wdsz in (8, 4):
            what = f"{nprocs} ranks, {partitioner}, wdsz {wdsz}"
            mine, serial = tmp_path / f"{partitioner}_{wdsz}", serial_files / f"{partitioner}_{wdsz}"
            assert sorted(p.name for p in mine.iterdir()) == ["case.nek5000", "case0.f00001", "case0.f00002"], what
            ours = read_both(mine / "case.nek5000")
            for k, (snapshot, reference) in enumerate(zip(ours, read_both(serial / "case.nek5000"))):
                assert_same(snapshot, reference, what)
                # and both are the data given, in global element order
                assert np.array_equal(element_ids_in_file(mine / f"case0.f0000{k + 1}"), np.arange(1, 37))
                real = np.float64 if wdsz == 8 else np.float32
                vtk, nek = snapshot
                assert np.array_equal(nek["coords"], coords.astype(real))
                assert np.array_equal(nek["velocity"], (fields[:3] * (k + 1)).astype(real))
                assert np.array_equal(nek["pressure"], (fields[3] * (k + 1)).astype(real))
                assert np.array_equal(nek["scalars"], (fields[4:] * (k + 1)).astype(real))
                assert np.array_equal(vtk["coords"], coords.astype(real).astype(np.float32))
                assert np.array_equal(vtk["arrays"]["S02"], (fields[5] * (k + 1)).astype(real).astype(np.float32))
            # the files themselves: the same bytes as the serial writer's
            for name in ("case0.f00001", "case0.f00002", "case.nek5000"):
                assert (mine / name).read_bytes() == (serial / name).read_bytes(), f"{what}: {name}"


# ---------------------------------------------------------------------------- lobatto run
CASE = """
[mesh]
elements = [4, 3, 2]
periodic = [true, false, false]
boundary = "wall"
[mesh.deform]
x = "0.04*sin(pi*x)*sin(pi*y)*sin(pi*z)"
y = "0.03*sin(pi*x)*sin(pi*y)*sin(pi*z)"
[discretization]
order = 3
[physics]
equations = "acoustics"
[initial]
p = "sin(pi*y)*cos(2*pi*x) + exp(-20*((x-0.3)**2 + (y-0.5)**2 + (z-0.5)**2))"
ux = "sin(pi*y)*sin(pi*z)*exp(x)"
uz = "cos(3*x)*sin(pi*y) + 0.5"
[time]
t_end = 0.1
[output]
name = "wave"
every = 3
formats = ["hdf5", "nek"]
[parallel]
partitioner = "{partitioner}"
"""


def lobatto_run(directory: Path, nprocs: int, partitioner: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "case.toml").write_text(CASE.format(partitioner=partitioner))
    result = run(nprocs, ["-m", "lobatto", "run", str(directory / "case.toml"), "--output", str(directory / "out"),
                          "--quiet"], timeout=120)
    assert result.returncode == 0, describe(result)
    return directory / "out"


@pytest.fixture(scope="module")
def serial_run(tmp_path_factory):
    out = lobatto_run(tmp_path_factory.mktemp("serial-run"), 1, "rcb")
    return out, read_both(out / "wave.nek5000")


@pytest.mark.parametrize("partitioner", ["rcb", "rsb"])
@pytest.mark.parametrize("nprocs", [2, 3])
def test_run_on_ranks_reads_as_the_serial_run(serial_run, tmp_path, nprocs, partitioner):
    out = lobatto_run(tmp_path, nprocs, partitioner)
    assert sorted(p.name for p in out.glob("wave*.f*")) == ["wave0.f00001", "wave0.f00002"]  # one file a snapshot
    ours = read_both(out / "wave.nek5000")
    serial_out, serial = serial_run
    assert len(ours) == len(serial) == 2
    for snapshot, reference in zip(ours, serial):
        assert_same(snapshot, reference, f"{nprocs} ranks, {partitioner}")
    # the last snapshot is the run's final state, as its own HDF5 output has it
    summary, ids, fields = read_final(out)
    assert summary["ranks"] == nprocs and np.array_equal(ids, np.arange(24))
    vtk, nek = ours[-1]
    assert nek["time"] == pytest.approx(summary["t_final"], rel=1e-13)
    assert np.array_equal(nek["pressure"], fields[0]) and np.array_equal(nek["velocity"], fields[1:])
    assert np.array_equal(vtk["arrays"]["Pressure"], fields[0].astype(np.float32))
    assert np.array_equal(vtk["velocity"], fields[1:].astype(np.float32))
    assert np.array_equal(element_ids_in_file(out / "wave0.f00002"), np.arange(1, 25))


# ------------------------------------------------------------------------------ full disk
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("nprocs", [2, 3])
def test_full_disk_fails_on_every_rank_and_keeps_the_file(tmp_path, nprocs):
    """A real ENOSPC inside ROMIO's collective write (the temporary is a link to /dev/full):
    every rank raises the same one-line OutputError naming the file, the previous file is
    untouched and no temporary is left."""
    result = run(nprocs, [str(HERE / "nek_disk_full.py"), str(tmp_path)], timeout=60)
    assert result.returncode == 0, describe(result)
    path = tmp_path / "c0.f00001"
    lines = sorted(line for line in result.stdout.splitlines() if line.startswith("rank "))
    assert len(lines) == nprocs, describe(result)
    for rank, line in enumerate(lines):
        assert line.startswith(f"rank {rank}: OutputError: {path}: cannot write (no space left on device"), line
        assert line.endswith("file unchanged: True"), line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c0.f00001"]
