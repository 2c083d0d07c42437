"""``[output.statistics]`` on 1, 2 and 3 ranks in one ``mpiexec -n 3`` launch: the profiles
(an allreduce of each sample's partial sums) equal the 1-rank ones to rounding, the 3-D
averages (per point, gathered by element id) bitwise; and the 3-D sums of a checkpoint
written on 3 ranks, continued on 2, equal the uninterrupted 1-rank run's.

This file is also the script that ``mpiexec -n 3`` runs:

    python test_navier_stokes_statistics_ranks.py OUT

it runs each case on COMM_WORLD (3 ranks) into OUT/3/<case>, then splits the world into
rank 0 alone (OUT/1/<case>) and ranks 1 and 2 (OUT/2/<case>, and the 3-rank checkpoint
continued into OUT/2/continued).
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from mpirun import SKIP_REASON, describe, run  # noqa: E402


def cases() -> dict:
    sys.path.insert(0, str(HERE.parent / "unit"))
    from test_navier_stokes_statistics import CHANNEL

    profiles = copy.deepcopy(CHANNEL)
    profiles["output"]["statistics"].update(start=0.03, average=["x", "z"])
    profiles["mesh"]["elements"] = [3, 2, 2]
    profiles["time"]["t_end"] = 0.08
    fields = copy.deepcopy(profiles)
    fields["output"]["statistics"]["average"] = []
    fields["checkpoint"] = {"every": 2, "at_end": False}
    return {"profiles": profiles, "fields": fields}


def read(path: Path) -> dict:
    import h5py

    with h5py.File(path, "r") as f:
        out = {key: f[f"mean/{key}"][...] for key in f["mean"]}
        out["samples"] = int(f.attrs["samples"])
        if "element_ids" in f:
            assert np.array_equal(f["element_ids"][...], np.arange(f["element_ids"].shape[0]))
    return out


def main(out: Path) -> None:
    from mpi4py import MPI

    from lobatto.api import Simulation, parse_case
    from lobatto.io.checkpoint_dir import checkpoint_path

    world = MPI.COMM_WORLD
    for name, data in cases().items():
        Simulation(parse_case(copy.deepcopy(data)), "cpu", out / "3" / name, comm=world).run()
    part = world.Split(0 if world.Get_rank() == 0 else 1, world.Get_rank())
    size = part.Get_size()
    for name, data in cases().items():
        Simulation(parse_case(copy.deepcopy(data)), "cpu", out / str(size) / name, comm=part).run()
    if size == 2:
        name = "fields"
        data = cases()[name]
        sim = Simulation(parse_case(copy.deepcopy(data)), "cpu", out / "2" / "continued", comm=part)
        sim.restart(checkpoint_path(out / "3" / name, "ch", 2))
        sim.run()
    part.Free()


@pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")
def test_one_two_and_three_ranks_agree(tmp_path):
    result = run(3, [str(Path(__file__).resolve()), str(tmp_path)], timeout=300)
    assert result.returncode == 0, describe(result)
    for name in ("profiles", "fields"):
        one = read(tmp_path / "1" / name / "ch_statistics.h5")
        assert one["samples"] == 2  # steps 2 and 4
        for ranks in ("2", "3"):
            other = read(tmp_path / ranks / name / "ch_statistics.h5")
            for key, value in one.items():
                if name == "fields":
                    np.testing.assert_array_equal(other[key], value, err_msg=f"{ranks} ranks: {key}")
                else:
                    np.testing.assert_allclose(other[key], value, rtol=1e-12, atol=1e-13,
                                               err_msg=f"{ranks} ranks: {key}")
    continued = read(tmp_path / "2" / "continued" / "ch_statistics.h5")
    one = read(tmp_path / "1" / "fields" / "ch_statistics.h5")
    for key, value in one.items():
        np.testing.assert_array_equal(continued[key], value, err_msg=f"continued: {key}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
