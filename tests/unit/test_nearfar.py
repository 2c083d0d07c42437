"""The near-to-far-field transformation (lobatto/systems/maxwell/far_field.py, [output.far_field]).

- The analytic phasor field of a Hertzian dipole (near, intermediate and far terms) on the
  curved closed surface of a group of elements of a deformed mesh: the transformation gives
  its far field E_theta = i eta k I l sin(theta) / (4 pi), E_phi = 0, and the radiated power
  eta k^2 |I l|^2 / (12 pi) both from the far field over the sphere and from the surface's
  Poynting flux, to the quadrature's accuracy (spectral in N).
- A run with a dipole source (sources.py) in free space (Silver-Mueller walls): the pattern
  and the power per frequency against the analytic dipole with the waveform's transform.
- The case file's errors.
"""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict, run
from lobatto.backends import get_backend
from lobatto.errors import InputError
from lobatto.mesh import box_mesh
from lobatto.systems.maxwell.far_field import far_field, radiated_power, spherical_units, surface_flux
from lobatto.systems.dg import face_values
from lobatto.systems.maxwell.sources import waveform_value
from lobatto.systems.maxwell.system import MaxwellSystem
from lobatto.systems.maxwell.tfsf import surface_signs


def dipole_phasors(x, k, eta, moment, position):
    """E, H (3, ...) of a z-directed Hertzian dipole I l = moment at position (Balanis 4-8..4-10)."""
    d = x - np.reshape(position, (3,) + (1,) * (x.ndim - 1))
    r = np.sqrt(np.sum(d**2, axis=0))
    theta, phi = np.arccos(d[2] / r), np.arctan2(d[1], d[0])
    rh, th, ph = (np.moveaxis(v, -1, 0) for v in spherical_units(theta, phi))
    g = np.exp(-1j * k * r)
    ikr = 1j * k * r
    e_r = eta * moment * np.cos(theta) / (2 * np.pi * r**2) * (1 + 1 / ikr) * g
    e_t = 1j * eta * k * moment * np.sin(theta) / (4 * np.pi * r) * (1 + 1 / ikr - 1 / (k * r) ** 2) * g
    h_p = 1j * k * moment * np.sin(theta) / (4 * np.pi * r) * (1 + 1 / ikr) * g
    return e_r * rh + e_t * th, h_p * ph


def closed_surface(system, inside):
    """normals, weights, points (3, P), (P,) of the faces of the ``inside`` elements with an
    outside neighbour."""
    from lobatto.discretization import gll_weights

    element, face = np.nonzero(surface_signs(system, inside) > 0)
    w = gll_weights(system.order)
    g = system.geometry
    normals = g.normals[:, element, face].reshape(3, -1)
    weights = (g.surface_jacobian[element, face] * np.outer(w, w)).reshape(-1)
    points = face_values(np, g.coords, system.order)[:, element, face].reshape(3, -1)
    return normals, weights, points


@pytest.mark.parametrize("order", [4, 7])
def test_analytic_dipole_through_a_curved_surface(order):
    def deform(x, y, z):  # moves the inner faces, keeps the outer box
        b = 0.08 * np.sin(np.pi * (x + 1) / 2) * np.sin(np.pi * (y + 1) / 2) * np.sin(np.pi * (z + 1) / 2)
        return b, -b, 0.5 * b

    mesh = box_mesh((4, 4, 4), lower=[-1, -1, -1], upper=[1, 1, 1], deform=deform, boundary="absorbing")
    system = MaxwellSystem(mesh, order, get_backend("cpu"), epsilon=2.0, mu=1.0)
    centre = system.geometry.coords.mean(axis=(2, 3, 4))
    inside = np.all(np.abs(centre) < 0.5, axis=0)  # the 8 central elements, curved faces around them
    assert inside.sum() == 8
    normals, weights, points = closed_surface(system, inside)
    eps, mu, f, moment = 2.0, 1.0, 0.7, 0.3 - 0.4j
    k, eta = 2 * np.pi * f * math.sqrt(eps * mu), math.sqrt(mu / eps)
    position = np.array([0.04, -0.03, 0.05])
    e, h = dipole_phasors(points, k, eta, moment, position)
    theta = np.linspace(0.1, np.pi - 0.1, 7)[:, None] + np.zeros(5)
    phi = np.linspace(0, 2 * np.pi, 5)[None, :] + 0 * theta
    e_theta, e_phi = far_field(e, h, normals, weights, points, k, eta, theta, phi)
    r_hat = np.moveaxis(spherical_units(theta, phi)[0], -1, 0)
    expected = 1j * eta * k * moment * np.sin(theta) / (4 * np.pi) * np.exp(1j * k * np.tensordot(position, r_hat, 1))
    power = eta * k**2 * abs(moment) ** 2 / (12 * np.pi)
    tol = {4: 5e-4, 7: 5e-8}[order]  # measured 2.2e-4 and 2.4e-8 (E_theta)
    assert np.max(np.abs(e_theta - expected)) < tol * np.max(np.abs(expected))
    assert np.max(np.abs(e_phi)) < tol * np.max(np.abs(expected))
    assert abs(radiated_power(e, h, normals, weights, points, k, eta) / power - 1) < tol
    assert abs(surface_flux(e, h, normals, weights) / power - 1) < tol


DIPOLE_WAVE = {"frequency": 1.0, "t0": 1.0, "width": 0.25}
FREQUENCIES = [0.7, 0.85, 1.0, 1.15, 1.3]


def dipole_case(order=4, t_end=4.0, dft=None, **far_field):
    """A z-directed dipole at the centre of the middle element of 5^3 (h = 0.5), the Huygens box
    one element away from the source's element (whose polynomial delta is not a field), first-
    order Silver-Mueller walls 0.5 beyond it (their echoes come from outside the surface, which the
    transformation rejects)."""
    return case_from_dict({
        "mesh": {"elements": [5, 5, 5], "lower": [-1.25] * 3, "upper": [1.25] * 3, "boundary": "absorbing"},
        "discretization": {"order": order}, "physics": {"equations": "maxwell"},
        "time": {"t_end": t_end, "cfl": 0.5},
        "source": {"d": {"type": "electric_dipole", "position": [0, 0, 0], "direction": [0, 0, 1],
                         "waveform": "modulated_gaussian", **DIPOLE_WAVE}},
        "output": {"formats": [], "name": "dip",
                   "far_field": {"frequencies": FREQUENCIES, "lower": [-0.75] * 3, "upper": [0.75] * 3,
                                 "theta": [10, 30, 60, 90, 120, 150], "phi": [0, 45, 90], **far_field},
                   **({"dft": dft} if dft else {})}})


def test_dipole_run_against_the_analytic_power_and_pattern(tmp_path):
    # [output.dft] boxes: the same closed surface of faces (monitors/planes.py) gives the same flux
    box = {"lower": [-0.75] * 3, "upper": [0.75] * 3}
    result = run(dipole_case(dft={"frequencies": FREQUENCIES, "boxes": [box], "fields": ["Ez"]}), output_dir=tmp_path)
    with h5py.File(tmp_path / "dip_dft.h5") as f:
        box_flux = f["surfaces/box [-0.75, -0.75, -0.75] to [0.75, 0.75, 0.75]/flux/poynting_flux"][:]
    entry = result.summary["time_series"]["far_field"]
    assert entry["file"] == "dip_farfield.h5" and entry["surface_faces"] == {"scattering": 6 * 9}
    with h5py.File(tmp_path / "dip_farfield.h5") as f:
        t = np.linspace(f.attrs["t_first"], f.attrs["t_last"], f.attrs["samples"])
        power, flux = f["power/far_field"][:], f["power/scattering_surface_flux"][:]
        e_theta, e_phi, theta = f["E_theta"][:], f["E_phi"][:], np.radians(f["theta"][:])
        assert "rcs" not in f and "[output.far_field]" in f.attrs["config"]
    for i, frequency in enumerate(FREQUENCIES):
        # I l(f): the dipole's current moment transformed by the same trapezoid rule at the same steps
        phased = np.array([waveform_value("modulated_gaussian", DIPOLE_WAVE, s) for s in t]) * np.exp(
            -2j * np.pi * frequency * t)
        moment = np.sum(0.5 * (phased[1:] + phased[:-1]) * np.diff(t))
        k = 2 * np.pi * frequency
        analytic = k**2 * abs(moment) ** 2 / (12 * np.pi)
        # N = 4, measured: 0.4% to 1.8% (far field), 0.2% to 1.6% (flux); N = 5 (t_end 5): 0.03% to 0.3%
        assert abs(power[i] / analytic - 1) < 0.03 and abs(flux[i] / analytic - 1) < 0.03
        assert box_flux[i] == pytest.approx(flux[i], rel=1e-12)  # the DFT's box: the same faces and trace
        pattern = np.abs(e_theta[i]) / (k * abs(moment) / (4 * np.pi) * np.sin(theta))[:, None]
        assert np.max(np.abs(pattern - 1)) < 0.04  # measured 1.9% to 2.3%
        assert np.max(np.abs(e_phi[i])) < 1e-12 * np.max(np.abs(e_theta[i]))  # the source's symmetry


@pytest.mark.parametrize("far_field,message", [
    ({"frequencies": None}, "frequencies is required"),
    ({"frequencies": [0.0]}, r"frequencies\[0\] must be a number from 1e-30 to 1e\+30"),
    ({"theta": [200]}, "an angle in degrees from 0 to 180"),
    ({"lower": None}, "lower and upper go together"),
    ({"lower": None, "upper": None}, "needs a closed surface"),
    ({"region": "all"}, "not both"),
    ({"absorption_lower": [0, 0, 0]}, "absorption_lower and absorption_upper go together"),
    ({"speed": 1}, "unknown key"),
])
def test_case_file_errors(far_field, message):
    data = dipole_case().to_dict()
    table = data["output"]["far_field"]
    for key, value in far_field.items():
        if value is None:
            table.pop(key)
        else:
            table[key] = value
    with pytest.raises(InputError, match=message):
        case_from_dict(data)


@pytest.mark.parametrize("far_field,message", [
    ({"lower": [-0.7] * 3}, "cuts element"),
    ({"incident": "sun"}, "no \\[source.sun\\] of type \"plane_wave\""),
    ({"lower": [2.0] * 3, "upper": [3.0] * 3}, "not a closed surface of element faces"),
])
def test_set_up_errors(far_field, message):
    with pytest.raises(InputError, match=message):
        Simulation(dipole_case(**far_field), backend="cpu", output_dir=None, comm=None)


def test_acoustics_is_refused():
    data = dipole_case().to_dict()
    data["physics"] = {"equations": "acoustics"}
    for key in ("source", "initial", "exact"):
        data.pop(key, None)
    data["time"]["cfl"] = 0.3
    with pytest.raises(InputError, match="needs the electromagnetic fields"):
        Simulation(case_from_dict(data), backend="cpu", output_dir=None, comm=None)
