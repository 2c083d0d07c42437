"""A dielectric sphere against the Mie series (miepython, an independent implementation).

- The Mie reference itself: miepython's S1, S2 with norm = "wiscombe" are Bohren and Huffman's
  amplitudes (the Rayleigh limit |S1| = |S2(180)| = x^3 |(m^2 - 1)/(m^2 + 2)|, and the
  bistatic RCS 4 pi |S|^2 / k^2 integrated over the sphere gives 4 pi sigma_sca), so the
  benchmark's RCS and cross sections are normalised as lobatto's.
- The mesh (examples/meshes/gmsh_meshes.py:sphere_scatterer), read by gmsh itself and by
  lobatto: the element count, the second-order nodes of the sphere's surface on the sphere,
  conformity (the only boundary faces are the outer box's) and the volumes.
- A run (CPU, small; the two-division mesh): the curved ball of eps = 4 in two Cartesian layers, a TF/SF plane-wave
  pulse, the near-to-far box, Silver-Mueller walls (no PML here: it would shorten the step by
  45 % and double the test's time; the far field rejects the walls' echoes, only their
  second scattering by the ball remains): sigma_sca at ka = 0.79 and 1.1 against Mie. The
  tolerance is set from the measured errors (+3.6 % and -0.1 % at N = 3 with the default form,
  the Galerkin one on this curved mesh; the split form the same to 0.03 %; earlier, on the
  one-division mesh with the chain rule, -0.8 % and -2.2 %, with a PML layer -3.1 % and -1.5 %)
  with a margin that still fails for eps off by 10 % (Mie's sigma_sca changes by 14 % and 18 %).

The GPU test at N = 5 is tests/unit/test_maxwell_mie_gpu.py.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

miepython = pytest.importorskip("miepython", reason="the Mie reference needs miepython (pip install miepython)")
gmsh = pytest.importorskip("gmsh")

from lobatto.api import case_from_dict, run  # noqa: E402
from lobatto.mesh import compute_geometry  # noqa: E402
from lobatto.mesh.readers import mesh_from_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gmsh_meshes", ROOT / "examples" / "meshes" / "gmsh_meshes.py")
gm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gm)


@pytest.fixture(scope="module")
def gmsh_session():
    gmsh.initialize(readConfigFiles=False, interruptible=False)
    gmsh.option.setNumber("General.Terminal", 0)
    yield
    gmsh.finalize()


def mie_rcs(m, x, k, theta):
    """RCS (E-plane, H-plane) = 4 pi |S2|^2 / k^2, 4 pi |S1|^2 / k^2."""
    s1, s2 = miepython.S1_S2(m, x, np.cos(theta), norm="wiscombe")
    return 4 * np.pi * np.abs(s2) ** 2 / k**2, 4 * np.pi * np.abs(s1) ** 2 / k**2


def test_mie_reference_normalisation():
    rng = np.random.default_rng()
    m = 1.2 + rng.random()
    k, a = 2 * np.pi * (0.5 + rng.random()), 0.01  # Rayleigh: x = 0.03 to 0.09
    x = k * a
    e_plane, h_plane = mie_rcs(m, x, k, np.array([0.0, np.pi / 2, np.pi]))
    rayleigh = 4 * np.pi * k**4 * a**6 * ((m * m - 1) / (m * m + 2)) ** 2  # the dipole's RCS, any angle in H
    assert np.allclose(h_plane, rayleigh, rtol=x**2)
    assert np.allclose(e_plane[[0, 2]], rayleigh, rtol=x**2) and e_plane[1] < 1e-3 * rayleigh  # cos^2 theta
    # larger sphere: the RCS over the sphere (E-plane along phi = 0, H-plane along 90, so
    # |S2|^2 cos^2 phi + |S1|^2 sin^2 phi) integrates to 4 pi sigma_sca
    m, x, k = 2.0, 1.0 + 2 * rng.random(), 2 * np.pi * 0.6
    mu, w = np.polynomial.legendre.leggauss(120)
    e_plane, h_plane = mie_rcs(m, x, k, np.arccos(mu))
    total = np.pi * np.sum(w * (e_plane + h_plane))  # the phi integral of cos^2 and sin^2 is pi each
    qext, qsca, _, _ = miepython.efficiencies_mx(m, x)
    sigma = qsca * np.pi * (x / k) ** 2
    assert abs(total / (4 * np.pi * sigma) - 1) < 1e-10
    assert abs(qext / qsca - 1) < 1e-10  # lossless


@pytest.mark.parametrize("divisions, layers", [(1, (0.5, 0.25)), (2, (0.375, 0.375, 0.375))])
def test_sphere_scatterer_mesh(tmp_path, gmsh_session, divisions, layers):
    radius, half_width, n, count = 0.5, 0.75, divisions, len(layers)
    path = gm.sphere_scatterer(tmp_path / "s.msh", radius=radius, half_width=half_width, divisions=n,
                               layers=layers, order=2)
    expected = 13 * n**3 + (n + 2 * count) ** 3 - n**3
    gmsh.open(str(path))  # gmsh's own reader
    types, tags, _ = gmsh.model.mesh.getElements(3)
    assert list(types) == [12] and len(tags[0]) == expected  # 27-node hexahedra
    group = {gmsh.model.getPhysicalName(2, t): t for _, t in gmsh.model.getPhysicalGroups(2)}
    _, xyz = gmsh.model.mesh.getNodesForPhysicalGroup(2, group["sphere_surface"])
    r = np.linalg.norm(xyz.reshape(-1, 3), axis=1)
    assert np.abs(r - radius).max() < 1e-12  # corner, edge and face nodes of a quadratic patch
    outer = half_width + sum(layers)
    mesh = mesh_from_file("gmsh", path, 4)
    assert mesh.num_elements == expected and mesh.region_names == ("sphere", "air")
    assert np.count_nonzero(mesh.regions == 0) == 7 * n**3
    geo = compute_geometry(mesh, 4)
    faces = np.count_nonzero(mesh.face_group >= 0)
    assert faces == 6 * (n + 2 * count) ** 2  # conforming: no inner face is left unmatched
    assert abs(geo.mass.sum() - (2 * outer) ** 3) < 1e-11
    ball = geo.mass[mesh.regions == 0].sum()
    # the quadratic patches lie inside the sphere: 0.014 (n = 1), 9.5e-4 (n = 2) of 0.524
    assert 0 < 4 / 3 * math.pi * radius**3 - ball < 0.02 / 10 ** (n - 1), ball


def sphere_case(mesh, epsilon=4.0, amplitude=1.0):
    """The benchmark's small case (benchmarks/bench_mie_sphere.py --small) without its PML."""
    return {"mesh": {"generator": "gmsh", "file": str(mesh), "boundary": "absorbing"},
            "discretization": {"order": 3}, "physics": {"equations": "maxwell"},
            "material": {"sphere": {"epsilon": epsilon}},
            "source": {"incident": {"type": "plane_wave", "direction": [0, 0, 1], "polarization": [1, 0, 0],
                                    "amplitude": amplitude, "waveform": "modulated_gaussian", "frequency": 0.3,
                                    "width": 1.0, "t0": 5.75, "lower": [-0.75] * 3, "upper": [0.75] * 3}},
            "time": {"t_end": 13.25, "cfl": 0.4},
            "output": {"formats": [], "every": 0, "name": "sphere",
                       "far_field": {"frequencies": [0.25, 0.35], "lower": [-1.25] * 3, "upper": [1.25] * 3,
                                     "theta": [0, 90, 180], "phi": [0, 90], "absorption_region": "sphere"}}}


def test_dielectric_sphere_against_mie(tmp_path, gmsh_session):
    import h5py

    # two divisions per patch: on the one-division mesh (one element per 90 degrees of the sphere)
    # the error at N = 3 is the form's under-resolution (sigma_sca -0.2 % and -4.5 % split, -0.9 %
    # and -7.1 % galerkin, -0.8 % and -2.2 % chain; at N = 4 split and galerkin agree, -1.5 % and
    # -5.1 / -5.2 %: the geometry's error); on this one the split and Galerkin forms agree to 0.03 %
    mesh = gm.sphere_scatterer(tmp_path / "s.msh", radius=0.5, half_width=0.75, divisions=2, layers=(0.5, 0.5),
                               order=2)
    amplitude = 0.5 + np.random.default_rng().random()  # the cross sections do not depend on it
    run(case_from_dict(sphere_case(mesh, amplitude=amplitude), name="sphere"), backend="cpu", output_dir=tmp_path)
    with h5py.File(tmp_path / "sphere_farfield.h5", "r") as f:
        f_values, sca = f["frequencies"][()], f["cross_sections/scattering"][()]
        absorbed, rcs = f["cross_sections/absorption"][()], f["rcs"][()]
    k = 2 * np.pi * f_values
    _, qsca, _, _ = miepython.efficiencies_mx(2.0, k * 0.5)
    mie = qsca * np.pi * 0.25
    error = sca / mie - 1
    assert np.all(np.abs(error) < 0.05), error  # measured +3.6 %, -0.1 % (the default form: galerkin)
    # lossless: measured -7.5 %, -2.8 % (split -7.2 %, -2.6 %): the walls' echoes (no PML) through the ball
    assert np.all(np.abs(absorbed) < 0.1 * mie), absorbed / mie
    for i, (ki, xi) in enumerate(zip(k, k * 0.5)):  # forward, sideways, back; relative to the plane's largest
        for plane, expected in enumerate(mie_rcs(2.0, xi, ki, np.radians([0.0, 90.0, 180.0]))):
            deviation = np.abs(rcs[i, :, plane] - expected).max() / expected.max()
            assert deviation < 0.1  # measured 0.084 (f = 0.25), 0.0045 (0.35), both planes: the forward peak
    # the same comparison fails for a sphere of eps = 3.6: Mie's sigma_sca moves by 14 to 18 %
    _, qsca_wrong, _, _ = miepython.efficiencies_mx(math.sqrt(3.6), k * 0.5)
    assert np.all(np.abs(sca / (qsca_wrong * np.pi * 0.25) - 1) > 0.08)
