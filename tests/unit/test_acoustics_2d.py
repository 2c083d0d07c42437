"""Acoustics on a 2-D mesh (fields p, ux, uy): the run equals its extruded 3-D twin (the
oracle of docs/notes-2d-plan.md 2.1), an exact standing mode converges, the central flux
conserves the energy, the integrals are per unit depth, and a 2-D case file runs end to end."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import lobatto.api as api
from lobatto.backends import get_backend
from lobatto.integrators import Stepper, get_scheme
from lobatto.mesh import box_mesh
from lobatto.mesh.extrude import extrude_quads
from lobatto.monitors.integrals import Integrals
from lobatto.systems.acoustics.system import AcousticsSystem
from planar import deform_xy

RHO, C = 1.3, 0.7
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "2d" / "acoustics_mode.toml"


def smooth_fields(x, y):
    """Random-free but generic z-independent data: every field non-zero, no symmetry."""
    return np.stack([np.exp(-8 * ((x - 0.4) ** 2 + (y - 0.55) ** 2)) + 0.3 * np.sin(3 * x + 2 * y),
                     np.cos(2 * x - y) * np.sin(np.pi * y) + 0.2,
                     np.sin(1.7 * x) * np.exp(y) - 0.4 * np.cos(3 * y)])


def twins(order, flux, volume_form, boundaries=None, periodic=(False, False)):
    """The 2-D system and the one on extrude_quads of the same mesh (z in [-1, 1], periodic z)."""
    mesh2 = box_mesh((3, 2), periodic=periodic, boundary="wall", deform=deform_xy,
                     boundaries=boundaries if boundaries is not None else {"xmax": "absorbing", "ymin": "absorbing"})
    backend = get_backend("cpu")
    options = dict(density=RHO, sound_speed=C, flux=flux, volume_form=volume_form)
    return (AcousticsSystem(mesh2, order, backend, **options),
            AcousticsSystem(extrude_quads(mesh2), order, backend, **options))


def initial_states(s2, s3):
    x2, y2 = s2.geometry.coords[:2]
    x3, y3 = s3.geometry.coords[:2]
    u2 = smooth_fields(x2, y2)
    u3 = np.concatenate([smooth_fields(x3, y3), np.zeros((1,) + x3.shape)])  # uz = 0
    return u2, u3


@pytest.mark.parametrize("flux, volume_form", [("upwind", "split"), ("central", "split"), ("upwind", "chain")])
def test_twenty_steps_equal_the_extruded_run_in_every_plane(flux, volume_form):
    s2, s3 = twins(4, flux, volume_form)
    assert s2.field_names == ("p", "ux", "uy") and s3.field_names == ("p", "ux", "uy", "uz")
    u2, u3 = initial_states(s2, s3)
    assert u2.shape == s2.allocate_state().shape == (3, 6, 1, 5, 5)
    dt = 0.004  # fixed: the stable-dt estimate would see the extruded mesh's z spacing
    for system, u in ((s2, u2), (s3, u3)):
        stepper = Stepper(system, get_scheme("lsrk45"))
        for n in range(20):
            stepper.step(u, n * dt, dt)
    scale = np.abs(u2).max()
    assert scale > 0.3 and np.abs(u2 - smooth_fields(*s2.geometry.coords[:2])).max() > 1e-3 * scale  # it moved
    worst = max(np.abs(u3[:3, :, k] - u2[:, :, 0]).max() for k in range(u3.shape[2]))
    assert worst <= 1e-12 * scale, worst
    assert np.abs(u3[3]).max() <= 1e-12 * scale  # uz stays 0
    # the energy per unit depth: the twin's over its depth Lz = 2
    assert abs(s3.energy(u3) - 2 * s2.energy(u2)) <= 1e-12 * s3.energy(u3)


def test_rhs_equals_the_extruded_rhs_on_a_periodic_box():
    s2, s3 = twins(5, "upwind", "split", boundaries={}, periodic=(True, True))
    u2, u3 = initial_states(s2, s3)
    r2, r3 = s2.rhs(u2, 0.0, np.empty_like(u2)), s3.rhs(u3, 0.0, np.empty_like(u3))
    scale = np.abs(r2).max()
    assert scale > 1.0
    assert max(np.abs(r3[:3, :, k] - r2[:, :, 0]).max() for k in range(6)) <= 1e-12 * scale
    assert np.abs(r3[3]).max() <= 1e-12 * scale


def standing_mode(m, n):
    """p = cos(m pi x) cos(n pi y) cos(w t), w = c pi sqrt(m^2 + n^2), in the rigid unit square."""
    w = C * np.pi * np.hypot(m, n)

    def fields(x, y, t):
        s, c = np.sin, np.cos
        return np.stack([c(m * np.pi * x) * c(n * np.pi * y) * c(w * t),
                         m * np.pi / (RHO * w) * s(m * np.pi * x) * c(n * np.pi * y) * s(w * t),
                         n * np.pi / (RHO * w) * c(m * np.pi * x) * s(n * np.pi * y) * s(w * t)])
    return fields


def mode_error(order, t_end=0.6, steps=150):
    mesh = box_mesh((2, 2), boundary="wall", deform=lambda x, y, z: (0.05 * np.sin(np.pi * x) * np.sin(np.pi * y),
                                                                    0.04 * np.sin(np.pi * x) * np.sin(np.pi * y), 0 * z))
    system = AcousticsSystem(mesh, order, get_backend("cpu"), density=RHO, sound_speed=C)
    exact = standing_mode(2, 1)
    x, y = system.geometry.coords[:2]
    u = exact(x, y, 0.0)
    stepper, dt = Stepper(system, get_scheme("lsrk45")), t_end / steps
    for k in range(steps):
        stepper.step(u, k * dt, dt)
    difference = u - exact(x, y, t_end)
    mass = system.geometry.mass
    return float(np.sqrt(np.sum(mass * difference**2) / np.sum(mass * exact(x, y, t_end) ** 2)))


def test_standing_mode_converges_spectrally():
    errors = [mode_error(order) for order in (3, 5, 7)]
    # measured: 9.1e-2, 2.5e-3, 6.5e-5 (relative L2 at t = 0.6; dt = 0.004: the time error is far below)
    assert errors[0] < 0.15 and errors[-1] < 1e-4, errors
    assert errors[0] / errors[1] > 20 and errors[1] / errors[2] > 20, errors


@pytest.mark.parametrize("boundaries, periodic", [({}, (False, False)), ({}, (True, False))])
def test_central_flux_rate_vanishes_and_upwind_dissipates(boundaries, periodic):
    rng = np.random.default_rng(7)
    for flux in ("central", "upwind"):
        system, _ = twins(4, flux, "split", boundaries=boundaries, periodic=periodic)
        u = rng.standard_normal(system.allocate_state().shape)
        du = system.rhs(u, 0.0, np.empty_like(u))
        mass, bulk = system.geometry.mass, RHO * C * C
        rate = float(np.sum(mass * (u[0] * du[0] / bulk + RHO * np.sum(u[1:] * du[1:], axis=0))))
        energy = system.energy(u)
        assert energy == pytest.approx(0.5 * np.sum(mass * (u[0] ** 2 / bulk + RHO * np.sum(u[1:] ** 2, 0))),
                                       rel=1e-14)
        if flux == "central":
            assert abs(rate) < 1e-12 * energy * system.points, rate
        else:
            assert rate < -1e-3 * energy


def test_integrals_are_per_unit_depth():
    s2, s3 = twins(4, "upwind", "split")
    u2, u3 = initial_states(s2, s3)
    section = SimpleNamespace(regions=("all",), volume=("energy", "kinetic_energy"), surfaces=("xmax", "ymin"),
                              surface=("intensity_flux",))
    v2, v3 = Integrals(section, s2).values(u2), Integrals(section, s3).values(u3)
    assert v2[0] == pytest.approx(s2.energy(u2), rel=1e-14)
    assert np.all(np.abs(v2) > 1e-3)
    assert np.abs(v3 - 2.0 * v2).max() <= 1e-12 * np.abs(v3).max(), (v2, v3)  # the twin's depth is 2


def test_example_case_runs_and_reports_its_error(tmp_path):
    case = api.load_case(EXAMPLE)
    assert case.mesh.elements == (4, 3) and case.mesh.dim == 2
    result = api.run(case, output_dir=tmp_path / "out")
    errors = result.summary["errors"]
    assert set(errors) == {"p", "ux", "uy", "all"}
    # measured: L2 1.05e-6 in all at N = 7, t = 1 (cfl 0.4)
    assert 1e-9 < errors["all"]["l2"] < 1e-5, errors
    assert result.fields["p"].shape == (12, 1, 8, 8)
    assert result.summary["points"] == 12 * 64


def test_case_file_run_equals_the_extruded_box_run(tmp_path):
    """The runner's route: a 2-D box case and the 3-D one-layer periodic-z box case."""
    def case(elements, lower, upper, periodic, name):
        return api.case_from_dict({
            "mesh": {"elements": elements, "lower": lower, "upper": upper, "periodic": periodic, "boundary": "wall",
                     "boundaries": {"xmax": "absorbing"},
                     "deform": {"x": "0.05*sin(pi*x)*sin(2*pi*y)", "y": "0.04*sin(2*pi*x)*cos(pi*y)"}},
            "discretization": {"order": 4}, "physics": {"equations": "acoustics", "density": RHO, "sound_speed": C},
            "initial": {"p": "exp(-8*((x-0.4)**2 + (y-0.55)**2))", "uy": "cos(2*x - y)"},
            "time": {"t_end": 0.08, "dt": 0.004}, "output": {"formats": []}}, name=name)
    two = api.run(case([3, 2], [0, 0], [1, 1], [False, False], "two"), output_dir=tmp_path / "two")
    three = api.run(case([3, 2, 1], [0, 0, -1], [1, 1, 1], [False, False, True], "three"),
                    output_dir=tmp_path / "three")
    assert two.summary["steps"] == three.summary["steps"] == 20
    scale = max(np.abs(two.fields[f]).max() for f in ("p", "ux", "uy"))
    for name in ("p", "ux", "uy"):
        assert np.abs(three.fields[name] - two.fields[name]).max() <= 1e-12 * scale, name
    assert np.abs(three.fields["uz"]).max() <= 1e-12 * scale
    assert three.summary["energy"]["final"] == pytest.approx(2 * two.summary["energy"]["final"], rel=1e-12)
