"""``[output.dft]`` under ``mpiexec -n P lobatto run``: the same transforms, points and fluxes per
frequency on 1, 2 and 3 ranks (to 1e-12), written once by rank 0, also on interior planes and a
box, where a rank may hold none of the faces (measured: on 2 ranks rank 1 holds none of y = 0.5
nor of the box, on 3 ranks ranks 1 and 2 none of x = 1/3 and rank 0 none of the box), and with
``normalize`` (the incident run without the [material] block first: runner/normalization.py) the
same incident, scattered and normalised fluxes; an unknown surface reported once, exit 2."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from mpirun import SKIP_REASON, describe, run, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [3, 2, 2]
boundary = "pec"
[mesh.boundaries]
xmax = "absorbing"
[discretization]
order = 3
[initial]
Ez = "sin(pi*x)*sin(pi*y) + exp(-20*((x-0.4)**2 + (y-0.5)**2 + (z-0.6)**2))"
Hy = "cos(2*z)*sin(pi*x)"
[time]
t_end = 0.6
[output.dft]
frequencies = [0.7, 1.3]
fields = ["Ez", "Hy"]
regions = ["all"]
surfaces = ["xmax", "zmin"]
planes = ["x = 0.3333333333333333", "y = 0.5"]
boxes = [{lower = [0.3333333333333333, 0.0, 0.0], upper = [1.0, 0.5, 1.0]}]
normalize = "xmax"
[material.block]
where = "(x - 0.5)*(0.9 - x)"
epsilon = 2.5
"""


def read(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: out.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset) else None)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for nprocs in (1, 2, 3):
        directory = tmp_path_factory.mktemp(f"dft{nprocs}")
        summary, _, _ = run_case(directory, CASE, nprocs)
        assert summary["ranks"] == nprocs
        out[nprocs] = read(directory / "out" / "case_dft.h5")
    return out


@pytest.mark.parametrize("nprocs", [2, 3])
def test_same_transforms_on_several_ranks(runs, nprocs):
    one, many = runs[1], runs[nprocs]
    assert sorted(one) == sorted(many)
    assert np.abs(one["surfaces/xmax/flux/poynting_flux"]).max() > 1e-3  # the absorbing side lets power out
    assert one["surfaces/x = 0.333333/Ez"].shape == (2, 4, 4, 4) and one["surfaces/y = 0.5/Ez"].shape == (2, 6, 4, 4)
    assert one["surfaces/box [0.333333, 0, 0] to [1, 0.5, 1]/Ez"].shape == (2, 2 + 2 + 4 + 4 + 2 + 2, 4, 4)
    assert np.abs(one["surfaces/zmin/flux_scattered/poynting_flux"]).max() > 0  # the block scatters
    assert np.isfinite(one["surfaces/x = 0.333333/normalized/poynting_flux"]).all()
    for name, value in one.items():
        if value.dtype.kind in "iu":
            assert np.array_equal(value, many[name]), name
        else:
            assert np.array_equal(np.isnan(value), np.isnan(many[name])), name
            value, other = np.nan_to_num(value), np.nan_to_num(many[name])
            scale = max(np.abs(value).max(), 1e-30)
            assert np.abs(other - value).max() <= 1e-12 * scale, name


def test_unknown_surface_reported_once(tmp_path):
    (tmp_path / "bad.toml").write_text(CASE.replace('"xmax", "zmin"', '"xmax", "lid"'))
    result = run(3, ["-m", "lobatto", "run", str(tmp_path / "bad.toml"), "--output", str(tmp_path / "out"), "--quiet"])
    assert result.returncode == 2, describe(result)
    assert result.stderr.count("lobatto: error:") == 1 and "'lid' has no boundary faces" in result.stderr, describe(result)


GMSH_CASE = """
[mesh]
generator = "gmsh"
file = "{path}"
boundary = "absorbing"
[discretization]
order = 1
[initial]
Ez = "exp(-8*((x-0.2)**2 + y**2 + (z+0.1)**2))"
Hy = "exp(-8*(x**2 + (y-0.3)**2 + z**2))"
[time]
t_end = 0.05
[output.dft]
frequencies = [0.7, 1.3]
fields = ["Ez"]
surfaces = ["sphere_surface", "cube", "walls"]
planes = ["x = 0.15", "x = 0.75"]
"""


def test_named_interior_surfaces_on_several_ranks(tmp_path):
    """examples/meshes/sphere_scatterer.msh's physical surfaces inside the mesh ("sphere_surface",
    "cube": mesh/enclosed.py) give the same transforms and fluxes on 1, 2 and 3 ranks (measured:
    on 3 ranks rank 0 holds none of their faces, on 2 ranks each holds some). The plane x = 0.15,
    one face of the ball's inner block (so on 2 and 3 ranks some rank holds none of it), is
    warned about once, with the same faces and area in the file on every rank count; x = 0.75,
    the whole section, is not (monitors/planes.py plane_coverage)."""
    pytest.importorskip("gmsh")
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "meshes" / "sphere_scatterer.msh"
    out, coverage = {}, {}
    for nprocs in (1, 2, 3):
        directory = tmp_path / f"g{nprocs}"
        directory.mkdir()
        (directory / "case.toml").write_text(GMSH_CASE.format(path=path))
        result = run(nprocs, ["-m", "lobatto", "run", str(directory / "case.toml"), "--output", str(directory / "out"),
                              "--quiet"])
        assert result.returncode == 0, describe(result)
        assert result.stdout.count("warning: [output.dft] plane") == 1, describe(result)
        assert '"x = 0.15" is 1 element face of area 0.09' in result.stdout, describe(result)
        out[nprocs] = read(directory / "out" / "case_dft.h5")
        with h5py.File(directory / "out" / "case_dft.h5", "r") as f:
            coverage[nprocs] = {name: dict(f[f"surfaces/{name}"].attrs) for name in ("x = 0.15", "x = 0.75")}
        summary = json.loads((directory / "out" / "summary.json").read_text())["time_series"]["dft"]["planes"]
        assert summary["x = 0.15"]["partial"] and not summary["x = 0.75"]["partial"]
    assert coverage[1]["x = 0.15"]["faces"] == 1 and coverage[1]["x = 0.75"]["faces"] == 49
    for nprocs in (2, 3):
        for name, attrs in coverage[1].items():
            assert attrs.keys() == coverage[nprocs][name].keys()
            for key, value in attrs.items():
                assert coverage[nprocs][name][key] == pytest.approx(value, rel=1e-12), (nprocs, name, key)
    one = out[1]
    assert one["surfaces/sphere_surface/Ez"].shape[1] == 6 and one["surfaces/cube/Ez"].shape[1] == 6
    assert np.abs(one["surfaces/sphere_surface/flux/poynting_flux"]).max() > 0
    for nprocs in (2, 3):
        for name, value in one.items():
            if value.dtype.kind in "iu":
                assert np.array_equal(value, out[nprocs][name]), (nprocs, name)
            else:
                assert np.abs(out[nprocs][name] - value).max() <= 1e-12 * max(np.abs(value).max(), 1e-30), (nprocs, name)
