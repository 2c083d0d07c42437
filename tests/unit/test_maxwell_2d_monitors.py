"""2-D Maxwell's line sources, DFT monitors and near-to-far transform (issue 34, slice C;
docs/electromagnetics.md, "2-D").

- The 2-D near-to-far transform (far_field.far_field_2d) of the exact fields of an electric
  (TM) and a magnetic (TE) line current, off the phase origin, on the closed contour of a box of
  edges: the far field -eta I e^(i pi/4) sqrt(k/(8 pi)) e^(ik rhat.x0) and the power per unit
  depth eta k I^2 / 8, to the quadrature's accuracy.
- A run of a z line current (a dipole on a 2-D mesh: the discrete delta over (1, n, n)) in a
  PML-lined box: the DFT of E_z against -(omega mu / 4) H0^(2)(k rho) and the far field monitor
  against the asymptote.
- DFT monitors on a 2-D mesh: lines, rectangles, regions and a named side against the extruded
  twin (flux per unit depth = the twin's / Lz, transforms equal), an analytic plane wave's flux
  through lines (exact) and a pulse's against its transform.
- What 2-D refuses: a plane z = c, a far field's theta list, a 2-entry box on a 3-D mesh.
"""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest
from scipy.special import hankel2

import lobatto
from lobatto.api import case_from_dict
from lobatto.backends.cpu import CpuBackend
from lobatto.config.dft import DftSection
from lobatto.errors import InputError
from lobatto.integrators.stepper import Stepper, get_scheme
from lobatto.jit import c as cbuild
from lobatto.mesh import box_mesh, compute_geometry
from lobatto.mesh.extrude import extrude_quads
from lobatto.mesh.topology import face_slice
from lobatto.monitors.dft import DftMonitor
from lobatto.monitors.planes import face_weights
from lobatto.systems.maxwell.far_field import far_field_2d, radiated_power_2d
from lobatto.systems.maxwell.sources import MaxwellSources
from lobatto.systems.maxwell.system import MaxwellSystem
from lobatto.systems.maxwell.waveforms import waveform_value

pytestmark = pytest.mark.skipif(not cbuild.available(), reason="no C compiler")


def contour(mesh, geometry, order):
    """points, normals (3, P), weights (P,) of the boundary edges of a 2-D mesh (outward)."""
    out, w = [], face_weights(order, 2)
    for f in range(4):
        e = np.nonzero(mesh.face_neighbour[:, f] < 0)[0]
        out.append((geometry.coords[:, e][face_slice(f, order)].reshape(3, -1), geometry.normals[:, e, f].reshape(3, -1),
                    (geometry.surface_jacobian[e, f] * w).reshape(-1)))
    return tuple(np.concatenate([o[i] for o in out], axis=-1) for i in range(3))


def line_current(points, k, eta, x0, magnetic=False):
    """E, H (3, P) phasors (e^(+i omega t)) of a unit z line current at x0: electric (TM:
    E_z = -(k eta / 4) H0^(2)(k rho)) or magnetic (TE, its dual: H_z = -(k / (4 eta)) H0^(2))."""
    d = points[:2] - np.asarray(x0[:2])[:, None]
    rho = np.hypot(d[0], d[1])
    scale = k * eta if not magnetic else k / eta
    value = -(scale / 4) * hankel2(0, k * rho)
    radial = (scale * k / 4) * hankel2(1, k * rho)  # d value / d rho
    curl = np.stack([radial * d[1] / rho, -radial * d[0] / rho, 0 * rho])  # curl (value z)
    along = np.stack([0 * value, 0 * value, value])
    omega = k  # (c = 1: eps = mu = 1 here, eta = 1)
    if not magnetic:
        return along, -curl / (1j * omega)  # curl E = -i omega mu H
    return curl / (1j * omega), along  # curl H = i omega eps E


@pytest.mark.parametrize("magnetic", [False, True], ids=["tm", "te"])
def test_the_2d_far_field_of_an_exact_line_current(magnetic):
    order, k, eta, x0 = 6, 2 * np.pi * 0.8, 1.0, (0.2, -0.1, 0.0)
    mesh = box_mesh((4, 4), lower=(-1.0, -1.0), upper=(1.0, 1.0))
    points, normals, weights = contour(mesh, compute_geometry(mesh, order), order)
    e, h = line_current(points, k, eta, x0, magnetic)
    phi = np.linspace(0.0, 2 * np.pi, 13)
    e_theta, e_phi = far_field_2d(e, h, normals, weights, points, k, eta, phi)
    # the asymptote sqrt(rho) e^(ik rho) of the exact field, phase origin 0
    far = np.exp(0.25j * np.pi) * math.sqrt(k / (8 * np.pi)) * np.exp(1j * k * (np.cos(phi) * x0[0] + np.sin(phi) * x0[1]))
    if magnetic:  # H_z -> -far / eta; outgoing E = -eta rhat x H: E_phi = eta H_z
        assert np.abs(e_phi + far).max() <= 1e-7 * np.abs(far).max() and np.abs(e_theta).max() < 1e-12
    else:  # E_z = -E_theta -> -eta far
        assert np.abs(-e_theta + eta * far).max() <= 1e-7 * np.abs(far).max() and np.abs(e_phi).max() < 1e-12
    power = radiated_power_2d(e, h, normals, weights, points, k, eta)
    assert power == pytest.approx((eta if not magnetic else 1 / eta) * k / 8, rel=1e-8)  # measured 8e-12 (TM)


def test_a_line_source_is_a_discrete_delta_per_unit_depth():
    """The dipole's rate on a 2-D mesh: one element's points; integral (per unit depth) of
    -J/eps = amplitude w(t) direction / eps; an xy direction drives Ex, Ey only (TE)."""
    order, eps = 4, 2.0
    mesh = box_mesh((3, 2), lower=(0.0, 0.0), upper=(1.5, 1.0))
    c = case_from_dict({"mesh": {"elements": [3, 2]}, "discretization": {"order": order},
                        "physics": {"equations": "maxwell", "epsilon": eps},
                        "time": {"t_end": 1.0, "dt": 0.01}, "output": {"formats": [], "every": 0},
                        "source": {"d": {"type": "electric_dipole", "position": [0.63, 0.41, 7.0],
                                         "direction": [3.0, 4.0, 0.0], "amplitude": 2.5, "waveform": "gaussian",
                                         "t0": 0.3, "width": 0.1}}}, name="d")
    system = MaxwellSystem.from_case(c, mesh, compute_geometry(mesh, order), CpuBackend())
    sources = MaxwellSources(list(c.tables["source"]), system)
    t = 0.27
    rate = np.asarray(sources.rate(t))  # (3, 1 element, 1, n, n)
    assert rate.shape == (3, 1, 1, order + 1, order + 1) and sources.elements.size == 1
    mass = system.geometry.mass[sources.elements]
    total = (rate * mass).reshape(3, -1).sum(axis=1)
    w = waveform_value("gaussian", {"t0": 0.3, "width": 0.1}, t)
    assert np.allclose(total, -2.5 * w / eps * np.array([0.6, 0.8, 0.0]), rtol=1e-13, atol=1e-15)
    first = ((rate * mass)[:, None] * system.geometry.coords[None, :2, sources.elements]).reshape(3, 2, -1).sum(axis=2)
    assert np.allclose(first, total[:, None] * np.array([0.63, 0.41]), rtol=1e-12, atol=1e-15)  # at (x0, y0)


def test_a_line_source_run_against_the_2d_greens_function(tmp_path):
    """A z line current (a dipole on a 2-D mesh, modulated Gaussian) in [-3, 3]^2 lined by a
    2-element PML at N = 7: the DFT of E_z over the region, 1 < rho and inside |x|, |y| < 2,
    against -(omega mu / 4) H0^(2)(k rho) W(f) (measured 2.3e-3 of its largest value; 6.5e-3 at
    N = 6, 9.0e-3 at N = 5: the mesh's error), and the far field from the contour of
    [-1.5, 1.5]^2 against the asymptote (measured 5.2e-5)."""
    f0, x0, dt, t_end = 0.5, (0.2, 0.15, 0.0), 0.01, 25.0
    wave = {"waveform": "modulated_gaussian", "frequency": f0, "t0": 4.0, "width": 1.0}
    case = case_from_dict({
        "mesh": {"elements": [12, 12], "lower": [-3.0, -3.0], "upper": [3.0, 3.0]},
        "discretization": {"order": 7}, "physics": {"equations": "maxwell"}, "time": {"t_end": t_end, "dt": dt},
        "pml": {"sides": "all", "elements": 2},
        "source": {"line": {"type": "electric_dipole", "position": list(x0), "direction": [0, 0, 1], **wave}},
        "output": {"every": 0, "formats": [], "dft": {"frequencies": [f0], "regions": ["all"], "fields": ["Ez"]},
                   "far_field": {"frequencies": [f0], "lower": [-1.5, -1.5, -1.0], "upper": [1.5, 1.5, 1.0],
                                 "phi": [0.0, 45.0, 90.0, 180.0, 270.0]}}}, name="line")
    lobatto.run(case, output_dir=tmp_path, backend="cpu")
    times = np.arange(0.0, t_end + dt / 2, dt)  # the monitors' samples: every step
    transform = np.trapezoid([waveform_value("modulated_gaussian", wave, t) for t in times]
                             * np.exp(-2j * np.pi * f0 * times), times)
    k = 2 * np.pi * f0
    with h5py.File(tmp_path / "line_dft.h5") as f:
        ez, xy = f["regions/all/Ez"][0], f["regions/all/coordinates"][:]
    rho = np.hypot(xy[0] - x0[0], xy[1] - x0[1])
    exact = -(k / 4) * hankel2(0, k * rho) * transform
    near = (rho > 1.0) & (np.abs(xy[0]) < 2.0) & (np.abs(xy[1]) < 2.0)
    assert np.abs(ez - exact)[near].max() <= 3e-3 * np.abs(exact[near]).max()
    with h5py.File(tmp_path / "line_farfield.h5") as f:
        far, phi = f["E_z"][0, 0], np.radians(f["phi"][:])
        assert f.attrs["dimension"] == 2 and f["theta"][:].tolist() == [90.0]
    asymptote = -np.exp(0.25j * np.pi) * math.sqrt(k / (8 * np.pi)) * transform * np.exp(
        1j * k * (np.cos(phi) * x0[0] + np.sin(phi) * x0[1]))
    assert np.abs(far - asymptote).max() <= 1e-4 * np.abs(asymptote).max()


# --------------------------------------------------------------------------- DFT monitors in 2-D
ORDER = 5
CASE = {"mesh": {"elements": [8, 2]}, "discretization": {"order": ORDER, "flux": "upwind"},
        "physics": {"equations": "maxwell"}, "time": {"t_end": 3.0, "dt": 0.01}, "output": {"formats": [], "every": 0}}


def strip(extruded=False):
    """Maxwell on [0, 4] x [0, 1] (8 x 2 quads, periodic in y, absorbing x sides), or on its
    extruded twin (z in [-1, 1], periodic)."""
    mesh = box_mesh((8, 2), lower=(0.0, 0.0), upper=(4.0, 1.0), periodic=(False, True),
                    boundaries={"xmin": "absorbing", "xmax": "absorbing"})
    mesh = extrude_quads(mesh) if extruded else mesh
    return MaxwellSystem.from_case(case_from_dict(CASE, name="strip"), mesh, compute_geometry(mesh, ORDER), CpuBackend())


def sections(dim):
    """The same table in 2-D and on the twin: a line (plane) x = 2.5, the rectangle (box)
    [2, 3] x [0, 1], the side xmax, the region all."""
    box = ((2.0, 0.0), (3.0, 1.0)) if dim == 2 else ((2.0, 0.0, -1.0), (3.0, 1.0, 1.0))
    return DftSection(frequencies=(0.5, 0.8), fields=("Ey", "Hz"), surfaces=("xmax",), regions=("all",),
                      flux=("poynting_flux",), planes=((0, 2.5), (1, 0.5)), boxes=(box,))


def pulse(system, t=0.0):
    """A TE pulse Ey = Hz = g(x - t) travelling along +x (eta = 1), g(s) = exp(-((s - 0.8) / 0.25)^2)."""
    u = system.allocate_state()
    g = np.exp(-(((system.geometry.coords[0] - 0.8 - t) / 0.25) ** 2))
    u[1], u[5] = g, g
    return u


def transformed(system, steps=300, dt=0.01):
    monitor = DftMonitor(sections(system.mesh.dim), system)
    u, stepper = pulse(system), Stepper(system, get_scheme("lsrk45"))
    monitor.accumulate(u, 0.0)
    for step in range(steps):
        stepper.step(u, step * dt, dt)
        monitor.accumulate(u, (step + 1) * dt)
    return monitor.results()


@pytest.fixture(scope="module")
def twins():
    return transformed(strip()), transformed(strip(extruded=True))


def test_2d_dft_equals_the_extruded_twins_per_unit_depth(twins):
    two, three = twins
    assert sorted(two) == sorted((k, n.replace("[2, 0, -1] to [3, 1, 1]", "[2, 0] to [3, 1]")) for k, n in three)
    for (kind, name), entry in two.items():
        other = three[(kind, name.replace("[2, 0] to [3, 1]", "[2, 0, -1] to [3, 1, 1]"))]
        edges = other["faces"] < 4  # the twin's box also has its z sides (no flux: S_z = 0 here)
        assert np.array_equal(entry["ids"], other["ids"][edges]) and np.array_equal(entry["faces"], other["faces"][edges])
        a, b = entry["transform"], other["transform"][:, :, edges]  # (F, fields, K, 1, n[, n]), the twin's (.., n, n[, n])
        scale = np.abs(a).max()
        if kind == "region":  # every k plane of the twin carries the 2-D transform
            assert np.abs(b - a).max() <= 1e-11 * scale, name
        else:  # faces 0..3: the twin's (n, n) face holds the 2-D (1, n) edge in every k row
            assert np.abs(b - a).max() <= 1e-11 * scale, name
        for what, fluxes in entry.get("flux", {}).items():
            # per unit depth: the twin's flux over its depth Lz = 2
            assert np.allclose(fluxes, other["flux"][what] / 2.0, rtol=1e-11, atol=1e-14), name  # (fluxes ~0.07)


def test_a_pulses_flux_through_a_line_is_its_transforms(twins):
    """Through x = 2.5 (per unit depth, Ly = 1): 1/2 |G(f)|^2 with G the pulse's transform
    there, 0.25 sqrt(pi) e^(-(0.25 omega)^2 / 4) (measured 4.8e-5 and 1.2e-5 of it at f = 0.5
    and 0.8); 0 through y = 0.5 (2e-16), and through the closed rectangle [2, 3] x [0, 1] to
    the discretisation's error (measured 9.3e-4 of the line's: the pulse, 0.25 wide, on
    elements 0.5 wide at N = 5)."""
    flux = {name: entry["flux"]["poynting_flux"] for (kind, name), entry in twins[0].items() if kind == "surface"}
    omega = 2 * np.pi * np.array([0.5, 0.8])
    exact = 0.5 * (0.25 * math.sqrt(math.pi) * np.exp(-((0.25 * omega) ** 2) / 4)) ** 2
    assert np.allclose(flux["x = 2.5"], exact, rtol=1e-4)
    assert np.abs(flux["y = 0.5"]).max() < 1e-9 * exact.max()
    assert np.abs(flux["box [2, 0] to [3, 1]"]).max() < 2e-3 * exact.max()


def test_a_plane_waves_flux_through_2d_lines_is_exact():
    """An analytic TE plane wave fed to the monitor over whole periods: 1/2 A^2 Ly per unit
    depth through x = c (and the side xmax), 0 through y = c and the closed rectangle."""
    system = strip()
    monitor = DftMonitor(sections(2), system)
    x, amplitude, f = system.geometry.coords[0], 1.7, 0.5
    duration, steps = 6 / f, 240
    for k in range(steps + 1):
        t = k * duration / steps
        u = system.allocate_state()
        u[1] = u[5] = amplitude * np.cos(2 * np.pi * f * (t - x) + 0.3)
        monitor.accumulate(u, t)
    results = monitor.results()
    flux = {name: entry["flux"]["poynting_flux"][0] * (2 / duration) ** 2 for (kind, name), entry in results.items()
            if kind == "surface"}
    assert flux["x = 2.5"] == pytest.approx(0.5 * amplitude**2, rel=1e-12)
    assert flux["xmax"] == pytest.approx(0.5 * amplitude**2, rel=1e-12)
    assert abs(flux["y = 0.5"]) < 1e-12 and abs(flux["box [2, 0] to [3, 1]"]) < 1e-12
    line = results[("surface", "x = 2.5")]
    assert len(line["ids"]) == 2 and np.allclose(line["coordinates"][0], 2.5)  # each edge once


def test_the_normalize_path_in_2d_equals_the_extruded_twins(tmp_path):
    """[output.dft] normalize (runner/normalization.py: the run without [material] first) with
    a TF/SF plane wave and a dielectric slab: the 2-D fluxes are the twin's / 2, the ratios equal."""
    def case(dim):
        mesh = {"elements": [8, 2], "lower": [0.0, 0.0], "upper": [4.0, 1.0], "periodic": [False, True],
                "boundary": "absorbing"}
        if dim == 3:
            mesh = {"elements": [8, 2, 1], "lower": [0.0, 0.0, -1.0], "upper": [4.0, 1.0, 1.0],
                    "periodic": [False, True, True], "boundary": "absorbing"}
        return case_from_dict({
            "mesh": mesh, "discretization": {"order": 4}, "physics": {"equations": "maxwell"},
            "time": {"t_end": 6.0, "dt": 0.01}, "material": {"slab": {"where": "(x-2.3)*(2.8-x)", "epsilon": 4.0}},
            "source": {"pw": {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 1, 0],
                              "lower": [0.5, -1.0, -2.0], "upper": [3.5, 2.0, 2.0], "waveform": "gaussian",
                              "t0": 1.0, "width": 0.2}},
            "output": {"every": 0, "formats": [], "dft": {"frequencies": [0.3, 0.6], "planes": ["x = 1", "x = 3"],
                                                          "flux": ["poynting_flux"], "normalize": "x = 3"}}},
            name=f"n{dim}")
    got = {}
    for dim in (2, 3):
        lobatto.run(case(dim), output_dir=tmp_path / str(dim), backend="cpu")
        with h5py.File(tmp_path / str(dim) / f"n{dim}_dft.h5") as f:
            got[dim] = {(s, w): f[f"surfaces/{s}/{w}/poynting_flux"][:] for s in ("x = 1", "x = 3")
                        for w in ("flux", "flux_incident", "flux_scattered", "normalized", "normalized_scattered")}
    for (surface, what), value in got[2].items():
        depth = 1.0 if what.startswith("normalized") else 2.0
        assert np.allclose(value, got[3][(surface, what)] / depth, rtol=1e-9, atol=1e-13), (surface, what)
    reflected = -got[2][("x = 1", "normalized_scattered")]
    assert np.all((reflected > 0.05) & (reflected < 0.2))  # the slab reflects (measured 0.115, 0.156)


# --------------------------------------------------------------------------- refused
def test_what_2d_dft_and_far_field_refuse():
    system = strip()
    section = DftSection(frequencies=(0.5,), fields=("Ez",), surfaces=(), regions=(), flux=(), planes=((2, 0.0),))
    with pytest.raises(InputError, match=r'"z = \.\.\." is a plane along z, and the mesh is 2-D'):
        DftMonitor(section, system)
    three = strip(extruded=True)
    section = DftSection(frequencies=(0.5,), fields=("Ez",), surfaces=(), regions=(), flux=(),
                         boxes=(((2.0, 0.0), (3.0, 1.0)),))
    with pytest.raises(InputError, match=r"has 2 coordinates and the mesh is 3-D: give lower = \[x, y, z\]"):
        DftMonitor(section, three)
    from lobatto.systems.maxwell.far_field import FarFieldMonitor
    from lobatto.systems.maxwell.far_field_table import ClosedSurface, FarFieldSection

    far = FarFieldSection(frequencies=(0.5,), surface=ClosedSurface(lower=(1.0, 0.0, -1.0), upper=(3.0, 1.0, 1.0)),
                          theta=(30.0, 60.0), phi=(0.0,), origin=None, incident=None, absorption=None)
    with pytest.raises(InputError, match=r"theta: the mesh is 2-D, its far field lies in the xy plane"):
        FarFieldMonitor(far, system)


def test_a_z_plane_on_a_2d_box_is_refused_when_the_run_is_set_up(tmp_path):
    data = dict(CASE, mesh={"elements": [4, 2], "upper": [2.0, 1.0]},
                output={"formats": [], "every": 0, "dft": {"frequencies": [0.5], "planes": ["z = 0.5"]}})
    with pytest.raises(InputError, match=r'\[output.dft\] planes: "z = 0.5": the mesh is 2-D \(\[mesh\] elements'):
        lobatto.run(case_from_dict(data, name="z"), output_dir=tmp_path, backend="cpu")
