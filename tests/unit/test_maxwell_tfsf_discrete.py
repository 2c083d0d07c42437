"""TF/SF with the discrete incident wave ([source.<name>] incident_field = "discrete",
systems/maxwell/tfsf_discrete.py).

- The cancellation is exact: on a curved mesh with a random total-field set and a random state
  u on it (zero outside), with the auxiliary wave v = u, the operator plus the term is zero on
  every scattered-field element and equals v's rate on the total-field elements (upwind and
  central, the C and the pure-array backends).
- No scatterer: a pulse that crosses the total-field region and leaves it keeps the
  scattered-field region at round-off over the whole run, upstream and downstream (a slab
  along x, and an oblique pulse through a box in a box); the analytic variant leaks the
  discretisation error downstream at the same setting (so the test can fail); the total field
  equals the auxiliary wave to round-off.
- With a dielectric block in the box both variants give the same scattered field to the
  discretisation error, falling with N.
- A restart continues bitwise (the auxiliary wave is checkpointed); a wrong value of the key
  and a Butcher integrator are one-line errors.
"""

from __future__ import annotations

import numpy as np
import pytest

from lobatto.api import Simulation, case_from_dict
from lobatto.backends import get_backend
from lobatto.backends.numpy_backend import NumpyBackend
from lobatto.errors import InputError
from lobatto.mesh import box_mesh
from lobatto.systems.maxwell.system import MaxwellSystem
from lobatto.systems.maxwell.tfsf_discrete import DiscreteIncidentTFSF

from analytic import bump
from test_maxwell_tfsf import box_case, plane_wave, slab_case

AMPLITUDE = 1.7  # of slab_case's pulse


@pytest.mark.parametrize("backend,flux", [("cpu", "upwind"), ("cpu", "central"), ("numpy", "upwind")])
def test_the_scattered_field_side_cancels_exactly(backend, flux):
    rng = np.random.default_rng()
    mesh = box_mesh((4, 3, 3), deform=bump, boundary="pec", boundaries={"xmax": "absorbing"})
    system = MaxwellSystem(mesh, 4, NumpyBackend() if backend == "numpy" else get_backend(backend), epsilon=2.0,
                           mu=1.5, flux=flux)
    inside = rng.random(system.num_elements) < 0.5
    inside[:2] = True, False
    k = rng.standard_normal(3)
    wave = plane_wave(k, np.cross(k, rng.standard_normal(3)), "continuous", epsilon=2.0, mu=1.5, ramp=0.2)
    term = DiscreteIncidentTFSF(system, wave, inside)
    system.add_term(term)
    nb = mesh.face_neighbour
    touching = np.any((nb >= 0) & (inside[np.maximum(nb, 0)] != inside[:, None]), axis=1)
    assert np.array_equal(term.elements, np.nonzero(inside | touching)[0])
    u = rng.standard_normal(system.allocate_state().shape) * inside[:, None, None, None]
    xp = system.backend
    term.aux[...] = xp.asarray(u[:, term.elements])
    t = 3.5  # past every point's ramp
    u_dev = xp.asarray(u)
    term.prepare(u_dev, t)
    full = xp.to_host(system.core_rhs(u_dev, t, xp.asarray(np.zeros_like(u))))
    full[:, term.elements] += xp.to_host(term.rate)
    scale = np.abs(full).max()
    assert np.abs(full[:, ~inside]).max() <= 1e-14 * scale
    on_total = inside[term.elements]
    rate = xp.to_host(term.aux_rate)
    assert np.abs(full[:, term.elements[on_total]] - rate[:, on_total]).max() <= 1e-14 * scale
    assert not rate[:, ~on_total].any()  # v stays 0 on the scattered-field elements
    assert np.abs(xp.to_host(term.rate)[:, ~on_total]).max() > 1e-2 * scale  # the correction did something


def monitored_run(case, select):
    """Steps to t_end; the largest |field| on the elements ``select(centres)`` gives, per
    group, over every step (the run's end included)."""
    sim = Simulation(case, backend="cpu", output_dir=None, comm=None)
    x = sim.system.geometry.coords
    groups = select(x.mean(axis=(2, 3, 4)))
    largest = {name: 0.0 for name in groups}
    while sim.t < case.time.t_end - 1e-12:
        sim.advance(1)
        u = np.asarray(sim.backend.to_host(sim.u))
        for name, on in groups.items():
            largest[name] = max(largest[name], float(np.abs(u[:, on]).max()))
    sim.close()  # its fields stay readable; the next run may use the directory
    return sim, largest


def slab_groups(c):
    return {"upstream": c[0] < 1, "inside": (c[0] > 1) & (c[0] < 2), "downstream": c[0] > 2}


def with_incident(case, incident, **tables):
    data = case.to_dict()
    data["source"]["inc"]["incident_field"] = incident
    data.update(tables)
    return case_from_dict(data)


def test_no_scatterer_keeps_the_scattered_field_at_round_off_downstream():
    # t = 5: the pulse (speed 2/3, centred on x = 0 at t = 0.6, width 0.13 in x) has crossed
    # the box 1 <= x <= 2 and left it (centred at x = 2.93)
    levels = {}
    for incident in ("analytic", "discrete"):
        sim, largest = monitored_run(with_incident(slab_case(3, 5.0)[0], incident), slab_groups)
        levels[incident] = {k: v / AMPLITUDE for k, v in largest.items()}
    discrete, analytic = levels["discrete"], levels["analytic"]
    assert discrete["inside"] > 0.9  # the pulse went through
    # measured (N = 3): discrete 5.0e-16 upstream, 7.5e-16 downstream; analytic 1.4e-14, 0.14
    assert discrete["upstream"] < 1e-12 and discrete["downstream"] < 1e-12
    assert analytic["downstream"] > 1e-8  # the analytic variant leaks the discretisation error
    # the total field is the auxiliary (discrete incident) wave; at the run's end only the
    # discrete pulse's dispersive tail is left in the box (measured 0.0034 of the amplitude)
    term = sim.system.terms[0]
    u = np.asarray(sim.backend.to_host(sim.u))
    inside = slab_groups(sim.system.geometry.coords.mean(axis=(2, 3, 4)))["inside"]
    on_total = inside[term.elements]
    assert np.abs(u[:, term.elements[on_total]] - term.aux[:, on_total]).max() < 1e-13
    assert np.abs(term.aux[:, ~on_total]).max() == 0
    assert np.abs(u[:, inside]).max() < 0.01 * AMPLITUDE


def test_oblique_pulse_through_a_box_in_a_box():
    def groups(c):
        inside = np.all((c > [[0.5], [0.5], [0.25]]) & (c < [[1.0], [1.25], [1.0]]), axis=0)
        return {"inside": inside, "outside": ~inside}

    levels = {incident: monitored_run(box_case(t_end=1.8, wave={"incident_field": incident}), groups)[1]
              for incident in ("analytic", "discrete")}
    assert levels["discrete"]["inside"] > 0.5
    # measured: 5.1e-16 (discrete) and 0.039 (analytic) of a peak of 0.61
    assert levels["discrete"]["outside"] < 1e-12
    assert levels["analytic"]["outside"] > 1e-3


def test_a_scatterer_gives_the_analytic_variants_scattered_field():
    block = {"material": {"block": {"where": "(x - 1.34) * (1.66 - x)", "sampling": "element", "epsilon": 9.0}}}
    difference = {}
    for order in (3, 4):
        scattered = {}
        for incident in ("analytic", "discrete"):
            sim = Simulation(with_incident(slab_case(order, 4.0)[0], incident, **block), backend="cpu",
                             output_dir=None, comm=None)
            sim.run()
            outside = ~slab_groups(sim.system.geometry.coords.mean(axis=(2, 3, 4)))["inside"]
            scattered[incident] = np.asarray(sim.backend.to_host(sim.u))[:, outside]
        peak = np.abs(scattered["discrete"]).max()
        assert peak > 0.5 * AMPLITUDE  # reflected and delayed by the block
        difference[order] = np.abs(scattered["analytic"] - scattered["discrete"]).max() / peak
    # measured, relative to the scattered field's peak, N = 3, 4, 5, 6: 0.11, 0.020, 0.0037, 0.00050
    assert difference[4] < 0.3 * difference[3] and difference[4] < 0.04


def test_restart_continues_bitwise(tmp_path):
    case = with_incident(slab_case(3, 3.0)[0], "discrete")
    full = Simulation(case, backend="cpu", output_dir=tmp_path / "full", comm=None)
    full.run()
    first = Simulation(case, backend="cpu", output_dir=tmp_path / "part", comm=None)
    first.advance(40)
    assert np.abs(first.system.terms[0].aux).max() > 0.1  # the auxiliary wave is in the box at the checkpoint
    path = first.checkpoint()
    first.close()  # done with the directory: the restart writes there (one live run per directory)
    rest = Simulation(case, backend="cpu", output_dir=tmp_path / "part", comm=None).restart(path)
    rest.run()
    assert rest.step_count == full.step_count and rest.t == full.t
    assert np.array_equal(rest.backend.to_host(rest.u), full.backend.to_host(full.u))
    assert np.array_equal(rest.system.terms[0].aux, full.system.terms[0].aux)
    assert set(full.system.history()) == {"plane_wave.inc/aux"}
    summary = full.summary["plane_wave.inc"]
    assert summary["incident_field"] == "discrete" and summary["auxiliary_fields"] == 6
    assert summary["elements"] == 3 + 2 and summary["total_field_elements"] == 3
    assert case.to_dict()["source"]["inc"]["incident_field"] == "discrete"


def test_errors():
    data = box_case().to_dict()
    data["source"]["inc"]["incident_field"] = "exact"
    with pytest.raises(InputError, match=r'\[source.inc\] incident_field.*one of "analytic", "discrete"'):
        case_from_dict(data)
    with pytest.raises(InputError, match="cannot step the auxiliary fields of plane_wave.inc; use integrator = "
                                         "'lsrk45'"):
        Simulation(box_case("rk4", wave={"incident_field": "discrete"}), backend="cpu", output_dir=None, comm=None)
