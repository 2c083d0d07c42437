"""Collectives on every rank (docs/parallel.md, "Collectives"): every system with each of its
boundary kinds, on 2 and 3 ranks, partitioned so that some rank owns no face of that kind, no
face of a named surface, no probe, no source and no monitor surface (collectives_cases.py),
on box and gmsh meshes, finishes within a timeout and equals the 1-rank run; and the
cylinder-in-a-channel example (examples/cylinder.toml, a gmsh mesh with named inlet, outlet,
walls and cylinder surfaces), where a rank without an inflow face hung at step 1.

A hang fails the test at the timeout (subprocess.TimeoutExpired), not the CI job.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import h5py
import numpy as np
import pytest
from collectives_cases import cases
from mpirun import SKIP_REASON, describe, read_final, run, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples"
#: seconds a launch of all the cases may take before it counts as a hang (a few seconds each on 2 cores)
TIMEOUT = 150
#: how far a run on P ranks may be from the 1-rank run, per system: none. The DG systems add
#: only pairs; Navier-Stokes and Poisson add each point's copies in global order and reduce
#: their sums exactly (docs/parallel.md, "Reproducible sums")
TOLERANCE = {"maxwell": 0.0, "acoustics": 0.0, "poisson": 0.0, "navier_stokes": 0.0}


def assert_same(system: str, what: str, got, expected) -> None:
    """The one comparison of this family: ``got`` (P ranks) against ``expected`` (1 rank),
    relative to the largest value, within TOLERANCE[system] (exactly, where that is 0)."""
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    assert np.isfinite(expected).all() and np.abs(expected).max() > 0, f"{what}: the 1-rank values are 0 or not finite"
    tolerance = TOLERANCE[system]
    if tolerance == 0.0:
        assert np.array_equal(got, expected), f"{what}: differs by {np.abs(got - expected).max():.3e}, expected 0"
        return
    difference = float(np.abs(got - expected).max() / np.abs(expected).max())
    assert difference <= tolerance, f"{what}: relative difference {difference:.3e} > {tolerance:g}"


def system_of(name: str) -> str:
    return next(s for s in TOLERANCE if name.startswith(s))


def launch(nprocs: int, out: Path, mesh_dir: Path) -> None:
    names = list(cases(mesh_dir))
    result = run(nprocs, [str(HERE / "collectives_cases.py"), str(out), str(mesh_dir), *names], timeout=TIMEOUT)
    assert result.returncode == 0, describe(result)


def series(directory: Path, name: str) -> tuple[list, np.ndarray] | None:
    """(column names, samples: a row per sampled step) of the probes and integrals, or None."""
    path = directory / f"{name}_probes.csv"
    if not path.exists():
        return None
    header, *rows = path.read_text().splitlines()
    return header.split(",")[2:], np.array([[float(v) for v in row.split(",")[2:]] for row in rows])


def compare_series(system: str, what: str, got, expected) -> None:
    """Probes (a value from the one rank that holds the point, zeros added): as the fields;
    integrals (sums over ranks, in another grouping on each rank count) to round-off."""
    assert (got is None) == (expected is None), what
    if expected is None:
        return
    (names, values), (names1, values1) = got, expected
    assert names == names1, what
    probes = np.array(["@p" in n and n.split("@p")[-1].isdigit() for n in names])
    if probes.any():
        assert_same(system, f"{what}: probes", values[:, probes], values1[:, probes])
    if (~probes).any():
        np.testing.assert_allclose(values[:, ~probes], values1[:, ~probes], rtol=1e-12,
                                   atol=1e-14 * np.abs(values1[:, ~probes]).max(), err_msg=f"{what}: integrals")


def monitor_values(directory: Path, name: str) -> dict:
    """{dataset: values} of the DFT and far-field files of a run."""
    found = {}
    for suffix in ("_dft.h5", "_farfield.h5"):
        path = directory / f"{name}{suffix}"
        if path.exists():
            with h5py.File(path, "r") as f:
                f.visititems(lambda key, item: found.setdefault(f"{suffix}:{key}", item[()])
                             if isinstance(item, h5py.Dataset) and key not in ("frequencies", "theta", "phi")
                             else None)
    return found


@pytest.fixture(scope="module")
def mesh_dir(tmp_path_factory):
    from collectives_cases import gmsh_box

    directory = tmp_path_factory.mktemp("meshes")
    gmsh_box(directory)
    return directory


@pytest.fixture(scope="module")
def serial(tmp_path_factory, mesh_dir):
    out = tmp_path_factory.mktemp("serial")
    launch(1, out, mesh_dir)
    return out


@pytest.mark.parametrize("nprocs", [2, 3])
def test_every_system_and_boundary_kind_finishes_and_equals_one_rank(serial, mesh_dir, tmp_path, nprocs):
    launch(nprocs, tmp_path, mesh_dir)
    table = cases(mesh_dir)
    for name, (_, absent) in table.items():
        system = system_of(name)
        ownership = json.loads((tmp_path / name / "ownership.json").read_text())
        assert len(ownership) == nprocs, name
        for what in absent:  # the partition is the one the case is about
            held = [rank.get(what, 0) for rank in ownership]
            assert any(held) and not all(held), f"{name}: {what} held per rank {held}: some rank must hold none"
        s1, ids1, u1 = read_final(serial / name)
        sp, idsp, up = read_final(tmp_path / name)
        assert sp["ranks"] == nprocs and s1["ranks"] == 1 and np.array_equal(ids1, idsp), name
        assert_same(system, f"{name} on {nprocs} ranks: fields", up, u1)
        compare_series(system, f"{name} on {nprocs} ranks", series(tmp_path / name, name), series(serial / name, name))
        expected = monitor_values(serial / name, name)
        got = monitor_values(tmp_path / name, name)
        assert sorted(got) == sorted(expected), name
        for key, values in expected.items():
            if np.abs(values).max() > 0:
                np.testing.assert_allclose(got[key], values, rtol=1e-10, atol=1e-14 * np.abs(values).max(),
                                           err_msg=f"{name} on {nprocs} ranks: {key}")


# The cylinder in a channel ------------------------------------------------------------------
def cylinder_case(order: int = 2, steps: int = 3) -> str:
    """examples/cylinder.toml at low order for a few steps, its mesh by absolute path."""
    text = (EXAMPLES / "cylinder.toml").read_text()
    text = text.replace('"meshes/cylinder_channel.msh"', json.dumps(str(EXAMPLES / "meshes" / "cylinder_channel.msh")))
    text = re.sub(r"(?m)^order = \d+", f"order = {order}", text)
    text = re.sub(r"(?m)^t_end = .*$", f"t_end = {steps * 5e-3}", text)
    text = re.sub(r"(?m)^every = 20$", "every = 1", text)
    return text


def test_cylinder_in_a_channel_on_one_two_and_three_ranks(tmp_path):
    """The gmsh cylinder case: on 2 ranks some rank owns no inflow face (the lifting's
    gather-scatter hung there at step 1); 1, 2 and 3 ranks give the same fields and the same
    pressure difference across the cylinder."""
    text = cylinder_case()
    runs = {n: run_case(tmp_path / f"n{n}", text, n, timeout=TIMEOUT) for n in (1, 2, 3)}
    s1, ids1, u1 = runs[1]
    assert u1.shape[1] == 56 and np.abs(u1[0]).max() > 0.1
    probes1 = series(tmp_path / "n1" / "out", "case")
    for n in (2, 3):
        sn, idsn, un = runs[n]
        assert sn["ranks"] == n and np.array_equal(ids1, idsn)
        assert_same("navier_stokes", f"cylinder on {n} ranks: fields", un, u1)
        compare_series("navier_stokes", f"cylinder on {n} ranks", series(tmp_path / f"n{n}" / "out", "case"), probes1)
    # the forces on the curved cylinder ([output.forces.cylinder]): the same bits on every rank count
    from lobatto.io.timeseries import read_csv

    forces = {n: read_csv(tmp_path / f"n{n}" / "out" / "case_forces.csv") for n in (1, 2, 3)}
    assert abs(forces[1]["values"]["Fx@cylinder"][-1]) > 0
    for n in (2, 3):
        assert forces[n]["columns"] == forces[1]["columns"]
        for column in forces[1]["columns"]:
            assert np.array_equal(forces[n]["values"][column], forces[1]["values"][column]), (n, column)


# A set-up error on some ranks only ---------------------------------------------------------
BAD_CURRENT = """
[physics]
equations = "maxwell"
[mesh]
elements = [6, 1, 1]
upper = [6.0, 1.0, 1.0]
[discretization]
order = 2
[time]
dt = 0.05
t_end = 0.1
[source.sheet]
type = "current"
Jx = "1/(x - 0.5)"     # not finite at x = 0.5, a GLL point of element 0 (rank 0 only)
[pml]
sides = ["xmax"]       # whose set-up (collective) follows the sources'
elements = 1
[output]
formats = []
"""


def test_an_error_on_one_rank_is_agreed_before_the_next_collective_call(tmp_path):
    """Only rank 0 holds the points where the current is not finite; the others went on into
    the PML's collective set-up, and rank 0 ended the job after its 5 s watchdog with "the
    other ranks did not respond". Now every rank reports the one error, exit 2."""
    (tmp_path / "case.toml").write_text(BAD_CURRENT)
    result = run(2, ["-m", "lobatto", "run", str(tmp_path / "case.toml"), "--output", str(tmp_path / "out"), "--quiet"],
                 timeout=60)
    assert result.returncode == 2, describe(result)
    lines = [line for line in result.stderr.splitlines() if line.startswith("lobatto: error:")]
    assert len(lines) == 1 and "[source.sheet] Jx" in lines[0] and "at t = 0" in lines[0], describe(result)
    assert "did not respond" not in result.stderr, describe(result)
