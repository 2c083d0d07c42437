"""A PEC spherical cavity on a curved gmsh mesh (the cubed-sphere ball of
examples/meshes/gmsh_meshes.py, geometry order = N): the TE_101 and TE_102 resonant
frequencies, from a probe's time series by the matrix pencil, against the roots of
tan x = x (j_1(x) = 0), converging with N to 1e-6 and below."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import lobatto
from lobatto.analysis import resonances
from lobatto.analysis.resonance_table import probe_series, uniform_step

pytest.importorskip("gmsh")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "meshes"))
import gmsh_meshes  # noqa: E402

#: j_1(x) = sin x / x^2 - cos x / x vanishes where tan x = x: TE_10p modes of a unit ball
TE_ROOTS = {"TE101": 4.493409457909064, "TE102": 7.725251836937707}


def test_j1_roots_are_roots():
    for x in TE_ROOTS.values():
        assert abs(np.sin(x) / x**2 - np.cos(x) / x) < 1e-14


def cavity_frequencies(tmp_path, order, t_end=6.0):
    mesh = gmsh_meshes.ball(tmp_path / f"ball{order}.msh", radius=1.0, divisions=2, order=order)
    # E = phi-hat sin(theta) f(r) with f(1) = 0: divergence-free, tangential E = 0 on the wall,
    # so it excites the TE_10p modes (m = 0) only
    data = {"mesh": {"generator": "gmsh", "file": str(mesh), "boundary": "pec"},
            "discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "initial": {"Ex": "-y*(1-x*x-y*y-z*z)**2", "Ey": "x*(1-x*x-y*y-z*z)**2"},
            "time": {"t_end": t_end, "cfl": 0.6},  # (lsrk45 bound 0.63)
            "output": {"every": 0, "formats": [],
                       "probes": {"every": 10, "points": [[0.3, 0.2, 0.1]], "fields": ["Ex"]}}}
    out = tmp_path / f"run{order}"
    lobatto.run(lobatto.case_from_dict(data, name="ball"), output_dir=out, backend="cpu")
    got = probe_series(out, "p0", "Ex")
    kept, dt = uniform_step(got["time"], got["path"])
    modes = resonances(got["values"][kept], dt)
    return {name: float(modes.omega[np.argmin(np.abs(modes.omega - w))]) for name, w in TE_ROOTS.items()}


def test_spherical_cavity_frequencies_converge_to_1e_6(tmp_path):
    errors = {}
    for order in (4, 6):
        found = cavity_frequencies(tmp_path, order)
        errors[order] = {k: abs(found[k] - w) / w for k, w in TE_ROOTS.items()}
    # measured (t_end = 6): N = 6 TE101 9.0e-8, TE102 8.3e-7; N = 4 3.5e-6, 1.7e-4 (cfl 0.6;
    # at cfl 0.4: 5.9e-8, 9.8e-7; 6.4e-6, 1.4e-4)
    assert errors[6]["TE101"] < 1e-6, errors
    assert errors[6]["TE102"] < 1e-5, errors
    for name in TE_ROOTS:
        assert errors[6][name] < errors[4][name] / 20, errors
