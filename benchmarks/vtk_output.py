"""VTK output: write time and size per snapshot against HDF5, and the accuracy of VTK's
Lagrange interpolant at the GLL points by order (docs/output.md, "VTK files for ParaView").

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/vtk_output.py              # cavity as it is (4^3)
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/vtk_output.py --elements 12
    .venv/bin/python benchmarks/vtk_output.py --accuracy                      # needs the vtk wheel

Timing: median of 7 snapshots of examples/cavity.toml written through the run's own
SnapshotWriter (each file fsynced and renamed), one format at a time. Accuracy: VTK's cell
interpolation (InterpolateFunctions) of sin(2r + s) cos(t) on one element, evaluated at the GLL
points nearest the corners, edges and centre, against the field's GLL values.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

ROOT = Path(__file__).resolve().parents[1]


def write_times(elements: int | None, snapshots: int = 7) -> None:
    from lobatto.api import load_case, with_changes
    from lobatto.runner.simulation import Simulation

    case = load_case(ROOT / "examples" / "cavity.toml")
    if elements:
        case = with_changes(case, {"mesh.elements": [elements] * 3})
    with tempfile.TemporaryDirectory() as directory:
        for fmt in ("hdf5", "vtk"):
            out = Path(directory) / fmt
            sim = Simulation(with_changes(case, {"output.formats": [fmt]}), "cpu", out, comm=None)
            seconds = []
            for step in range(1, snapshots + 1):
                start = time.perf_counter()
                sim.writer.write(sim.u, step, 0.0)
                seconds.append(time.perf_counter() - start)
            size = (out / sim.writer.records[-1]["files"][0]).stat().st_size
            print(f"{list(case.mesh.elements)} N = {case.discretization.order} {fmt}: "
                  f"{1e3 * np.median(seconds):.1f} ms, {size / 1e6:.2f} MB per snapshot")


def accuracy(orders=(4, 7, 10, 12, 15, 20, 24)) -> None:
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    from lobatto.discretization.gll import gll_points
    from lobatto.io.vtk import write_piece

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "one.vtu"
        for order in orders:
            n, x = order + 1, gll_points(order)
            t, s, r = np.meshgrid(x, x, x, indexing="ij")
            field = np.sin(2 * r + s) * np.cos(t)
            write_piece(path, np.stack([r, s, t])[:, None], field[None, None], ("p",), order, time=0.0, step=0,
                        config_toml="")
            reader = vtk.vtkXMLUnstructuredGridReader()
            reader.SetFileName(str(path))
            reader.Update()
            cell = reader.GetOutput().GetCell(0)
            values = vtk_to_numpy(reader.GetOutput().GetPointData().GetArray("p"))
            error = 0.0
            for i, j, k in itertools.product(sorted({0, 1, 2, order // 2, order - 2, order - 1, order}), repeat=3):
                weights = [0.0] * n ** 3
                cell.InterpolateFunctions([(x[i] + 1) / 2, (x[j] + 1) / 2, (x[k] + 1) / 2], weights)
                error = max(error, abs(float(np.dot(weights, values)) - field[k, j, i]))
            print(f"N = {order:2d}: largest error {error:.1e} (field max {np.abs(field).max():.2f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=None, help="elements per direction (default: the case's)")
    parser.add_argument("--accuracy", action="store_true", help="VTK's interpolation error by order instead")
    args = parser.parse_args()
    accuracy() if args.accuracy else write_times(args.elements)
