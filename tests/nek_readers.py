"""Nek5000 field files read by independent readers: VTK's vtkNek5000Reader and pymech.

Both return lobatto's layout, so that tests compare arrays directly: coordinates
(3, E, n, n, n), fields (E, n, n, n), elements in the order the reader gives them.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np


@contextlib.contextmanager
def _quiet_stdout():
    """vtkNek5000Reader prints a line to C++'s std::cout on every read."""
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def read_with_vtk(index: Path, time: float | None = None) -> dict:
    """The snapshot at ``time`` (default: the first) of the series ``index`` (a .nek5000
    file), as vtkNek5000Reader gives it: float32 values in its element order, which is
    the file's. Returns {"times", "time", "coords", "velocity" (3, E, n, n, n) or None,
    "arrays": {name: (E, n, n, n)}, "grid": the vtkUnstructuredGrid}."""
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline
    from vtkmodules.vtkIOParallel import vtkNek5000Reader

    reader = vtkNek5000Reader()
    reader.SetFileName(str(index))
    with _quiet_stdout():
        reader.UpdateInformation()
        info = reader.GetOutputInformation(0)
        times = list(info.Get(vtkStreamingDemandDrivenPipeline.TIME_STEPS()) or [])
        for i in range(reader.GetNumberOfPointArrays()):
            reader.SetPointArrayStatus(reader.GetPointArrayName(i), 1)
        if time is None:
            reader.Update()
        else:
            reader.UpdateTimeStep(time)
    grid = reader.GetOutput()
    header = (Path(index).parent / _first_file(index)).read_bytes()[:132].split()
    n = int(header[2])
    points = vtk_to_numpy(grid.GetPoints().GetData())
    nel = points.shape[0] // n**3
    as_fields = lambda a: a.reshape(nel, n, n, n)  # noqa: E731
    coords = np.stack([as_fields(points[:, c]) for c in range(3)])
    data = grid.GetPointData()
    arrays, velocity = {}, None
    for i in range(data.GetNumberOfArrays()):
        name, values = data.GetArrayName(i), vtk_to_numpy(data.GetArray(i))
        if values.ndim == 2:
            velocity = np.stack([as_fields(values[:, c]) for c in range(3)])
        else:
            arrays[name] = as_fields(values)
    return {"times": times, "time": grid.GetInformation().Get(grid.DATA_TIME_STEP()), "coords": coords,
            "velocity": velocity, "arrays": arrays, "grid": grid}


def _first_file(index: Path) -> str:
    lines = dict(line.split(":", 1) for line in Path(index).read_text().splitlines() if ":" in line)
    return lines["filetemplate"].strip() % (0, int(lines["firsttimestep"]))


def read_with_pymech(path: Path) -> dict:
    """The field file as pymech.readnek gives it, elements in pymech's order (it places each
    by the file's element map). Returns {"time", "step", "coords", "velocity" or None,
    "pressure" or None, "scalars" (S, E, n, n, n), "nel"}."""
    import pymech

    data = pymech.readnek(str(path))
    elements = data.elem
    has = data.var  # [X, U, P, T, S] component counts
    velocity = np.stack([e.vel for e in elements], axis=1) if has[1] else None
    pressure = np.stack([e.pres[0] for e in elements]) if has[2] else None
    scalars = np.stack([e.scal for e in elements], axis=1) if has[4] else np.zeros((0,))
    return {"time": data.time, "step": data.istep, "coords": np.stack([e.pos for e in elements], axis=1),
            "velocity": velocity, "pressure": pressure, "scalars": scalars, "nel": data.nel}
