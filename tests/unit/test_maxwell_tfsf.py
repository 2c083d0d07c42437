"""Total-field/scattered-field plane waves (systems/maxwell/tfsf.py).

- The flux correction is exactly the neighbour's trace in the other formulation: on a curved
  mesh with a random total-field set, rhs(u) on a total-field element equals the plain
  operator applied to u + (incident field on the scattered-field elements), and on a
  scattered-field element the plain operator applied to u - (incident on the total-field
  elements), to round-off (upwind and central, C and pure-array backends).
- A pulse crossing a total-field box on a mesh periodic in y and z (no scatterer): inside, the
  analytic plane wave to the discretisation error (falling with N); upstream of the box (where
  a scatterer's reflection would go) the scattered field stays at round-off; downstream the
  leak is the discretisation error of the pulse that crossed the box (falling with N).
- An oblique pulse through a box inside a box, and the case file's errors.
- CUDA equals the CPU (skipped without CuPy and a GPU).
"""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.backends import get_backend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.errors import InputError
from lobatto.mesh import box_mesh
from lobatto.systems.maxwell.sources import waveform_value
from lobatto.systems.maxwell.system import MaxwellSystem
from lobatto.systems.maxwell.tfsf import PlaneWave, TotalFieldScatteredField, waveform_array
from lobatto.systems.maxwell.tfsf_galerkin import GalerkinTotalFieldScatteredField

from analytic import bump


def plane_wave(direction, polarization, waveform="modulated_gaussian", epsilon=1.0, mu=1.0, **params):
    params = {"frequency": 1.3, **params}
    k = np.array(direction, float) / np.linalg.norm(direction)
    p = np.array(polarization, float) / np.linalg.norm(polarization)
    return PlaneWave("inc", k, p, 1.7, waveform, params, np.array([0.1, -0.2, 0.3]), epsilon, mu)


@pytest.mark.parametrize("backend,flux", [("cpu", "upwind"), ("cpu", "central"), ("numpy", "upwind")])
@pytest.mark.parametrize("volume_form", ["split", "galerkin"])
def test_correction_is_the_neighbours_trace_in_the_other_formulation(backend, flux, volume_form):
    """rhs(u) on a total-field element is the plain operator on u + (the incident field on the
    scattered-field elements), on a scattered-field element on u - (incident on the total-field
    ones), on a curved mesh with a random total-field set; with the Galerkin form through its own
    term (tfsf_galerkin.py: the exchanged sums corrected; measured 3e-16 to 8e-16 of the scale)."""
    rng = np.random.default_rng()
    mesh = box_mesh((4, 3, 3), deform=bump, boundary="pec", boundaries={"xmax": "absorbing"})
    system = MaxwellSystem(mesh, 4, NumpyBackend() if backend == "numpy" else get_backend(backend), epsilon=2.0,
                           mu=1.5, flux=flux, volume_form=volume_form)
    inside = rng.random(system.num_elements) < 0.5
    inside[:2] = True, False
    k = rng.standard_normal(3)
    p = np.cross(k, rng.standard_normal(3))
    wave = plane_wave(k, p, "continuous", epsilon=2.0, mu=1.5, ramp=0.2)
    term = (GalerkinTotalFieldScatteredField if volume_form == "galerkin" else TotalFieldScatteredField)(
        system, wave, inside)
    system.add_term(term)
    assert system.time_dependent and not system.energy_bounded
    u = rng.standard_normal(system.allocate_state().shape)
    t = 3.5  # past every point's ramp (delays below 3)
    incident = np.concatenate(wave.fields(np, system.geometry.coords, t))
    assert np.abs(incident).max() > 0.5
    xp = system.backend
    got = xp.to_host(system.rhs(xp.asarray(u), t, xp.asarray(np.zeros_like(u))))
    on_t = xp.to_host(system.core_rhs(xp.asarray(u + np.where(inside, 0.0, 1.0)[:, None, None, None] * incident), t,
                                      xp.asarray(np.zeros_like(u))))
    on_s = xp.to_host(system.core_rhs(xp.asarray(u - np.where(inside, 1.0, 0.0)[:, None, None, None] * incident), t,
                                      xp.asarray(np.zeros_like(u))))
    scale = np.abs(got).max()
    assert np.abs(got[:, inside] - on_t[:, inside]).max() < 1e-13 * scale
    assert np.abs(got[:, ~inside] - on_s[:, ~inside]).max() < 1e-13 * scale
    plain = xp.to_host(system.core_rhs(xp.asarray(u), t, xp.asarray(np.zeros_like(u))))
    assert np.abs(got - plain).max() > 1e-2 * scale  # the correction did something
    # the term lives on the elements with a neighbour of the other kind
    nb = mesh.face_neighbour
    touching = np.any((nb >= 0) & (inside[np.maximum(nb, 0)] != inside[:, None]), axis=1)
    assert np.array_equal(term.elements, np.nonzero(touching)[0])


def test_waveforms_on_arrays_equal_the_dipoles_waveforms():
    params = {"frequency": 2.0, "t0": 0.5, "width": 0.1, "ramp": 0.3}
    tau = np.linspace(-0.4, 1.2, 41)
    for waveform in ("gaussian", "modulated_gaussian", "ricker", "continuous"):
        got = waveform_array(np, waveform, params, tau)
        want = [waveform_value(waveform, params, s) if s >= 0 or waveform != "continuous" else 0.0 for s in tau]
        assert np.allclose(got, want, rtol=0, atol=1e-15)
    params["ramp"] = 0.0
    assert np.array_equal(waveform_array(np, "continuous", params, np.array([-0.1, 0.1])),
                          [0.0, np.sin(2 * np.pi * 2.0 * 0.1)])


def slab_case(order, t_end, flux="upwind", integrator="lsrk45", backend="cpu"):
    """A mesh periodic in y and z (one element across), the pulse along x, box 1 <= x <= 2."""
    return case_from_dict({
        "mesh": {"elements": [9, 1, 1], "periodic": [False, True, True], "upper": [3.0, 0.4, 0.4],
                 "boundary": "absorbing"},
        "discretization": {"order": order, "flux": flux}, "physics": {"equations": "maxwell", "epsilon": 2.25},
        "time": {"t_end": t_end, "cfl": 0.3, "integrator": integrator}, "output": {"formats": []},
        "source": {"inc": {"type": "plane_wave", "direction": [1, 0, 0], "polarization": [0, 1, 1], "amplitude": 1.7,
                           "waveform": "gaussian", "t0": 0.6, "width": 0.2, "origin": [0.0, 0.2, 0.1],
                           "lower": [1.0, 0.0, 0.0], "upper": [2.0, 0.4, 0.4]}}}), backend


def run_case(case, backend="cpu"):
    sim = Simulation(case, backend=backend, output_dir=None, comm=None)
    sim.run()
    system = sim.system
    return system, np.asarray(system.backend.to_host(sim.u)), sim.t


def slab_errors(order, t_end, **keys):
    system, u, t = run_case(*slab_case(order, t_end, **keys))
    x = system.geometry.coords
    centre = x[0].mean(axis=(1, 2, 3))
    inside = (centre > 1) & (centre < 2)
    exact = np.concatenate(system.terms[0].wave.fields(np, x, t))
    peak = 1.7  # the amplitude
    return {"inside": np.abs(u[:, inside] - exact[:, inside]).max() / peak, "peak": peak,
            "upstream": np.abs(u[:, centre < 1]).max() / peak, "downstream": np.abs(u[:, centre > 2]).max() / peak}


def test_pulse_through_an_empty_box():
    # t = 3.6: the pulse (speed 2/3, centred at x = 0 at t = 0.6) is centred on the box's far side
    coarse, fine = slab_errors(3, 3.6), slab_errors(4, 3.6)
    for e in (coarse, fine):
        assert e["upstream"] < 1e-12  # upwind: nothing goes back out where the wave came in
    # measured (relative to the amplitude), N = 3, 4, 5, 6: inside 0.094, 0.028, 0.0071, 0.0016;
    # downstream 0.135, 0.030, 0.0042, 0.00057
    assert fine["inside"] < 0.4 * coarse["inside"] and fine["inside"] < 0.04
    assert fine["downstream"] < 0.3 * coarse["downstream"] and fine["downstream"] < 0.04


def box_case(integrator="lsrk45", t_end=1.2, order=3, **changes):
    wave = {"type": "plane_wave", "direction": [1.0, 0.5, 0.3], "polarization": [-0.5, 1.0, 0.0],
            "waveform": "modulated_gaussian", "frequency": 1.0, "t0": 0.6, "width": 0.2,
            "origin": [0.5, 0.5, 0.5], "lower": [0.5, 0.5, 0.25], "upper": [1.0, 1.25, 1.0]}
    wave.update(changes.pop("wave", {}))
    wave = {k: v for k, v in wave.items() if v is not None}  # None: left out
    data = {"mesh": {"elements": [6, 6, 6], "upper": [1.5, 1.5, 1.5], "boundary": "absorbing"},
            "discretization": {"order": order}, "physics": {"equations": "maxwell"},
            "time": {"t_end": t_end, "cfl": 0.3, "integrator": integrator}, "output": {"formats": []},
            "source": {"inc": wave}}
    data.update(changes)
    return case_from_dict(data)


@pytest.mark.parametrize("integrator", ["lsrk45", "rk4"])  # the stage path and the rhs path
def test_oblique_pulse_through_a_box_in_a_box(integrator):
    system, u, t = run_case(box_case(integrator))
    x = system.geometry.coords
    c = x.mean(axis=(2, 3, 4))
    inside = np.all((c > [[0.5], [0.5], [0.25]]) & (c < [[1.0], [1.25], [1.0]]), axis=0)
    exact = np.concatenate(system.terms[0].wave.fields(np, x, t))
    assert np.abs(exact[:, inside]).max() > 0.5  # the pulse is in the box
    # N = 3, 4 elements per wavelength of the carrier: the discretisation error (measured 0.041
    # and 0.036 of a peak of 0.59; at N = 5 both 0.004)
    assert np.abs(u[:, inside] - exact[:, inside]).max() < 0.06
    assert np.abs(u[:, ~inside]).max() < 0.06
    summary = system.summary(type("S", (), {"describe": lambda self: {}})())["plane_wave.inc"]
    assert summary["total_field_elements"] == 2 * 3 * 3 and summary["surface_faces"] == 2 * 2 * (9 + 6 + 6)  # both sides


@pytest.mark.parametrize("change,message", [
    ({"wave": {"lower": [0.6, 0.5, 0.25]}}, "cuts element"),
    ({"wave": {"lower": [5.0, 5.0, 5.0], "upper": [6.0, 6.0, 6.0]}}, "has no face with the scattered-field region"),
    ({"material": {"slab": {"where": "x - 0.75", "epsilon": 4.0, "sampling": "element"}}},
     "crosses a medium other than the background"),
    ({"wave": {"lower": None, "upper": None, "region": "glass"}}, "no such volume region"),
])
def test_set_up_errors(change, message):
    case = box_case(**change)
    with pytest.raises(InputError, match=message):
        Simulation(case, backend="cpu", output_dir=None, comm=None)


@pytest.mark.parametrize("wave,message", [
    ({"polarization": [1.0, 0.0, 0.0]}, "perpendicular to direction"),
    ({"upper": None}, "lower and upper go together"),
    ({"lower": None, "upper": None}, "says where the total field is"),
    ({"region": "all"}, "not both"),
    ({"width": None}, "width is required"),
    ({"ramp": 0.1}, "ramp does not apply"),
    ({"direction": [0, 0, 0]}, "a nonzero vector"),
    ({"colour": 1}, "unknown key"),
])
def test_case_file_errors(wave, message):
    data = box_case().to_dict()
    source = data["source"]["inc"]
    for key, value in wave.items():
        if value is None:
            source.pop(key)
        else:
            source[key] = value
    with pytest.raises(InputError, match=message):
        case_from_dict(data)


def test_cuda_equals_cpu():
    pytest.importorskip("cupy")
    from lobatto.backends import cuda_available

    ok, why = cuda_available()
    if not ok:
        pytest.skip(f"needs CuPy and a CUDA GPU: {why}")
    fields = {}
    for backend in ("cpu", "cuda"):
        fields[backend] = run_case(box_case(t_end=0.6), backend)[1]
    assert np.abs(fields["cpu"]).max() > 0.1
    assert np.abs(fields["cuda"] - fields["cpu"]).max() < 1e-12 * np.abs(fields["cpu"]).max()


def periodic_y_case(lower, upper, direction):
    """A mesh periodic in y and z (4 elements across y, 1 across z) and a plane wave."""
    return case_from_dict({
        "mesh": {"elements": [6, 4, 1], "periodic": [False, True, True], "upper": [1.5, 1.0, 0.25],
                 "boundary": "absorbing"},
        "discretization": {"order": 2}, "physics": {"equations": "maxwell"},
        "time": {"t_end": 0.1, "cfl": 0.3}, "output": {"formats": []},
        "source": {"inc": {"type": "plane_wave", "direction": direction,
                           "polarization": [float(v) for v in (np.cross(direction, [0, 1, 0]) if direction[1] == 0 else [0, 0, 1])],
                           "waveform": "modulated_gaussian", "frequency": 1.0, "t0": 0.6, "width": 0.2,
                           "lower": lower, "upper": upper}}})


@pytest.mark.parametrize("lower,upper,direction,refused", [
    # the total-field box spans the periodic y axis: oblique in y is refused (measured without the
    # check at N = 4: errors of 3.2 times the amplitude inside, 3.5 times outside); normal is exact
    ([0.5, 0.0, 0.0], [1.0, 1.0, 0.25], [1, 0.5, 0], True),
    ([0.5, 0.0, 0.0], [1.0, 1.0, 0.25], [1, 0, 0], False),
    # it spans z too, but the wave has no z component; closed in y: the wrap is outside the box
    ([0.5, 0.25, 0.0], [1.0, 0.75, 0.25], [1, 0.5, 0], False),
    # closed in y, spanning z, and oblique in z
    ([0.5, 0.25, 0.0], [1.0, 0.75, 0.25], [1, 0, 0.2], True),
])
def test_oblique_wave_across_a_periodic_wrap_is_refused(lower, upper, direction, refused, tmp_path):
    case = periodic_y_case(lower, upper, direction)
    if refused:
        axis = "y" if direction[1] else "z"
        with pytest.raises(InputError, match=rf"\[source.inc\] type = \"plane_wave\" with direction = .* crosses the "
                                             rf"periodic {axis} axis .*Bloch-periodic boundaries"):
            Simulation(case, backend="cpu", output_dir=tmp_path, comm=None)
    else:
        Simulation(case, backend="cpu", output_dir=tmp_path, comm=None).run()
