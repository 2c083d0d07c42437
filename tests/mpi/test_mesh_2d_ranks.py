"""2-D gmsh meshes (a curved disc, a strip periodic in x) split over 1, 2 and 3 ranks by each
partitioner: the same total area and the same global count of continuous GLL points on every
rank count, each element on exactly one rank; on 3 ranks the strip's middle rank holds no face
of either boundary curve (tests/mpi/mesh2d_ranks.py does the work, one mpiexec per count)."""

from __future__ import annotations

import importlib.util
import json
import math

import pytest

from mpirun import SKIP_REASON, describe, run

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or ""),
              pytest.mark.skipif(importlib.util.find_spec("gmsh") is None, reason="gmsh is not installed")]

SCRIPT = __file__.replace("test_mesh_2d_ranks.py", "mesh2d_ranks.py")
N = 3  # the script's order


@pytest.fixture(scope="module")
def meshes(tmp_path_factory):
    import gmsh

    from quad_meshes import disc, strip

    directory = tmp_path_factory.mktemp("mesh2d")
    gmsh.initialize(readConfigFiles=False, interruptible=False)
    gmsh.option.setNumber("General.Terminal", 0)
    try:
        # 1 x 6 quads on [0, 3] x [0, 2], each its own x neighbour: rcb cuts across y, so the middle
        # rank of 3 touches neither ymin nor ymax
        return [disc(directory / "disc.msh", order=4, divisions=3), strip(directory / "strip.msh", nx=1, ny=6)]
    finally:
        gmsh.finalize()


@pytest.fixture(scope="module")
def results(meshes):
    out = {}
    for nprocs in (1, 2, 3):
        result = run(nprocs, [SCRIPT, *map(str, meshes)], timeout=240)
        assert result.returncode == 0, describe(result)
        for line in result.stdout.splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                out[row["mesh"], row["method"], row["ranks"]] = row
    return out


def test_every_rank_count_gives_the_same_area_and_point_count(results):
    methods = {method for _, method, _ in results}
    assert {"rcb", "rsb"} <= methods
    for mesh, elements, exact_points in (("disc.msh", 45, None), ("strip.msh", 6, N * (6 * N + 1))):
        serial = results[mesh, "rcb", 1]
        if exact_points is not None:
            assert serial["points"] == exact_points and abs(serial["area"] - 6.0) < 1e-13
        else:  # the O-grid at q = 4: pi to the geometry's error; 45 quads, 52 vertices, 52 + 45 - 1 edges (Euler)
            assert abs(serial["area"] - math.pi) < 1e-6
            assert serial["points"] == 52 + (52 + 45 - 1) * (N - 1) + 45 * (N - 1) ** 2
        for method in methods:
            for ranks in (1, 2, 3):
                row = results[mesh, method, ranks]
                assert len(row["parts"]) == ranks and all(p["dim"] == 2 for p in row["parts"])
                assert sum(p["elements"] for p in row["parts"]) == elements
                assert min(p["elements"] for p in row["parts"]) >= 1
                assert row["points"] == serial["points"], (mesh, method, ranks)
                assert abs(row["area"] - serial["area"]) <= 1e-13 * serial["area"], (mesh, method, ranks)
                for name, count in serial["parts"][0]["faces"].items():
                    assert sum(p["faces"][name] for p in row["parts"]) == count, (mesh, method, ranks, name)


def test_a_rank_without_boundary_faces(results):
    row = results["strip.msh", "rcb", 3]
    middle = [p for p in row["parts"] if not any(p["faces"].values())]
    assert len(middle) == 1 and middle[0]["elements"] == 2, describe_parts(row)


def describe_parts(row) -> str:
    return json.dumps(row["parts"])
