"""TF/SF plane waves with volume_form = "galerkin" (systems/maxwell/tfsf_galerkin.py), beside the
split form's measures of test_maxwell_tfsf.py.

- The correction is exactly the neighbour's trace in the other formulation (rhs = the plain
  Galerkin operator on u +- the incident field, to round-off): test_maxwell_tfsf.py's
  test_correction_is_the_neighbours_trace_in_the_other_formulation with volume_form = "galerkin".
- A pulse through a total-field box (no scatterer): inside the analytic wave to the
  discretisation error, upstream round-off, downstream the leak; both below the split form's;
  the same on a curved-interior mesh with the surface on flat faces.
- The oblique pulse through a box in a box on the stage (lsrk45) and rhs (rk4) paths;
  incident_field = "discrete" is one InputError.
"""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.errors import InputError

from test_maxwell_tfsf import box_case, run_case


def slab_errors(order, form):
    """test_maxwell_tfsf.py's slab: periodic in y and z, a gaussian pulse along x, box 1 <= x <= 2."""
    case = case_from_dict({
        "mesh": {"elements": [9, 1, 1], "periodic": [False, True, True], "upper": [3.0, 0.4, 0.4],
                 "boundary": "absorbing"},
        "discretization": {"order": order, "volume_form": form}, "physics": {"equations": "maxwell", "epsilon": 2.25},
        "time": {"t_end": 3.6, "cfl": 0.3}, "output": {"formats": []},
        "source": {"inc": {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 1, 1], "amplitude": 1.7,
                           "waveform": "gaussian", "t0": 0.6, "width": 0.2, "origin": [0.0, 0.2, 0.1],
                           "lower": [1.0, 0.0, 0.0], "upper": [2.0, 0.4, 0.4]}}})
    system, u, t = run_case(case)
    x = system.geometry.coords
    centre = x[0].mean(axis=(1, 2, 3))
    inside = (centre > 1) & (centre < 2)
    exact = np.concatenate(system.terms[0].wave.fields(np, x, t))
    return {"inside": np.abs(u[:, inside] - exact[:, inside]).max() / 1.7,
            "upstream": np.abs(u[:, centre < 1]).max() / 1.7, "downstream": np.abs(u[:, centre > 2]).max() / 1.7}


def test_pulse_through_an_empty_box():
    # measured (of the amplitude), N = 3, 4, 5, 6: inside 0.040, 0.0107, 0.0047, 0.00032 (split form
    # 0.094, 0.028, 0.0071, 0.0016); downstream 0.056, 0.011, 0.0014, 0.00017 (split 0.135, 0.030,
    # 0.0042, 0.00056); upstream 1e-14 to 1e-13 (both)
    coarse, fine = slab_errors(3, "galerkin"), slab_errors(4, "galerkin")
    split = slab_errors(4, "split")
    for e in (coarse, fine):
        assert e["upstream"] < 1e-12  # upwind: nothing goes back out where the wave came in
    assert fine["inside"] < 0.4 * coarse["inside"] and fine["inside"] < 0.6 * split["inside"]
    assert fine["downstream"] < 0.3 * coarse["downstream"] and fine["downstream"] < 0.6 * split["downstream"]


@pytest.mark.parametrize("integrator", ["lsrk45", "rk4"])  # the stage path and the rhs path
def test_oblique_pulse_through_a_box_in_a_box(integrator):
    system, u, t = run_case(box_case(integrator, discretization={"order": 3, "volume_form": "galerkin"}))
    x = system.geometry.coords
    c = x.mean(axis=(2, 3, 4))
    inside = np.all((c > [[0.5], [0.5], [0.25]]) & (c < [[1.0], [1.25], [1.0]]), axis=0)
    exact = np.concatenate(system.terms[0].wave.fields(np, x, t))
    assert np.abs(exact[:, inside]).max() > 0.5
    # measured 0.0226 inside and 0.023 outside, both integrators (split form: 0.041 and 0.036)
    assert np.abs(u[:, inside] - exact[:, inside]).max() < 0.03
    assert np.abs(u[:, ~inside]).max() < 0.03
    summary = system.summary(type("S", (), {"describe": lambda self: {}})())["plane_wave.inc"]
    assert summary["total_field_elements"] == 2 * 3 * 3 and summary["surface_faces"] == 2 * 2 * (9 + 6 + 6)
    assert "Galerkin" in summary["type"]


def test_discrete_incident_field_is_an_input_error():
    case = box_case(discretization={"order": 3, "volume_form": "galerkin"}, wave={"incident_field": "discrete"})
    with pytest.raises(InputError, match=r'\[source.inc\] incident_field = "discrete" is not taken'):
        Simulation(case, backend="cpu", output_dir=None, comm=None)


def curved_case(form, order=3):
    """A box curved inside (the deformation vanishes on the planes x, y, z = k/4, so the x faces at
    odd multiples of 1/8 and the volumes are curved) with the total-field box on flat faces."""
    bend = "sin(4*pi*x)*sin(4*pi*y)*sin(4*pi*z)"
    return case_from_dict({
        "mesh": {"elements": [8, 4, 4], "boundary": "absorbing", "deform": {"x": f"0.03*{bend}", "y": f"0.02*{bend}"}},
        "discretization": {"order": order, "volume_form": form}, "physics": {"equations": "maxwell"},
        "time": {"t_end": 0.7, "cfl": 0.3}, "output": {"formats": []},
        "source": {"inc": {"type": "plane_wave", "direction": [1.0, 0.3, 0.2], "polarization": [-0.3, 1.0, 0.0],
                           "waveform": "modulated_gaussian", "frequency": 2.0, "t0": 0.35, "width": 0.1,
                           "origin": [0.25, 0.5, 0.5], "lower": [0.25, 0.25, 0.25], "upper": [0.75, 0.75, 0.75]}}})


def test_oblique_pulse_on_a_curved_interior_mesh():
    errors = {}
    for form in ("split", "galerkin"):
        system, u, t = run_case(curved_case(form))
        x = system.geometry.coords
        inside = np.all((x.mean(axis=(2, 3, 4)) > 0.25) & (x.mean(axis=(2, 3, 4)) < 0.75), axis=0)
        exact = np.concatenate(system.terms[0].wave.fields(np, x, t))
        assert np.abs(exact[:, inside]).max() > 0.5
        errors[form] = (np.abs(u[:, inside] - exact[:, inside]).max(), np.abs(u[:, ~inside]).max())
    # measured at N = 3 (4 elements per carrier wavelength), inside and outside: Galerkin 0.050 and
    # 0.032, split 0.077 and 0.050; at N = 4 Galerkin 0.021 and 0.013, split 0.059 and 0.023
    (gi, go), (si, so) = errors["galerkin"], errors["split"]
    assert gi < 0.06 and go < 0.04
    assert gi < 0.8 * si and go < 0.8 * so


def test_a_stage_kernel_gets_the_corrected_sums():
    """The CUDA path's shape on the CPU: a stage kernel stage(u, residual, sums, ...) (the sums
    third, galerkin.attach's CUDA closure) wrapped by galerkin.correct_sums gives the fields of
    the rhs path's C kernel (measured 1e-14 of the peak)."""
    from lobatto.systems.dg import face_values
    from lobatto.systems.maxwell import galerkin

    runs = []
    for emulate in (False, True):
        sim = Simulation(box_case(discretization={"order": 3, "volume_form": "galerkin"}), backend="cpu",
                         output_dir=None, comm=None)
        system = sim.system
        if emulate:
            operator = system.galerkin

            def stage(u, residual, sums, geometry, epsilon, mu, alpha, a, b, dt, elements=None):
                du = operator.rhs(np, u, (face_values(np, u, system.order), sums), geometry["face_factors"],
                                  np.empty_like(u), epsilon, mu, alpha)
                residual *= a
                residual += dt * du
                u += b * residual

            system.stage_kernel, system.sums_corrected = stage, False
            galerkin.correct_sums(system)
        sim.run()
        runs.append(np.asarray(sim.u))
    scale = np.abs(runs[0]).max()
    assert scale > 0.3 and np.abs(runs[1] - runs[0]).max() < 1e-11 * scale
