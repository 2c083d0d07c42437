"""[output] derived on 1, 2 and 3 ranks (systems/navier_stokes/derived.py): two steps of a
channel with walls at y = 0 and 3, periodic in x and z, 1 x 6 x 1 elements; every field of
the final HDF5 snapshot (the flow and its vorticity, Q, lambda2, divergence and wall shear)
and the Nek5000 file's scalars bitwise equal on every rank count; the VTK index lists the
vorticity alone ([output.vtk] derived). rcb cuts the long y axis, so
on 3 ranks the middle rank holds no wall face (its part of the wall shear is zero, and it
still takes part in the gather-scatters)."""

from __future__ import annotations

import numpy as np
import pytest

from mpirun import SKIP_REASON, read_final, run_case

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

CASE = """\
[physics]
equations = "navier_stokes"
viscosity = 0.05

[mesh]
elements = [1, 6, 1]
upper = [1.0, 3.0, 1.0]
periodic = [true, false, true]
boundary = "wall"

[discretization]
order = 3

[initial]
ux = "{a}*y*(3 - y) + 0.1*sin(2*pi*x)*y*(3 - y)"
uz = "{b}*sin(pi*y/3)*cos(2*pi*x)"

[time]
integrator = "bdf2"
dt = 0.02
t_end = 0.04

[solver.pressure]
tolerance = 1e-10

[output]
formats = ["hdf5", "nek", "vtk"]
name = "channel"
derived = ["vorticity", "vorticity_magnitude", "q_criterion", "lambda2", "divergence", "wall_shear"]

[output.vtk]
derived = ["vorticity"]
"""


def serial(directory, text):
    from lobatto.api import load_case
    from lobatto.runner.simulation import Simulation

    directory.mkdir(parents=True)
    (directory / "case.toml").write_text(text)
    Simulation(load_case(directory / "case.toml"), "cpu", directory / "out", comm=None).run()


def test_ranks_give_the_serial_derived_fields(tmp_path):
    import h5py
    from nek_readers import read_with_pymech

    a, b = np.random.default_rng().uniform(0.5, 1.5, 2)
    text = CASE.format(a=f"{a:.6f}", b=f"{0.1 * b:.6f}")
    results = {}
    for nprocs in (1, 2, 3):
        if nprocs == 1:  # in this process (one launch fewer)
            serial(tmp_path / "1", text)
            summary, ids, fields = read_final(tmp_path / "1" / "out")
        else:
            summary, ids, fields = run_case(tmp_path / str(nprocs), text, nprocs)
        nek = read_with_pymech(tmp_path / str(nprocs) / "out" / "channel0.f00001")["scalars"]
        results[nprocs] = (summary, fields, nek)
    summary, fields, nek = results[1]
    derived = summary["outputs"][-1]["derived"]["hdf5"]
    assert derived[-3:] == ["wall_shearx", "wall_sheary", "wall_shearz"] and len(fields) == 4 + len(derived)
    assert np.abs(fields[4 + derived.index("wall_shearx")]).max() > 1e-2 and np.abs(fields[4 + derived.index("vorticityz")]).max() > 0.1
    assert np.array_equal(nek, fields[4:])  # the Nek5000 scalars are the derived fields, in order
    for nprocs in (2, 3):
        other = results[nprocs]
        assert other[0]["ranks"] == nprocs
        assert np.array_equal(other[1], fields), (nprocs, float(np.abs(other[1] - fields).max()))
        assert np.array_equal(other[2], nek), nprocs
    pvtu = (tmp_path / "3" / "out" / "channel_000002.pvtu").read_text()  # rank 0's index names the arrays
    assert 'Name="vorticity" NumberOfComponents="3"' in pvtu and "lambda2" not in pvtu
    # on 3 ranks the middle one holds no wall face: its part of the wall shear is zero
    parts = sorted((tmp_path / "3" / "out" / "parts").glob("channel_000002.r*.h5"))
    assert len(parts) == 3
    with h5py.File(parts[1], "r") as f:
        y = f["mesh/y"][:]
        assert y.min() > 0.0 and y.max() < 3.0
        assert not np.any(f["fields/wall_shearx"][:]) and np.abs(f["fields/vorticityz"][:]).max() > 0
