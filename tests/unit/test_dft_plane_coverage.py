"""A plane of ``[output.dft] planes`` against the mesh's cross-section (monitors/planes.py
plane_coverage): on a gmsh mesh a plane may be only the few faces that lie there, which the run
now says (one line, rank 0) and records (the summary, NAME_dft.h5's attributes); a plane across
the whole section (a box mesh, or the gmsh mesh's x = 0.75) is not warned about."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

import lobatto
from lobatto.api import case_from_dict
from lobatto.config.dft import DftSection
from lobatto.monitors.dft import DftMonitor

WARNING = "lobatto: warning: [output.dft] plane"


def test_a_plane_of_part_of_a_gmsh_meshs_section_is_warned_about(capsys):
    """examples/meshes/sphere_scatterer.msh (the box +-2.25 of curved blocks): x = 0.15 is one
    face of the ball's inner block (0.3 x 0.3), the plane cutting the blocks around it; x = 0.75
    and the mesh's side y = 2.25 are the whole section 4.5 x 4.5 (49 faces, none cut)."""
    pytest.importorskip("gmsh")
    from lobatto.backends import get_backend
    from lobatto.runner.build import build_system

    path = Path(__file__).resolve().parents[2] / "examples" / "meshes" / "sphere_scatterer.msh"
    case = case_from_dict({"mesh": {"generator": "gmsh", "file": str(path), "boundary": "absorbing"},
                           "discretization": {"order": 1}, "time": {"t_end": 0.1}, "output": {"formats": []}})
    system = build_system(case, get_backend("cpu"))
    capsys.readouterr()
    section = DftSection(frequencies=(1.0,), fields=("Ez",), surfaces=(), regions=(), flux=("poynting_flux",),
                         planes=((0, 0.15), (0, 0.75), (1, 2.25)))
    coverage = DftMonitor(section, system).coverage
    part, whole, side = coverage["x = 0.15"], coverage["x = 0.75"], coverage["y = 2.25"]
    assert part["faces"] == 1 and part["area"] == pytest.approx(0.09, rel=1e-12) and part["partial"]
    assert part["section_area"] == pytest.approx(4.5**2, rel=1e-12) and part["cut_elements"] > 0
    for c in (whole, side):
        assert c["faces"] == 49 and c["area"] == pytest.approx(4.5**2, rel=1e-12) and c["cut_elements"] == 0
        assert not c["partial"]
    out = capsys.readouterr().out
    assert out.count(WARNING) == 1 and out.count("\n") == 1, out
    assert '"x = 0.15" is 1 element face of area 0.09, less than the mesh\'s section there (20.25' in out


def test_planes_across_a_box_mesh_are_whole_and_recorded(tmp_path, capsys):
    """A box mesh of 3 x 2 x 2 elements on [0, 1.5] x [0, 1] x [0, 0.8]: every face plane is the
    whole section (no warning), its faces and area in the summary and the file's attributes."""
    case = case_from_dict({"mesh": {"elements": [3, 2, 2], "upper": [1.5, 1.0, 0.8], "boundary": "absorbing"},
                           "discretization": {"order": 2}, "time": {"t_end": 0.05},
                           "initial": {"Ez": "exp(-10*((x-0.7)**2 + (y-0.4)**2))"},
                           "output": {"formats": [], "dft": {"frequencies": [1.0], "planes": ["x = 0.5", "z = 0.4",
                                                                                              "y = 0"]}}},
                          name="box")
    lobatto.run(case, output_dir=tmp_path, backend="cpu")
    assert WARNING not in capsys.readouterr().out
    planes = json.loads((tmp_path / "summary.json").read_text())["time_series"]["dft"]["planes"]
    expected = {"x = 0.5": (4, 0.8), "z = 0.4": (6, 1.5), "y = 0": (6, 1.2)}
    with h5py.File(tmp_path / "box_dft.h5", "r") as f:
        for name, (faces, area) in expected.items():
            assert planes[name]["faces"] == faces and planes[name]["area"] == pytest.approx(area, rel=1e-12)
            assert planes[name]["section_area"] == pytest.approx(area, rel=1e-12) and not planes[name]["partial"]
            attrs = f[f"surfaces/{name}"].attrs
            assert attrs["faces"] == faces and attrs["area"] == pytest.approx(area, rel=1e-12)
            assert attrs["cut_elements"] == 0 and not attrs["partial"]
            assert f[f"surfaces/{name}/element_ids"].shape == (faces,)
        assert np.abs(f["surfaces/x = 0.5/Ez"][:]).max() > 0
