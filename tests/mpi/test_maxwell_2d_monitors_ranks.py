"""2-D Maxwell's line source, [output.dft] lines, a rectangle and a region, and the 2-D far field
on a closed contour, under ``mpiexec -n P lobatto run``: the same transforms, fluxes, far field
and scattering widths on 1, 2 and 3 ranks (to 1e-12). rcb splits the 12 x 4 box along x, so
the ranks left of x = 4 hold no edge of the far-field contour [4, 5.5] x [0.5, 1.5] and none of
the line source, and on 3 ranks ranks 1 and 2 hold no edge of the line x = 1 (checked below from
the element ids in the file)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from mpirun import SKIP_REASON, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """
[mesh]
elements = [12, 4]
upper = [6.0, 2.0]
boundary = "absorbing"
[discretization]
order = 3
[time]
t_end = 2.0
dt = 0.02
[source.line]
type = "electric_dipole"
position = [4.8, 1.1, 0.0]
direction = [0.3, 0.2, 1.0]
waveform = "modulated_gaussian"
frequency = 0.8
t0 = 0.6
width = 0.25
[output]
formats = ["hdf5"]
[output.dft]
frequencies = [0.7, 0.9]
fields = ["Ez", "Hy"]
regions = ["all"]
planes = ["x = 1", "y = 1"]
boxes = [{lower = [4.0, 0.5], upper = [5.5, 1.5]}]
[output.far_field]
frequencies = [0.7, 0.9]
lower = [4.0, 0.5, -1.0]
upper = [5.5, 1.5, 1.0]
phi = [0.0, 60.0, 120.0, 180.0, 240.0, 300.0]
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
        directory = tmp_path_factory.mktemp(f"mx2d{nprocs}")
        summary, _, _ = run_case(directory, CASE, nprocs)
        assert summary["ranks"] == nprocs
        out[nprocs] = (read(directory / "out" / "case_dft.h5"), read(directory / "out" / "case_farfield.h5"))
    return out


def test_2d_dft_and_far_field_are_the_same_on_one_two_and_three_ranks(runs):
    dft1, far1 = runs[1]
    assert "surfaces/x = 1/Ez" in dft1 and "surfaces/box [4, 0.5] to [5.5, 1.5]/flux/poynting_flux" in dft1
    assert np.abs(far1["E_theta"]).max() > 0 and np.abs(far1["E_phi"]).max() > 0  # TM and TE both radiate
    for nprocs in (2, 3):
        dft, far = runs[nprocs]
        assert sorted(dft) == sorted(dft1) and sorted(far) == sorted(far1)
        for name, value in list(dft1.items()) + [("far/" + k, v) for k, v in far1.items()]:
            other = far[name[4:]] if name.startswith("far/") else dft[name]
            if np.issubdtype(np.asarray(value).dtype, np.number):
                scale = max(float(np.abs(value).max()), 1e-300) if np.size(value) else 1.0
                assert np.abs(np.asarray(other) - value).max() <= 1e-12 * scale, (nprocs, name)


def test_a_rank_holds_no_part_of_the_contour_nor_of_a_line():
    """Which ranks own the contour's and the line's edges: rcb's partition of the case (the same
    call the runner makes), so the runs above did include ranks without them."""
    from lobatto.mesh.partition import partition_box

    owners = {n: [partition_box((12, 4), n, r) for r in range(n)] for n in (2, 3)}
    contour = {e for e in range(48) if 8 <= e % 12 <= 10 and 1 <= e // 12 <= 2}  # [4, 5.5] x [0.5, 1.5]
    line = {e for e in range(48) if e % 12 == 1}  # the elements just left of x = 1 (their +x edges)
    for n, ranks in owners.items():
        holds = [bool(contour & set(np.asarray(ids).tolist())) for ids in ranks]
        assert not all(holds), n
    assert [bool(line & set(np.asarray(ids).tolist())) for ids in owners[3]].count(False) == 2
